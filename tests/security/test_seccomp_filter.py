"""The seccomp program itself, run in a small BPF interpreter: every number the kernel has or
may ever have, every argument rule, the paths that must stay open. Fast, and exhaustive where
the real syscall tests (test_seccomp_syscalls.py) can only sample."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from sandbox_worker import seccomp as s

OWN = 4242
OTHER = 1
ALLOW, KILL = s.SECCOMP_RET_ALLOW, s.SECCOMP_RET_KILL_PROCESS
EPERM, ENOSYS = s.SECCOMP_RET_ERRNO | s.EPERM, s.SECCOMP_RET_ERRNO | s.ENOSYS
PROGRAM = [struct.unpack("<HBBI", insn) for insn in s.seccomp_program(OWN)]
NR = s.NUMBERS


def verdict(nr: int, *args: int, arch: int = s.AUDIT_ARCH_X86_64) -> int:
    """Run the filter over one seccomp_data (nr, arch, ip, args[6]) and return its action."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *[a & (2**64 - 1) for a in (list(args) + [0] * 6)[:6]])
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = PROGRAM[pc]  # an IndexError here: a path that falls off the end
        if code == 0x20:  # LD W ABS
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code == 0x06:  # RET K
            return k
        elif code in (0x15, 0x35, 0x45):  # JEQ, JGE, JSET
            taken = acc == k if code == 0x15 else acc >= k if code == 0x35 else bool(acc & k)
            pc += 1 + (jt if taken else jf)
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


# The reviewed allow-list. A call added to ALLOWED or RULES without being added here (after a
# review of why the jail needs it) fails this test; so does one without its reason.
REVIEWED_ALLOWED = {
    "read", "write", "readv", "writev", "close", "fstat", "newfstatat", "statx", "lseek", "brk", "munmap",
    "mremap", "madvise", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "restart_syscall",
    "setitimer", "getitimer", "nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday",
    "time", "getpid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid", "getresgid",
    "getrusage", "getrandom", "futex", "sched_yield", "exit", "exit_group",
}
REVIEWED_RULES = {"kill", "tkill", "tgkill", "prlimit64", "mprotect", "pkey_mprotect", "mmap", "fcntl", "ioctl", "clone3"}


def test_every_allowed_call_is_reviewed_and_has_its_reason():
    assert set(s.ALLOWED) == REVIEWED_ALLOWED
    assert set(s.RULES) == REVIEWED_RULES
    for name, reason in {**s.ALLOWED, **s.RULES}.items():
        assert isinstance(reason, str) and len(reason.split()) >= 2, name
        assert name in NR, name


def test_the_numbers_match_the_kernel_headers():
    header = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
    if not header.exists():
        pytest.skip("no kernel headers on this machine to compare the numbers with")
    known = {m.group(1): int(m.group(2)) for m in re.finditer(r"#define __NR_(\w+) (\d+)", header.read_text())}
    names = {**NR, **{n: nr for group in s.NOTABLE_DENIALS.values() for n, nr in group.items()}}
    for name, nr in names.items():
        if name in known:  # the headers here stop at the kernel the distribution ships
            assert known[name] == nr, name


def test_the_program_fits_and_every_jump_lands_inside():
    assert len(PROGRAM) < 4096
    for pc, (code, jt, jf, _k) in enumerate(PROGRAM):
        if code in (0x15, 0x35, 0x45):
            assert pc + 1 + max(jt, jf) < len(PROGRAM)
    assert PROGRAM[-1] == (0x06, 0, 0, EPERM)  # the default: refused


def test_every_number_outside_the_list_is_refused_including_future_ones():
    allowed = {NR[name] for name in s.ALLOWED}
    ruled = {NR[name] for name in s.RULES}
    for nr in range(0, 2048):
        if nr in allowed:
            assert verdict(nr, OTHER, 0, 0) == ALLOW, nr
        elif nr not in ruled:
            assert verdict(nr, 0, OWN, 0xFFFFFFFF) == EPERM, nr


