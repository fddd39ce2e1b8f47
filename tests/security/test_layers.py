"""Each hardening layer alone against raw Python in the worker (mode "os": no transpiler, no
RestrictedPython, full builtins).

The test-only switch is `run_worker(..., layers={...})`: the start frame names the layers to
apply, and only the trusted side (tests, `fdsl audit --layers`) can set it. For every attack:

- `baseline`: with no layer at all the attack really works (the test is not vacuous);
- `alone`: with each layer alone, either the attack fails with the very error (or effect) that
  layer produces, or the attack succeeds and the test names the layers that stop it instead;
- `all`: the full hardening stops it.

What a layer stops depends on the machine and on who runs the broker: the uid layer only acts
when the worker starts as root (as any other user `harden` reports it "not needed" and it stops
nothing), the netns layer makes a user namespace first when not root (which also cuts ptrace
access to the parent), Landlock's network and signal rules need ABI 4 and 6. `stops()` is the
table, computed from those facts and from the uid status the run itself reports.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import socket
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from runtime.broker import Broker
from runtime.supervisor import Limits, run_worker
from sandbox_worker.hardening import landlock_abi
from tests.security.conftest import AHEAD, FORKED, run_os
from tests.support import CANARY
from wire.layers import LAYERS, is_active

ROOT = os.geteuid() == 0
USERNS = not ROOT  # apply_netns: unprivileged, the net namespace comes with a new user namespace
LANDLOCK_ABI = landlock_abi()
# /proc/<pid>/environ shows the environment a process started with: take one entry of ours.
with open("/proc/self/environ", "rb") as _environ:
    ENV_MARKER = (_environ.read().split(b"\0")[0].decode("utf-8", "replace") or "\0never\0")[:60]


def _nobody_can_read(path: Path) -> bool:
    """Whether uid 65534 (no groups) can reach and read `path`: "other" bits all the way down."""
    if not os.stat(path).st_mode & stat.S_IROTH:
        return False
    return all(os.stat(parent).st_mode & stat.S_IXOTH for parent in path.parents)


# The stdlib the worker would import `subprocess` from, as the dropped uid sees it.
STDLIB_READABLE_BY_NOBODY = _nobody_can_read(Path(subprocess.__file__))
DESCRIPTORS_WANTED = 1000  # far beyond the worker's 3; the attack stops there to spare the machine
DISK_MIB = 64


@dataclass(frozen=True)
class CpuLimits(Limits):
    """A CPU-time limit far below the wall clock, so RLIMIT_CPU is what fires."""

    def worker_limits(self) -> dict:
        return {**super().worker_limits(), "cpu_seconds": 1}


SHM_KEY = 0x5EED0000 + (os.getpid() & 0xFFFF)


@pytest.fixture(scope="module", autouse=True)
def shm_canary():
    """A SysV shared memory segment holding the canary, as another process of the host would."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(SHM_KEY, 4096, 0o1000 | 0o600)  # IPC_CREAT
    assert shmid >= 0, os.strerror(ctypes.get_errno())
    address = libc.shmat(shmid, None, 0)
    ctypes.memmove(address, CANARY.encode() + b"\0", len(CANARY) + 1)
    libc.shmdt(ctypes.c_void_p(address))
    yield shmid
    libc.shmctl(shmid, 0, None)  # IPC_RMID


@pytest.fixture
def parent_signals():
    """SIGWINCH received by this process (the worker's parent): harmless, but observable."""
    received: list[int] = []
    previous = signal.signal(signal.SIGWINCH, lambda signum, frame: received.append(signum))
    yield received
    signal.signal(signal.SIGWINCH, previous)


_CTYPES = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
_CHECK = (
    "def check(r, what):\n"
    "    if r == -1: raise OSError(ctypes.get_errno(), what + ': ' + os.strerror(ctypes.get_errno()))\n"
)

