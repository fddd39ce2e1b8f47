"""The seccomp layer against raw syscalls (ctypes, in a `--mode os` worker: the audit path).

One script makes every call below and reports (return value, errno) for each. It runs three
times: with no layer (`baseline`: the kernel itself takes the call, so an EPERM later comes
from the filter), with seccomp alone, and with every layer. Arguments are chosen so that the
kernel, when it does run the call, fails it harmlessly for another reason (EFAULT, EBADF,
EINVAL...) or does something that changes nothing (a limit set to its own value, signal 0).
"""

from __future__ import annotations

import ast
import errno
import os
import time

import pytest

from runtime.broker import Broker
from runtime.supervisor import Limits, run_worker

ROOT = os.geteuid() == 0

PRELUDE = r"""
import ctypes, os, struct  # what the worker has loaded (a jailed process imports nothing new)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ppid, me = BROKER, os.getpid()  # the broker by its host pid: in a PID namespace, it names no process
buf = ctypes.create_string_buffer(4096)
B = ctypes.addressof(buf)
results = {}

def sc(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    results[name] = [r, ctypes.get_errno() if r < 0 else 0]
    return r

def closing(r):
    if r >= 0: os.close(r)

def reaped(r):
    if r == 0: os._exit(0)  # the child of a raw fork/clone leaves at once
    if r > 0: os.waitpid(r, 0)

struct.pack_into('<QQQQ', buf, 1024, B, 8, 0x1000, 8)  # iovecs: ours, an unmapped page of the parent
struct.pack_into('<iii', buf, 2048, 0, 0, -1)  # siginfo: signal 0, si_code SI_QUEUE
def prio(pid):
    try:
        return os.getpriority(os.PRIO_PROCESS, pid)
    except OSError:
        return 0

try:  # the parent's own mask: setting it changes nothing (all CPUs where the call is refused)
    mask = sum(1 << cpu for cpu in os.sched_getaffinity(ppid))
except OSError:
    mask = 2**64 - 1
struct.pack_into('<Q', buf, 3072, mask)
struct.pack_into('<i', buf, 3080, 0)  # sched_param: priority 0
struct.pack_into('<ii', buf, 3300, 0, me)  # f_owner_ex: F_OWNER_TID, this thread
struct.pack_into('<ii', buf, 3400, me, 0)  # an owner pid, then "off" for FIOASYNC
nice = prio(0)
"""

