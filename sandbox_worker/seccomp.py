"""The seccomp layer: an allow-list of the system calls a jailed process needs, nothing else.

A deny list lets through every call it does not name, and new kernels add calls (the
`*xattrat` family, `listmount`/`statmount`, `open_tree_attr` in 6.x) that reach what their
older twins were denied. So the filter allows only ALLOWED (each with the reason it is
there, derived from what the worker and the PDF extractor were seen to call under the test
suite and the fuzzer: `strace -f` of every jailed process) and the calls of RULES, whose
arguments are checked; everything else, known or not yet invented, answers EPERM (clone3
ENOSYS, so that libc falls back to clone, which RULES refuses). A wrong architecture or an
x32 call kills the process.

Stdlib only: the worker imports it before it hardens itself.
"""

from __future__ import annotations

import ctypes
import os
import struct

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
EPERM, ENOSYS = 1, 38

# x86_64 numbers of every call this module names (arch/x86/entry/syscalls/syscall_64.tbl).
NUMBERS = {
    "read": 0, "write": 1, "close": 3, "fstat": 5, "lseek": 8, "mmap": 9, "mprotect": 10, "munmap": 11,
    "brk": 12, "rt_sigaction": 13, "rt_sigprocmask": 14, "rt_sigreturn": 15, "ioctl": 16, "readv": 19,
    "writev": 20, "sched_yield": 24, "mremap": 25, "madvise": 28, "nanosleep": 35, "getitimer": 36,
    "setitimer": 38, "getpid": 39, "exit": 60, "kill": 62, "fcntl": 72, "gettimeofday": 96, "getrusage": 98,
    "getuid": 102, "getgid": 104, "geteuid": 107, "getegid": 108, "getgroups": 115, "getresuid": 118,
    "getresgid": 120, "sigaltstack": 131, "gettid": 186, "tkill": 200, "time": 201, "futex": 202,
    "restart_syscall": 219, "clock_gettime": 228, "clock_getres": 229, "clock_nanosleep": 230,
    "exit_group": 231, "tgkill": 234, "newfstatat": 262, "prlimit64": 302, "getrandom": 318,
    "pkey_mprotect": 329, "statx": 332, "clone": 56, "clone3": 435,
}

# Allowed whatever the arguments: name -> why the jailed process needs it.
ALLOWED = {
    "read": "frames from the broker on fd 0",
    "write": "frames to the broker on fd 1, diagnostics on fd 2",
    "readv": "glibc's buffered I/O on the pipes",
    "writev": "glibc's buffered I/O on the pipes",
    "close": "closing a descriptor it holds (nothing can be opened again)",
    "fstat": "CPython checks the pipes it reads",
    "newfstatat": "glibc's fstat() is newfstatat(fd, \"\", AT_EMPTY_PATH); a path's metadata stays visible",
    "statx": "newer glibc's fstat(); the same exposure as newfstatat",
    "lseek": "CPython's io seeks on its standard streams",
    "brk": "the heap",
    "munmap": "memory given back",
    "mremap": "realloc of large blocks",
    "madvise": "glibc's free() returns pages with MADV_DONTNEED",
    "rt_sigaction": "signal handlers (PromptScript's timeout blocks use SIGALRM)",
    "rt_sigprocmask": "signal masks around handlers",
    "rt_sigreturn": "returning from a signal handler",
    "sigaltstack": "CPython's stack-overflow handling",
    "restart_syscall": "a call interrupted by a signal restarts (SA_RESTART)",
    "setitimer": "PromptScript's timeout blocks and --max-time (ITIMER_REAL)",
    "getitimer": "re-arming the earliest pending timer",
    "nanosleep": "time.sleep (retry backoff)",
    "clock_nanosleep": "time.sleep (retry backoff)",
    "clock_gettime": "clocks (when the vDSO cannot answer)",
    "clock_getres": "clock resolution",
    "gettimeofday": "wall-clock time (when the vDSO cannot answer)",
    "time": "wall-clock time (when the vDSO cannot answer)",
    "getpid": "the process's own id (signals to itself)",
    "gettid": "the thread's own id (signals to itself)",
    "getuid": "identity checks of CPython and glibc",
    "geteuid": "identity checks of CPython and glibc",
    "getgid": "identity checks of CPython and glibc",
    "getegid": "identity checks of CPython and glibc",
    "getgroups": "identity checks of CPython and glibc",
    "getresuid": "identity checks of CPython and glibc",
    "getresgid": "identity checks of CPython and glibc",
    "getrusage": "resource.getrusage, of itself",
    "getrandom": "random numbers and hash seeds",
    "futex": "glibc's locks (no other process shares memory with it)",
    "sched_yield": "glibc's spin locks",
    "exit": "the end of the process",
    "exit_group": "the end of the process",
}