# attack name -> code (format fields: canary, target, port, parent). Every failing call raises OSError
# with its errno, so each layer's own error can be told apart from a mistake in the attack.
ATTACKS = {
    "read_canary": "print(open({canary!r}).read())",
    "write_file": "open({target!r}, 'w').write('x' * (1 << 20))\nprint('ESCAPED')",
    "connect_loopback": (
        _CTYPES + _CHECK + "import struct\n"
        "s = libc.socket(2, 1, 0)\ncheck(s, 'socket')\n"
        "addr = struct.pack('=H', 2) + struct.pack('!H', {port}) + bytes([127, 0, 0, 1]) + bytes(8)\n"
        "check(libc.connect(s, addr, 16), 'connect')\n"
        "print('ESCAPED')"
    ),
    "fork": "pid = os.fork()\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0)\nprint('ESCAPED')",
    # The subprocess module is not among the worker's start-up imports: the script imports it.
    "subprocess": "import subprocess\nsubprocess.run(['/bin/true'], check=True)\nprint('ESCAPED')",
    # posix_spawn is already in the worker (the os module): the launch itself, without an import.
    "posix_spawn": "pid = os.posix_spawn('/bin/true', ['true'], {{}})\nprint('ESCAPED')\nos.waitpid(pid, 0)",
    "execv": "os.execv('/bin/sh', ['sh', '-c', 'exit 42'])",
    "signal_parent": "os.kill({parent}, 0)\nprint('ESCAPED')",
    # PTRACE_SEIZE does not stop the parent; the worker's exit detaches it.
    "ptrace_parent": _CTYPES + _CHECK + "check(libc.ptrace(0x4206, {parent}, 0, 0), 'ptrace')\nprint('ESCAPED')",
    "parent_environ": "print(open('/proc/{parent}/environ', 'rb').read().decode('utf-8', 'replace'))",
    # The parent's RLIMIT_CORE set to what it already is: the permission is the whole attack.
    "prlimit_parent": (
        "import resource\ncore = resource.prlimit({parent}, resource.RLIMIT_CORE)\n"
        "resource.prlimit({parent}, resource.RLIMIT_CORE, core)\nprint('ESCAPED')"
    ),
    # The kernel signals the owner of fd 1 whenever the parent reads it: SIGWINCH (28) to the parent.
    "sigio_parent": (
        _CTYPES + _CHECK + "import time\n"
        "check(libc.fcntl(1, 8, {parent}), 'F_SETOWN')\n"
        "check(libc.fcntl(1, 10, 28), 'F_SETSIG')\n"
        "check(libc.fcntl(1, 4, libc.fcntl(1, 3) | 0o20000), 'F_SETFL O_ASYNC')\n"
        "print('armed')\ntime.sleep(0.2)\nprint('armed again')"
    ),
    # fd 2 closed so open() gets a descriptor even under RLIMIT_NOFILE 3: what stops the
    # writes is then RLIMIT_FSIZE (EFBIG: Python ignores SIGXFSZ).
    "disk_exhaustion": (
        "os.close(2)\nfd = os.open({target!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)\n"
        f"chunk = b'x' * (1 << 20)\nfor _ in range({DISK_MIB}): os.write(fd, chunk)\nprint('ESCAPED')"
    ),
    # A canary in another process's SysV shared memory segment (SHM_KEY, made by the fixture).
    "sysv_shm_canary": (
        _CTYPES + _CHECK + "libc.shmat.restype = ctypes.c_void_p\n"
        "shmid = libc.shmget({shm_key}, 0, 0)\ncheck(shmid, 'shmget')\n"
        "address = libc.shmat(shmid, None, 0o10000)\n"  # SHM_RDONLY
        "if address in (None, 2**64 - 1): raise OSError(ctypes.get_errno(), 'shmat')\n"
        "print(ctypes.string_at(address, 64).split(b'\\0')[0].decode())"
    ),
    # getxattrat (kernel 6.13): the token in an extended attribute of a file outside the root.
    "xattr_token": (
        _CTYPES + _CHECK + "import struct\n"
        "value = ctypes.create_string_buffer(256)\n"
        "args = struct.pack('<QII', ctypes.addressof(value), 256, 0)\n"
        "n = libc.syscall(ctypes.c_long(464), ctypes.c_long(-100), ctypes.c_char_p({canary!r}.encode()), 0,"
        " ctypes.c_char_p(b'user.fdsl_token'), ctypes.c_char_p(args), ctypes.c_size_t(len(args)))\n"
        "check(n, 'getxattrat')\nprint(value.raw[:n].decode())"
    ),
    "getpgid_parent": "os.getpgid({parent})\nprint('ESCAPED')",
    # The host's name (utsns: the worker sees "sandbox").
    "hostname": "name = os.uname().nodename\nprint('ESCAPED' if name == {hostname!r} else 'armed')",
    "descriptor_exhaustion": (
        "n = 0\ntry:\n"
        f"    while n < {DESCRIPTORS_WANTED}:\n        os.dup(0)\n        n += 1\n"
        "except OSError as exc:\n    raise OSError(exc.errno, f'after {{n}} descriptors: {{exc.strerror}}')\n"
        "print('ESCAPED')"
    ),
}


