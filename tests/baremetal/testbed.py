"""A local test bed of real OpenSSH servers ("hosts"), for the tests and the fleet bench.

Each host is a real ``sshd`` on ``127.0.0.1`` at a free high port, with its own host key (which
the caller pins), its own user key, its own directory (config, logs, a ``root/`` where
configuration lands, a ``bin/`` first on the session PATH for stand-in tools such as
``nvidia-smi``). Everything else — the shell, the files, block devices via loop files — is real.
Only loopback is ever targeted. ``Testbed.close()`` kills every sshd and session it started,
detaches its loop devices, and removes the users and sudoers files it added, even after failures.

Needs root and OpenSSH's server (``apt-get install -y openssh-server``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from fullserver.baremetal.inventory import Target, Timeouts, parse_key_line
from fullserver.baremetal.ssh import connect, load_private_key
from tests import leftovers

SSHD = Path("/usr/sbin/sshd")
LOOPBACK = "127.0.0.1"

# Real-format `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` rows (fields in the
# probe's order; persistence_mode is filled in from the stand-in's state).
H100_SXM = "NVIDIA H100 80GB HBM3, GPU-{uuid}, 00000000:{bus:02X}:00.0, 81559, 550.54.15, {pm}"
A100_SXM = "NVIDIA A100-SXM4-80GB, GPU-{uuid}, 00000000:{bus:02X}:00.0, 81920, 535.129.03, {pm}"

NVIDIA_SMI_STANDIN = r"""#!/bin/sh
# Stand-in for nvidia-smi: prints this host's canned rows in real --format=csv,noheader,nounits form.
here=$(cd "$(dirname "$0")/.." && pwd)
state="$here/gpu-persistence"
case "$1" in
  -pm)
    [ -f "$here/gpu-pm-delay" ] && { touch "$here/gpu-pm-started"; sleep "$(cat "$here/gpu-pm-delay")"; }
    if [ "$2" = 1 ]; then echo Enabled > "$state"; else echo Disabled > "$state"; fi
    n=0; while read -r _; do echo "Enabled persistence mode for GPU 00000000:$(printf %02X $((n+24))):00.0."; n=$((n+1)); done < "$here/gpu.csv"
    echo "All done."; exit 0 ;;
  --query-gpu=*)
    [ -f "$here/gpu-broken" ] && { cat "$here/gpu-broken"; exit "$(cat "$here/gpu-broken-rc" 2>/dev/null || echo 0)"; }
    pm=$(cat "$state" 2>/dev/null || echo Disabled)
    fields=${1#--query-gpu=}
    n=0; while IFS= read -r row; do
      printf '%s, %s\n' "$n" "$(echo "$row" | sed "s/@PM@/$pm/")" | awk -F', ' -v f="$fields" '
        BEGIN { k = split("index,name,uuid,pci.bus_id,memory.total,driver_version,persistence_mode", all, ","); for (i = 1; i <= k; i++) pos[all[i]] = i }
        { m = split(f, want, ","); out = ""; for (i = 1; i <= m; i++) out = out (i > 1 ? ", " : "") $(pos[want[i]]); print out }'
      n=$((n+1)); done < "$here/gpu.csv"
    exit 0 ;;
  -q)
    # `-q -x`: this host's canned XML report (real nvidia_smi_log layout; see set_gpu_report)
    [ "$2" = -x ] && [ -f "$here/gpu-q.xml" ] && { cat "$here/gpu-q.xml"; exit 0; } ;;
  topo)
    [ "$2" = -m ] && [ -f "$here/gpu-topo.txt" ] && { cat "$here/gpu-topo.txt"; exit 0; } ;;
esac
echo "stand-in nvidia-smi: unsupported arguments: $*" >&2; exit 2
"""


PROXY_STANDIN = r"""
# Stand-in for a ProxyCommand (gcloud compute start-iap-tunnel ... --listen-on-stdin): connects to
# HOST:PORT and pumps bytes between its stdin/stdout and the socket. Appends one JSON line per run
# to LOG: its argv (the substituted tokens), its pid, and the pid of a helper it started (stubborn).
# MODE: pump; fail (a gcloud-like refusal on stderr, exit 1); silent (never connects); stubborn
# (ignores SIGTERM and starts a helper process in its group, as aws ssm starts its plugin); ssm
# (prints session-manager-plugin's "Starting session" line on stdout, then connects 3 s later);
# nonblock (sets O_NONBLOCK on its stdin as gcloud's --listen-on-stdin does, and writes its stdout
# as gcloud's _StdinSocket.send does: what a non-blocking stdout refuses is lost); environ (also
# logs its environment).
import fcntl, json, os, select, signal, socket, subprocess, sys, time

