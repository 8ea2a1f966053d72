# Two entry points, both safe on a fresh machine: `make plan` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup plan test lint bench clean system-packages

$(BIN)/fullserver: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/fullserver

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

bench: setup
	$(BIN)/python bench/plan.py

clean:
	rm -rf $(VENV) *.egg-info .mypy_cache .ruff_cache
