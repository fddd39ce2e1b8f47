"""What the supervisor (runtime/supervisor.py) reads of its worker's processes from /proc: the
process running the script in a PID namespace, its resident memory while it runs, and its
high-water mark once it has ended its script. Each is one small file, not psutil's scans."""

from __future__ import annotations

import os

import psutil


def script_process(pid: int) -> int:
    """The process running the script of a worker that forked into a PID namespace
    (sandbox_worker/hardening.py): its only child (the worker itself if that cannot be told).
    Read from /proc/PID/task/PID/children, one small file (psutil scans every process)."""
    try:
        children = [int(child) for child in _read(f"/proc/{pid}/task/{pid}/children").split()]
    except (OSError, ValueError):
        try:
            children = [child.pid for child in psutil.Process(pid).children()]
        except psutil.Error:
            return pid
    return children[0] if len(children) == 1 else pid


class Resident:
    """A process's resident memory from its /proc/PID/statm, opened once: the descriptor stays
    bound to that process (a PID reused after it ended is never read) and each check is one
    pread (psutil.Process costs 80 us to make, per run and per process watched)."""

    PAGE = os.sysconf("SC_PAGE_SIZE")

    def __init__(self, pid: int) -> None:
        try:
            self.fd: int | None = os.open(f"/proc/{pid}/statm", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # it has ended already: the run ends with it
            self.fd = None

    def bytes(self) -> int:
        """0 once the process has ended or cannot be read."""
        if self.fd is None:
            return 0
        try:
            return int(os.pread(self.fd, 128, 0).split()[1]) * self.PAGE
        except (OSError, ValueError, IndexError):
            return 0

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def peak_resident_kib(pid: int) -> int | None:
    """The worker's own high-water resident size (VmHWM), read while it waits to be ended.

    Not wait4's ru_maxrss: across exec it keeps the high-water mark of the parent's memory
    that the child shared before exec.
    """
    try:
        status = _read(f"/proc/{pid}/status")
        start = status.find(b"\nVmHWM:")
        if start >= 0:
            return int(status[start:status.find(b"\n", start + 1)].split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read(path: str) -> bytes:
    """A small /proc file in one read: half the cost of open() and its buffered reader, and a
    run reads three or four of them."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)