# Checked by their arguments: name -> the rule, in words (the program below enforces each).
RULES = {
    "kill": "only signals to itself (a non-root worker keeps the broker's uid: the kernel would let it signal the broker)",
    "tkill": "only to itself",
    "tgkill": "only to itself",
    "prlimit64": "only its own limits (0 or its pid): the rlimits layer sets them after this filter",
    "mprotect": "never PROT_EXEC: no new executable memory",
    "pkey_mprotect": "never PROT_EXEC: no new executable memory",
    "mmap": "memory (pymalloc arenas, large objects), never PROT_EXEC: no new executable memory",
    "fcntl": "no owner, signal, lease or dnotify (F_SETOWN, F_SETOWN_EX, F_SETSIG, F_SETLEASE, F_NOTIFY); F_SETFL without O_ASYNC",
    "ioctl": "none that signals another process or types into a terminal (FIOSETOWN, SIOCSPGRP, FIOASYNC, TIOCSTI, TIOCLINUX)",
    "clone3": "ENOSYS (its flags are in memory a filter cannot read; libc falls back to clone)",
}
SELF_ONLY = {"kill": False, "tkill": False, "tgkill": False, "prlimit64": True}  # name -> 0 also means itself
NO_EXEC = {"mmap": 2, "mprotect": 2, "pkey_mprotect": 2}  # name -> index of the prot argument
PROT_EXEC = 4
F_SETFL, O_ASYNC = 4, 0o20000
DENIED_FCNTL = {"F_SETOWN": 8, "F_SETSIG": 10, "F_SETOWN_EX": 15, "F_SETLEASE": 1024, "F_NOTIFY": 1026}
DENIED_IOCTL = {"FIOSETOWN": 0x8901, "SIOCSPGRP": 0x8902, "FIOASYNC": 0x5452, "TIOCSTI": 0x5412, "TIOCLINUX": 0x541C}

# What the allow-list leaves out, grouped for the documentation and the tests (not used by the
# filter: everything outside ALLOWED and RULES is denied).
NOTABLE_DENIALS = {
    "exec": {"execve": 59, "execveat": 322},
    "processes and threads": {"fork": 57, "vfork": 58, "clone": 56},
    "network": {"socket": 41, "socketpair": 53, "connect": 42, "bind": 49, "listen": 50, "accept": 43, "accept4": 288},
    "other processes": {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "pidfd_open": 434,
        "pidfd_getfd": 438, "pidfd_send_signal": 424, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
        "process_madvise": 440, "process_mrelease": 448, "ioprio_set": 251, "migrate_pages": 256, "move_pages": 279,
        "getpgid": 121, "getsid": 124, "getpriority": 140, "setpriority": 141, "sched_getaffinity": 204,
        "sched_setaffinity": 203, "sched_setscheduler": 144, "sched_setparam": 142, "sched_setattr": 314,
    },
    "files": {
        "open": 2, "openat": 257, "openat2": 437, "creat": 85, "truncate": 76, "stat": 4, "lstat": 6,
        "access": 21, "faccessat2": 439, "readlink": 89, "readlinkat": 267, "chdir": 80, "unlinkat": 263,
        "renameat2": 316, "mkdirat": 258, "linkat": 265, "symlinkat": 266, "fchmodat2": 452, "fchownat": 260,
        "utimensat": 280, "inotify_add_watch": 254, "fanotify_init": 300,
    },
    "extended attributes": {
        "setxattr": 188, "getxattr": 191, "listxattr": 194, "removexattr": 197, "fsetxattr": 190,
        "fgetxattr": 193, "setxattrat": 463, "getxattrat": 464, "listxattrat": 465, "removexattrat": 466,
        "file_getattr": 468, "file_setattr": 469,
    },
    "mounts and namespaces": {
        "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "open_tree": 428, "open_tree_attr": 467,
        "move_mount": 429, "fsopen": 430, "fsmount": 432, "mount_setattr": 442, "statmount": 457,
        "listmount": 458, "listns": 470, "unshare": 272, "setns": 308, "name_to_handle_at": 303,
        "open_by_handle_at": 304,
    },
    "inter-process communication": {
        "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "msgget": 68, "msgsnd": 69, "msgrcv": 70,
        "msgctl": 71, "semget": 64, "semop": 65, "semctl": 66, "mq_open": 240, "memfd_create": 319,
        "memfd_secret": 447, "pipe2": 293,
    },
    "kernel attack surface": {
        "bpf": 321, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 250,
        "add_key": 248, "request_key": 249, "perf_event_open": 298, "userfaultfd": 323, "personality": 135,
        "syslog": 103, "modify_ldt": 154, "iopl": 172, "ioperm": 173, "lsm_get_self_attr": 459,
        "lsm_list_modules": 461, "mseal": 462, "uname": 63, "sysinfo": 99,
    },
    "system administration": {
        "kexec_load": 246, "init_module": 175, "finit_module": 313, "delete_module": 176, "reboot": 169,
        "swapon": 167, "acct": 163, "settimeofday": 164, "clock_settime": 227, "adjtimex": 159,
        "sethostname": 170, "setdomainname": 171,
    },
}

