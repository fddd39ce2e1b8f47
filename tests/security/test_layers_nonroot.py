"""A worker that is not root, whoever runs the tests.

As root, the worker command is wrapped (test-only monkeypatch of `worker_command`) so the
worker drops to nobody after its imports and before `main()`: its hardening then takes the
unprivileged paths, as under a non-root broker: netns through a new user namespace, uid
"not needed". As any other user the worker is already unprivileged and runs unchanged.

The cross-process attacks target a victim process with the worker's own uid (the position of
a non-root broker): without layers they really change it, so the kernel's uid checks do not
stop them; seccomp alone, and the full hardening, must.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import subprocess

import pytest

from runtime import supervisor
from tests.security.conftest import run_os

NOBODY = 65534
ROOT = os.geteuid() == 0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


@pytest.fixture
def unprivileged_worker(monkeypatch):
    """The uid the worker runs as; as root, a worker that drops to nobody before main()."""
    if not ROOT:
        return os.getuid()
    command = supervisor.worker_command()
    tail = "from sandbox_worker.main import main; main()"
    assert command[-1].endswith(tail), command
    drop = (
        "from sandbox_worker.main import main; import os, sandbox_worker.lang.fdsl, sandbox_worker.lang.ps; "
        f"os.setgroups([]); os.setresgid({NOBODY}, {NOBODY}, {NOBODY}); os.setresuid({NOBODY}, {NOBODY}, {NOBODY}); main()"
    )
    wrapped = command[:-1] + [command[-1][: -len(tail)] + drop]
    monkeypatch.setattr(supervisor, "worker_command", lambda preload=False: wrapped)
    return NOBODY


def test_unprivileged_netns_takes_the_user_namespace_path(unprivileged_worker, listener):
    code = (
        "import ctypes, os, struct\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print(os.geteuid(), os.readlink('/proc/self/ns/user'), os.readlink('/proc/self/ns/net'), repr(open('/proc/self/uid_map').read()))\n"
        "s = libc.socket(2, 1, 0)\n"
        f"addr = struct.pack('=H', 2) + struct.pack('!H', {listener}) + bytes([127, 0, 0, 1]) + bytes(8)\n"
        "print(libc.connect(s, addr, 16), ctypes.get_errno())"
    )
    result, output = run_os(code, {"netns"})
    assert result.status == "ok", (result, output)
    assert result.layers["netns"] == "active" and result.layers["uid"] == "off"
    identity, connect = output.splitlines()
    euid, user_ns, net_ns, uid_map = identity.split(" ", 3)
    assert user_ns != os.readlink("/proc/self/ns/user"), "no new user namespace"
    assert net_ns != os.readlink("/proc/self/ns/net"), "no new network namespace"
    assert uid_map == "''", "the worker's user namespace maps no uid"  # the root path makes no user namespace
    assert int(euid) == NOBODY  # unmapped: the overflow uid
    assert connect.split() == ["-1", str(errno.ENETUNREACH)]


def test_every_layer_is_in_force_for_an_unprivileged_worker(unprivileged_worker):
    result, output = run_os("import os\nprint(os.getuid(), os.getgroups())", None)
    assert result.status == "ok", (result, output)
    assert result.layers["uid"] == "not needed: the worker does not run as root"
    assert all(result.layers[name].startswith("active") for name in ("netns", "no_new_privs", "landlock", "seccomp", "rlimits")), result.layers


@pytest.fixture
def victim(unprivileged_worker):
    """A process with the worker's uid, to be attacked: `sleep`, reaped at the end."""
    kwargs = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if ROOT else {}
    process = subprocess.Popen(["sleep", "60"], **kwargs)
    yield process
    process.kill()
    process.wait()


def open_files_limit(pid: int) -> tuple[str, str]:
    """From /proc (prlimit64 would need CAP_SYS_RESOURCE, which a container's root may lack)."""
    with open(f"/proc/{pid}/limits") as limits:
        line = next(line for line in limits if line.startswith("Max open files"))
    return tuple(line.split()[3:5])


def ioprio_of(pid: int) -> int:
    return _libc.syscall(ctypes.c_long(252), ctypes.c_long(1), ctypes.c_long(pid))  # IOPRIO_WHO_PROCESS


def died_of_sigterm(victim) -> bool:
    try:
        return victim.wait(timeout=0.5) == -signal.SIGTERM
    except subprocess.TimeoutExpired:
        return False


# attack -> (code against pid {victim}, what it did to the victim). Failing calls raise OSError.
_CTYPES = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
    "def check(r, what):\n"
    "    if r == -1: raise OSError(ctypes.get_errno(), what + ': ' + os.strerror(ctypes.get_errno()))\n"
)
CROSS_PROCESS = {
    "prlimit": ("import resource\nresource.prlimit({victim}, resource.RLIMIT_NOFILE, (8, 8))",
                lambda v: open_files_limit(v.pid) == ("8", "8")),
    "setpriority": ("os.setpriority(os.PRIO_PROCESS, {victim}, 19)",
                    lambda v: os.getpriority(os.PRIO_PROCESS, v.pid) == 19),
    "sched_setaffinity": ("os.sched_setaffinity({victim}, {{0}})",
                          lambda v: os.sched_getaffinity(v.pid) == {0}),
    "sched_setscheduler": ("os.sched_setscheduler({victim}, os.SCHED_IDLE, os.sched_param(0))",
                           lambda v: os.sched_getscheduler(v.pid) == os.SCHED_IDLE),
    "ioprio_set": (_CTYPES + "check(libc.syscall(ctypes.c_long(251), ctypes.c_long(1), ctypes.c_long({victim}), ctypes.c_long(3 << 13)), 'ioprio_set')",
                   lambda v: ioprio_of(v.pid) >> 13 == 3),  # IOPRIO_CLASS_IDLE
    "kill": ("os.kill({victim}, 15)", died_of_sigterm),
    # SIGIO redirected: the kernel sends SIGTERM to the owner of fd 1 when the broker reads it.
    "sigio": (_CTYPES + "import time\ncheck(libc.fcntl(1, 8, {victim}), 'F_SETOWN')\ncheck(libc.fcntl(1, 10, 15), 'F_SETSIG')\n"
              "check(libc.fcntl(1, 4, libc.fcntl(1, 3) | 0o20000), 'F_SETFL')\nprint('armed')\ntime.sleep(0.2)\nprint('again')",
              died_of_sigterm),
}


def attack(name: str, victim, layers):
    code, effect = CROSS_PROCESS[name]
    result, output = run_os("import os\n" + code.format(victim=victim.pid), layers)
    return result, output, effect(victim)


@pytest.mark.parametrize("name", list(CROSS_PROCESS))
def test_baseline_a_same_uid_worker_reaches_the_victim(name, victim):
    if name == "sched_setaffinity" and os.sched_getaffinity(victim.pid) == {0}:
        pytest.skip("the victim already runs on CPU 0 alone: pinning it shows nothing")
    result, output, changed = attack(name, victim, ())
    assert result.status == "ok", (result, output)
    assert changed, f"{name} had no effect on the victim without layers"


@pytest.mark.parametrize("layers", [pytest.param({"seccomp"}, id="seccomp"), pytest.param(None, id="all")])
@pytest.mark.parametrize("name", list(CROSS_PROCESS))
def test_seccomp_stops_the_worker_reaching_the_victim(name, layers, victim):
    result, output, changed = attack(name, victim, layers)
    assert not changed, f"{name} reached the victim: {result} {output!r}"
    assert result.status == "error", (result, output)
    assert f"[Errno {errno.EPERM}]" in result.error["msg"], result.error
