"""Who to talk to and how to trust them: targets, pinned host keys, inventory files, private keys.

Pure (no paramiko). A ``Target`` is everything the SSH layer needs to reach one host: the exact
address it connects to (and looks keys up under), the pinned host keys (several allowed, for
rotation), the login user, the timeouts, an optional jump host. Host keys come from the
inventory/stack config or from a known_hosts file *named in that config* — never from the
operator's own ``~/.ssh/known_hosts``.

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StrictStr, field_validator, model_validator

from fullserver.baremetal.keys import KNOWN_KEY_TYPES, PinnedKey, check_host_keys, fingerprint, parse_key_line
from fullserver.baremetal.proxy import withhold_from_children
from fullserver.errors import InputError
from fullserver.keys import MAX_PATH
from fullserver.workload import MAX_HOSTNAME, DedicatedHost, InventoryHost
from fullserver.yamlio import parse, read_yaml

__all__ = [  # the key helpers live in keys.py (no workload import); re-exported where they always were
    "KNOWN_KEY_TYPES",
    "Inventory",
    "InventoryEntry",
    "PinnedKey",
    "Target",
    "Timeouts",
    "expand_proxy",
    "fingerprint",
    "inventory_from_data",
    "keys_from_known_hosts",
    "load_inventory",
    "lookup_name",
    "parse_key_line",
]


def _host_matches(pattern: str, name: str) -> bool:
    if pattern.startswith("|1|"):  # hashed entry: |1|base64(salt)|base64(hmac_sha1(salt, name))
        try:
            _, _, salt64, digest64 = pattern.split("|")
            salt, digest = base64.b64decode(salt64), base64.b64decode(digest64)
        except (ValueError, binascii.Error):
            return False
        return hmac.compare_digest(hmac.new(salt, name.encode(), hashlib.sha1).digest(), digest)
    return name in pattern.split(",")


def lookup_name(address: str, port: int) -> str:
    """The known_hosts name OpenSSH and paramiko use: ``addr`` on port 22, else ``[addr]:port``."""
    return address if port == 22 else f"[{address}]:{port}"


def endpoint(address: str, port: int) -> str:
    """``address:port`` as people write it: an IPv6 address in brackets (``[2001:db8::12]:2222``),
    else ``2001:db8::12:2222`` reads as one longer address."""
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def keys_from_known_hosts(path: Path, address: str, port: int) -> list[PinnedKey]:
    """Keys for ``address:port`` in a known_hosts file we were given; ``@revoked`` lines excluded.

    Lines that are malformed or ``@cert-authority`` are skipped (paramiko cannot check host
    certificates, paramiko#771), unlike paramiko's ``HostKeys.load`` which aborts on them
    (paramiko PR #1990).
    """
    name = lookup_name(address, port)
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(str(path), f"cannot read known_hosts file: {exc.strerror}", "fix knownHostsFile") from None
    keys: list[PinnedKey] = []
    revoked: set[bytes] = set()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        marker = ""
        if line.startswith("@"):
            marker, _, line = line.partition(" ")
        parts = line.split()
        if len(parts) < 3 or not _host_matches(parts[0], name) or parts[1] not in KNOWN_KEY_TYPES:
            continue
        try:
            key = parse_key_line(" ".join(parts[1:3]), f"{path}:{n}")
        except InputError:
            continue
        if marker == "@revoked":
            revoked.add(key.blob)
        elif marker == "":
            keys.append(key)
    return [k for k in keys if k.blob not in revoked]


@dataclass(frozen=True)
class Timeouts:
    """Every wait of the SSH layer, in seconds (paramiko's own defaults are None or an hour)."""

    connect: float = 10.0
    banner: float = 10.0
    auth: float = 15.0
    channel: float = 10.0
    command: float = 120.0
    kill_grace: float = 5.0
    keepalive_interval: float = 10.0
    keepalive_count: int = 3
    connect_attempts: int = 3
    retry_base: float = 0.5


@dataclass(frozen=True)
class Target:
    """One host as the SSH layer sees it. ``address`` is used both to connect and to match keys;
    with a ``proxy`` (an argv, tokens already substituted) only to match keys: the proxy reaches
    the host. ``peer_address`` is where other hosts reach it (empty: ``address``; see ``peer``)."""

    name: str
    address: str
    port: int = 22
    user: str = "root"
    host_keys: tuple[PinnedKey, ...] = ()
    jump: Target | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)
    proxy: tuple[str, ...] | None = None
    peer_address: str = ""

    def __post_init__(self) -> None:
        if self.proxy is not None and self.jump is not None:
            raise ValueError(f"{self.name}: a host is reached through a proxy command or a jump host, not both")
        if self.proxy is not None and not self.proxy:
            raise ValueError(f"{self.name}: an empty proxy command")

    @property
    def peer(self) -> str:
        """The address the other hosts reach this one at (iperf3): ``peer_address``, else ``address``.
        With a proxy, ``address`` is usually a node name only the proxy understands."""
        return self.peer_address or self.address

    @property
    def lookup(self) -> str:
        return lookup_name(self.address, self.port)

    @property
    def endpoint(self) -> str:
        """Where it is reached, as messages and reports show it (``endpoint``)."""
        return endpoint(self.address, self.port)

    @property
    def expected_fingerprints(self) -> list[str]:
        """``"<type> SHA256:..."`` of every pinned key (what a refusal shows as expected)."""
        return [f"{k.key_type} {k.fingerprint}" for k in self.host_keys]


_PROXY_TOKENS = "hprn%"
"""``%h`` address, ``%p`` port, ``%r`` user, ``%n`` name, ``%%`` a percent sign (OpenSSH's subset)."""


def _check_proxy_word(word: str) -> str:
    i = 0
    while (i := word.find("%", i)) >= 0:
        token = word[i : i + 2]
        if len(token) < 2 or token[1] not in _PROXY_TOKENS:
            raise ValueError(f"unknown token '{token}' in '{word}': use %h, %p, %r, %n or %%")
        i += 2
    return word


def expand_proxy(argv: list[str], *, address: str, port: int, user: str, name: str) -> tuple[str, ...]:
    """Substitute ``%h %p %r %n %%`` in each word of a proxy command, as OpenSSH does (one pass:
    a ``%`` a substitution brings in is not read again)."""
    values = {"h": address, "p": str(port), "r": user, "n": name, "%": "%"}
    return tuple(re.sub(r"%(.)", lambda m: values[m.group(1)], _check_proxy_word(word)) for word in argv)


class InventoryEntry(InventoryHost):
    """An inventory host: the stack config's ``InventoryHost`` plus where its private key comes
    from and how it is reached (a jump host or a proxy command)."""

    private_key_file: str | None = None
    private_key_env: str | None = None
    jump: str | None = None
    proxy_command: Annotated[list[Annotated[StrictStr, Field(max_length=MAX_PATH)]], Field(max_length=64)] | None = None
    peer_address: Annotated[StrictStr, Field(min_length=1, max_length=MAX_HOSTNAME)] | None = None
    role: Literal["gpu", "jump"] | None = None
    expect: DedicatedHost | None = None
    connect_timeout: Annotated[float, Field(gt=0, le=300)] = 10.0
    command_timeout: Annotated[float, Field(gt=0, le=3600)] = 120.0

    @field_validator("host_keys")
    @classmethod
    def _host_keys(cls, v: list[str]) -> list[str]:
        """A malformed key is refused when the inventory is read (the plan, the provider's check and
        the audit then agree), not first when a connection is made."""
        return check_host_keys(v)

    @field_validator("proxy_command")
    @classmethod
    def _proxy_command(cls, v: list[str] | None) -> list[str] | None:
        """A proxy's program must be named, and every ``%`` be a token ssh_config knows."""
        if v is not None:
            if not v:
                raise ValueError("empty: give the proxy's argv, e.g. [gcloud, compute, start-iap-tunnel, '%h', '%p']")
            if not v[0].strip():
                raise ValueError("the first word must name the proxy's program (e.g. gcloud)")
            for word in v:
                _check_proxy_word(word)
        return v

    @model_validator(mode="after")
    def _one_key_source(self) -> InventoryEntry:
        if self.private_key_file and self.private_key_env:
            raise ValueError("give privateKeyFile or privateKeyEnv, not both")
        return self


class Inventory:
    """Hosts of an inventory file, with paths resolved relative to the file.

    Private keys: a host's (or a jump host's) own ``privateKeyFile``/``privateKeyEnv`` wins; a host
    without one uses ``default_key`` (the provider's ``private_key`` input), else it is an error.
    ``keys`` holds key texts already read, by host name: the Pulumi component reads every key
    source once, when the program runs, and passes the texts as secrets, so the provider (which
    also runs for ``pulumi destroy``, long after) uses those instead of reading the sources again.
    This is the one place keys are resolved, for ``fullserver audit`` and the provider alike.
    """

    def __init__(
        self,
        entries: list[InventoryEntry],
        base: Path,
        where: str,
        *,
        keys: Mapping[str, str] | None = None,
        default_key: str | None = None,
    ) -> None:
        self.entries = entries
        self.base = base
        self.where = where
        self._keys = dict(keys or {})
        self._default_key = default_key
        names = [e.name for e in entries]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise InputError(where, f"host names repeat: {', '.join(dupes)}", "give every host a unique name")
        by_name = {e.name: e for e in entries}
        for e in entries:
            if e.jump is not None and e.proxy_command is not None:
                raise InputError(
                    f"{where}: host '{e.name}' field 'proxyCommand'",
                    "cannot be combined with jump",
                    "reach the host through the proxy command or the jump host, not both",
                )
            if e.jump is not None and e.jump not in by_name:
                raise InputError(
                    f"{where}: host '{e.name}' field 'jump'", f"no host named '{e.jump}'", f"known: {', '.join(names)}"
                )
        if not self.hosts:
            raise InputError(where, "every host is a jump host: nothing to audit or configure", "add the GPU hosts")

    def __repr__(self) -> str:  # never the key texts
        return f"Inventory({self.where!r}, {[e.name for e in self.entries]!r})"

    def is_jump(self, entry: InventoryEntry) -> bool:
        """A jump host: ``role: jump``, or (without a role) another entry's ``jump`` target."""
        if entry.role is not None:
            return entry.role == "jump"
        return any(e.jump == entry.name for e in self.entries)

    @property
    def hosts(self) -> list[InventoryEntry]:
        """The hosts to audit and configure: every entry but the jump hosts."""
        return [e for e in self.entries if not self.is_jump(e)]

    def hops(self, entry: InventoryEntry) -> list[InventoryEntry]:
        """The jump hosts on the way to ``entry``, nearest first (a loop stops the walk)."""
        out: list[InventoryEntry] = []
        hop = entry.jump
        while hop is not None and hop not in {e.name for e in out} and hop != entry.name:
            hop_entry = self.entry(hop)
            out.append(hop_entry)
            hop = hop_entry.jump
        return out

    def jump_keys(self, entry: InventoryEntry) -> dict[str, str]:
        """Each jump host's private key text on the way to ``entry``, by name."""
        return {hop.name: self.private_key(hop) for hop in self.hops(entry)}

    def credentials(self, entry: InventoryEntry) -> tuple[str, dict[str, str]]:
        """What ``ssh.session`` needs for ``entry``: its private key and each jump host's, by name."""
        return self.private_key(entry), self.jump_keys(entry)

    def entry(self, name: str) -> InventoryEntry:
        for e in self.entries:
            if e.name == name:
                return e
        raise InputError(self.where, f"no host named '{name}'", f"known: {', '.join(e.name for e in self.entries)}")

    def target(self, entry: InventoryEntry, timeouts: Timeouts | None = None, _seen: tuple[str, ...] = ()) -> Target:
        """Resolve pinned keys (inline + the named known_hosts file) and the jump chain."""
        where = f"{self.where}: host '{entry.name}'"
        keys = [parse_key_line(k, f"{where} field 'hostKeys'") for k in entry.host_keys]
        if entry.known_hosts_file:
            path = Path(entry.known_hosts_file).expanduser()
            keys += keys_from_known_hosts(path if path.is_absolute() else self.base / path, entry.address, entry.port)
        if not keys:
            raise InputError(
                where,
                "no host key pinned",
                "add hostKeys (from /etc/ssh/ssh_host_ed25519_key.pub, read out of band) or knownHostsFile",
            )
        jump = None
        if entry.jump is not None:
            if entry.jump in _seen or entry.jump == entry.name:
                raise InputError(where, "jump hosts form a loop", "point jump at a bastion that needs no jump")
            jump = self.target(self.entry(entry.jump), timeouts, (*_seen, entry.name))
        t = timeouts or Timeouts(
            connect=entry.connect_timeout, banner=entry.connect_timeout, command=entry.command_timeout
        )
        unique = tuple(dict.fromkeys(keys))
        proxy = None
        if entry.proxy_command is not None:
            proxy = expand_proxy(
                entry.proxy_command, address=entry.address, port=entry.port, user=entry.user, name=entry.name
            )
        return Target(
            entry.name, entry.address, entry.port, entry.user, unique, jump, t, proxy, entry.peer_address or ""
        )

    @staticmethod
    def has_key_source(entry: InventoryEntry) -> bool:
        """Whether the entry names its own private key (else the default key applies)."""
        return bool(entry.private_key_env or entry.private_key_file)

    def _key_path(self, entry: InventoryEntry) -> Path:
        path = Path(entry.private_key_file or "").expanduser()
        return path if path.is_absolute() else self.base / path

    def key_source(self, entry: InventoryEntry) -> str:
        """Where ``entry``'s private key comes from, for messages (a variable or a path, never the key)."""
        where = f"{self.where}: host '{entry.name}'"
        if entry.private_key_env:
            return f"{where} privateKeyEnv {entry.private_key_env}"
        if entry.private_key_file:
            return f"{where} privateKeyFile {self._key_path(entry)}"
        return f"{where} (the default private key)"

    def own_keys(self) -> dict[str, str]:
        """The key text of every entry (hosts and jump hosts) with its own key source, by name."""
        return {e.name: self._read_key(e) for e in self.entries if self.has_key_source(e)}

    def private_key(self, entry: InventoryEntry) -> str:
        """The private key text for a host (kept in memory only, never logged): its own source (or
        the text already read from it), else the default key."""
        if self.has_key_source(entry):
            return self._keys[entry.name] if entry.name in self._keys else self._read_key(entry)
        if self._default_key is not None:
            return self._default_key
        raise InputError(
            f"{self.where}: host '{entry.name}'",
            "no private key source",
            "set privateKeyFile or privateKeyEnv (in the host or in defaults)",
        )

    def _read_key(self, entry: InventoryEntry) -> str:
        where = f"{self.where}: host '{entry.name}'"
        if entry.private_key_env:
            withhold_from_children(entry.private_key_env)  # a key's text: not for gcloud, aws or their helpers
            value = os.environ.get(entry.private_key_env)
            if not value:
                raise InputError(
                    where, f"environment variable {entry.private_key_env} is empty", "export the private key text in it"
                )
            return value
        path = self._key_path(entry)
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(where, f"cannot read private key {path}: {exc.strerror}", "fix privateKeyFile") from None
        except UnicodeDecodeError:
            raise InputError(
                where, f"private key {path} is not text", "point privateKeyFile at an OpenSSH/PEM private key"
            ) from None


def load_inventory(path: Path) -> Inventory:
    """Read an inventory file (``defaults`` + ``hosts``).

    Through ``fullserver.yamlio.read_yaml``, like every other file fullserver reads (one set of
    checks: encoding, duplicate keys, line numbers)."""
    return inventory_from_data(read_yaml(path), path.parent, str(path))


def inventory_from_data(
    data: Any, base: Path, where: str, *, keys: Mapping[str, str] | None = None, default_key: str | None = None
) -> Inventory:
    """An ``Inventory`` from parsed data (a file's, or the provider's ``hosts`` list); ``keys`` and
    ``default_key`` as for ``Inventory``."""
    defaults: dict[str, Any] = {}
    if isinstance(data, dict):
        defaults = data.get("defaults") or {}
        extra = set(data) - {"defaults", "hosts"}
        if extra:
            raise InputError(where, f"unknown top-level keys: {', '.join(sorted(extra))}", "use 'defaults' and 'hosts'")
        hosts = data.get("hosts")
    else:
        hosts = data
    if not isinstance(hosts, list) or not hosts:
        raise InputError(where, "expected a non-empty list of hosts", "see docs/bare-metal.md for the format")
    if not isinstance(defaults, dict):
        raise InputError(f"{where}: field 'defaults'", "expected a mapping", "see docs/bare-metal.md")
    entries = []
    for i, raw in enumerate(hosts):
        if not isinstance(raw, dict):
            raise InputError(f"{where}: hosts[{i}]", "expected a mapping", "see docs/bare-metal.md")
        merged = {**defaults, **raw}
        if "privateKeyFile" in raw or "privateKeyEnv" in raw:  # a host's own key source replaces the default
            for k in ("privateKeyFile", "privateKeyEnv"):
                if k not in raw:
                    merged.pop(k, None)
        entries.append(parse(InventoryEntry, merged, f"{where}: hosts[{i}]"))
    return Inventory(entries, base, where, keys=keys, default_key=default_key)
