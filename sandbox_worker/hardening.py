"""Process hardening of the worker, applied after its imports and before the script runs."""

from __future__ import annotations

import os
import resource

NOBODY = 65534


def harden(limits: dict) -> None:
    """Apply the process limits, then drop root if we have it. Irreversible by design."""
    os.closerange(3, 1 << 16)
    setrlimit = resource.setrlimit
    setrlimit(resource.RLIMIT_CORE, (0, 0))
    setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # no file writes
    setrlimit(resource.RLIMIT_NOFILE, (3, 3))  # no descriptor beyond the three pipes
    setrlimit(resource.RLIMIT_NPROC, (0, 0))  # no new processes (effective once not root)
    cpu = int(limits["cpu_seconds"])
    setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = int(limits["memory_bytes"])
    setrlimit(resource.RLIMIT_AS, (memory, memory))
    if os.geteuid() == 0 or os.getegid() == 0:
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