# name -> the statement making the call. Targets of "parent" calls are the broker (pytest).
PROBES = {
    "io_uring_setup": "closing(sc('io_uring_setup', 425, 1, 0))",
    "io_uring_enter": "sc('io_uring_enter', 426, -1, 0, 0, 0, 0, 0)",
    "io_uring_register": "sc('io_uring_register', 427, -1, 0, 0, 0)",
    "bpf": "sc('bpf', 321, 9999, 0, 0)",
    "keyctl": "sc('keyctl', 250, 9999, 0, 0)",
    "add_key": "sc('add_key', 248, 0, 0, 0, 0, 0)",
    "request_key": "sc('request_key', 249, 0, 0, 0, 0)",
    "mount": "sc('mount', 165, 0, 0, 0, 0, 0)",
    "umount2": "sc('umount2', 166, 0, 0xFFFF)",
    "pivot_root": "sc('pivot_root', 155, 0, 0)",
    "chroot": "sc('chroot', 161, 0)",
    "unshare": "sc('unshare', 272, 0)",
    "setns": "sc('setns', 308, -1, 0)",
    "execve": "sc('execve', 59, 0, 0, 0)",
    "execveat": "sc('execveat', 322, -1, 0, 0, 0, 0)",
    "socket": "closing(sc('socket', 41, 1, 1, 0))",
    "socketpair": "r = sc('socketpair', 53, 1, 1, 0, B)\nif r == 0: [os.close(fd) for fd in struct.unpack_from('<ii', buf, 0)]",
    "connect": "sc('connect', 42, -1, 0, 0)",
    "bind": "sc('bind', 49, -1, 0, 0)",
    "fork": "reaped(sc('fork', 57))",
    "vfork": "reaped(sc('vfork', 58))",
    "clone(SIGCHLD)": "reaped(sc('clone(SIGCHLD)', 56, 17, 0, 0, 0, 0))",
    "clone(NEWUSER|SIGCHLD)": "reaped(sc('clone(NEWUSER|SIGCHLD)', 56, 0x10000000 | 17, 0, 0, 0, 0))",
    "clone(THREAD|NEWNS)": "sc('clone(THREAD|NEWNS)', 56, 0x00010000 | 0x00020000, 0, 0, 0, 0)",
    "clone3": "sc('clone3', 435, 0, 0)",
    "ptrace": "sc('ptrace', 101, 3, 0x3FFFFFFF, 0, 0)",  # PEEKUSER of a pid that does not exist
    "kill(parent)": "sc('kill(parent)', 62, ppid, 0)",
    "kill(group)": "sc('kill(group)', 62, 0, 0)",
    "kill(-1)": "sc('kill(-1)', 62, -1, 0)",
    "tkill(parent)": "sc('tkill(parent)', 200, ppid, 0)",
    "tgkill(parent)": "sc('tgkill(parent)', 234, ppid, ppid, 0)",
    "rt_sigqueueinfo": "sc('rt_sigqueueinfo', 129, ppid, 0, B + 2048)",
    "rt_tgsigqueueinfo": "sc('rt_tgsigqueueinfo', 297, ppid, ppid, 0, B + 2048)",
    "pidfd_open": "closing(sc('pidfd_open', 434, ppid, 0))",
    "pidfd_send_signal": "sc('pidfd_send_signal', 424, -1, 0, 0, 0)",
    "pidfd_getfd": "sc('pidfd_getfd', 438, -1, 0, 0)",
    "process_vm_readv": "sc('process_vm_readv', 310, ppid, B + 1024, 1, B + 1040, 1, 0)",
    "process_vm_writev": "sc('process_vm_writev', 311, ppid, B + 1024, 1, B + 1040, 1, 0)",
    "kcmp": "sc('kcmp', 312, ppid, me, 1, 0, 0)",
    "process_madvise": "sc('process_madvise', 440, -1, 0, 0, 0, 0)",
    "process_mrelease": "sc('process_mrelease', 448, -1, 0)",
    "ioprio_set": "sc('ioprio_set', 251, 1, 0, libc.syscall(ctypes.c_long(252), ctypes.c_long(1), ctypes.c_long(0)))",
    "migrate_pages": "sc('migrate_pages', 256, 0, 0, 0, 0)",
    "move_pages": "sc('move_pages', 279, 0, 0, 0, 0, 0, 0)",
    "prlimit64(parent)": "sc('prlimit64(parent)', 302, ppid, 4, 0, B)",
    "setpriority(parent)": "sc('setpriority(parent)', 141, 0, ppid, prio(ppid))",
    "setpriority(PGRP)": "sc('setpriority(PGRP)', 141, 1, 0, nice)",
    "setpriority(USER)": "sc('setpriority(USER)', 141, 2, 123456, 0)",  # a uid without processes
    "sched_setaffinity(parent)": "sc('sched_setaffinity(parent)', 203, ppid, 8, B + 3072)",
    "sched_setscheduler(parent)": "sc('sched_setscheduler(parent)', 144, ppid, libc.sched_getscheduler(ppid), B + 3080)",
    "sched_setparam(parent)": "sc('sched_setparam(parent)', 142, ppid, B + 3080)",
    "sched_setattr(parent)": "libc.syscall(ctypes.c_long(315), ctypes.c_long(ppid), ctypes.c_long(B + 3200), ctypes.c_long(56), ctypes.c_long(0))\nsc('sched_setattr(parent)', 314, ppid, B + 3200, 0)",
    "fcntl(F_SETOWN)": "sc('fcntl(F_SETOWN)', 72, 1, 8, me)",
    "fcntl(F_SETOWN_EX)": "sc('fcntl(F_SETOWN_EX)', 72, 1, 15, B + 3300)",
    "fcntl(F_SETSIG)": "sc('fcntl(F_SETSIG)', 72, 1, 10, 0)",
    "fcntl(F_SETLEASE)": "sc('fcntl(F_SETLEASE)', 72, 1, 1024, 2)",
    "fcntl(F_NOTIFY)": "sc('fcntl(F_NOTIFY)', 72, 1, 1026, 0)",
    "fcntl(F_SETFL, O_ASYNC)": "sc('fcntl(F_SETFL, O_ASYNC)', 72, 1, 4, libc.fcntl(1, 3) | 0o20000)\nlibc.fcntl(1, 4, libc.fcntl(1, 3) & ~0o20000)",
    "ioctl(FIOSETOWN)": "sc('ioctl(FIOSETOWN)', 16, 1, 0x8901, B + 3400)",
    "ioctl(SIOCSPGRP)": "sc('ioctl(SIOCSPGRP)', 16, 1, 0x8902, B + 3400)",
    "ioctl(FIOASYNC)": "sc('ioctl(FIOASYNC)', 16, 1, 0x5452, B + 3404)",
    "ioctl(TIOCSTI)": "sc('ioctl(TIOCSTI)', 16, 1, 0x5412, B + 3408)",
    "ioctl(TIOCLINUX)": "sc('ioctl(TIOCLINUX)', 16, 1, 0x541C, B + 3408)",
    # Not needed by the worker, so outside the allow-list even aimed at itself.
    "setpriority(self)": "sc('setpriority(self)', 141, 0, me, nice)",
    "sched_setaffinity(0)": "sc('sched_setaffinity(0)', 203, 0, 8, B + 3072)",
    "sched_setparam(self)": "sc('sched_setparam(self)', 142, me, B + 3080)",
    "clone(THREAD)": "sc('clone(THREAD)', 56, 0x00010000, 0, 0, 0, 0)",  # the kernel: EINVAL without CLONE_SIGHAND
    # What the allow-list's deny-list predecessor missed (kernel 6.13+: ENOSYS on older kernels).
    "setxattrat": "sc('setxattrat', 463, -1, 0, 0, 0, 0, 0)",
    "getxattrat": "sc('getxattrat', 464, -1, 0, 0, 0, 0, 0)",
    "removexattrat": "sc('removexattrat', 466, -1, 0, 0, 0)",
    "file_getattr": "sc('file_getattr', 468, -1, 0, 0, 0, 0)",
    "file_setattr": "sc('file_setattr', 469, -1, 0, 0, 0, 0)",
    "statmount": "sc('statmount', 457, 0, 0, 0, 0)",
    "listmount": "sc('listmount', 458, 0, 0, 0, 0)",
    "open_tree_attr": "sc('open_tree_attr', 467, -1, 0, 0, 0, 0)",
    "shmget": "sc('shmget', 29, 0, 4096, 0)",
    "getpgid(parent)": "sc('getpgid(parent)', 121, ppid)",
    "getsid(parent)": "sc('getsid(parent)', 124, ppid)",
    "uname": "sc('uname', 63, B)",
    # Allowed: the worker acting on itself, ordinary fcntl/ioctl.
    "kill(self)": "sc('kill(self)', 62, me, 0)",
    "tkill(self)": "sc('tkill(self)', 200, me, 0)",
    "tgkill(self)": "sc('tgkill(self)', 234, me, me, 0)",
    "prlimit64(0)": "sc('prlimit64(0)', 302, 0, 4, 0, B)",
    "prlimit64(self)": "sc('prlimit64(self)', 302, me, 4, 0, B)",
    "fcntl(F_SETFL)": "sc('fcntl(F_SETFL)', 72, 1, 4, libc.fcntl(1, 3))",
    "ioctl(FIOCLEX)": "sc('ioctl(FIOCLEX)', 16, 1, 0x5451, 0)",
}