# BPF opcodes and seccomp_data offsets (nr, arch, instruction_pointer, args[6]). Arguments are
# compared on their low 32 bits: every one checked is an int (pid_t, unsigned int cmd, int
# prot), which the kernel truncates to those bits itself.
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_OFF_NR, _OFF_ARCH = 0, 4


def _arg(index: int) -> int:
    return 16 + 8 * index


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


ALLOW, DENY = (_RET_K, 0, 0, SECCOMP_RET_ALLOW), (_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM)


def _checked(name: str, own_pid: int) -> list:
    """The block of a RULES call: entered when the number matches, and every path returns."""
    nr, nxt = NUMBERS[name], f"{name}:next"
    items: list = [(_JEQ_K, 0, nxt, nr)]
    if name == "clone3":
        return items + [(_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS), nxt]
    if name in SELF_ONLY:
        items.append((_LD_W_ABS, 0, 0, _arg(0)))
        if SELF_ONLY[name]:
            items.append((_JEQ_K, f"{name}:allow", 0, 0))
        items += [(_JEQ_K, f"{name}:allow", 0, own_pid), DENY]
    elif name in NO_EXEC:
        items += [(_LD_W_ABS, 0, 0, _arg(NO_EXEC[name])), (_JSET_K, 0, f"{name}:allow", PROT_EXEC), DENY]
    elif name == "fcntl":
        items.append((_LD_W_ABS, 0, 0, _arg(1)))
        items += [(_JEQ_K, "fcntl:deny", 0, command) for command in DENIED_FCNTL.values()]
        items += [(_JEQ_K, 0, "fcntl:allow", F_SETFL), (_LD_W_ABS, 0, 0, _arg(2)),
                  (_JSET_K, "fcntl:deny", "fcntl:allow", O_ASYNC), "fcntl:deny", DENY]
    elif name == "ioctl":
        items.append((_LD_W_ABS, 0, 0, _arg(1)))
        items += [(_JEQ_K, "ioctl:deny", 0, command) for command in DENIED_IOCTL.values()]
        return items + [ALLOW, "ioctl:deny", DENY, nxt]
    return items + [f"{name}:allow", ALLOW, nxt]


def seccomp_program(own_pid: int) -> list[bytes]:
    """The filter as sock_filter instructions. After each block the accumulator holds the
    call's number again (every path through a block returns)."""
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
    for name in ALLOWED:  # most frequent first: read and write lead the table
        items += [(_JEQ_K, 0, f"{name}:no", NUMBERS[name]), ALLOW, f"{name}:no"]
    for name in RULES:
        items += _checked(name, own_pid)
    items.append(DENY)
    return _assemble(items)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def apply_seccomp(libc) -> str:
    if os.uname().machine != "x86_64":
        return f"missing: no syscall table for {os.uname().machine}"
    prog = seccomp_program(os.getpid())
    code = b"".join(prog)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(prog), ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        return f"missing: prctl(PR_SET_SECCOMP) failed: {os.strerror(err)} (errno {err})"
    return "active"