@dataclass(frozen=True)
class Stop:
    """How a layer stops an attack: the call fails with `errno` (or with `text` in the message),
    or, `silent`, the call succeeds and has no effect."""

    errno: int | None = None
    text: str | None = None
    silent: bool = False

    def check(self, result, output: str) -> None:
        if self.silent:
            assert result.status == "ok" and "armed" in output, (result, output)
            return
        assert result.status == "error", (result, output)
        assert result.error["kind"] == "RuntimeError", result.error
        expected = self.text if self.text is not None else f"[Errno {self.errno}]"
        assert expected in result.error["msg"], (expected, result.error)


EACCES, EPERM, EMFILE, ESRCH = Stop(errno.EACCES), Stop(errno.EPERM), Stop(errno.EMFILE), Stop(errno.ESRCH)


def stops(name: str, uid_active: bool) -> dict[str, Stop]:
    """attack -> {layer: how that layer alone stops it}. `uid_active`: the uid layer dropped root."""
    uid = {"uid": EACCES} if uid_active else {}  # pytest's tmp dirs are 0700 root
    table = {
        # seccomp refuses every open after start-up too (a jail without Landlock keeps no files).
        "read_canary": {**uid, "landlock": EACCES, "seccomp": EPERM, "rlimits": EMFILE},
        "write_file": {**uid, "landlock": EACCES, "seccomp": EPERM, "rlimits": EMFILE},
        "connect_loopback": {"netns": Stop(errno.ENETUNREACH), "seccomp": EPERM, "rlimits": EMFILE}
        | ({"landlock": EACCES} if LANDLOCK_ABI >= 4 else {}),
        # As root RLIMIT_NPROC is not enforced: rlimits stop a fork only together with uid.
        "fork": {"seccomp": EPERM} | ({} if ROOT else {"rlimits": Stop(errno.EAGAIN)}),
        # Landlock and rlimits stop the import already (the module's file cannot be opened);
        # the dropped uid too when the stdlib lives where nobody cannot look.
        "subprocess": {"seccomp": EPERM, "landlock": EACCES, "rlimits": EMFILE}
        | ({"uid": Stop(text="No module named 'subprocess'")} if uid_active and not STDLIB_READABLE_BY_NOBODY else {}),
        "posix_spawn": {"seccomp": EPERM, "landlock": EACCES} | ({} if ROOT else {"rlimits": Stop(errno.EAGAIN)}),
        "execv": {"seccomp": EPERM, "landlock": EACCES},
        "signal_parent": {"seccomp": EPERM, "pidns": ESRCH} | ({"uid": EPERM} if uid_active else {})
        | ({"landlock": EPERM} if LANDLOCK_ABI >= 6 else {}),
        "ptrace_parent": {"seccomp": EPERM, "landlock": EPERM, "pidns": ESRCH} | ({"uid": EPERM} if uid_active else {})
        | ({"netns": EPERM} if USERNS else {}),  # the parent is outside the worker's user namespace
        "parent_environ": {**uid, "landlock": EACCES, "seccomp": EPERM, "rlimits": EMFILE}
        | ({"netns": EACCES} if USERNS else {}),
        "prlimit_parent": {"seccomp": EPERM, "pidns": ESRCH} | ({"uid": EPERM} if uid_active else {}),
        # The owner is recorded, but the kernel (other uid) or Landlock (signal scope) never signals.
        "sigio_parent": {"seccomp": EPERM, "pidns": ESRCH} | ({"uid": Stop(silent=True)} if uid_active else {})
        | ({"landlock": Stop(silent=True)} if LANDLOCK_ABI >= 6 else {}),
        "disk_exhaustion": {**uid, "landlock": EACCES, "seccomp": EPERM, "rlimits": Stop(errno.EFBIG)},
        "descriptor_exhaustion": {"rlimits": EMFILE},
        "sysv_shm_canary": {"ipcns": Stop(errno.ENOENT), "seccomp": EPERM} | ({"uid": EACCES} if uid_active else {}),
        "xattr_token": {"seccomp": EPERM} | ({"uid": EACCES} if uid_active else {}),
        "getpgid_parent": {"seccomp": EPERM, "pidns": ESRCH},
        "hostname": {"seccomp": EPERM, "utsns": Stop(silent=True)},
    }
    return table[name]


@dataclass
class Scene:
    tmp_path: Path
    parent_signals: list


