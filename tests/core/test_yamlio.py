"""Reading YAML: every file fullserver reads is refused in one line when it is not what it seems.

Duplicate keys, non-UTF-8 bytes, oversized files and pathological nesting each end in an
``InputError`` naming the file (and line), never in a silently changed value, a traceback or a
crashed interpreter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from fullserver import yamlio
from fullserver.catalog import DATA_DIR
from fullserver.errors import EXIT_INPUT, InputError
from fullserver.yamlio import MAX_BYTES, MAX_DEPTH, _depth_bound, load_yaml_text, read_yaml


def write(tmp_path: Path, data: bytes | str, name: str = "file.yaml") -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def refusal(path: Path) -> str:
    with pytest.raises(InputError) as info:
        read_yaml(path)
    assert info.value.exit_code == EXIT_INPUT
    line = str(info.value)
    assert "\n" not in line
    return line


# --- duplicate keys ---------------------------------------------------------------------------


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "description: x\nstage: experimentation\npurpose: training\nstage: fine-tuning\n")
    assert refusal(path) == f"{path}:4: duplicate key 'stage' (first at line 2) (remove one)"


def test_a_nested_duplicate_key_is_refused_too(tmp_path: Path) -> None:
    path = write(tmp_path, "balance:\n  ram_floor_gib: {value: 32, reason: r, value: 64}\n")
    assert refusal(path) == f"{path}:2: duplicate key 'value' (first at line 2) (remove one)"


def test_keys_that_mean_the_same_value_are_duplicates(tmp_path: Path) -> None:
    # 1 and 0x1 are one integer key; the dict would keep only the last.
    assert "duplicate key '1'" in refusal(write(tmp_path, "1: a\n0x1: b\n"))


def test_the_same_key_in_different_mappings_is_fine(tmp_path: Path) -> None:
    path = write(tmp_path, "a: {value: 1}\nb: {value: 2}\nc:\n  - value: 3\n  - value: 4\n")
    assert read_yaml(path) == {"a": {"value": 1}, "b": {"value": 2}, "c": [{"value": 3}, {"value": 4}]}


def test_a_key_overriding_a_merged_one_is_not_a_duplicate(tmp_path: Path) -> None:
    path = write(tmp_path, "base: &b {x: 1, y: 2}\nchild:\n  <<: *b\n  x: 3\n")
    assert read_yaml(path)["child"] == {"x": 3, "y": 2}


def test_duplicate_keys_are_refused_in_stacks_profiles_and_catalog_data(tmp_path: Path) -> None:
    """Every reader goes through read_yaml, so each kind of file gets the check."""
    from fullserver.catalog import load_catalog
    from fullserver.profiles import load_profiles
    from fullserver.stacks import load_stack

    from .conftest import PROFILE, write_profiles

    profiles = write_profiles(tmp_path / "profiles", {"base": PROFILE + "stage: scale-training\n"})
    with pytest.raises(InputError, match=r"base\.yaml:\d+: duplicate key 'stage' \(first at line 2\)"):
        load_profiles(profiles)

    stack = write(tmp_path, "config:\n  fullserver:profile: a\n  fullserver:profile: b\n", "Pulumi.dup.yaml")
    with pytest.raises(InputError, match=r"Pulumi\.dup\.yaml:3: duplicate key 'fullserver:profile'"):
        load_stack(stack)

    catalog = tmp_path / "catalog"
    catalog.mkdir()
    write(catalog, "sources: {}\nshapes: []\nshapes: []\n", "data.yaml")
    load_catalog.cache_clear()
    with pytest.raises(InputError, match=r"data\.yaml:3: duplicate key 'shapes' \(first at line 2\)"):
        load_catalog(catalog)


# --- encoding and size ------------------------------------------------------------------------


def test_latin1_is_refused_naming_the_byte_offset(tmp_path: Path) -> None:
    path = write(tmp_path, "owner: team\nname: caf\u00e9\n".encode("latin-1"))
    assert refusal(path) == (f"{path}: not UTF-8 text: byte 0xe9 at byte offset 21 (line 2) (save the file as UTF-8)")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_is_refused(tmp_path: Path, encoding: str) -> None:
    line = refusal(write(tmp_path, "stage: fine-tuning\n".encode(encoding)))
    assert "not UTF-8 text" in line
    assert "byte offset" in line


def test_binary_is_refused(tmp_path: Path) -> None:
    line = refusal(write(tmp_path, bytes(range(256)) * 4))
    assert line.startswith(f"{tmp_path / 'file.yaml'}: not UTF-8 text: a NUL byte at byte offset 0")


def test_a_control_character_is_refused_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "a: 1\nb: bell\x07\n")
    assert refusal(path) == f"{path}:2: control character U+0007 is not allowed in YAML (remove it)"


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    assert read_yaml(write(tmp_path, b"\xef\xbb\xbfstage: fine-tuning\n")) == {"stage": "fine-tuning"}


def test_a_file_over_the_size_bound_is_refused_without_parsing(tmp_path: Path) -> None:
    path = write(tmp_path, b"a: " + b"x" * MAX_BYTES + b"\n")
    assert refusal(path) == f"{path}: larger than 1 MiB, the most a YAML file may be (is this the right file?)"


def test_a_file_at_the_size_bound_is_read(tmp_path: Path) -> None:
    body = b"a: " + b"x" * (MAX_BYTES - 4) + b"\n"
    assert len(body) == MAX_BYTES
    assert read_yaml(write(tmp_path, body))["a"] == "x" * (MAX_BYTES - 4)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    assert refusal(tmp_path) == f"{tmp_path}: cannot read file: Is a directory (check the path)"


# --- nesting ----------------------------------------------------------------------------------


def test_fifty_thousand_nested_brackets_are_refused_before_libyaml_sees_them(tmp_path: Path) -> None:
    """libyaml's composer recurses in C: this input kills the interpreter with a segfault."""
    path = write(tmp_path, "a: " + "[" * 50_000 + "]" * 50_000 + "\n")
    # In a child process, so a regression shows as a failed test rather than a dead test run.
    code = "import sys; from pathlib import Path; from fullserver.yamlio import read_yaml\n"
    code += "try:\n    read_yaml(Path(sys.argv[1]))\nexcept Exception as e:\n    print(e)\n"
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{path}:1: nesting deeper than {MAX_DEPTH} levels (flatten the structure)\n"


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "{a: " * 5_000 + "1" + "}" * 5_000 + "\n",  # flow mappings
        "a: " + "[\n" * 5_000 + "]" * 5_000 + "\n",  # brackets over many lines
        "a:\n" + "- " * 5_000 + "x\n",  # compact block sequences
        "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v\n",  # indentation
        'a: ["]", ' + "[" * 5_000 + "]" * 5_000 + "]\n",  # a closing bracket inside a string
    ],
    ids=["flow-mappings", "multi-line-flow", "block-sequences", "indented-mappings", "quoted-bracket"],
)
def test_every_kind_of_deep_nesting_is_refused(tmp_path: Path, text: str) -> None:
    assert f"nesting deeper than {MAX_DEPTH} levels (flatten the structure)" in refusal(write(tmp_path, text))


