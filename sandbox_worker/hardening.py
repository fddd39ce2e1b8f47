"""Process hardening of the worker, applied after its imports and before the script runs.

The layers, in the order they are applied (each probed; a layer the kernel lacks is reported
as missing with the reason, and the others still apply):

  netns         a new network namespace (no interface but a down loopback: no network).
                As root: unshare(CLONE_NEWNET) directly, before privileges are dropped.
                Unprivileged: unshare(CLONE_NEWUSER | CLONE_NEWNET), the user namespace first.
  uid           drop to nobody (65534) with no groups when started as root
                ("not needed" when the worker is not root: there is nothing to drop).
  no_new_privs  prctl(PR_SET_NO_NEW_PRIVS): no setuid/file-capability gain, ever.
  landlock      a ruleset handling every filesystem access right (and TCP, and signal and
                abstract-socket scoping where the ABI has them) with no rule: no path can be
                opened, created or executed after this point.
  seccomp       a BPF deny list: exec, fork/vfork and clone of processes (threads stay
                allowed, in no new namespace; clone3 answers ENOSYS so libc falls back to
                clone), sockets, ptrace, cross-process memory, mount and namespaces, bpf,
                io_uring, keyrings, perf events, modules, kexec, reboot, clock changes.
                Calls aimed at a process (kill, tgkill, prlimit64, setpriority, sched_set*)
                only reach the worker itself, and fcntl/ioctl cannot make the kernel signal
                anyone else (F_SETOWN, F_SETSIG, O_ASYNC...): a non-root worker keeps the
                broker's uid, so the kernel's own checks would let it reach the broker.
                Wrong architecture or x32 syscalls kill the process.
  rlimits       no core, no file writes (FSIZE 0), no descriptor beyond the three pipes,
                no new process, CPU seconds, address space.

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
import platform
import resource
import struct
import unicodedata  # noqa: F401 - compile() imports it lazily for non-ASCII identifiers: load it while we still can

NOBODY = 65534

LAYERS = ("netns", "uid", "no_new_privs", "landlock", "seccomp", "rlimits")
# Layers `--isolation strict` requires: each "active" (or "not needed").
REQUIRED = frozenset(LAYERS)

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# x86_64 syscall numbers.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int
_libc.unshare.restype = ctypes.c_int
_libc.unshare.argtypes = [ctypes.c_int]


def _errno_text() -> str:
    err = ctypes.get_errno()
    return f"{os.strerror(err)} (errno {err})"


def is_active(status: str) -> bool:
    return status.startswith("active") or status.startswith("not needed")


def missing_layers(report: dict) -> dict:
    """The layers of a report that are not in force, with their statuses."""
    return {name: status for name, status in report.items() if not is_active(status)}


# ---------------------------------------------------------------- namespaces


def apply_netns() -> str:
    if os.geteuid() == 0:
        if _libc.unshare(CLONE_NEWNET) == 0:
            return "active"
        return f"missing: unshare(CLONE_NEWNET) failed: {_errno_text()}"
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
        return "active"
    return f"missing: unshare(CLONE_NEWUSER|CLONE_NEWNET) failed: {_errno_text()} (unprivileged user namespaces disabled?)"


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
    if platform.machine() != "x86_64":
        return -1
    version = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return int(version) if version >= 0 else -ctypes.get_errno()


def apply_landlock() -> str:
    if platform.machine() != "x86_64":
        return f"missing: no syscall numbers for {platform.machine()}"
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


# ---------------------------------------------------------------- seccomp

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
EPERM, ENOSYS = 1, 38

# BPF opcodes.
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

# seccomp_data offsets: nr, arch, instruction_pointer, args[6]. Arguments are compared on their
# low 32 bits: every one filtered below is an int (pid_t, unsigned int cmd, int which), which
# the kernel truncates to those bits itself.
_OFF_NR, _OFF_ARCH = 0, 4


def _arg(index: int) -> int:
    return 16 + 8 * index


# x86_64 syscalls answered with EPERM whatever their arguments, grouped by what they would give a script.
DENIED_SYSCALLS = {
    "exec": {"execve": 59, "execveat": 322},
    "fork": {"fork": 57, "vfork": 58},
    "network": {"socket": 41, "socketpair": 53, "connect": 42, "bind": 49, "listen": 50, "accept": 43, "accept4": 288},
    "other processes": {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
        "pidfd_open": 434, "pidfd_getfd": 438, "pidfd_send_signal": 424, "rt_sigqueueinfo": 129,
        "rt_tgsigqueueinfo": 297, "process_madvise": 440, "process_mrelease": 448,
        "ioprio_set": 251, "migrate_pages": 256, "move_pages": 279,
    },
    # The worker opens nothing after start-up; Landlock already refuses every path, and this
    # keeps that true on kernels without it (and leaves no ENOENT/EACCES existence oracle).
    # newfstatat and statx stay: glibc's fstat() is newfstatat(fd, "", AT_EMPTY_PATH), and a
    # filter cannot read the path argument, so a path's metadata stays visible (docs/security.md).
    "files": {
        "open": 2, "openat": 257, "openat2": 437, "creat": 85, "truncate": 76, "stat": 4, "lstat": 6,
        "access": 21, "faccessat": 269, "faccessat2": 439, "readlink": 89, "readlinkat": 267,
        "chdir": 80, "statfs": 137, "unlink": 87, "unlinkat": 263, "rename": 82, "renameat": 264,
        "renameat2": 316, "mkdir": 83, "mkdirat": 258, "rmdir": 84, "link": 86, "linkat": 265,
        "symlink": 88, "symlinkat": 266, "chmod": 90, "fchmodat": 268, "fchmodat2": 452, "chown": 92,
        "lchown": 94, "fchownat": 260, "mknod": 133, "mknodat": 259, "utime": 132, "utimes": 235,
        "utimensat": 280, "futimesat": 261, "setxattr": 188, "lsetxattr": 189, "getxattr": 191,
        "lgetxattr": 192, "listxattr": 194, "llistxattr": 195, "removexattr": 197, "lremovexattr": 198,
        "inotify_add_watch": 254, "fanotify_init": 300, "fanotify_mark": 301,
    },
    "mounts and namespaces": {
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "open_tree": 428,
        "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "unshare": 272, "setns": 308, "name_to_handle_at": 303,
        "open_by_handle_at": 304,
    },
    "kernel attack surface": {
        "bpf": 321, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "keyctl": 250, "add_key": 248, "request_key": 249, "perf_event_open": 298,
        "userfaultfd": 323, "personality": 135, "syslog": 103, "uselib": 134, "_sysctl": 156,
        "lookup_dcookie": 212, "quotactl": 179, "iopl": 172, "ioperm": 173, "modify_ldt": 154,
    },
    "system administration": {
        "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163,
        "settimeofday": 164, "clock_settime": 227, "adjtimex": 159, "clock_adjtime": 305,
        "sethostname": 170, "setdomainname": 171, "vhangup": 153,
    },
}
SYS_CLONE, SYS_CLONE3 = 56, 435

# Calls that act on the process their first argument names: allowed only for this worker
# (0 means the caller for these; kill/tkill/tgkill take no 0: kill(0) is the process group).
# A non-root worker keeps the broker's uid, so the kernel's own checks would let these reach the
# broker: lower its limits (prlimit64), renice it, pin it, change its scheduling class.
# Their readers (getpriority, sched_get*, ioprio_get) stay open: they change nothing.
SELF_ONLY_SYSCALLS = {
    "kill": (62, False), "tkill": (200, False), "tgkill": (234, False),  # tgkill: the thread group is ours
    "prlimit64": (302, True), "sched_setaffinity": (203, True), "sched_setscheduler": (144, True),
    "sched_setparam": (142, True), "sched_setattr": (314, True),
}
# setpriority(which, who, prio): only PRIO_PROCESS of this worker (PRIO_USER 0 is every process of the uid).
SYS_SETPRIORITY, PRIO_PROCESS = 141, 0

# fcntl/ioctl commands refused: each lets the kernel signal another process on the worker's
# behalf (SIGIO/SIGURG to a chosen owner, lease and dnotify signals) or inject terminal input.
SYS_FCNTL, SYS_IOCTL = 72, 16
F_SETFL, O_ASYNC = 4, 0o20000
DENIED_FCNTL = {"F_SETOWN": 8, "F_SETSIG": 10, "F_SETOWN_EX": 15, "F_SETLEASE": 1024, "F_NOTIFY": 1026}
DENIED_IOCTL = {"FIOSETOWN": 0x8901, "SIOCSPGRP": 0x8902, "FIOASYNC": 0x5452, "TIOCSTI": 0x5412, "TIOCLINUX": 0x541C}

CLONE_NEWNS = 0x00020000
# Namespace flags a thread must not ask for (CLONE_NEWTIME is 0x80, in clone's signal bits: clone3/unshare only).
CLONE_NAMESPACES = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _assemble(items: list) -> list[bytes]:
    """(code, jt, jf, k) tuples and label strings -> sock_filter instructions. A jump target is
    a label defined later (BPF only jumps forward) or 0 for the next instruction."""
    labels: dict[str, int] = {}
    insns: list[tuple] = []
    for item in items:
        if isinstance(item, str):
            if item in labels:
                raise ValueError(f"BPF label {item!r} defined twice")
            labels[item] = len(insns)
        else:
            insns.append(item)

    def offset(target, at: int) -> int:
        if target == 0:
            return 0
        distance = labels[target] - at - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"BPF jump to {target!r} out of range ({distance})")
        return distance

    return [_insn(code, offset(jt, i), offset(jf, i), k) for i, (code, jt, jf, k) in enumerate(insns)]


def seccomp_program(own_pid: int) -> list[bytes]:
    """The filter as sock_filter instructions. Every path ends in a return.

    Each argument check is a block entered only when the syscall number matches, and every
    path through a block returns, so the accumulator holds the number again at the next block.
    """
    eperm = SECCOMP_RET_ERRNO | EPERM
    items: list = [
        (_LD_W_ABS, 0, 0, _OFF_ARCH),
        (_JEQ_K, "x86_64", 0, AUDIT_ARCH_X86_64),
        (_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        "x86_64",
        (_LD_W_ABS, 0, 0, _OFF_NR),
        (_JGE_K, 0, "native", X32_SYSCALL_BIT),
        (_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        "native",
    ]
    for group in DENIED_SYSCALLS.values():
        for number in group.values():
            items += [(_JEQ_K, 0, f"{number}:next", number), (_RET_K, 0, 0, eperm), f"{number}:next"]
    # clone3 -> ENOSYS: its flags live in user memory a filter cannot read; libc falls back to clone.
    items += [(_JEQ_K, 0, "clone3:next", SYS_CLONE3), (_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS), "clone3:next"]
    # clone: only threads (CLONE_THREAD in flags, the first argument), in no new namespace.
    items += [
        (_JEQ_K, 0, "clone:next", SYS_CLONE),
        (_LD_W_ABS, 0, 0, _arg(0)),
        (_JSET_K, 0, "clone:deny", CLONE_THREAD),
        (_JSET_K, "clone:deny", 0, CLONE_NAMESPACES),
        (_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        "clone:deny",
        (_RET_K, 0, 0, eperm),
        "clone:next",
    ]
    for name, (number, zero_is_self) in SELF_ONLY_SYSCALLS.items():
        items += [(_JEQ_K, 0, f"{name}:next", number), (_LD_W_ABS, 0, 0, _arg(0))]
        if zero_is_self:
            items.append((_JEQ_K, f"{name}:allow", 0, 0))
        items += [
            (_JEQ_K, f"{name}:allow", 0, own_pid),
            (_RET_K, 0, 0, eperm),
            f"{name}:allow",
            (_RET_K, 0, 0, SECCOMP_RET_ALLOW),
            f"{name}:next",
        ]
    items += [
        (_JEQ_K, 0, "setpriority:next", SYS_SETPRIORITY),
        (_LD_W_ABS, 0, 0, _arg(0)),
        (_JEQ_K, 0, "setpriority:deny", PRIO_PROCESS),
        (_LD_W_ABS, 0, 0, _arg(1)),
        (_JEQ_K, "setpriority:allow", 0, 0),
        (_JEQ_K, "setpriority:allow", 0, own_pid),
        "setpriority:deny",
        (_RET_K, 0, 0, eperm),
        "setpriority:allow",
        (_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        "setpriority:next",
    ]
    # fcntl(fd, cmd, arg): no owner, signal, lease or dnotify; F_SETFL without O_ASYNC.
    items += [(_JEQ_K, 0, "fcntl:next", SYS_FCNTL), (_LD_W_ABS, 0, 0, _arg(1))]
    items += [(_JEQ_K, "fcntl:deny", 0, command) for command in DENIED_FCNTL.values()]
    items += [
        (_JEQ_K, 0, "fcntl:allow", F_SETFL),
        (_LD_W_ABS, 0, 0, _arg(2)),
        (_JSET_K, "fcntl:deny", "fcntl:allow", O_ASYNC),
        "fcntl:deny",
        (_RET_K, 0, 0, eperm),
        "fcntl:allow",
        (_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        "fcntl:next",
    ]
    items += [(_JEQ_K, 0, "ioctl:next", SYS_IOCTL), (_LD_W_ABS, 0, 0, _arg(1))]
    items += [(_JEQ_K, "ioctl:deny", 0, command) for command in DENIED_IOCTL.values()]
    items += [
        (_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        "ioctl:deny",
        (_RET_K, 0, 0, eperm),
        "ioctl:next",
    ]
    items.append((_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    return _assemble(items)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def apply_seccomp() -> str:
    if platform.machine() != "x86_64":
        return f"missing: no syscall table for {platform.machine()}"
    prog = seccomp_program(os.getpid())
    code = b"".join(prog)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(prog), ctypes.cast(buffer, ctypes.c_void_p))
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return f"missing: prctl(PR_SET_SECCOMP) failed: {_errno_text()}"
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


def harden(limits: dict, layers=None) -> dict:
    """Apply the layers (all unless `layers` names a subset); irreversible by design.

    Returns {layer: status} for every layer in LAYERS. Only the trusted side chooses a subset
    (tests and `fdsl audit --layers`); a script never can, it runs after this.
    """
    wanted = set(LAYERS if layers is None else layers)
    report = {name: "off" for name in LAYERS}
    os.closerange(3, 1 << 16)
    # Before the uid drop: as root the net namespace needs no user namespace.
    if "netns" in wanted:
        report["netns"] = apply_netns()
    if "uid" in wanted:
        report["uid"] = apply_uid()
    # no_new_privs is a precondition of Landlock and seccomp for an unprivileged process.
    if "no_new_privs" in wanted or "landlock" in wanted or "seccomp" in wanted:
        status = apply_no_new_privs()
        report["no_new_privs"] = status if "no_new_privs" in wanted or not is_active(status) else "active (required by landlock/seccomp)"
    if "landlock" in wanted:
        report["landlock"] = apply_landlock()  # needs a descriptor: before RLIMIT_NOFILE
    if "seccomp" in wanted:
        report["seccomp"] = apply_seccomp()
    if "rlimits" in wanted:
        report["rlimits"] = apply_rlimits(limits)
    return report