# What seccomp answers; every other probe must reach the kernel (success, or an errno but EPERM).
ALLOWED = {"kill(self)", "tkill(self)", "tgkill(self)", "prlimit64(0)", "prlimit64(self)", "fcntl(F_SETFL)", "ioctl(FIOCLEX)"}
ANSWER = {name: errno.ENOSYS if name == "clone3" else errno.EPERM for name in PROBES if name not in ALLOWED}

# No baseline: a raw vfork cannot return into Python safely (the child would run on our stack).
NO_BASELINE = {"vfork": "a raw vfork cannot safely return into Python"}
if not ROOT:
    NO_BASELINE["pivot_root"] = "the kernel refuses pivot_root to non-root before looking at its arguments"
try:
    with open("/proc/sys/kernel/io_uring_disabled") as _setting:
        if _setting.read().strip() != "0":
            NO_BASELINE["io_uring_setup"] = "io_uring is disabled by sysctl on this machine"
except OSError:
    pass


def probe(layers, names) -> dict:
    code = (PRELUDE.replace("BROKER", str(os.getpid())) + "\n".join(PROBES[name] for name in names)
            + "\nprint(repr(results))\n")
    output: list[str] = []
    result = run_worker(code, Broker({"ping": lambda: None}), Limits(timeout=20), time.monotonic() + 20, output.append,
                        mode="os", layers=None if layers is None else frozenset(layers))
    assert result.status == "ok", (result, output)
    reported = ast.literal_eval("".join(output))
    assert set(reported) == set(names), "a probe did not report"
    return {name: tuple(value) for name, value in reported.items()}


