# Two entry points, both safe on a fresh machine: `make plan` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup plan test lint lock bench clean system-packages readme-examples

# Exactly uv.lock, hashes checked: pip installs uv itself from its hash-pinned bootstrap file, then
# uv makes the virtualenv equal to the lock (runtime, dev and refresh; anything else is removed).
# --locked refuses a lock that pyproject.toml has moved away from instead of re-resolving it.
# --compile-bytecode writes the packages' .pyc files once, as pip does on install (uv does not by
# default: uv's pip compatibility guide, "Bytecode compilation"). Where PYTHONDONTWRITEBYTECODE is
# set nothing else ever writes them, and every command compiled pydantic, rich, typer (and the
# Pulumi SDK for graphs) from source again: measured, a third of `fullserver plan`'s CPU to its
# first line, and more than half of `fullserver plan <stack>` with its graph.
$(BIN)/fullserver: pyproject.toml uv.lock scripts/uv-bootstrap.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r scripts/uv-bootstrap.txt
	UV_PYTHON_DOWNLOADS=never $(BIN)/uv sync --quiet --locked --extra dev --extra refresh --compile-bytecode
	touch $@

setup: $(BIN)/fullserver

# Moves the pinned versions on purpose (see scripts/lock), then installs the new lock.
lock: setup
	UV=$(BIN)/uv scripts/lock
	$(MAKE) setup

plan: setup
	$(BIN)/fullserver plan

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check --quiet .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# The tests start real sshd hosts and build RAID0 over loop devices: their system packages are
# installed first where this machine can (root + apt-get); otherwise one line says what to install.
system-packages:
	@scripts/system-packages

test: system-packages lint
	$(BIN)/pytest

# The README's generated transcripts (<!-- generated: NAME -->), rewritten from their commands'
# output; tests/project/test_readme_examples.py fails when one is out of date.
readme-examples: setup
	$(BIN)/python -m tests.project.readme_examples

bench: setup
	$(BIN)/python bench/plan.py

clean:
	rm -rf $(VENV) *.egg-info .mypy_cache .ruff_cache
