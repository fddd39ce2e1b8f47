"""The zygote (sandbox_worker/zygote.py), seen from the broker: it asks for workers and
gets `ForkedWorker`s, which the pool and the supervisor use as they use a `subprocess.Popen`
of `start_worker(preload=True)`. A process's sessions share one (runtime/session.py
`ProcessShared`): a zygote knows nothing of a session's sandbox or limits, and a fleet's pool
process makes a session per root, which would otherwise start a zygote per job.

A worker started fresh spends about 30 ms importing and warming up before it hardens itself
(more on a busy machine); a forked one starts from a process that did that once. The zygote
has never run a script and never will: what it holds is what every fresh worker holds once it
has imported, so a fork of it is the same worker, sooner. Each forked worker is the session
process's child (CLONE_PARENT), so waiting for it, its exit status and killing its group are
unchanged.

When forking this way is not possible (another architecture, a clone the kernel refuses, a
zygote that died or stopped answering more than `RESTARTS` times in a row), `spawn()` returns
None and the pool starts a worker the usual way: slower, never less safe. A zygote is replaced
after `MAX_FORKS` forks.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import subprocess
import threading

from runtime.jail import jailed_command
from runtime.supervisor import kill_group, reap

START_SECONDS = 10.0  # for the zygote's start (its imports, on a loaded machine)
FORK_SECONDS = 5.0  # for each of a fork's two answers (a few ms each)
RESTARTS = 2  # a zygote that failed this many times more is not started again by this process
REFUSED = {errno.EPERM, errno.EINVAL, errno.ENOSYS}  # clone(CLONE_PARENT) not allowed here: no retry
# Forks of one zygote share its address layout, stack canary, pointer guard and hash secret: a
# zygote forks this many workers, then a new one (its start off the run's path, in Upkeep) takes over.
MAX_FORKS = 256


class ZygoteError(Exception):
    pass


class ForkFailed(OSError):
    """The zygote's clone failed for want of a resource (EAGAIN, ENOMEM): worth trying again."""


class ForkedWorker:
    """What the pool and the supervisor use of a Popen: `pid`, the three pipe ends (`stdin`
    the worker's frames in, `stdout` its frames out, `stderr` its diagnostics), `poll()`,
    `wait()` and `returncode`."""

    def __init__(self, pid: int, stdin, stdout, stderr) -> None:
        self.pid, self.stdin, self.stdout, self.stderr = pid, stdin, stdout, stderr
        self.returncode: int | None = None

    def wait(self) -> int:
        while self.poll() is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                continue  # reaped meanwhile: poll() says so
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped already (as Popen.poll answers then)
                self.returncode = 0
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class Zygote:
    """Started on the first `spawn()`; `close()` ends it (the workers it forked are not its
    children and are not touched). Thread-safe: one fork at a time."""

    def __init__(self) -> None:
        self.lock = threading.RLock()  # (re-entered when a GC-run Session finalizer closes it mid-spawn)
        self.owner = os.getpid()  # a forked copy of this process must not use the zygote's workers
        self.proc: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.failures = 0  # in a row
        self.broken: str | None = None  # why spawn() returns None from now on
        self.forked = 0
        self.since_start = 0  # forks of the current zygote

    def spawn(self) -> ForkedWorker | None:
        """A new worker waiting for its start frame, or None (start one the usual way)."""
        with self.lock:
            if self.broken is not None or os.getpid() != self.owner:
                return None
            if self.control is not None and self.since_start >= MAX_FORKS:
                self._stop()  # a new zygote: its forks share a new layout and new secrets
            try:
                if self.control is None:
                    self._start()
                worker = self._fork()
            except ForkFailed:  # (EAGAIN, ENOMEM...) the zygote is fine: this once, a fresh start
                return None
            except (OSError, ZygoteError, subprocess.SubprocessError) as exc:
                self._stop()
                self.failures += 1
                if self.failures > RESTARTS or (isinstance(exc, ZygoteError) and str(exc).startswith("no: ")):
                    self.broken = str(exc)
                return None
            self.forked += 1
            self.since_start += 1
            self.failures = 0  # only failures in a row count
            return worker

    def close(self) -> None:
        if os.getpid() != self.owner:  # a forked copy of the process: the zygote is the parent's (and
            return  # its lock may have been held by a thread the copy does not have)
        with self.lock:
            self.broken = "closed"
            self._stop()

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                jailed_command("sandbox_worker.zygote", ("RestrictedPython",)), stdin=theirs,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={}, cwd="/", close_fds=True,
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.control, self.since_start = ours, 0
        ours.settimeout(START_SECONDS)
        hello = ours.recv(256)
        if hello != b"ready":
            raise ZygoteError(hello.decode("ascii", "replace") or "the zygote ended before it was ready")
        ours.settimeout(FORK_SECONDS)

    def _fork(self) -> ForkedWorker:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        ours = [stdin_w, stdout_r, stderr_r]
        pid, control = None, self.control  # (close() may run meanwhile on this thread: see the lock)
        try:
            try:
                socket.send_fds(control, [b"w"], [stdin_r, stdout_w, stderr_w])
                reply = control.recv(16)
            finally:
                for fd in (stdin_r, stdout_w, stderr_w):
                    os.close(fd)
            if len(reply) != 8:
                raise ZygoteError("the zygote ended")
            forked = struct.unpack("<q", reply)[0]
            if -forked in REFUSED:  # the kernel or a filter refuses this clone: it would refuse it again
                raise ZygoteError(f"no: clone(CLONE_PARENT) refused: {os.strerror(-forked)}")
            if forked <= 0:
                raise ForkFailed(-forked, f"the zygote's fork failed: {os.strerror(-forked)}")
            pid = forked  # our child now: whatever happens next, it is killed and reaped, never lost
            if control.recv(16) != b"s":
                raise ZygoteError("the zygote ended before its fork led its own session")
        except BaseException:
            for fd in ours:
                os.close(fd)
            if pid is not None:
                reap(pid)
            raise
        return ForkedWorker(pid, open(stdin_w, "wb", buffering=0), open(stdout_r, "rb", buffering=0),
                            open(stderr_r, "rb", buffering=0))

    def _stop(self) -> None:
        if self.control is not None:
            self.control.close()  # its EOF ends the zygote
            self.control = None
        if self.proc is not None:
            kill_group(self.proc.pid)  # its group: with a fork that had not left it yet
            self.proc.wait()
            self.proc = None