@pytest.fixture(scope="module")
def baseline():
    return probe((), [name for name in PROBES if name not in NO_BASELINE])


@pytest.fixture(scope="module")
def seccomp_alone():
    return probe({"seccomp"}, list(PROBES))


@pytest.fixture(scope="module")
def all_layers():
    return probe(None, list(PROBES))


def describe(outcome) -> str:
    ret, err = outcome
    return f"returned {ret}" if ret >= 0 else f"failed with {errno.errorcode.get(err, err)}"


@pytest.mark.parametrize("name", [name for name in ANSWER if name not in NO_BASELINE])
def test_baseline_the_kernel_takes_the_call(name, baseline):
    ret, err = baseline[name]
    assert ret >= 0 or err != ANSWER[name], f"{name} without seccomp {describe(baseline[name])}: the test could not tell the filter's answer"


@pytest.mark.parametrize("name", list(ANSWER))
def test_seccomp_alone_refuses(name, seccomp_alone):
    assert seccomp_alone[name] == (-1, ANSWER[name]), f"{name} {describe(seccomp_alone[name])}"


@pytest.mark.parametrize("name", list(ANSWER))
def test_all_layers_refuse(name, all_layers):
    assert all_layers[name] == (-1, ANSWER[name]), f"{name} {describe(all_layers[name])}"


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_seccomp_lets_the_worker_act_on_itself(name, seccomp_alone, all_layers):
    for outcome in (seccomp_alone[name], all_layers[name]):
        assert outcome[0] >= 0, f"{name} {describe(outcome)}"


def run(code: str, layers, lang: str = "fdsl"):
    output: list[str] = []
    result = run_worker(code, Broker({"ping": lambda: None}), Limits(timeout=10), time.monotonic() + 10, output.append,
                        mode="os", lang=lang, layers=None if layers is None else frozenset(layers))
    return result, "".join(output)


def test_the_python_runtime_still_works_under_every_layer():
    """What the worker itself needs after hardening: timers and signals to itself (PromptScript's
    `timeout` is an ITIMER_REAL + SIGALRM), its own limits, its descriptors' flags."""
    code = (
        "import os, resource, signal, time\n"
        "seen = []\n"
        "signal.signal(signal.SIGALRM, lambda *a: seen.append('alarm'))\n"
        "signal.signal(signal.SIGUSR1, lambda *a: seen.append('usr1'))\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.01)\n"
        "deadline = time.monotonic() + 2\n"
        "while 'alarm' not in seen and time.monotonic() < deadline: pass\n"
        "os.kill(os.getpid(), signal.SIGUSR1)\n"
        "signal.raise_signal(signal.SIGUSR1)\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_CPU)\n"
        "resource.setrlimit(resource.RLIMIT_CPU, (soft - 1, hard))\n"
        "os.set_blocking(0, True)\nos.set_inheritable(0, False)\n"
        "print(seen, resource.getrlimit(resource.RLIMIT_CPU)[0] == soft - 1)\n"
    )
    result, output = run(code, None, lang="ps")  # the PromptScript worker imports signal before hardening
    assert result.status == "ok", (result, output)
    assert output == "['alarm', 'usr1', 'usr1'] True\n"


def test_cant_start_a_thread_under_seccomp_alone():
    """The worker runs no thread, so the allow-list gives it no clone at all."""
    # _thread is built into the interpreter: importing it opens no file, which seccomp refuses.
    code = ("import _thread\ntry:\n    _thread.start_new_thread(print, ('ran',))\nexcept RuntimeError as exc:\n"
            "    print('refused:', exc)\n")
    result, output = run(code, {"seccomp"})
    assert result.status == "ok" and output == "refused: can't start new thread\n", (result, output)