def test_a_parser_with_a_depth_limit_of_its_own_changes_nothing_a_person_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyYAML 6.0.4's libyaml stops deep nesting itself, with its own limit and wording, before our
    count reaches ours. Whichever parser stops first, the refusal is our one line at the line."""

    class StopsAtTwo(yaml.SafeLoader):
        depth = 0

        def get_event(self) -> Any:
            event = super().get_event()  # type: ignore[no-untyped-call]
            if isinstance(event, yaml.CollectionStartEvent):
                self.depth += 1
                if self.depth > 2:
                    raise yaml.parser.ParserError(None, None, "a limit of its own")
            return event

    monkeypatch.setattr(yamlio, "_BaseLoader", StopsAtTwo)
    path = write(tmp_path, "ok: 1\na: " + "[\n" * 5_000 + "]" * 5_000 + "\n")
    assert refusal(path) == f"{path}:65: nesting deeper than {MAX_DEPTH} levels (flatten the structure)"


def test_nesting_at_the_bound_is_read(tmp_path: Path) -> None:
    inner = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    data = read_yaml(write(tmp_path, f"a: {inner}\n"))
    assert data["a"] == yaml.safe_load(inner)
    assert "nesting deeper" in refusal(write(tmp_path, f"a: [{inner}]\n"))


def test_the_cheap_bound_never_undercounts_the_real_depth() -> None:
    """The scan is an upper bound, so a shallow verdict is always safe to trust."""
    samples = [
        "a: [[b: [c: d]]]\n",  # mappings without braces inside brackets
        "a: ['x]', [[y]]]\n",
        'a: ["#]", [[y]]]\n',
        "a: [#]\n  [[[[x]]]]]\n",
        "- - - &x k: [{a: b}]\n",
        "? - a\n: - - b\n",
        "--- {a: [b]}\n",
        "a:\n- b:\n  - c:\n    - d\n",
        "k: it's [[x]]\n",
    ]
    for text in samples:
        bound = _depth_bound(text)
        depth = deepest = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                deepest = max(deepest, depth)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        assert bound is None or bound >= deepest, (text, bound, deepest)


def test_shipped_files_take_the_cheap_path() -> None:
    """The exact count parses twice; the repository's own files never need it."""
    root = Path(__file__).resolve().parents[2]
    files = [*DATA_DIR.glob("*.yaml"), *(root / "profiles").glob("*.yaml")]
    assert files
    for path in files:
        bound = _depth_bound(path.read_text(encoding="utf-8"))
        assert bound is not None and bound <= MAX_DEPTH, path


# --- aliases ----------------------------------------------------------------------------------