def attack_code(name: str, sandbox, tmp_path, port: int) -> str:
    _, canary = sandbox
    target = tmp_path / ("disk.bin" if name == "disk_exhaustion" else "written.bin")
    # The broker by its host pid (not getppid(): in a PID namespace that is 0, the worker's own group).
    if name == "xattr_token":
        os.setxattr(canary, "user.fdsl_token", CANARY.encode())
    return "import os\n" + ATTACKS[name].format(canary=str(canary), target=str(target), port=port, parent=os.getpid(),
                                                shm_key=SHM_KEY, hostname=socket.gethostname())


def escaped(name: str, result, output: str, scene: Scene) -> bool:
    if name == "execv":  # the worker was replaced: by sh (42), or by a loader that failed after exec (127)
        message = (result.error or {}).get("msg", "")
        return result.status == "crash" and ("status 42 " in message or "status 127 " in message)
    if name == "write_file" and (scene.tmp_path / "written.bin").exists():
        return True
    if name == "disk_exhaustion":
        written = scene.tmp_path / "disk.bin"
        return written.exists() and written.stat().st_size > 0
    if name == "sigio_parent":
        return bool(scene.parent_signals)
    return "ESCAPED" in output or CANARY in output or ENV_MARKER in output


def run_attack(name, layers, sandbox, tmp_path, listener, parent_signals):
    result, output = run_os(attack_code(name, sandbox, tmp_path, listener), layers=layers)
    return result, output, escaped(name, result, output, Scene(tmp_path, parent_signals))


def test_every_layer_has_a_name_and_is_applied_by_default():
    result, _ = run_os("pass", layers=None)
    assert result.status == "ok"
    assert set(result.layers) == set(LAYERS)
    assert all(is_active(status) for status in result.layers.values()), result.layers


@pytest.mark.parametrize("name", list(ATTACKS))
def test_baseline_attack_works_without_layers(name, sandbox, tmp_path, listener, parent_signals):
    result, output, got_out = run_attack(name, (), sandbox, tmp_path, listener, parent_signals)
    assert set(result.layers.values()) == {"off"}
    assert got_out, (result, output)


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("name", list(ATTACKS))
def test_layer_alone(name, layer, sandbox, tmp_path, listener, parent_signals):
    result, output, got_out = run_attack(name, {layer}, sandbox, tmp_path, listener, parent_signals)
    status = result.layers[layer]
    assert is_active(status), result.layers
    assert all(result.layers[other] == "off" for other in LAYERS if other not in (layer, "no_new_privs")), result.layers
    table = stops(name, uid_active=result.layers["uid"] == "active")
    if layer in table:
        assert not got_out, f"{layer} ({status}) was expected to stop {name}: {result} {output!r}"
        table[layer].check(result, output)
    else:
        # Not this layer's job: the attack works with it alone; the table names who stops it.
        assert got_out, f"{name} with only {layer} ({status}): expected to succeed, stopped by {sorted(table)} instead; got {result} {output!r}"


@pytest.mark.parametrize("layers", [pytest.param(None, id="all"), pytest.param(AHEAD, id="ahead"), pytest.param(FORKED, id="forked")])
@pytest.mark.parametrize("name", list(ATTACKS))
def test_all_layers_stop(name, layers, sandbox, tmp_path, listener, parent_signals):
    result, output, got_out = run_attack(name, layers, sandbox, tmp_path, listener, parent_signals)
    assert not got_out, (result, output)
    assert result.status == "error", (result, output)
    assert all(is_active(status) for status in result.layers.values()), result.layers


@pytest.mark.skipif(not ROOT, reason="the uid layer only drops privileges when started as root")
def test_fork_as_root_is_stopped_by_rlimits_with_uid():
    result, output = run_os("import os\npid = os.fork()\nif pid == 0: os._exit(0)\nprint('ESCAPED')", layers={"uid", "rlimits"})
    assert result.status == "error" and "ESCAPED" not in output
    assert "BlockingIOError" in result.error["msg"]


def test_no_new_privs_alone_is_in_force_after_exec():
    """no_new_privs stops no attack above by itself: it is what lets an unprivileged process
    install Landlock and seccomp, and it survives exec (a setuid binary gains nothing)."""
    code = "print([l for l in open('/proc/self/status').read().splitlines() if l.startswith('NoNewPrivs')][0])"
    result, output = run_os(code, layers={"no_new_privs"})
    assert result.status == "ok" and output.split() == ["NoNewPrivs:", "1"]
    baseline, output = run_os(code, layers=())
    assert baseline.status == "ok" and output.split() == ["NoNewPrivs:", "0"]


# Resource attacks and crashes: not stopped by a layer but by the supervisor unless the layer
# under test is rlimits. Each runs with every layer alone, with none and with all.
CONFIGS = [pytest.param(None, id="all"), pytest.param(AHEAD, id="ahead"), pytest.param(FORKED, id="forked"), pytest.param((), id="none")] + \
    [pytest.param((layer,), id=layer) for layer in LAYERS]


