"""What confines a process, as a process of the same user can read it in /proc: its groups,
capabilities, no_new_privs, seccomp filters, resource limits, LSM label, namespaces and the
resource limits of its cgroups.

A run through the per-user server (runtime/server.py) is a fork of the server, so a client
under a smaller capability set, a seccomp filter, a memory-limited cgroup or another namespace
would have its script run without them. The server serves a run only for a client whose
fields here are the server's own, and whose no_new_privs is off; any difference, or a field
that cannot be read, refuses the run, and the client runs it in process, under its own
confinement. no_new_privs refuses outright because it is what a Landlock sandbox must set,
and a Landlock domain cannot be read from /proc; seccomp is compared by its filters' count,
not their content. Resource limits are not compared but carried: the runner takes the
client's (``rlimits``), unless one of its hard limits is above the server's, which an
unprivileged process cannot raise.
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
    out["rlimits"] = _rlimits(_read(f"{base}/limits"))
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
    """Why the server may not run the client's script (the fields that differ or cannot be
    read, no_new_privs set, a hard limit above the server's); empty when it may."""
    out = [key for key in server if key != "rlimits" and (client.get(key) != server[key] or client.get(key) == UNREADABLE)]
    if client.get("NoNewPrivs") != "0" and "NoNewPrivs" not in out:
        out.append("NoNewPrivs")
    limits, own = client.get("rlimits"), server["rlimits"]
    if limits is None or own is None or any(limits.get(name, (0, 1 << 64))[1] > hard for name, (_, hard) in own.items()):
        out.append("rlimits")
    return out


# /proc/PID/limits' names for the limits setrlimit() takes
RLIMIT_NAMES = {"Max cpu time": "RLIMIT_CPU", "Max file size": "RLIMIT_FSIZE", "Max data size": "RLIMIT_DATA",
                "Max stack size": "RLIMIT_STACK", "Max core file size": "RLIMIT_CORE", "Max resident set": "RLIMIT_RSS",
                "Max processes": "RLIMIT_NPROC", "Max open files": "RLIMIT_NOFILE", "Max locked memory": "RLIMIT_MEMLOCK",
                "Max address space": "RLIMIT_AS", "Max file locks": "RLIMIT_LOCKS", "Max pending signals": "RLIMIT_SIGPENDING",
                "Max msgqueue size": "RLIMIT_MSGQUEUE", "Max nice priority": "RLIMIT_NICE",
                "Max realtime priority": "RLIMIT_RTPRIO", "Max realtime timeout": "RLIMIT_RTTIME"}
INFINITY = (1 << 64) - 1  # RLIM_INFINITY, as /proc says "unlimited"


def _rlimits(text: str) -> dict[str, tuple[int, int]] | None:
    """{RLIMIT_NAME: (soft, hard)} from /proc/PID/limits; None when it cannot be read whole."""
    out = {}
    for line in text.splitlines()[1:]:
        for label, name in RLIMIT_NAMES.items():
            if line.startswith(label + " "):
                values = line[len(label):].split()[:2]
                try:
                    out[name] = tuple(INFINITY if v == "unlimited" else int(v) for v in values)
                except ValueError:
                    return None
    return out if len(out) == len(RLIMIT_NAMES) and all(len(v) == 2 for v in out.values()) else None


def apply_rlimits(limits: dict) -> None:
    """Take a client's resource limits (a server runner, before it runs the client's command).
    Each is lowered or raised within this process's hard limit, which the server checked."""
    import resource

    for name, (soft, hard) in limits.items():
        which = getattr(resource, name, None)
        if which is None:
            continue
        hard = resource.RLIM_INFINITY if hard == INFINITY else hard
        soft = resource.RLIM_INFINITY if soft == INFINITY else soft
        resource.setrlimit(which, (soft, hard))
