"""What the broker sends a worker: its start frame (limits, isolation), then its code. A worker
started ahead can be sent the start long before the code (runtime/session.py's pool primes it):
it hardens, applies the limits and reports ready at once, and runs nothing until the code comes."""

from __future__ import annotations

import os
import select

import pytest

from runtime.supervisor import Limits, _collect, prime, start_frame, start_worker
from sandbox_worker.client import BrokerClient
from wire import protocol

LIMITS = Limits(timeout=20, memory_mb=256)


def frame_within(proc, seconds: float = 20.0) -> dict:
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    assert ready, "no frame from the worker"
    return protocol.read_frame(proc.stdout.fileno(), protocol.MAX_REQUEST_BYTES)


def ended(proc, seconds: float = 20.0) -> tuple[int, bytes]:
    """The worker's exit status and what it wrote after the frames read so far."""
    try:
        return proc.wait(timeout=seconds), proc.stdout.read()
    finally:
        _collect(proc)


def test_a_primed_worker_is_ready_before_its_code_and_then_runs_it():
    proc = start_worker(preload=True)
    prime(proc, LIMITS, "best")
    ready = frame_within(proc)  # before any code was sent
    assert ready["t"] == "ready" and ready["layers"]["rlimits"] == "active"
    protocol.write_frame(proc.stdin.fileno(), {"t": "code", "code": 'print("hi")\n', "lang": "fdsl", "mode": "restricted"})
    assert frame_within(proc) == {"t": "out", "s": "hi\n"}
    assert frame_within(proc) == {"t": "end", "ok": True}
    proc.stdin.close()
    assert ended(proc) == (0, b"")


def test_a_primed_worker_warms_up_as_often_as_told_then_runs_its_code():
    proc = start_worker(preload=True)
    prime(proc, LIMITS, "best")
    assert frame_within(proc)["t"] == "ready"
    for _ in range(3):  # the broker compiles the script meanwhile: nothing comes back
        protocol.write_frame(proc.stdin.fileno(), {"t": "warm"})
    protocol.write_frame(proc.stdin.fileno(), {"t": "code", "code": 'print("hi")\n', "lang": "fdsl", "mode": "restricted"})
    assert frame_within(proc) == {"t": "out", "s": "hi\n"}
    assert frame_within(proc) == {"t": "end", "ok": True}
    proc.stdin.close()
    assert ended(proc) == (0, b"")


def test_a_worker_sees_whether_its_next_frame_has_come():
    """What a warmed worker asks before it warms its compile path: a script already waiting
    would wait for the warming."""
    read_fd, write_fd = os.pipe()
    try:
        client = BrokerClient(read_fd=read_fd, write_fd=write_fd)
        assert not client.waiting()
        code = {"t": "code", "code": 'print("hi")\n', "lang": "fdsl", "mode": "restricted"}
        protocol.write_frame(write_fd, {"t": "warm"})
        protocol.write_frame(write_fd, code)
        assert client.waiting() and client.receive() == {"t": "warm"}
        assert client.waiting() and client.receive() == code
        assert not client.waiting()
        os.close(write_fd)
        write_fd = -1
        assert not client.waiting()  # the broker gone: receive() finds out
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def test_a_hardened_worker_sees_a_frame_waiting():
    """The same question asked inside the jail (the seccomp allow-list must pass FIONREAD, or
    a warmed worker would always warm, and its zygote's settle() never copy a page)."""
    proc = start_worker(preload=True)
    prime(proc, LIMITS, "best")
    assert frame_within(proc)["layers"]["seccomp"] == "active"  # (as tests/security/test_layers.py requires)
    protocol.write_frame(proc.stdin.fileno(), {"t": "warm"})
    protocol.write_frame(proc.stdin.fileno(), {"t": "code", "code": "print(broker.waiting())\n", "lang": "fdsl", "mode": "os"})
    protocol.write_frame(proc.stdin.fileno(), {"t": "ok", "v": None})  # waiting while the script runs
    assert frame_within(proc) == {"t": "out", "s": "True\n"}
    assert frame_within(proc) == {"t": "end", "ok": True}
    proc.stdin.close()
    assert ended(proc) == (0, b"")


def test_a_worker_let_go_before_its_code_exits_having_run_nothing():
    proc = start_worker(preload=True)
    prime(proc, LIMITS, "best")
    assert frame_within(proc)["t"] == "ready"
    proc.stdin.close()
    assert ended(proc) == (4, b"")  # no frame after ready: nothing ran


@pytest.mark.parametrize("second", [
    {"t": "start", "limits": LIMITS.worker_limits(), "isolation": "best"},  # a second start
    {"t": "code", "code": "print(1)\n", "lang": "cobol"},
    {"t": "code", "code": 7, "lang": "fdsl", "mode": "restricted"},
    {"t": "code", "code": "print(1)\n", "lang": "ps"},  # a language this worker did not import before hardening
])
def test_a_worker_refuses_a_second_frame_that_is_not_its_code(second):
    proc = start_worker()  # not started ahead: it imports the start frame's language only
    protocol.write_frame(proc.stdin.fileno(), start_frame(LIMITS, "best", lang="fdsl"))
    assert frame_within(proc)["t"] == "ready"
    protocol.write_frame(proc.stdin.fileno(), second)
    assert ended(proc) == (3, b"")
