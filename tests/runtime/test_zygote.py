"""A session's zygote (runtime/zygote.py, sandbox_worker/zygote.py): its forks are fresh,
fully hardened workers that are the caller's children, it never holds a script, and when it
fails the pool starts workers the usual way. Every attack of tests/security/test_layers.py
also runs against a forked worker (the `forked` cases)."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time

import psutil
import pytest

from runtime import zygote as zygote_module
from runtime.broker import Broker
from runtime.jail import package_dir
from runtime.session import Session
from runtime.supervisor import Limits, _collect, prime, run_worker, start_worker
from runtime.zygote import ForkedWorker, Zygote
from wire.layers import is_active


@pytest.fixture
def zygote():
    z = Zygote()
    yield z
    z.close()


def run_in(worker, code: str, mode: str = "os", limits: Limits | None = None):
    output: list[str] = []
    limits = limits or Limits(timeout=20, max_output=100_000)
    result = run_worker(code, Broker({"ping": lambda: None}), limits, time.monotonic() + limits.timeout,
                        output.append, mode=mode, proc=worker)
    return result, "".join(output)


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def test_a_fork_is_this_processs_child_with_every_layer_and_only_its_pipes(zygote):
    worker = zygote.spawn()
    assert isinstance(worker, ForkedWorker) and parent_of(worker.pid) == os.getpid()
    assert os.getpgid(worker.pid) == worker.pid  # its own group: the supervisor kills it whole
    assert (psutil.Process(zygote.proc.pid).name(), psutil.Process(worker.pid).name()) == ("fdsl-zygote", "fdsl-worker")
    probe = "import os\nopen_fds = []\nfor n in range(3, 1024):\n    try:\n        os.fstat(n)\n" \
            "        open_fds.append(n)\n    except OSError:\n        pass\nprint(open_fds, sorted(os.environ))\n"
    result, output = run_in(worker, probe)
    assert result.status == "ok", result
    fresh = run_in(start_worker(preload=True), probe)[1]
    assert output == fresh and output.startswith("[] "), (output, fresh)  # (Python's own LC_CTYPE coercion)
    assert all(is_active(status) for status in result.layers.values()), result.layers


@pytest.mark.skipif(tuple(map(int, os.uname().release.split(".")[:2])) < (5, 14), reason="MADV_POPULATE_WRITE, which copies the shared pages, needs Linux 5.14 or later")
def test_a_waiting_fork_makes_the_pages_it_shares_with_the_zygote_its_own(zygote):
    """Else its script pays a copy-on-write fault at each first write (sandbox_worker/zygote.py settle)."""
    worker = zygote.spawn()
    prime(worker, Limits(), "best")
    frames = b""
    while b'"ready"' not in frames:
        frames += os.read(worker.stdout.fileno(), 1 << 16)
    script = psutil.Process(worker.pid).children()[0]  # the PID namespace's pid 1, which runs the script

    def shared_dirty_kib() -> int:
        with open(f"/proc/{script.pid}/smaps_rollup") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("Shared_Dirty:"))

    deadline = time.monotonic() + 10
    while shared_dirty_kib() > 1024 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert shared_dirty_kib() <= 1024
    _collect(worker)


def test_forks_share_nothing_a_script_leaves_behind(zygote):
    trap = ("import builtins, os, random, sys, _thread, signal\n"
            "builtins.TRAP = 1\nsys.modules['os'].getpid = lambda: -1\nrandom.seed(7)\n"
            "signal.signal(signal.SIGUSR2, signal.SIG_IGN)\n"
            "try:\n    _thread.start_new_thread(signal.pause, ())\n"
            "except RuntimeError:\n    pass  # rlimits: no new process, no thread\n"
            "print(random.random())\n")
    look = ("import builtins, os, random, signal, _thread\n"
            "print(hasattr(builtins, 'TRAP'), os.getpid() > 0, signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL,"
            " _thread._count(), random.random())\n")
    first, _ = run_in(zygote.spawn(), trap)
    second, seen = run_in(zygote.spawn(), look)
    third, seen_again = run_in(zygote.spawn(), look)
    assert first.status == second.status == third.status == "ok", (first, second, third)
    flags = seen.split()
    assert flags[:4] == ["False", "True", "True", "0"], seen
    assert flags[4] != seen_again.split()[4]  # each fork reseeds its random state (the at-fork hook ran)


def test_a_fork_cannot_reach_its_zygote(zygote):
    """The zygote is not hardened: a forked worker with every layer cannot signal, trace or read it."""
    worker = zygote.spawn()
    target = zygote.proc.pid
    attack = (f"import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nresults = []\n"
              f"try:\n    os.kill({target}, 9)\n    results.append('kill')\nexcept OSError:\n    pass\n"
              f"if libc.ptrace(16, {target}, 0, 0) == 0:\n    results.append('ptrace')\n"
              f"try:\n    open('/proc/{target}/mem', 'rb').read(1)\n    results.append('mem')\nexcept OSError:\n    pass\n"
              f"buf = ctypes.create_string_buffer(8)\n"
              f"iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 8)\n"
              f"if libc.process_vm_readv({target}, iov, 1, iov, 1, 0) > 0:\n    results.append('vm_readv')\n"
              f"print(results)\n")
    result, output = run_in(worker, attack)
    assert result.status == "ok" and output == "[]\n", (result, output)
    assert zygote.proc.poll() is None  # alive, and still forking
    assert run_in(zygote.spawn(), "print(3)")[1] == "3\n"


# A stand-in zygote that forks as the real one does, says the pid, then dies before the fork
# has left its group (the "s" message); it writes the pid where the test finds it.
DIES_AFTER_FORK = ("import os, socket, struct, sys, time\nsys.path.insert(0, {root!r})\n"
                   "from sandbox_worker.zygote import _clone_call, fork_sibling\n"
                   "s = socket.socket(fileno=0)\nclone, _ = _clone_call()\ns.send(b'ready')\n"
                   "socket.recv_fds(s, 16, 3)\npid = fork_sibling(clone)\n"
                   "if pid == 0:\n    time.sleep(60)\n    os._exit(0)\n"
                   "open({note!r}, 'w').write(str(pid))\ns.send(struct.pack('<q', pid))\nos._exit(1)\n")


def test_a_fork_whose_zygote_dies_before_answering_is_killed_and_reaped(monkeypatch, tmp_path):
    note = tmp_path / "pid"
    script = DIES_AFTER_FORK.format(root=str(package_dir("sandbox_worker").parent), note=str(note))
    monkeypatch.setattr(zygote_module, "jailed_command", lambda *a: [sys.executable, "-c", script])
    z = Zygote()
    try:
        assert z.spawn() is None and z.failures == 1
    finally:
        z.close()
    pid = int(note.read_text())
    with pytest.raises(ChildProcessError):  # reaped already: never a zombie, never left running
        os.waitpid(pid, os.WNOHANG)


def test_a_zygote_is_replaced_after_its_forks(zygote, monkeypatch):
    monkeypatch.setattr(zygote_module, "MAX_FORKS", 2)
    _collect(zygote.spawn())
    first = zygote.proc.pid
    _collect(zygote.spawn())
    _collect(zygote.spawn())
    assert zygote.proc.pid != first and zygote.forked == 3 and zygote.failures == 0
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)


def test_a_killed_zygote_is_replaced_and_its_forks_live_on(zygote):
    waiting = zygote.spawn()
    first = zygote.proc.pid
    os.kill(first, signal.SIGKILL)
    result, output = run_in(waiting, "print('still here')")
    assert result.status == "ok" and output == "still here\n"
    replacement = zygote.spawn()  # the dead one fails this request, or the next starts anew
    replacement = replacement or zygote.spawn()
    assert replacement is not None and zygote.proc.pid != first
    assert run_in(replacement, "print(2)")[1] == "2\n"


def test_a_zygote_failing_past_its_restarts_leaves_the_pool_to_fresh_workers(docs_root, monkeypatch):
    monkeypatch.setattr(zygote_module, "jailed_command", lambda *a: ["/bin/false"])
    with Session(root=docs_root, timeout=20, workers=1) as session:
        for n in range(zygote_module.RESTARTS + 2):
            assert session.run(f"print({n})\n").output == f"{n}\n"
        assert session.pool.zygote.broken is not None and session.pool.zygote.forked == 0


# A stand-in zygote on descriptor 0 that is ready, then answers every fork with -EPERM.
REFUSING = ("import socket, struct\ns = socket.socket(fileno=0)\ns.send(b'ready')\n"
            "while socket.recv_fds(s, 16, 3)[0]:\n    s.send(struct.pack('<q', -1))\n")


def test_a_clone_the_kernel_refuses_is_not_tried_again(monkeypatch):
    monkeypatch.setattr(zygote_module, "jailed_command", lambda *a: [sys.executable, "-c", REFUSING])
    z = Zygote()
    try:
        assert z.spawn() is None and "refused" in z.broken and z.failures == 1
        assert z.spawn() is None and z.failures == 1 and z.proc is None
    finally:
        z.close()


def test_a_forked_copy_of_the_process_does_not_use_the_zygote(zygote):
    worker = zygote.spawn()
    assert worker is not None
    _collect(worker)
    child = os.fork()
    if child == 0:
        os._exit(0 if zygote.spawn() is None else 1)  # its forks would be the other process's children
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_session_runs_on_forked_workers(docs_root):
    with Session(root=docs_root, timeout=20, workers=2) as session:
        for n in range(3):
            assert session.run(f'print(len(Directory("/").files()) + {n})\n').output == f"{1 + n}\n"
        assert session.pool.zygote.forked >= 3 and session.pool.zygote.broken is None


def test_the_sessions_of_a_process_share_one_zygote_which_ends_with_the_last(docs_root, tmp_path):
    """A fleet's pool process makes a session per root: each would otherwise start a zygote of
    its own (a Python start) for one job. The last session to close ends it."""
    other = tmp_path / "other"
    other.mkdir()
    first = Session(root=docs_root, timeout=20, workers=1)
    second = Session(root=str(other), timeout=20, workers=1)
    try:
        assert first.run("print(1)\n").output == "1\n" and second.run("print(2)\n").output == "2\n"
        assert first.pool.zygote is second.pool.zygote
        pid = first.pool.zygote.proc.pid
        first.close()
        assert second.run("print(3)\n").output == "3\n" and second.pool.zygote.proc.pid == pid
        assert psutil.pid_exists(pid)
    finally:
        first.close()
        second.close()
    with pytest.raises(ChildProcessError):  # ended and reaped by the last close
        os.waitpid(pid, os.WNOHANG)
    with Session(root=docs_root, timeout=20, workers=1) as third:  # a new one for the sessions after
        assert third.run("print(4)\n").output == "4\n" and third.pool.zygote.proc.pid != pid


def filled(*sessions) -> None:
    deadline = time.monotonic() + 30
    while not all(len(s.pool.ready) == s.pool.size for s in sessions):
        assert time.monotonic() < deadline, "the pools were not filled in 30 s"
        time.sleep(0.01)


def test_a_session_the_collector_frees_while_another_forks_is_closed_without_a_deadlock(docs_root, monkeypatch):
    """The sessions share the zygote's lock. A session in a reference cycle may be freed by a
    collection on another session's thread while that thread holds the lock (in a fork); its
    close joins its own Upkeep thread, which may be waiting for that lock: so it closes on a
    thread of its own."""

    class Owner:  # a session in a cycle (an object whose bound method is the session's approve)
        def __init__(self):
            self.session = Session(root=docs_root, timeout=20, workers=1, approve=self.approve)

        def approve(self, description):
            return False

    second = Session(root=docs_root, timeout=20, workers=1)
    owner = Owner()
    first = owner.session
    stuck = False
    try:
        filled(first, second)
        real_fork, refilling = zygote_module.Zygote._fork, second.upkeep.thread

        def fork(self):
            if threading.current_thread() is refilling:
                time.sleep(0.5)  # the first session's Upkeep thread comes to wait for the lock meanwhile
                gc.collect()  # what any allocation here may set off: the first session is freed
            return real_fork(self)

        monkeypatch.setattr(zygote_module.Zygote, "_fork", fork)
        gc.disable()
        try:
            assert second.run("print(2)\n").ok  # its Upkeep thread refills next, holding the lock in _fork
            assert first.run("print(1)\n").ok  # its Upkeep thread refills next: it waits for the lock
            del first, owner
            done = threading.Event()
            threading.Thread(target=lambda: (second.run("print(3)\n"), done.set()), daemon=True).start()
            stuck = not done.wait(20)
            assert not stuck, "a run waited 20 s for the zygote's lock"
        finally:
            gc.enable()
    finally:
        if not stuck:  # (closing would wait for the stuck threads)
            second.close()


def test_a_forked_copy_closing_the_sessions_it_inherited_leaves_the_parents_alone(docs_root):
    session = Session(root=docs_root, timeout=20, workers=1)
    try:
        assert session.run("print(1)\n").ok
        filled(session)
        zygote_pid, waiting_pid = session.pool.zygote.proc.pid, session.pool.ready[0].pid
        child = os.fork()
        if child == 0:  # closes its copy, then exits (closing what is still open, _close_live)
            try:
                session.close()
            finally:
                os._exit(0)
        deadline = time.monotonic() + 20
        while (done := os.waitpid(child, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                os.kill(child, signal.SIGKILL)
                os.waitpid(child, 0)
                pytest.fail("the forked copy hung closing its session")
            time.sleep(0.01)
        assert os.waitstatus_to_exitcode(done[1]) == 0
        for pid in (zygote_pid, waiting_pid):
            assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        assert session.run("print(2)\n").ok and session.pool.zygote.proc.pid == zygote_pid
    finally:
        session.close()


def test_close_during_a_spawn_on_the_same_thread_does_not_deadlock(zygote, monkeypatch):
    """A Session's finalizer, run by the GC on the Upkeep thread while it spawns, closes the pool."""
    _collect(zygote.spawn())
    real = zygote_module.socket.send_fds

    def closing_first(*args):
        zygote.close()
        return real(*args)

    monkeypatch.setattr(zygote_module.socket, "send_fds", closing_first)
    got = []
    spawning = threading.Thread(target=lambda: got.append(zygote.spawn()), daemon=True)
    spawning.start()
    spawning.join(20)
    assert not spawning.is_alive() and got == [None] and zygote.broken and zygote.proc is None


def test_close_ends_the_zygote(zygote):
    worker = zygote.spawn()
    pid = zygote.proc.pid
    _collect(worker)
    zygote.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert zygote.spawn() is None


@pytest.fixture
def docs_root(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    return str(tmp_path)
