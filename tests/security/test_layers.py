"""Each hardening layer alone against raw Python in the worker (mode "os": no transpiler, no
RestrictedPython, full builtins).

The test-only switch is `run_worker(..., layers={...})`: the start frame names the layers to
apply, and only the trusted side (tests, `fdsl audit --layers`) can set it. For every attack:

- `baseline`: with no layer at all the attack really works (the test is not vacuous);
- `alone`: each layer listed in STOPPED_BY stops it on its own;
- `all`: the full hardening stops it.

A layer absent from an attack's STOPPED_BY row does not stop it alone; the row says which do.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass

import pytest

from runtime.broker import Broker
from runtime.supervisor import Limits, run_worker
from sandbox_worker.hardening import LAYERS, landlock_abi
from tests.conftest import CANARY

ROOT = os.geteuid() == 0
LANDLOCK_ABI = landlock_abi()
# /proc/<pid>/environ shows the environment a process started with: take one entry of ours.
with open("/proc/self/environ", "rb") as _environ:
    ENV_MARKER = (_environ.read().split(b"\0")[0].decode("utf-8", "replace") or "\0never\0")[:60]


@dataclass(frozen=True)
class CpuLimits(Limits):
    """A CPU-time limit far below the wall clock, so RLIMIT_CPU is what fires."""

    def worker_limits(self) -> dict:
        return {**super().worker_limits(), "cpu_seconds": 1}


def run_os(code: str, layers, timeout: float = 10.0, memory_mb: int = 256, limits: Limits | None = None):
    output: list[str] = []
    limits = limits or Limits(timeout=timeout, memory_mb=memory_mb, max_output=100_000)
    deadline = time.monotonic() + limits.timeout
    result = run_worker(code, Broker({"ping": lambda: None}), limits, deadline, output.append, mode="os", layers=None if layers is None else frozenset(layers))
    return result, "".join(output)


@pytest.fixture
def listener():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


# attack name -> code template (format fields: canary, target, port). Success prints ESCAPED.
ATTACKS = {
    "read_canary": "print(open({canary!r}).read())",
    "write_file": "open({target!r}, 'w').write('x' * (50 << 20))\nprint('ESCAPED')",
    "connect_loopback": (
        "import ctypes, struct\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "s = libc.socket(2, 1, 0)\n"
        "if s < 0: raise OSError(ctypes.get_errno(), 'socket: ' + os.strerror(ctypes.get_errno()))\n"
        "addr = struct.pack('=H', 2) + struct.pack('!H', {port}) + bytes([127, 0, 0, 1]) + bytes(8)\n"
        "if libc.connect(s, addr, 16) != 0: raise OSError(ctypes.get_errno(), 'connect: ' + os.strerror(ctypes.get_errno()))\n"
        "print('ESCAPED')"
    ),
    "fork": "pid = os.fork()\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0)\nprint('ESCAPED')",
    "subprocess": "pid = os.posix_spawn('/bin/true', ['true'], {{}})\n_, status = os.waitpid(pid, 0)\nif status == 0: print('ESCAPED')",
    "execv": "os.execv('/bin/sh', ['sh', '-c', 'exit 42'])",
    "signal_parent": "os.kill(os.getppid(), 0)\nprint('ESCAPED')",
    "ptrace_parent": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "if libc.ptrace(0x4206, os.getppid(), 0, 0) != 0: raise OSError(ctypes.get_errno(), 'ptrace: ' + os.strerror(ctypes.get_errno()))\n"
        "print('ESCAPED')"
    ),
    "parent_environ": "print(open('/proc/%d/environ' % os.getppid(), 'rb').read().decode('utf-8', 'replace'))",
}

# attack -> the layers that stop it alone on this machine.
STOPPED_BY = {
    "read_canary": {"uid", "landlock", "rlimits"},  # uid: pytest's tmp dirs are 0700 root
    "write_file": {"uid", "landlock", "rlimits"},
    "connect_loopback": {"netns", "seccomp", "rlimits"} | ({"landlock"} if LANDLOCK_ABI >= 4 else set()),
    # As root RLIMIT_NPROC is not enforced: rlimits stop a fork only together with uid.
    "fork": {"seccomp"} | (set() if ROOT else {"rlimits"}),
    "subprocess": {"seccomp", "landlock"},
    "execv": {"seccomp", "landlock"},
    "signal_parent": {"seccomp", "uid"} | ({"landlock"} if LANDLOCK_ABI >= 6 else set()),
    "ptrace_parent": {"seccomp", "uid", "landlock"},
    "parent_environ": {"uid", "landlock", "rlimits"},
}
# Attacks harmless enough to let succeed once with no layer (ptrace of pytest is not).
BASELINE = ["read_canary", "write_file", "connect_loopback", "fork", "subprocess", "execv", "signal_parent", "parent_environ"]
if not ROOT:
    for attack in ("read_canary", "write_file", "signal_parent", "parent_environ"):
        BASELINE.remove(attack)  # the parent's files and process are ours: no uid boundary to cross


def attack_code(name: str, sandbox, tmp_path, port: int) -> str:
    _, canary = sandbox
    return "import os\n" + ATTACKS[name].format(canary=str(canary), target=str(tmp_path / "written.bin"), port=port)


def escaped(name: str, result, output: str, tmp_path) -> bool:
    if name == "execv":
        return result.status == "crash" and "status 42" in (result.error or {}).get("msg", "")
    if name == "write_file" and (tmp_path / "written.bin").exists():
        return True
    return "ESCAPED" in output or CANARY in output or ENV_MARKER in output


def test_every_layer_has_a_name_and_is_applied_by_default():
    result, _ = run_os("pass", layers=None)
    assert result.status == "ok"
    assert set(result.layers) == set(LAYERS)


@pytest.mark.parametrize("name", BASELINE)
def test_baseline_attack_works_without_layers(name, sandbox, tmp_path, listener):
    result, output = run_os(attack_code(name, sandbox, tmp_path, listener), layers=())
    assert set(result.layers.values()) == {"off"}
    assert escaped(name, result, output, tmp_path), (result, output)


@pytest.mark.parametrize(
    "name,layer", [(name, layer) for name in ATTACKS for layer in LAYERS if layer in STOPPED_BY[name]]
)
def test_layer_alone_stops(name, layer, sandbox, tmp_path, listener):
    result, output = run_os(attack_code(name, sandbox, tmp_path, listener), layers={layer})
    assert result.layers[layer] == "active" or result.layers[layer].startswith("not needed")
    assert result.status == "error", (result, output)
    assert not escaped(name, result, output, tmp_path), (result, output)
    assert result.error["kind"] == "RuntimeError"
    assert any(word in result.error["msg"] for word in ("PermissionError", "OSError", "Error")), result.error


@pytest.mark.parametrize("name", list(ATTACKS))
def test_all_layers_stop(name, sandbox, tmp_path, listener):
    result, output = run_os(attack_code(name, sandbox, tmp_path, listener), layers=None)
    assert result.status == "error", (result, output)
    assert not escaped(name, result, output, tmp_path)


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


@pytest.mark.parametrize("layers", [None, ()], ids=["all", "none"])
def test_native_crash_through_ctypes_is_a_crash(layers):
    started = time.monotonic()
    result, _ = run_os("import ctypes\nctypes.string_at(0)", layers=layers)
    assert result.status == "crash"
    assert "crashed (SIGSEGV)" in result.error["msg"]
    assert time.monotonic() - started < 5


def test_memory_exhaustion_stopped_by_rlimits_alone():
    result, _ = run_os("x = b'x' * (1 << 30)", layers={"rlimits"}, memory_mb=128)
    assert result.status == "error"
    assert result.error["kind"] == "LimitError" and "memory limit exceeded (128 MiB)" in result.error["msg"]


def test_memory_exhaustion_without_rlimits_is_stopped_by_the_broker_watch():
    result, _ = run_os("x = b'x' * (600 << 20)\nimport time\ntime.sleep(5)", layers=(), memory_mb=64)
    assert result.status == "error"
    assert result.error == {"kind": "LimitError", "msg": "memory limit exceeded (64 MiB)"}


def test_cpu_exhaustion_stopped_by_rlimits_alone():
    result, _ = run_os("while True:\n    pass", layers={"rlimits"}, limits=CpuLimits(timeout=10))
    assert result.status == "error"
    assert result.error == {"kind": "LimitError", "msg": "CPU time limit exceeded"}


def test_cpu_exhaustion_without_rlimits_is_stopped_by_the_deadline():
    started = time.monotonic()
    result, _ = run_os("while True:\n    pass", layers=(), timeout=1.0)
    assert result.status == "timeout" and time.monotonic() - started < 3


def test_descriptor_exhaustion_stopped_by_rlimits_alone():
    result, output = run_os("fds = [os.dup(0) for _ in range(100000)]\nprint('ESCAPED')".replace("fds", "import os\nfds", 1), layers={"rlimits"})
    assert result.status == "error" and "ESCAPED" not in output
    assert "Too many open files" in result.error["msg"]


@pytest.mark.parametrize("layers", [None, ()], ids=["all", "none"])
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
    code = "from sandbox_worker import protocol\nprotocol.write_frame(1, {'t': 'ready', 'layers': {}})\nimport time\ntime.sleep(5)"
    result, _ = run_os(code, layers=None)
    assert result.status == "crash" and "broke the protocol" in result.error["msg"]
    assert result.layers["seccomp"] == "active"
