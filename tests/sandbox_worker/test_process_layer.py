"""Layer 3 alone: plain Python (no transpiler, no RestrictedPython) in the hardened worker.

The worker runs in mode "os": full builtins, any module already imported. What stops each
attack here is the process itself: rlimits, the clean environment, the dropped uid.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.support import CANARY


def test_cant_open_a_file(run_worker_code, sandbox):
    _, canary = sandbox
    result, output = run_worker_code(f"print(open({str(canary)!r}).read())", mode="os")
    assert result.status == "error"
    assert CANARY not in output
    # seccomp refuses the open at the syscall's entry, before RLIMIT_NOFILE (EMFILE) or
    # Landlock (EACCES) look at it; each alone is asserted in tests/security/test_layers.py.
    assert result.error["kind"] == "RuntimeError"
    assert "[Errno 1] Operation not permitted" in result.error["msg"], result.error


def test_cant_open_with_os_open(run_worker_code, sandbox):
    _, canary = sandbox
    code = f"import os\nfd = os.open({str(canary)!r}, os.O_RDONLY)\nbroker.output(os.read(fd, 100).decode())"
    result, output = run_worker_code(code, mode="os")
    assert result.status == "error"
    assert "[Errno 1] Operation not permitted" in result.error["msg"], result.error
    assert CANARY not in output


def test_cant_write_a_file(run_worker_code, tmp_path):
    target = tmp_path / "written.txt"
    result, _ = run_worker_code(f"open({str(target)!r}, 'w').write('x')", mode="os")
    assert result.status == "error"
    assert "[Errno 1] Operation not permitted" in result.error["msg"], result.error
    assert not target.exists()


def test_cant_fork(run_worker_code):
    result, _ = run_worker_code("import os\nos.fork()", mode="os")
    assert result.status == "error"
    # seccomp answers EPERM before RLIMIT_NPROC (EAGAIN) is consulted; each layer alone is
    # tested in tests/security/test_layers.py.
    assert "PermissionError" in result.error["msg"] or "BlockingIOError" in result.error["msg"]


def test_cant_see_environment_variables(run_worker_code, monkeypatch):
    monkeypatch.setenv("FDSL_SECRET_TOKEN", "s3cret")
    result, output = run_worker_code("import os\nbroker.output(repr(dict(os.environ)))", mode="os")
    assert result.status == "ok"
    assert "s3cret" not in output and "FDSL_SECRET_TOKEN" not in output


def test_only_the_three_pipe_descriptors_are_open(run_worker_code):
    code = (
        "import os\nopen_fds = []\n"
        "for fd in range(256):\n"
        "    try:\n        os.fstat(fd)\n        open_fds.append(fd)\n"
        "    except OSError:\n        pass\n"
        "broker.output(repr(open_fds))"
    )
    result, output = run_worker_code(code, mode="os")
    assert result.status == "ok"
    assert output == "[0, 1, 2]"


@pytest.mark.skipif(os.geteuid() != 0, reason="privileges are dropped only when the broker runs as root")
def test_runs_unprivileged_when_started_as_root(run_worker_code):
    result, output = run_worker_code("import os\nbroker.output(repr((os.getuid(), os.getgid(), os.getgroups())))", mode="os")
    assert result.status == "ok"
    assert output == "(65534, 65534, [])"


def test_cant_raise_its_limits_again(run_worker_code):
    code = "import resource\nresource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))"
    result, _ = run_worker_code(code, mode="os")
    assert result.status == "error"
    assert "ValueError" in result.error["msg"] or "not allowed" in result.error["msg"]


def test_memory_bomb_hits_the_address_space_limit(run_worker_code):
    result, _ = run_worker_code("x = bytearray(1 << 31)", mode="os", memory_mb=128)
    assert result.status == "error"
    assert result.error["kind"] == "LimitError"
    assert "memory limit exceeded (128 MiB)" in result.error["msg"]


def test_sleep_past_the_deadline_is_killed(run_worker_code):
    started = time.monotonic()
    result, _ = run_worker_code("import time\ntime.sleep(30)", mode="os", timeout=1.0)
    assert result.status == "timeout"
    assert time.monotonic() - started < 2.0


def test_native_crash_is_reported_as_a_crash(run_worker_code):
    # A real fault: the script is its PID namespace's pid 1, which ignores a SIGSEGV it merely
    # sends itself (a fault is forced on it and kills it like any process).
    code = "import ctypes\nctypes.string_at(0)"
    result, _ = run_worker_code(code, mode="os")
    assert result.status == "crash"
    assert "crashed (SIGSEGV)" in result.error["msg"]


def test_garbage_on_the_pipe_stops_the_worker(run_worker_code):
    result, _ = run_worker_code("import os\nos.write(1, b'\\xff\\xff\\xff\\xff garbage')\nimport time\ntime.sleep(5)", mode="os")
    assert result.status == "crash"
    assert "broke the protocol" in result.error["msg"]


def test_unknown_message_type_stops_the_worker(run_worker_code):
    code = "from wire import protocol\nprotocol.write_frame(1, {'t': 'exec', 'code': 'x'})\nimport time\ntime.sleep(5)"
    result, _ = run_worker_code(code, mode="os")
    assert result.status == "crash"
    assert "broke the protocol" in result.error["msg"]


def test_exit_without_end_message_is_a_crash(run_worker_code):
    result, _ = run_worker_code("import os\nos._exit(7)", mode="os")
    assert result.status == "crash"
    assert "status 7" in result.error["msg"]


def test_resident_memory_watch_alone(sandbox):
    """The broker's psutil watch stops a worker even when its own address-space limit would not."""
    from dataclasses import dataclass

    from runtime.api import file_handlers
    from runtime.broker import Broker
    from runtime.fs.vfs import VirtualFS
    from runtime.services.files import FilesService
    from runtime.supervisor import Limits, run_worker

    @dataclass(frozen=True)
    class GenerousAddressSpace(Limits):
        def worker_limits(self) -> dict:
            return {**super().worker_limits(), "memory_bytes": 1 << 30}

    root, _ = sandbox
    deadline = time.monotonic() + 10
    limits = GenerousAddressSpace(timeout=10, memory_mb=64)
    code = "import time\nx = bytearray(200 << 20)\nfor i in range(0, len(x), 4096):\n    x[i] = 1\ntime.sleep(5)"
    service = FilesService(VirtualFS([("/", root, False)]), deadline=deadline)
    result = run_worker(code, Broker(file_handlers(service)), limits, deadline, lambda text: None, mode="os")
    assert result.status == "error"
    assert result.error == {"kind": "LimitError", "msg": "memory limit exceeded (64 MiB)"}
