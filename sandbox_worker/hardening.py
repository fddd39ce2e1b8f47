"""Process hardening of the worker, applied after its imports and before the script runs.

The layers, in the order they are applied (each probed; a layer the kernel lacks is reported
as missing with the reason, and the others still apply):

  netns         a new network namespace (no interface but a down loopback: no network).
  ipcns         a new IPC namespace: no other process's SysV shared memory, queues or
                semaphores, and what the worker makes there dies with it.
  utsns         a new UTS namespace named "sandbox": not the host's name.
  pidns         a new PID namespace: the worker forks once and its child, the namespace's
                pid 1, runs the script, seeing no other process (fork_pid_namespace).
                The namespaces: as root each is a plain unshare, before privileges are
                dropped; unprivileged, the first one also makes a new user namespace.
  uid           drop to nobody (65534) with no groups when started as root
                ("not needed" when the worker is not root: there is nothing to drop).
  no_new_privs  prctl(PR_SET_NO_NEW_PRIVS): no setuid/file-capability gain, ever.
  landlock      a ruleset handling every filesystem access right (and TCP, and signal and
                abstract-socket scoping where the ABI has them) with no rule: no path can be
                opened, created or executed after this point.
  seccomp       an allow-list of system calls (sandbox_worker/seccomp.py): what the worker
                needs, each with its reason; everything else, including calls newer than
                this code, answers EPERM.
  rlimits       no core, no file writes (FSIZE 0), no descriptor beyond the three pipes,
                no new process, CPU seconds, address space.

A worker started ahead of its script (runtime/session.py) applies the same layers in two
steps: all but rlimits before it waits (sandbox_worker/main.py harden_ahead: enter_namespaces,
imports, lock_down), rlimits when its start frame brings the run's limits (apply_limits).

`harden(limits, layers)` returns {layer: status}, status "active", "not needed: ...",
"off" (left out by the trusted side for a test or an audit) or "missing: <reason>". The
worker sends it to the broker in its first frame, {"t": "ready", "layers": {...}}, before it
runs any script code.

Stdlib only (os, resource, ctypes), all imported before the worker is jailed: afterwards it
cannot open a file, so it cannot import anything new.
"""

from __future__ import annotations

import ctypes
import os
import resource
import select
import struct
import unicodedata  # noqa: F401 - compile() imports it lazily for non-ASCII identifiers: load it while we still can

from sandbox_worker.seccomp import apply_seccomp
from wire.layers import LAYERS, NAMESPACES, is_active

NOBODY = 65534


CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWPID = 0x20000000
NAMESPACE_FLAGS = {"netns": CLONE_NEWNET, "ipcns": CLONE_NEWIPC, "utsns": CLONE_NEWUTS, "pidns": CLONE_NEWPID}
HOSTNAME = b"sandbox"
PR_SET_NO_NEW_PRIVS = 38
PR_SET_NAME = 15

# x86_64 syscall numbers.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int
_libc.unshare.restype = ctypes.c_int
_libc.unshare.argtypes = [ctypes.c_int]
_libc.sethostname.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def _errno_text() -> str:
    err = ctypes.get_errno()
    return f"{os.strerror(err)} (errno {err})"


# ---------------------------------------------------------------- namespaces


def apply_namespaces(wanted: set[str]) -> dict[str, str]:
    """New network, IPC, UTS and PID namespaces, each as its own layer. As root each is a plain
    unshare; unprivileged, the first one also makes the user namespace that allows the rest.

    IPC: no SysV shared memory, queue or semaphore of another process is visible, and what the
    worker makes dies with it. UTS: the host's name is replaced by "sandbox". PID: see fork_pid_namespace."""
    report: dict[str, str] = {}
    owned_user_ns = os.geteuid() == 0
    for name in NAMESPACES:
        if name not in wanted:
            continue
        flags = NAMESPACE_FLAGS[name] | (0 if owned_user_ns else CLONE_NEWUSER)
        if _libc.unshare(flags) != 0:
            shown = "|".join(n for n, bit in (("CLONE_NEWUSER", CLONE_NEWUSER), (f"CLONE_NEW{name[:-2].upper()}", NAMESPACE_FLAGS[name])) if flags & bit)
            hint = " (unprivileged user namespaces disabled?)" if flags & CLONE_NEWUSER else ""
            report[name] = f"missing: unshare({shown}) failed: {_errno_text()}{hint}"
            continue
        owned_user_ns = True
        report[name] = "active"
        if name == "utsns" and _libc.sethostname(HOSTNAME, len(HOSTNAME)) != 0:
            report[name] = f"missing: sethostname in the new UTS namespace failed: {_errno_text()}"
    return report