def test_a_billion_laughs_is_refused(tmp_path: Path) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):
        prev, name = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 10)}]")
    line = refusal(write(tmp_path, "\n".join(lines) + "\n"))
    assert line.endswith(
        "aliases expand the data to more than 1,000,000 values (write the values out instead of aliasing them)"
    )


def test_a_collection_containing_itself_is_refused(tmp_path: Path) -> None:
    assert "an alias refers to the collection that contains it" in refusal(write(tmp_path, "a: &a [1, *a]\n"))


def test_a_chain_of_aliases_deeper_than_the_bound_is_refused(tmp_path: Path) -> None:
    text = "a0: &a0 {v: 1}\n" + "".join(f"a{i}: &a{i} {{v: *a{i - 1}}}\n" for i in range(1, 80))
    assert f"aliases nest the data deeper than {MAX_DEPTH} levels" in refusal(write(tmp_path, text))


def test_ordinary_aliases_are_read(tmp_path: Path) -> None:
    text = textwrap.dedent(
        """\
        ranges: &r [10.0.0.0/8]
        a: {ssh: *r}
        b: {ssh: *r}
        """
    )
    data = read_yaml(write(tmp_path, text))
    assert data["a"] == data["b"] == {"ssh": ["10.0.0.0/8"]}


def test_an_integer_longer_than_python_converts_is_one_line_not_a_traceback() -> None:
    with pytest.raises(InputError) as err:
        load_yaml_text("nodes: " + "9" * 5_000 + "\n", "Pulumi.x.yaml")
    assert str(err.value) == (
        "Pulumi.x.yaml:1: an integer of 5,000 characters is far above any value fullserver takes "
        "(give a number within the key's bounds)"
    )
    assert load_yaml_text("nodes: 1_000\nbig: 0x10\n", "x") == {"nodes": 1000, "big": 16}  # YAML 1.1 ints still read


# --- plain documents built directly (``_Loader.construct_plain``) -----------------------------


def _pyyaml(text: str) -> Any:
    """What PyYAML's own constructor makes of ``text`` with this loader."""
    loader = yamlio._Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


@pytest.mark.parametrize(
    "text",
    [
        "config:\n  fullserver:nodes: 2\n  fullserver:owner: team-9\n  fullserver:serving: {apiKeySecret: k}\n",
        "a: [1, '2', -3, +4, 0, 017, 0x1F, 0o17, 1_000, 1:30, 1.5, .inf, ~, null, yes, No, 2024-01-02]\n",
        "- {a: !!str 1, b: !!binary aGVsbG8=, c: ''}\n- [x, [y, [z]]]\n",
        "1: one\n2.5: yes\nnull: x\n",
        "",
    ],
)
def test_plain_documents_read_as_pyyaml_reads_them(text: str) -> None:
    data = load_yaml_text(text, "x")
    assert data == _pyyaml(text)
    assert repr(data) == repr(_pyyaml(text))  # the same types too: 017 is YAML 1.1 octal, 15


def test_an_aliased_collection_is_one_object_as_pyyaml_makes_it() -> None:
    data = load_yaml_text("a: &r [1]\nb: *r\n", "x")
    assert data["a"] is data["b"]


def test_merge_keys_and_other_tags_are_read_by_pyyaml_itself() -> None:
    assert load_yaml_text("base: &b {x: 1, y: 2}\nover: {<<: *b, y: 3}\n", "x")["over"] == {"x": 1, "y": 3}
    assert load_yaml_text("s: !!set {a, b}\n", "x") == {"s": {"a", "b"}}


def test_an_unknown_tag_is_refused_in_one_line_naming_its_line() -> None:
    with pytest.raises(InputError) as err:
        load_yaml_text("a: 1\nb: !!python/name:os.system\n", "Pulumi.x.yaml")
    assert str(err.value).startswith("Pulumi.x.yaml:2: malformed YAML: could not determine a constructor")


def test_the_first_error_is_the_one_pyyaml_finds_first() -> None:
    """A nested duplicate before a top-level integer too long to read: PyYAML reads the top level
    first (nested mappings are filled afterwards), and so does this loader."""
    text = "a:\n  b: 1\n  b: 2\nc: " + "9" * 5_000 + "\n"
    with pytest.raises(InputError) as err:
        load_yaml_text(text, "x")
    assert str(err.value).startswith("x:4: an integer of 5,000 characters")


def test_a_plain_scalar_resolves_to_the_tag_pyyaml_gives_it() -> None:
    loader = yamlio._Loader("")
    values = ["", "~", "null", "yes", "Off", "017", "0x1F", "1:30", "-1.5e3", ".NaN", "2001-12-14", "=", "<<", "a:b"]
    for value in values:
        for implicit in ((True, False), (False, True), (False, False)):
            want = yaml.resolver.Resolver.resolve(loader, yaml.ScalarNode, value, implicit)  # type: ignore[no-untyped-call]
            assert loader.resolve(yaml.ScalarNode, value, implicit) == want, value
