"""What confines a process, as a process of the same user can read it in /proc: its groups,
capabilities, no_new_privs, seccomp filters, resource limits, LSM label, namespaces and the
resource limits of its cgroups.

The per-user server (runtime/server.py) serves a run only for a client confined exactly as the
server is. A run through the server is a fork of the server, so a client under a smaller
capability set, a seccomp filter, lower rlimits, a memory-limited cgroup or another namespace
would otherwise run its script without them. Any difference, or a field that cannot be read,
refuses the run, and the client runs it in process, under its own confinement.
"""

from __future__ import annotations

import errno
import os

STATUS_FIELDS = ("Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters")
NAMESPACES = ("mnt", "user", "net", "ipc", "uts", "pid", "cgroup", "time")
# A cgroup's own limits (v2, and v1 by controller): compared along the path from the root, so
# that two unlimited cgroups (a terminal's scope and another's) count as the same.
CGROUP_LIMITS = {
    "": ("memory.max", "memory.high", "memory.swap.max", "pids.max", "cpu.max", "cpuset.cpus", "io.max"),
    "memory": ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
    "pids": ("pids.max",),
    "cpu": ("cpu.cfs_quota_us",),
    "cpu,cpuacct": ("cpu.cfs_quota_us",),
    "cpuset": ("cpuset.cpus",),
}
UNLIMITED = ("", "max", "-1", "max 100000", "9223372036854771712")
CGROUP_ROOT = "/sys/fs/cgroup"
UNREADABLE = "(unreadable)"


def _read(path: str, absent: tuple[int, ...] = ()) -> str:
    """The file's text; "" for an error in ``absent`` (what the kernel says when there is none)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(64 << 10)
    except OSError as exc:
        return "" if exc.errno in absent else UNREADABLE


def _cgroup_limits(membership: str) -> tuple:
    """The limits set along each of the process's cgroup paths, root first."""
    limits = []
    for line in membership.splitlines():
        _, controllers, path = line.split(":", 2) if line.count(":") >= 2 else ("", "?", line)
        files = CGROUP_LIMITS.get(controllers)
        if files is None or ".." in path.split("/"):
            continue
        base = CGROUP_ROOT if controllers == "" else f"{CGROUP_ROOT}/{controllers}"
        if controllers == "" and not os.path.exists(f"{base}/cgroup.controllers"):
            base = f"{CGROUP_ROOT}/unified"  # the hybrid layout's v2 tree
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts) + 1):
            where = "/".join([base, *parts[:depth]])
            for name in files:
                value = _read(f"{where}/{name}").strip()
                if value != UNREADABLE and value not in UNLIMITED:
                    limits.append((controllers, name, value))
    return tuple(sorted(set(limits)))


def of(pid: int | str = "self") -> dict:
    """The process's confinement, field by field."""
    base = f"/proc/{pid}"
    out = {}
    status = _read(f"{base}/status")
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in STATUS_FIELDS:
            out[key] = value.strip()
    for key in STATUS_FIELDS:
        out.setdefault(key, UNREADABLE if status == UNREADABLE else "")
    out["limits"] = _read(f"{base}/limits")
    out["lsm"] = _read(f"{base}/attr/current", (errno.EINVAL, errno.ENOENT, errno.EOPNOTSUPP)).strip("\x00\n")
    for name in NAMESPACES:
        try:
            out[f"{name} namespace"] = os.readlink(f"{base}/ns/{name}")
        except FileNotFoundError:
            out[f"{name} namespace"] = ""  # a kernel without it: the same for both
        except OSError:
            out[f"{name} namespace"] = UNREADABLE
    out["cgroup limits"] = _cgroup_limits(_read(f"{base}/cgroup"))
    return out


def differences(client: dict, server: dict) -> list[str]:
    """The fields in which the client is confined otherwise than the server (or cannot be read)."""
    return [key for key in server if client.get(key) != server[key] or client.get(key) == UNREADABLE]