_cpu_pipe: int | None = None  # a worker hardened ahead tells its PID namespace's parent the CPU limit here


def fork_pid_namespace(cpu_seconds: int | None) -> None:
    """After unshare(CLONE_NEWPID) the caller stays outside; its first child is the namespace's
    pid 1. So the worker forks once: the child goes on to run the script, seeing no process
    but itself; the parent only waits for it and ends the same way (exit status, or the same
    signal), so the broker sees one process. Both share the process group the broker kills.

    A pid 1 ignores every signal it has no handler for, the kernel's SIGXCPU at the CPU limit
    included: it then meets the hard limit's SIGKILL. The parent tells that death apart by the
    child's CPU time and ends with SIGXCPU, as a worker outside a PID namespace would.
    `cpu_seconds` None: a worker hardened before its script arrives does not know the limit
    yet; the child writes it to a pipe when it does (apply_limits), read after its death."""
    global _cpu_pipe
    told = None
    if cpu_seconds is None:
        told, _cpu_pipe = os.pipe()
    child = os.fork()
    if child == 0:
        if told is not None:
            os.close(told)
        return
    if told is not None:
        os.close(_cpu_pipe)
    os.close(1)  # the child alone writes to the broker: the broker's EOF is the child's
    _wait_or_end_with_the_broker(child)
    while True:
        try:
            _, status, usage = os.wait4(child, 0)
            break
        except InterruptedError:
            continue
    if told is not None:
        data = os.read(told, 4)
        cpu_seconds = struct.unpack("<I", data)[0] if len(data) == 4 else None
    if os.WIFSIGNALED(status):
        import signal

        sig = os.WTERMSIG(status)
        if sig == signal.SIGKILL and cpu_seconds is not None and usage.ru_utime + usage.ru_stime >= cpu_seconds:
            sig = signal.SIGXCPU
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _wait_or_end_with_the_broker(child: int) -> None:
    """Return when the child has ended, or kill it if the broker has: the read end of its
    requests' pipe (fd 0, kept here for this only) hangs up when the broker's process ends,
    killed or crashed, and nothing else would stop a script that never asks it anything short
    of its CPU limit (an orphan burning a core). Without pidfds (Linux < 5.3): wait only."""
    try:
        pidfd = os.pidfd_open(child)
    except (OSError, AttributeError):
        os.close(0)
        return
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(0, 0)  # no event asked: only a hang-up (or error) is reported
    while True:
        try:
            events = dict(poller.poll())
        except InterruptedError:
            continue
        if pidfd in events:
            break
        if events.get(0, 0) & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
            # a child that reads its requests ends at the EOF by itself (a worker let go unused,
            # or after its "end"): only one that does not, within the grace, is killed
            poller.unregister(0)
            if not poller.poll(ORPHAN_GRACE_MS):
                os.kill(child, 9)
            break
    os.close(0)
    os.close(pidfd)


ORPHAN_GRACE_MS = 1000


def set_name(name: bytes) -> None:
    """The process's name in ps and /proc/PID/comm (15 bytes at most): a worker and a zygote
    are told apart from other Pythons without reading their command lines."""
    _libc.prctl(PR_SET_NAME, ctypes.c_char_p(name[:15]), 0, 0, 0)


def apply_uid() -> str:
    if os.geteuid() != 0 and os.getegid() != 0:
        return "not needed: the worker does not run as root"
    try:
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
    except OSError as exc:
        return f"missing: cannot drop privileges: {exc.strerror}"
    return "active"


def apply_no_new_privs() -> str:
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
        return "active"
    return f"missing: prctl(PR_SET_NO_NEW_PRIVS) failed: {_errno_text()}"


# ---------------------------------------------------------------- Landlock