@pytest.mark.parametrize("layers", CONFIGS)
def test_native_crash_through_ctypes_is_a_crash(layers):
    started = time.monotonic()
    result, _ = run_os("import ctypes\nctypes.string_at(0)", layers=layers)
    assert result.status == "crash"
    assert "crashed (SIGSEGV)" in result.error["msg"]
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("layers", CONFIGS)
def test_memory_exhaustion(layers):
    """RLIMIT_AS fails the allocation inside the script (an error with its line); without
    rlimits the pages really get allocated and the broker's resident-size watch kills the worker."""
    result, _ = run_os("import time\nx = b'x' * (400 << 20)\ntime.sleep(5)", layers=layers, memory_mb=128)
    assert result.status == "error"
    if layers is None or "rlimits" in layers:
        assert result.error["kind"] == "LimitError" and result.error["msg"] == "memory limit exceeded (128 MiB)"
        assert result.error["line"] == 2, result.error
    else:
        assert result.error == {"kind": "LimitError", "msg": "memory limit exceeded (128 MiB)"}


@pytest.mark.parametrize("layers", CONFIGS)
def test_cpu_exhaustion(layers):
    """RLIMIT_CPU kills a spinning worker with SIGXCPU; without rlimits the deadline does."""
    if layers is None or "rlimits" in layers:
        result, _ = run_os("while True:\n    pass", layers=layers, limits=CpuLimits(timeout=10))
        assert result.status == "error"
        assert result.error == {"kind": "LimitError", "msg": "CPU time limit exceeded"}
    else:
        started = time.monotonic()
        result, _ = run_os("while True:\n    pass", layers=layers, limits=CpuLimits(timeout=1.0))
        assert result.status == "timeout" and time.monotonic() - started < 3


@pytest.mark.parametrize("layers", CONFIGS)
def test_sleeping_past_the_deadline_is_stopped_by_the_supervisor(layers):
    started = time.monotonic()
    result, _ = run_os("import time\ntime.sleep(30)", layers=layers, timeout=1.0)
    assert result.status == "timeout"
    assert time.monotonic() - started < 3


def test_strict_isolation_refuses_when_a_layer_is_missing():
    output: list[str] = []
    deadline = time.monotonic() + 10
    result = run_worker(
        "print('RAN')", Broker({"ping": lambda: None}), Limits(timeout=10), deadline, output.append,
        mode="os", layers=frozenset({"rlimits"}), isolation="strict",
    )
    assert result.status == "error" and "RAN" not in "".join(output)
    assert result.error["kind"] == "SandboxError"
    assert "isolation strict" in result.error["msg"] and "seccomp: off" in result.error["msg"]


def test_a_script_cannot_forge_a_second_ready_frame():
    code = "from wire import protocol\nprotocol.write_frame(1, {'t': 'ready', 'layers': {}})\nimport time\ntime.sleep(5)"
    result, _ = run_os(code, layers=None)
    assert result.status == "crash" and "broke the protocol" in result.error["msg"]
    assert result.layers["seccomp"] == "active"


def _host_segments() -> set[str]:
    with open("/proc/sysvipc/shm") as table:
        return {line.split()[1] for line in table.read().splitlines()[1:]}


@pytest.mark.parametrize("layers", [pytest.param(None, id="all"), pytest.param(("ipcns",), id="ipcns"),
                                    pytest.param(("seccomp",), id="seccomp"), pytest.param((), id="none")])
def test_no_sysv_segment_outlives_the_run(layers):
    """A worker that makes shared memory segments and leaves them: without the IPC namespace
    they stay pinned on the host after the run (1.6 GB once); with it they die with the run."""
    code = (_CTYPES + "made = 0\nfor _ in range(4):\n    made += libc.shmget(0, 1 << 20, 0o1000 | 0o600) >= 0\n"
            "print('made', made)\n")
    before = _host_segments()
    result, output = run_os(code, layers=layers)
    left = _host_segments() - before
    try:
        assert result.status == "ok", (result, output)
        if layers == ():
            assert output == "made 4\n" and len(left) == 4  # the baseline: real, and pinned
        else:
            assert not left, left
            assert output == ("made 0\n" if layers == ("seccomp",) or layers is None else "made 4\n")
    finally:
        libc = ctypes.CDLL(None, use_errno=True)
        for shmid in left:
            libc.shmctl(int(shmid), 0, None)