mode, log, host, port = sys.argv[1:5]
record = {"argv": sys.argv[1:], "pid": os.getpid()}
if mode == "environ":
    record["environ"] = dict(os.environ)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    helper = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    record["helper"] = helper.pid
with open(log, "a") as f:
    f.write(json.dumps(record) + "\n")
if mode == "fail":
    sys.stderr.write("WARNING: noise first\n")
    sys.stderr.write("ERROR: (gcloud.compute.start-iap-tunnel) Error while connecting [4033: 'not authorized'].\n")
    sys.exit(1)
if mode == "silent":
    time.sleep(300)
    sys.exit(0)
if mode == "ssm":
    os.write(1, b"\nStarting session with SessionId: name-0123abcd\n")
    time.sleep(3)
if mode == "nonblock":
    fcntl.fcntl(0, fcntl.F_SETFL, fcntl.fcntl(0, fcntl.F_GETFL) | os.O_NONBLOCK)


def emit(data):
    if mode == "nonblock":
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        except BlockingIOError as exc:
            sys.stderr.write(f"stdout would block: {exc}\n")
        return
    while data:
        data = data[os.write(1, data):]


s = socket.create_connection((host, int(port)))
reading = True
while True:
    ready, _, _ = select.select([0, s] if reading else [s], [], [])
    if 0 in ready:
        data = os.read(0, 65536)
        if data:
            s.sendall(data)
        else:
            s.shutdown(socket.SHUT_WR)
            reading = False
    if s in ready:
        data = s.recv(65536)
        if not data:
            break
        emit(data)
"""


_BRIDGES: list[str] = []  # this process's bridges, so two test beds in one run differ by name


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> tuple[str, str]:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)], check=True)
    return path.read_text(), path.with_suffix(".pub").read_text().strip()


def _children(pid: int) -> list[int]:
    """All descendants of ``pid`` (sshd sessions call setsid, so a process group is not enough)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


