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
                allowed; clone3 answers ENOSYS so libc falls back to clone), sockets, ptrace,
                cross-process memory, mount and namespaces, bpf, io_uring, keyrings,
                perf events, modules, kexec, reboot, clock changes, signals to any other
                process. Wrong architecture or x32 syscalls kill the process.
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

# seccomp_data offsets: nr, arch, instruction_pointer, args[6] (little-endian low words).
_OFF_NR, _OFF_ARCH, _OFF_ARG0, _OFF_ARG0_HIGH = 0, 4, 16, 20

# x86_64 syscalls answered with EPERM, grouped by what they would give a script.
DENIED_SYSCALLS = {
    "exec": {"execve": 59, "execveat": 322},
    "fork": {"fork": 57, "vfork": 58},
    "network": {"socket": 41, "socketpair": 53, "connect": 42, "bind": 49, "listen": 50, "accept": 43, "accept4": 288},
    "other processes": {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
        "pidfd_open": 434, "pidfd_getfd": 438, "pidfd_send_signal": 424, "rt_sigqueueinfo": 129,
        "rt_tgsigqueueinfo": 297,
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
SYS_KILL, SYS_TKILL, SYS_TGKILL = 62, 200, 234


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k & 0xFFFFFFFF)


def seccomp_program(own_pid: int) -> list[bytes]:
    """The filter as sock_filter instructions. Every jump goes forward to a return."""
    errno_eperm = SECCOMP_RET_ERRNO | EPERM
    prog = [
        _insn(_LD_W_ABS, 0, 0, _OFF_ARCH),
        _insn(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, _OFF_NR),
        _insn(_JGE_K, 0, 1, X32_SYSCALL_BIT),
        _insn(_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
    ]
    for group in DENIED_SYSCALLS.values():
        for number in group.values():
            prog.append(_insn(_JEQ_K, 0, 1, number))
            prog.append(_insn(_RET_K, 0, 0, errno_eperm))
    # clone3 -> ENOSYS: its flags live in user memory a filter cannot read; libc falls back to clone.
    prog.append(_insn(_JEQ_K, 0, 1, SYS_CLONE3))
    prog.append(_insn(_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS))
    # clone: only threads (CLONE_THREAD set in flags, the first argument).
    prog += [
        _insn(_JEQ_K, 0, 4, SYS_CLONE),
        _insn(_LD_W_ABS, 0, 0, _OFF_ARG0),
        _insn(_JSET_K, 1, 0, CLONE_THREAD),
        _insn(_RET_K, 0, 0, errno_eperm),
        _insn(_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
    # kill(pid, sig), tkill(tid, sig), tgkill(tgid, tid, sig): only this process itself.
    for number in (SYS_KILL, SYS_TKILL, SYS_TGKILL):
        prog += [
            _insn(_JEQ_K, 0, 4, number),
            _insn(_LD_W_ABS, 0, 0, _OFF_ARG0),
            _insn(_JEQ_K, 1, 0, own_pid),
            _insn(_RET_K, 0, 0, errno_eperm),
            _insn(_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        ]
    prog.append(_insn(_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    return prog


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