@pytest.mark.parametrize("name,nr", [(name, nr) for group in s.NOTABLE_DENIALS.values() for name, nr in group.items()])
def test_notable_denials_answer_eperm_whatever_their_arguments(name, nr):
    assert verdict(nr) == EPERM
    assert verdict(nr, 0, OWN, 0xFFFFFFFF) == EPERM


@pytest.mark.parametrize("name,nr", [("setxattrat", 463), ("getxattrat", 464), ("listxattrat", 465),
                                     ("removexattrat", 466), ("open_tree_attr", 467), ("file_getattr", 468),
                                     ("file_setattr", 469), ("statmount", 457), ("listmount", 458),
                                     ("shmget", 29), ("shmat", 30), ("shmctl", 31), ("getpgid", 121), ("getsid", 124)])
def test_what_the_deny_list_missed_is_refused(name, nr):
    assert verdict(nr) == EPERM


def test_wrong_architecture_and_x32_kill_the_process():
    assert verdict(0, arch=0x40000003) == KILL  # i386
    assert verdict(s.X32_SYSCALL_BIT | 0) == KILL


@pytest.mark.parametrize("name", list(s.SELF_ONLY))
def test_calls_aimed_at_a_process_reach_only_the_worker(name):
    nr, zero_is_self = NR[name], s.SELF_ONLY[name]
    assert verdict(nr, OWN, 0, 0) == ALLOW
    assert verdict(nr, OTHER, 0, 0) == EPERM
    assert verdict(nr, -1, 0, 0) == EPERM
    assert verdict(nr, -OWN, 0, 0) == EPERM  # kill(-pid): a process group
    assert verdict(nr, 0, 0, 0) == (ALLOW if zero_is_self else EPERM)


def test_tgkill_checks_the_thread_group_not_the_thread():
    assert verdict(NR["tgkill"], OWN, OWN + 7, 10) == ALLOW
    assert verdict(NR["tgkill"], OTHER, OWN, 10) == EPERM


@pytest.mark.parametrize("name", list(s.NO_EXEC))
def test_no_new_executable_memory(name):
    prot = s.NO_EXEC[name]
    args = [0] * 6
    args[prot] = 3  # PROT_READ | PROT_WRITE
    assert verdict(NR[name], *args) == ALLOW
    args[prot] = 5  # PROT_READ | PROT_EXEC
    assert verdict(NR[name], *args) == EPERM
    args[prot] = 7
    assert verdict(NR[name], *args) == EPERM


@pytest.mark.parametrize("command", list(s.DENIED_FCNTL.values()))
def test_fcntl_commands_that_arm_signals_are_refused(command):
    assert verdict(NR["fcntl"], 1, command, OWN) == EPERM


def test_fcntl_setfl_without_o_async_and_other_commands_pass():
    assert verdict(NR["fcntl"], 1, s.F_SETFL, s.O_ASYNC | 0o4000) == EPERM
    assert verdict(NR["fcntl"], 1, s.F_SETFL, 0o4000) == ALLOW  # O_NONBLOCK
    for command in (0, 1, 2, 3, 9, 11, 1030):  # F_DUPFD F_GETFD F_SETFD F_GETFL F_GETOWN F_GETSIG F_DUPFD_CLOEXEC
        assert verdict(NR["fcntl"], 1, command, 0) == ALLOW


@pytest.mark.parametrize("command", list(s.DENIED_IOCTL.values()))
def test_ioctls_that_arm_signals_or_inject_input_are_refused(command):
    assert verdict(NR["ioctl"], 1, command, 0) == EPERM


def test_ordinary_ioctls_pass():
    for command in (0x5451, 0x5450, 0x5421, 0x541B, 0x5401):  # FIOCLEX FIONCLEX FIONBIO FIONREAD TCGETS
        assert verdict(NR["ioctl"], 1, command, 0) == ALLOW


def test_no_process_and_no_thread_is_created():
    pthread_flags = 0x3D0F00  # what glibc's pthread_create passes
    assert verdict(NR["clone"], pthread_flags) == EPERM  # the jail runs no thread
    assert verdict(NR["clone"], 17) == EPERM  # SIGCHLD: fork
    assert verdict(NR["clone3"]) == ENOSYS
