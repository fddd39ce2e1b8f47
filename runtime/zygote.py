"""A session's zygote (sandbox_worker/zygote.py), seen from the broker: it asks for workers and
gets `ForkedWorker`s, which the pool and the supervisor use as they use a `subprocess.Popen`
of `start_worker(preload=True)`.

A worker started fresh spends about 30 ms importing and warming up before it hardens itself
(more on a busy machine); a forked one starts from a process that did that once. The zygote
has never run a script and never will: what it holds is what every fresh worker holds once it
has imported, so a fork of it is the same worker, sooner. Each forked worker is the session
process's child (CLONE_PARENT), so waiting for it, its exit status and killing its group are
unchanged.

When forking this way is not possible (another architecture, a zygote that died or stopped
answering more than `RESTARTS` times), `spawn()` returns None and the pool starts a worker
the usual way: slower, never less safe.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import subprocess
import threading

from runtime.jail import jailed_command

REPLY_SECONDS = 10.0  # for the zygote's start (imports, on a loaded machine) and for each fork
RESTARTS = 2  # a zygote that failed this many times more is not started again by this process
REFUSED = {errno.EPERM, errno.EINVAL, errno.ENOSYS}  # clone(CLONE_PARENT) not allowed here: no retry


class ZygoteError(Exception):
    pass


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
        self.lock = threading.Lock()
        self.owner = os.getpid()  # a forked copy of this process must not use the zygote's workers
        self.proc: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.failures = 0
        self.broken: str | None = None  # why spawn() returns None from now on
        self.forked = 0

    def spawn(self) -> ForkedWorker | None:
        """A new worker waiting for its start frame, or None (start one the usual way)."""
        with self.lock:
            if self.broken is not None or os.getpid() != self.owner:
                return None
            try:
                if self.control is None:
                    self._start()
                worker = self._fork()
            except (OSError, ZygoteError) as exc:
                self._stop()
                self.failures += 1
                if self.failures > RESTARTS or (isinstance(exc, ZygoteError) and str(exc).startswith("no: ")):
                    self.broken = str(exc)
                return None
            self.forked += 1
            return worker

    def close(self) -> None:
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
        finally:
            theirs.close()
        self.control = ours
        ours.settimeout(REPLY_SECONDS)
        hello = ours.recv(256)
        if hello != b"ready":
            raise ZygoteError(hello.decode("ascii", "replace") or "the zygote ended before it was ready")

    def _fork(self) -> ForkedWorker:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        ours = [stdin_w, stdout_r, stderr_r]
        try:
            try:
                socket.send_fds(self.control, [b"w"], [stdin_r, stdout_w, stderr_w])
                reply = self.control.recv(16)
            finally:
                for fd in (stdin_r, stdout_w, stderr_w):
                    os.close(fd)
            if len(reply) != 8:
                raise ZygoteError("the zygote ended")
            pid = struct.unpack("<q", reply)[0]
            if -pid in REFUSED:  # the kernel or a filter refuses this clone: it would refuse it again
                raise ZygoteError(f"no: clone(CLONE_PARENT) refused: {os.strerror(-pid)}")
            if pid <= 0:
                raise OSError(-pid, f"the zygote's fork failed: {os.strerror(-pid)}")
        except BaseException:
            for fd in ours:
                os.close(fd)
            raise
        return ForkedWorker(pid, open(stdin_w, "wb", buffering=0), open(stdout_r, "rb", buffering=0),
                            open(stderr_r, "rb", buffering=0))

    def _stop(self) -> None:
        if self.control is not None:
            self.control.close()  # its EOF ends the zygote
            self.control = None
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
