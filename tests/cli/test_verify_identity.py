"""``--identity`` for ``verify STACK``: read once, a protected key opened before anything connects."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fullserver.errors import InputError
from fullserver_cli.verify import read_identity


def _key(tmp_path: Path, passphrase: str) -> Path:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-f", str(key)], check=True)
    return key


def test_a_plain_key_needs_no_passphrase_and_its_repr_shows_no_secret(tmp_path: Path) -> None:
    ident = read_identity(_key(tmp_path, ""), None)
    assert ident.passphrase is None and ident.text.startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert "PRIVATE" not in repr(ident)


def test_a_protected_key_opens_with_the_passphrase_from_the_named_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEY_PASS", "s3cret words")
    ident = read_identity(_key(tmp_path, "s3cret words"), "KEY_PASS")
    assert ident.passphrase == "s3cret words" and "s3cret" not in repr(ident)


def test_a_wrong_passphrase_is_one_line_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEY_PASS", "not it")
    key = _key(tmp_path, "s3cret words")
    with pytest.raises(InputError) as err:
        read_identity(key, "KEY_PASS")
    assert err.value.line() == (
        f"--identity {key}: wrong passphrase for the private key (pass the passphrase the key was encrypted with)"
    )


def test_a_protected_key_without_a_terminal_or_variable_says_how_to_pass_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    key = _key(tmp_path, "s3cret words")
    with pytest.raises(InputError) as err:
        read_identity(key, None)
    assert err.value.line() == (
        f"--identity {key}: the key is passphrase-protected and there is no terminal to ask on "
        "(put the passphrase in an environment variable and name it: --identity-passphrase-env VAR)"
    )


def test_a_named_variable_that_is_not_set_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KEY_PASS", raising=False)
    with pytest.raises(InputError, match=r"^--identity-passphrase-env KEY_PASS: no such environment variable"):
        read_identity(_key(tmp_path, "s3cret words"), "KEY_PASS")