# Filesystem access rights by the ABI that introduced them.
_LANDLOCK_FS = {1: (1 << 13) - 1, 2: 1 << 13, 3: 1 << 14, 5: 1 << 15}
_LANDLOCK_NET_TCP = 0b11  # ABI 4: bind and connect TCP
_LANDLOCK_SCOPED = 0b11  # ABI 6: abstract unix sockets and signals outside the domain


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or a negative errno-ish value when absent."""
    if os.uname().machine != "x86_64":
        return -1
    version = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return int(version) if version >= 0 else -ctypes.get_errno()


def apply_landlock() -> str:
    if os.uname().machine != "x86_64":
        return f"missing: no syscall numbers for {os.uname().machine}"
    abi = landlock_abi()
    if abi <= 0:
        return f"missing: Landlock not available ({os.strerror(-abi) if abi < 0 else 'ABI 0'})"
    fs = sum(bits for since, bits in _LANDLOCK_FS.items() if abi >= since)
    fields = [fs]
    if abi >= 4:
        fields.append(_LANDLOCK_NET_TCP)
    if abi >= 6:
        fields.append(_LANDLOCK_SCOPED)
    attr = ctypes.create_string_buffer(struct.pack(f"<{len(fields)}Q", *fields), 8 * len(fields))
    fd = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, attr, ctypes.c_size_t(8 * len(fields)), ctypes.c_uint32(0))
    if fd < 0:
        return f"missing: landlock_create_ruleset failed: {_errno_text()}"
    try:
        if _libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            return f"missing: landlock_restrict_self failed: {_errno_text()}"
    finally:
        os.close(fd)
    return "active"


# ---------------------------------------------------------------- rlimits


def apply_rlimits(limits: dict) -> str:
    setrlimit = resource.setrlimit
    try:
        setrlimit(resource.RLIMIT_CORE, (0, 0))
        setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # no file writes
        setrlimit(resource.RLIMIT_NOFILE, (3, 3))  # no descriptor beyond the three pipes
        setrlimit(resource.RLIMIT_NPROC, (0, 0))  # no new processes (effective once not root)
        cpu = int(limits["cpu_seconds"])
        setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        memory = int(limits["memory_bytes"])
        setrlimit(resource.RLIMIT_AS, (memory, memory))
    except (OSError, ValueError) as exc:
        return f"missing: setrlimit failed: {exc}"
    return "active"


def apply_limits(limits: dict) -> str:
    """The run's own limits (rlimits), the last layer: for a worker hardened ahead, applied when
    its start frame brings them, after telling its PID namespace's parent the CPU limit."""
    global _cpu_pipe
    if _cpu_pipe is not None:
        try:
            os.write(_cpu_pipe, struct.pack("<I", int(limits["cpu_seconds"])))
        finally:
            os.close(_cpu_pipe)
            _cpu_pipe = None
    return apply_rlimits(limits)


def enter_namespaces(limits: dict | None, layers=None) -> dict:
    """The first part of harden(): close every descriptor but the pipes, enter the new
    namespaces and, with a PID namespace, fork (the caller goes on as the namespace's pid 1).
    A worker started ahead calls it before its heavier imports, so that the fork copies a
    small process (`limits` None: they come later, apply_limits)."""
    wanted = set(LAYERS if layers is None else layers)
    report = {name: "off" for name in LAYERS}
    os.closerange(3, 1 << 16)
    # Before the uid drop: as root the namespaces need no user namespace.
    report.update(apply_namespaces(wanted))
    if report["pidns"] == "active":
        fork_pid_namespace(None if limits is None else int(limits["cpu_seconds"]))  # now the namespace's pid 1
    return report


def harden(limits: dict, layers=None, entered: dict | None = None) -> dict:
    """Apply the layers (all unless `layers` names a subset); irreversible by design.
    `entered`: what enter_namespaces() returned, when the caller ran it first.

    Returns {layer: status} for every layer in LAYERS. Only the trusted side chooses a subset
    (tests and `fdsl audit --layers`); a script never can, it runs after this.
    """
    report = lock_down(enter_namespaces(limits, layers) if entered is None else entered, layers)
    if "rlimits" in set(LAYERS if layers is None else layers):
        report["rlimits"] = apply_limits(limits)
    return report


def lock_down(entered: dict, layers=None) -> dict:
    """The layers after the namespaces and before the run's limits: uid, no_new_privs, Landlock,
    seccomp. A worker started ahead applies them before it waits for its script."""
    wanted = set(LAYERS if layers is None else layers)
    report = dict(entered)
    if "uid" in wanted:
        report["uid"] = apply_uid()
    # no_new_privs is a precondition of Landlock and seccomp for an unprivileged process.
    if "no_new_privs" in wanted or "landlock" in wanted or "seccomp" in wanted:
        status = apply_no_new_privs()
        report["no_new_privs"] = status if "no_new_privs" in wanted or not is_active(status) else "active (required by landlock/seccomp)"
    if "landlock" in wanted:
        report["landlock"] = apply_landlock()  # needs a descriptor: before RLIMIT_NOFILE
    if "seccomp" in wanted:
        report["seccomp"] = apply_seccomp(_libc)
    return report
