"""The seccomp program itself, run in a small BPF interpreter: every syscall of the deny list,
every argument rule, the paths that must stay open. Fast, and exhaustive where the real
syscall tests (test_seccomp_syscalls.py) can only sample."""

from __future__ import annotations

import struct

import pytest

from sandbox_worker import hardening as h

OWN = 4242
OTHER = 1
ALLOW, KILL = h.SECCOMP_RET_ALLOW, h.SECCOMP_RET_KILL_PROCESS
EPERM, ENOSYS = h.SECCOMP_RET_ERRNO | h.EPERM, h.SECCOMP_RET_ERRNO | h.ENOSYS
PROGRAM = [struct.unpack("<HBBI", insn) for insn in h.seccomp_program(OWN)]


def verdict(nr: int, *args: int, arch: int = h.AUDIT_ARCH_X86_64) -> int:
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


def test_the_program_fits_and_every_jump_lands_inside():
    assert len(PROGRAM) < 4096
    for pc, (code, jt, jf, _k) in enumerate(PROGRAM):
        if code in (0x15, 0x35, 0x45):
            assert pc + 1 + max(jt, jf) < len(PROGRAM)
    assert PROGRAM[-1] == (0x06, 0, 0, ALLOW)


@pytest.mark.parametrize("name,nr", [(name, nr) for group in h.DENIED_SYSCALLS.values() for name, nr in group.items()])
def test_denied_syscalls_answer_eperm_whatever_their_arguments(name, nr):
    assert verdict(nr) == EPERM
    assert verdict(nr, 0, OWN, 0xFFFFFFFF) == EPERM


def test_wrong_architecture_and_x32_kill_the_process():
    assert verdict(0, arch=0x40000003) == KILL  # i386
    assert verdict(h.X32_SYSCALL_BIT | 0) == KILL


@pytest.mark.parametrize("nr", [0, 1, 3, 9, 11, 13, 14, 38, 202, 231, 60, 39, 186, 204, 140, 97, 145, 143, 315])
def test_what_python_needs_is_allowed(nr):
    # read write close mmap munmap rt_sigaction rt_sigprocmask setitimer futex exit_group exit
    # getpid gettid sched_getaffinity getpriority getrlimit sched_getscheduler sched_getparam sched_getattr
    assert verdict(nr, OTHER) == ALLOW


@pytest.mark.parametrize("name", list(h.SELF_ONLY_SYSCALLS))
def test_calls_aimed_at_a_process_reach_only_the_worker(name):
    nr, zero_is_self = h.SELF_ONLY_SYSCALLS[name]
    assert verdict(nr, OWN, 0, 0) == ALLOW
    assert verdict(nr, OTHER, 0, 0) == EPERM
    assert verdict(nr, -1, 0, 0) == EPERM
    assert verdict(nr, -OWN, 0, 0) == EPERM  # kill(-pid): a process group
    assert verdict(nr, 0, 0, 0) == (ALLOW if zero_is_self else EPERM)


def test_tgkill_checks_the_thread_group_not_the_thread():
    assert verdict(234, OWN, OWN + 7, 10) == ALLOW
    assert verdict(234, OTHER, OWN, 10) == EPERM


def test_setpriority_only_for_the_worker_process():
    assert verdict(h.SYS_SETPRIORITY, 0, 0, 5) == ALLOW
    assert verdict(h.SYS_SETPRIORITY, 0, OWN, 5) == ALLOW
    assert verdict(h.SYS_SETPRIORITY, 0, OTHER, 5) == EPERM
    assert verdict(h.SYS_SETPRIORITY, 1, 0, 5) == EPERM  # PRIO_PGRP
    assert verdict(h.SYS_SETPRIORITY, 2, 0, 5) == EPERM  # PRIO_USER 0: every process of the uid


@pytest.mark.parametrize("command", list(h.DENIED_FCNTL.values()))
def test_fcntl_commands_that_arm_signals_are_refused(command):
    assert verdict(h.SYS_FCNTL, 1, command, OWN) == EPERM


def test_fcntl_setfl_without_o_async_and_other_commands_pass():
    assert verdict(h.SYS_FCNTL, 1, h.F_SETFL, h.O_ASYNC | 0o4000) == EPERM
    assert verdict(h.SYS_FCNTL, 1, h.F_SETFL, 0o4000) == ALLOW  # O_NONBLOCK
    for command in (0, 1, 2, 3, 9, 11, 1030):  # F_DUPFD F_GETFD F_SETFD F_GETFL F_GETOWN F_GETSIG F_DUPFD_CLOEXEC
        assert verdict(h.SYS_FCNTL, 1, command, 0) == ALLOW


@pytest.mark.parametrize("command", list(h.DENIED_IOCTL.values()))
def test_ioctls_that_arm_signals_or_inject_input_are_refused(command):
    assert verdict(h.SYS_IOCTL, 1, command, 0) == EPERM


def test_ordinary_ioctls_pass():
    for command in (0x5451, 0x5450, 0x5421, 0x541B, 0x5401):  # FIOCLEX FIONCLEX FIONBIO FIONREAD TCGETS
        assert verdict(h.SYS_IOCTL, 1, command, 0) == ALLOW


def test_clone_only_for_threads_in_no_new_namespace():
    pthread_flags = 0x3D0F00  # what glibc's pthread_create passes
    assert verdict(h.SYS_CLONE, pthread_flags) == ALLOW
    assert verdict(h.SYS_CLONE, 17) == EPERM  # SIGCHLD: fork
    assert verdict(h.SYS_CLONE, 0x4111) == EPERM  # CLONE_VM | CLONE_VFORK | SIGCHLD: posix_spawn
    for flag in (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000):
        assert verdict(h.SYS_CLONE, pthread_flags | flag) == EPERM, hex(flag)
    assert verdict(h.SYS_CLONE3) == ENOSYS
