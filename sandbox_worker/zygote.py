"""A clean zygote: one process that does a worker's imports and warm-up once, then forks every
worker a session asks for, before any script exists.

It is started like a worker (`python -I -S -B`, empty environment, `/`, its own session) and
holds nothing of the broker's: its descriptor 0 is a Unix socket to the session, it never
receives a script, only "fork one" requests, each carrying the three pipe ends of the worker to
be. Each fork is a worker exactly as if started fresh and then imported (sandbox_worker/main.py
`main(preload=True)`): its own session and process group, those three descriptors, and every
hardening layer applied by itself after the fork, before it reports ready.

The fork is clone(CLONE_PARENT): the worker's parent is the session's process, not the
zygote, so the broker waits for it, reads its exit status and kills its group exactly as for a
worker it started itself (runtime/zygote.py).

Messages on descriptor 0 (SOCK_SEQPACKET): the zygote sends b"ready" once warmed up (or
b"no: <reason>" and exits when it cannot fork this way); then per request b"w" with three
descriptors (SCM_RIGHTS) it answers the worker's pid as 8 bytes right after the fork (or minus
the errno), then b"s" once the worker leads its own session and process group. Anything else,
or EOF, ends it.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import os
import socket
import struct
from typing import Callable

from sandbox_worker.client import bytes_waiting
from sandbox_worker.hardening import _libc, set_name
from sandbox_worker.main import main as worker_main
from sandbox_worker.main import warm_up

CLONE_PARENT = 0x00008000
SIGCHLD = 17
SYS_CLONE = {"x86_64": 56, "aarch64": 220}  # clone's number where its first argument is the flags

MADV_POPULATE_WRITE = 23  # Linux 5.14
SETTLE_CHUNK = 256 << 10  # copied between two looks for the script's frame (about 0.1 ms)

_api = ctypes.pythonapi
_madvise = _libc.madvise  # the worker's libc handle (sandbox_worker/hardening.py)
_madvise.restype, _madvise.argtypes = ctypes.c_int, (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
for _step in (_api.PyOS_BeforeFork, _api.PyOS_AfterFork_Child, _api.PyOS_AfterFork_Parent):
    _step.restype, _step.argtypes = None, ()


def _clone_call():
    """libc's syscall() as a PyDLL function: the GIL stays held across the clone, as os.fork
    holds it across fork()."""
    number = SYS_CLONE.get(os.uname().machine)
    if number is None:
        return None, f"no clone number known for {os.uname().machine}"
    try:
        call = ctypes.PyDLL(None, use_errno=True).syscall
    except (OSError, AttributeError) as exc:
        return None, f"libc syscall() not found: {exc}"
    call.restype = ctypes.c_long
    call.argtypes = (ctypes.c_long, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    return (lambda: call(number, CLONE_PARENT | SIGCHLD, None, None, None, None)), None


def fork_sibling(clone) -> int:
    """os.fork() with CLONE_PARENT: the interpreter's own before/after-fork steps around the
    clone (import lock, thread state, at-fork hooks: `random` reseeds in the child). Returns 0
    in the child, the child's pid in the zygote; raises OSError. Behind glibc's back, the
    child's cached thread id is the zygote's: nothing the fork runs reads it (raise() asks the
    kernel since glibc 2.25, and the PID namespace's fork is glibc's own fork, which sets it)."""
    _api.PyOS_BeforeFork()
    pid = clone()
    if pid == 0:
        _api.PyOS_AfterFork_Child()
        return 0
    error = ctypes.get_errno()
    _api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(error, os.strerror(error))
    return pid


def shared_pages() -> Callable[[], None]:
    """In the fork, after the PID namespace's fork (and before Landlock, which ends reading
    /proc): the private writable mappings it still shares with the zygote (heap, arenas,
    libraries' data). Returns `settle`, which the worker runs once it has reported ready: it
    copies them now, a chunk at a time, and stops as soon as its script's frame is waiting.
    Otherwise the script pays for them, a page fault at each first write (a reference count
    is a write): about a millisecond of a one-line run. Copying all of them takes 5 to 7 ms
    that a paced run never waits for; a run that comes sooner starts at once, and its worker
    copies only the pages it writes. A kernel without MADV_POPULATE_WRITE refuses it: the
    pages are then copied on first write."""
    chunks = []
    with open("/proc/self/maps", "rb") as maps:
        for line in maps:
            span, perms = line.split(None, 2)[:2]
            if perms.startswith(b"rw") and perms.endswith(b"p"):
                start, end = (int(x, 16) for x in span.split(b"-"))
                chunks += [(at, min(SETTLE_CHUNK, end - at)) for at in range(start, end, SETTLE_CHUNK)]

    def settle() -> None:
        for start, length in chunks:
            try:
                if bytes_waiting(0):
                    return
            except OSError:
                return
            if _madvise(start, length, MADV_POPULATE_WRITE) != 0 and ctypes.get_errno() == errno.EINVAL:
                return  # before Linux 5.14

    return settle


def become_worker(control: socket.socket, fds: list[int], leader: int) -> None:
    """In the fork: its own session (then `leader`, a pipe's write end, is closed: the zygote
    answers only once the worker leads its own process group, the group the broker kills) and
    its three descriptors, then a worker started ahead (every layer applied by itself;
    enter_namespaces closes every other descriptor)."""
    try:
        control.detach()  # descriptor 0 becomes the worker's frames: no object may close it
        set_name(b"fdsl-worker")  # (main() names it too: named before the zygote answers)
        os.setsid()
        os.close(leader)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        worker_main(preload=True, warmed=shared_pages)
    finally:
        os._exit(5)  # main() never returns; an exception before its hardening ends here


def main() -> None:
    set_name(b"fdsl-zygote")
    control = socket.socket(fileno=0)
    clone, reason = _clone_call()
    if clone is None:
        control.send(f"no: {reason}".encode())
        os._exit(0)
    warm_up()
    gc.freeze()  # what warm_up made lives as long as the zygote: no fork's collection walks it
    control.send(b"ready")
    while True:
        try:
            message, fds, _flags, _address = socket.recv_fds(control, 16, 3)
        except OSError:
            os._exit(0)
        if message != b"w" or len(fds) != 3:
            os._exit(0 if not message else 3)  # EOF: the session is gone or closed us
        led, leader = os.pipe()
        try:
            pid = fork_sibling(clone)
        except OSError as exc:
            pid = -(exc.errno or 1)
        if pid == 0:
            os.close(led)
            become_worker(control, fds, leader)
        for fd in (*fds, leader):
            os.close(fd)
        control.send(struct.pack("<q", pid))  # at once: from now on the session owns the fork
        if pid > 0:
            os.read(led, 1)  # EOF once the fork has its own session (or has died)
            control.send(b"s")
        os.close(led)


if __name__ == "__main__":
    main()
