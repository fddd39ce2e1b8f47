"""Which CPUs a session's worker may run on, set from the broker (runtime/api.py, supervisor.py).

The kernel often wakes a process on the CPU of the thread that woke it (a pipe write, a signal),
to wait there for that thread: a worker woken to warm up would wait for the broker's transpile
instead of running beside it, and one killed asleep would tear itself down before the broker's
kill returns (docs/scale.md). Nothing changes with one CPU, without sched_getcpu, or where this
process may not set a worker's affinity (EPERM: a worker of another user, and no CAP_SYS_NICE).
"""

from __future__ import annotations

import ctypes
import os

try:
    _sched_getcpu = ctypes.CDLL(None, use_errno=True).sched_getcpu
except (OSError, AttributeError):  # a C library without it: workers stay where the kernel puts them
    _sched_getcpu = None


def off_this_cpu(pids) -> int | None:
    """Keep the worker processes `pids` off the CPU the calling thread runs on; returns that CPU
    (None: the process may use no other, and nothing changed)."""
    if _sched_getcpu is None:
        return None
    cpus = os.sched_getaffinity(os.getpid())  # the process's (its main thread's), not this thread's
    here = _sched_getcpu()
    if here not in cpus or len(cpus) < 2:
        return None
    _place(pids, cpus - {here})
    return here


def on_any_cpu(pids) -> None:
    """Undo off_this_cpu: every CPU of this process again. Kept off the broker's CPU, a worker's
    every broker call would wake it on another CPU (1.07x a script of 300 calls)."""
    _place(pids, os.sched_getaffinity(os.getpid()))


def _place(pids, cpus: set[int]) -> None:
    for pid in pids:
        try:
            os.sched_setaffinity(pid, cpus)
        except OSError:  # it has ended; or a CPU we may use and it may not (its cpuset): left as it is
            pass