@dataclass
class SshdHost:
    name: str
    port: int
    dir: Path
    host_key_line: str
    user_key: str
    user_pub: str
    proc: subprocess.Popen[bytes] | None = None
    extra_users: list[str] = field(default_factory=list)
    address: str = LOOPBACK
    """Where sshd listens: loopback, or the host's own address inside its network namespace."""
    netns: str | None = None
    """The host's own network namespace (``Testbed.add_netns_host``), None on loopback."""

    @property
    def root(self) -> Path:
        """Where this host's configuration lands (its stand-in for ``/``)."""
        return self.dir / "root"

    @property
    def bin(self) -> Path:
        return self.dir / "bin"

    def target(
        self, user: str = "root", timeouts: Timeouts | None = None, host_keys: list[str] | None = None
    ) -> Target:
        keys = tuple(parse_key_line(k, self.name) for k in (host_keys or [self.host_key_line]))
        return Target(
            self.name,
            self.address,
            self.port,
            user,
            keys,
            None,
            timeouts or Timeouts(connect=5, banner=5, auth=5, channel=5, command=30, retry_base=0.2),
        )

    def proxy_command(self, log: Path, mode: str = "pump") -> list[str]:
        """A ``proxyCommand`` argv reaching this host through the stand-in proxy (``PROXY_STANDIN``),
        which logs to ``log``; its last words are the ssh_config tokens, to be substituted."""
        script = self.dir / "proxy-standin.py"
        if not script.exists():
            script.write_text(PROXY_STANDIN)
        return [sys.executable, str(script), mode, str(log), self.address, str(self.port), "%h", "%p", "%r", "%n"]

    def hold_session(self, seconds: float) -> threading.Thread:
        """Another user's SSH session on this host for ``seconds``, already started: join the
        thread to wait for it to end (the idle agent and its report count it as busy)."""

        def hold() -> None:
            other = connect(self.target(), load_private_key(self.user_key, self.name))
            try:
                other.run(f"sleep {seconds}", timeout=20)
            finally:
                other.close()

        holding = threading.Thread(target=hold)
        holding.start()
        return holding

    def authorize(self, user: str, pub: str | None = None) -> None:
        path = self.dir / "authorized_keys" / user
        path.write_text((pub or self.user_pub) + "\n")
        path.chmod(0o644)

    def set_gpus(self, rows: list[str] | None) -> None:
        """Put a stand-in nvidia-smi on this host's PATH printing ``rows`` (None removes it)."""
        tool = self.bin / "nvidia-smi"
        if rows is None:
            tool.unlink(missing_ok=True)
            return
        (self.dir / "gpu.csv").write_text(
            "".join(
                r.format(
                    uuid=f"{abs(hash(self.name)) % 0xFFFFFFFF:08x}-{i:04x}-4000-8000-000000000000",
                    bus=0x18 + i,
                    pm="@PM@",
                )
                + "\n"
                for i, r in enumerate(rows)
            )
        )
        tool.write_text(NVIDIA_SMI_STANDIN)
        tool.chmod(0o755)

    def set_gpu_report(self, xml: str | None, topo: str | None = None) -> None:
        """What the stand-in answers to ``nvidia-smi -q -x`` and ``nvidia-smi topo -m`` (None removes)."""
        for fname, text in (("gpu-q.xml", xml), ("gpu-topo.txt", topo)):
            if text is None:
                (self.dir / fname).unlink(missing_ok=True)
            else:
                (self.dir / fname).write_text(text)

    def mount(self, device: str, path: Path) -> None:
        """Mount ``device`` at ``path`` where this host's sessions see it: a namespace host's sshd
        runs in a mount namespace of its own (``ip netns exec`` unshares one), so the mount is made
        inside it (``nsenter``); it goes away with the host, the loop device with the bed."""
        enter = ["nsenter", "-t", str(self.proc.pid), "-m"] if self.netns and self.proc else []
        subprocess.run([*enter, "mount", device, str(path)], check=True, capture_output=True)

    def stand_in(self, tool: str, script: str | None) -> None:
        """Put a stand-in ``tool`` (a shell script) first on this host's PATH; None removes it."""
        path = self.bin / tool
        if script is None:
            path.unlink(missing_ok=True)
            return
        path.write_text(script)
        path.chmod(0o755)

    def session_pids(self) -> list[int]:
        return _children(self.proc.pid) if self.proc else []

    def pause(self) -> None:
        """SIGSTOP the listener and every session: the host answers TCP but nothing else."""
        if self.proc:
            _signal([self.proc.pid, *self.session_pids()], signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc:
            _signal([self.proc.pid, *self.session_pids()], signal.SIGCONT)

    def kill_sessions(self) -> None:
        """Drop every open connection (as a crash or a cable pull would); the listener stays."""
        _signal(self.session_pids(), signal.SIGKILL)

    def stop(self) -> None:
        if self.proc is None:
            return
        pids = self.session_pids()
        _signal([self.proc.pid, *pids], signal.SIGCONT)
        _signal(pids, signal.SIGKILL)
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc = None


class Testbed:
    """Start hosts with ``add_host``; ``close()`` undoes everything this object did."""

    __test__ = False  # not a pytest class

    def __init__(self, base: Path | None = None) -> None:
        if not SSHD.exists():
            raise RuntimeError(
                f"OpenSSH server not found at {SSHD}: install it (apt-get install -y openssh-server, as .ci/run does)"
            )
        if os.geteuid() != 0:
            raise RuntimeError("the sshd test bed needs root (sshd switches users; loop devices need root)")
        # Its own world-traversable directory: sshd reads authorized keys as the login user.
        # Named for this process (tests/leftovers.py): a run killed before close() is swept by the next.
        self.base = base or leftovers.temp_dir("testbed")
        self.base.mkdir(parents=True, exist_ok=True)
        self.base.chmod(0o755)
        self.hosts: list[SshdHost] = []
        self.users: list[str] = []
        self.loops: list[str] = []
        self.mounts: list[Path] = []
        self.namespaces: list[str] = []
        self.bridge: str | None = None
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self._tag = leftovers.tag()

    def __enter__(self) -> Testbed:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    NETNS_SUBNET = "10.231.{}.{}"
    _third = 0
    """The test bed's own private /24 for namespace hosts (the bridge is .1, hosts from .10)."""

    def add_netns_host(self, name: str, gpus: list[str] | None = None) -> SshdHost:
        """A host in a network namespace of its own, on a veth pair whose root end sits on the test
        bed's bridge: namespace hosts reach each other (iperf3) and the tests reach their sshd on
        port 22 of the host's own address. Only these namespaces and loopback are ever targeted."""
        if self.bridge is None:
            self._add_bridge()
        third = self._third
        i = len(self.namespaces)
        ns = f"{self._tag}-{name}"[:40]
        _ip("netns", "add", ns)
        self.namespaces.append(ns)
        outer, inner = f"{self._tag}v{i}a"[:15], f"{self._tag}v{i}b"[:15]
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", ns)
        _ip("link", "set", outer, "master", str(self.bridge), "up")
        address = self.NETNS_SUBNET.format(third, 10 + i)
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", inner)
        _ip("-n", ns, "link", "set", inner, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        return self.add_host(name, gpus, address=address, netns=ns)

    def _add_bridge(self) -> None:
        """The bridge on a /24 no other interface of the machine holds: two test runs at once (or
        two test beds in one run) each get their own subnet. Choosing and claiming happen under
        one lock, so two runs cannot pick the same free /24 at the same moment."""
        bridge = self.bridge = f"fsb{os.getpid()}b{len(_BRIDGES)}"  # fsb<pid>: the leftovers sweep reads the owner
        _BRIDGES.append(bridge)
        with open("/run/fullserver-testbed.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            held = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=True).stdout
            start = os.getpid() % 200
            free = (20 + (start + k) % 200 for k in range(200))
            self._third = next(t for t in free if f" {self.NETNS_SUBNET.format(t, '')}" not in held)
            _ip("link", "add", bridge, "type", "bridge")
            _ip("addr", "add", f"{self.NETNS_SUBNET.format(self._third, 1)}/24", "dev", bridge)
        _ip("link", "set", bridge, "up")

    def add_host(
        self, name: str, gpus: list[str] | None = None, *, address: str = LOOPBACK, netns: str | None = None
    ) -> SshdHost:
        d = self.base / name
        for sub in ("bin", "root", "authorized_keys", "keys"):
            (d / sub).mkdir(parents=True, exist_ok=True)
            (d / sub).chmod(0o755 if sub != "keys" else 0o700)
        d.chmod(0o755)
        _, host_pub = _keygen(d / "keys" / "ssh_host_ed25519_key")
        user_key, user_pub = _keygen(d / "keys" / "user_key")
        host = SshdHost(name, 0, d, " ".join(host_pub.split()[:2]), user_key, user_pub, address=address, netns=netns)
        host.authorize("root")
        for user in self.users:
            host.authorize(user)
        host.set_gpus(gpus)
        self.hosts.append(host)
        self.start(host)
        return host

    def start(self, host: SshdHost) -> None:
        last = ""
        for _ in range(5):
            host.port = free_port() if host.netns is None else 22
            config = host.dir / "sshd_config"
            config.write_text(
                "\n".join(
                    [
                        f"Port {host.port}",
                        f"ListenAddress {host.address}",
                        f"HostKey {host.dir / 'keys' / 'ssh_host_ed25519_key'}",
                        f"PidFile {host.dir / 'sshd.pid'}",
                        f"AuthorizedKeysFile {host.dir / 'authorized_keys'}/%u",
                        "StrictModes no",
                        "UsePAM no",
                        "PasswordAuthentication no",
                        "KbdInteractiveAuthentication no",
                        "PubkeyAuthentication yes",
                        "PermitRootLogin prohibit-password",
                        "AllowAgentForwarding no",
                        "AllowTcpForwarding yes",
                        "X11Forwarding no",
                        "PrintMotd no",
                        "MaxStartups 200:30:400",
                        "MaxSessions 20",
                        # SHLVL=1: bash run by sshd then skips the machine's own ~/.bashrc (bash
                        # reads it for ssh only at shell level 1). Root's here runs `pyenv init`:
                        # 180 ms and a shared rehash lock per command, a minute-long wait for
                        # every session once a killed run leaves that lock behind.
                        f"SetEnv PATH={host.bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SHLVL=1",
                        "LogLevel VERBOSE",
                        "",
                    ]
                )
            )
            log = (host.dir / "sshd.log").open("ab")
            netns = ["ip", "netns", "exec", host.netns] if host.netns else []
            host.proc = subprocess.Popen(
                [*netns, str(SSHD), "-D", "-e", "-f", str(config)],
                stdout=subprocess.DEVNULL,
                stderr=log,
                stdin=subprocess.DEVNULL,
            )
            log.close()
            if self._wait_banner(host):
                return
            last = (host.dir / "sshd.log").read_text(errors="replace")[-300:]
            host.stop()
        raise RuntimeError(f"sshd for {host.name} did not start: {last}")

    @staticmethod
    def _wait_banner(host: SshdHost, within: float = 10.0) -> bool:
        end = time.monotonic() + within
        while time.monotonic() < end:
            if host.proc is None or host.proc.poll() is not None:
                return False
            try:
                with socket.create_connection((host.address, host.port), timeout=1) as s:
                    if s.recv(64).startswith(b"SSH-2.0"):
                        return True
            except OSError:
                time.sleep(0.05)
        return False

    def add_user(self, suffix: str, *, sudo: bool) -> str:
        """A real local user that every host lets in with its user key; with or without NOPASSWD sudo."""
        name = f"{self._tag}{suffix}"[:32]
        home = self.base / "home" / name
        home.parent.mkdir(parents=True, exist_ok=True)
        home.parent.chmod(0o755)
        subprocess.run(["useradd", "-m", "-d", str(home), "-s", "/bin/sh", name], check=True, capture_output=True)
        self.users.append(name)
        subprocess.run(["usermod", "-p", "*", name], check=True, capture_output=True)  # '*' = no password, not locked
        if sudo:
            rule = Path(f"/etc/sudoers.d/{name}")
            # !secure_path: sudo keeps the session PATH, so stand-in tools in the host bin/ are found.
            rule.write_text(f"Defaults:{name} !secure_path\n{name} ALL=(ALL) NOPASSWD: ALL\n")
            rule.chmod(0o440)
        for host in self.hosts:
            host.authorize(name)
        return name

    def loop_device(self, name: str, size_mib: int = 64) -> str:
        """A real block device backed by a sparse file under the test bed."""
        image = self.base / "disks" / f"{name}.img"
        image.parent.mkdir(parents=True, exist_ok=True)
        with image.open("wb") as f:
            f.truncate(size_mib << 20)
        dev = subprocess.run(
            ["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True
        ).stdout.strip()
        self.loops.append(dev)
        return dev

    def close(self) -> None:
        errors: list[str] = []
        for host in self.hosts:
            try:
                host.stop()
            except Exception as exc:  # keep cleaning up the rest
                errors.append(f"{host.name}: {exc}")
        raw = subprocess.run(["findmnt", "-rn", "-o", "TARGET"], capture_output=True, text=True).stdout.split()
        # findmnt -r writes spaces and other specials as \xNN: decode them (mountpoints with spaces)
        mounted = [re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), t) for t in raw]
        for target in sorted((m for m in mounted if m.startswith(str(self.base))), reverse=True):
            subprocess.run(["umount", "-l", target], capture_output=True)
        for dev in self.loops:
            subprocess.run(["losetup", "-d", dev], capture_output=True)
        for ns in self.namespaces:  # deleting a namespace deletes its veth end, and so the pair
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
        if self.bridge is not None:
            subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True)
        self.namespaces, self.bridge = [], None
        for user in self.users:
            subprocess.run(["userdel", "-f", user], capture_output=True)
            Path(f"/etc/sudoers.d/{user}").unlink(missing_ok=True)
        self.hosts, self.loops, self.users = [], [], []
        shutil.rmtree(self.base, ignore_errors=True)
        if errors:
            raise RuntimeError("test bed cleanup: " + "; ".join(errors))
