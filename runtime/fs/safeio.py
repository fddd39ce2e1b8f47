"""Opening files beneath a mount's directory descriptor, never through a symlink.

The Sandbox resolves a virtual path to a *canonical* path inside one mount: every symlink it
met on the way was read, checked (it must stay inside its own mount and inside the policy)
and replaced by its target, so the canonical path contains no symlink at all. This module
opens that canonical path relative to the mount's directory descriptor and refuses to follow
any symlink while doing so. If a component was swapped for a symlink after the check (a race),
the open fails with `Raced` instead of following it: the file that is opened is the file that
was checked.

Two implementations, chosen once per process:
- `openat2(2)` (Linux >= 5.6) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
  called through ctypes `syscall(437, ...)` (437 on every Linux architecture);
- otherwise a component-by-component walk: `os.open(component, O_PATH | O_DIRECTORY |
  O_NOFOLLOW, dir_fd=parent)` for directories and O_NOFOLLOW for the last component.
Both refuse "..", absolute paths and symlinks, so neither can leave the mount's directory.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform

O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_PATH = getattr(os, "O_PATH", 0)
O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
_SYS_OPENAT2 = 437
_RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS


class Raced(Exception):
    """A component of a checked path became a symlink (or left the mount) before the open."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_syscall = None
_state = {"openat2": None}  # None: not probed yet; True/False after the first call


def _load() -> None:
    global _syscall
    if platform.system() != "Linux" or os.environ.get("FDSL_NO_OPENAT2"):
        _state["openat2"] = False
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _syscall = libc.syscall
        _syscall.restype = ctypes.c_long
        _syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
    except (OSError, AttributeError):
        _state["openat2"] = False


_HOWS: dict[int, tuple] = {}  # flags -> (open_how, its byref, its size) of the opens without a mode


def _openat2(dirfd: int, path: bytes, flags: int, mode: int) -> int:
    if flags & os.O_CREAT:
        how = _OpenHow(flags | O_CLOEXEC, mode, _RESOLVE)
        ref, size = ctypes.byref(how), ctypes.sizeof(how)
    else:  # built once per flags: a broker call's stat or read pays for the syscall only
        kept = _HOWS.get(flags)
        if kept is None:
            how = _OpenHow(flags | O_CLOEXEC, 0, _RESOLVE)
            kept = _HOWS.setdefault(flags, (how, ctypes.byref(how), ctypes.sizeof(how)))
        _, ref, size = kept
    while True:
        fd = _syscall(_SYS_OPENAT2, dirfd, path, ref, size)
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err == errno.EINTR or err == errno.EAGAIN and not flags & O_NONBLOCK:
            continue
        raise OSError(err, os.strerror(err))


def uses_openat2() -> bool:
    """Whether this process opens files with openat2 (probed on first use)."""
    if _state["openat2"] is None:
        _load()
        if _state["openat2"] is None:
            root = os.open("/", os.O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            try:
                os.close(_openat2(root, b".", os.O_RDONLY | O_DIRECTORY, 0))
                _state["openat2"] = True
            except OSError:
                _state["openat2"] = False  # ENOSYS (old kernel) or EPERM (seccomp)
            finally:
                os.close(root)  # the probe's own descriptor (it leaked one per process)
    return bool(_state["openat2"])


def _check_parts(parts: tuple[str, ...]) -> None:
    for p in parts:
        if p in ("", ".", "..") or "/" in p or "\x00" in p:
            raise Raced()  # never produced by the resolver; refuse rather than interpret


def open_beneath(dirfd: int, parts: tuple[str, ...], flags: int, mode: int = 0o666) -> int:
    """Open `parts` (canonical components, no symlinks expected) beneath `dirfd`.

    Raises Raced if a symlink or an escape is met, FileNotFoundError/NotADirectoryError/...
    (OSError) for the ordinary failures. The returned fd is close-on-exec."""
    _check_parts(parts)
    if not parts:
        return os.open(".", flags | O_CLOEXEC, mode, dir_fd=dirfd)
    if uses_openat2():
        path = os.fsencode("/".join(parts))
        try:
            return _openat2(dirfd, path, flags | O_NOFOLLOW, mode)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EXDEV):
                raise Raced() from None
            raise
    return _walk_open(dirfd, parts, flags, mode)


def stat_encoded(dirfd: int, parts: tuple[str, ...], encoded: bytes) -> os.stat_result:
    """fstat of `parts` opened O_PATH beneath `dirfd` exactly as `open_beneath` opens them (a
    final symlink the O_NOFOLLOW walk opens itself is returned as one): a path cache's check
    (runtime/fs/pathcache.py), given components `check_parts` accepted and `encoded`, their
    "/"-joined bytes, so a call pays for the syscalls only."""
    if parts and _state["openat2"]:
        try:
            fd = _openat2(dirfd, encoded, O_PATH | O_NOFOLLOW, 0)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EXDEV):
                raise Raced() from None
            raise
    else:
        fd = open_beneath(dirfd, parts, O_PATH)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def check_parts(parts: tuple[str, ...]) -> bool:
    """Whether `parts` are components open_beneath accepts (no "", ".", "..", "/" or NUL)."""
    try:
        _check_parts(parts)
    except Raced:
        return False
    return True


def _walk_open(dirfd: int, parts: tuple[str, ...], flags: int, mode: int) -> int:
    fd = dirfd
    try:
        for comp in parts[:-1]:
            try:
                nfd = os.open(comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise Raced() from None
                if exc.errno == errno.ENOTDIR and os.path.islink(_fd_child(fd, comp)):
                    raise Raced() from None
                raise
            if fd != dirfd:
                os.close(fd)
            fd = nfd
        try:
            return os.open(parts[-1], flags | O_NOFOLLOW | O_CLOEXEC, mode, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Raced() from None
            raise
    finally:
        if fd != dirfd:
            os.close(fd)


def _fd_child(fd: int, name: str) -> str:
    return f"/proc/self/fd/{fd}/{name}"


def open_parent(dirfd: int, parts: tuple[str, ...], create: bool = False) -> int:
    """An O_PATH|O_DIRECTORY fd of the directory `parts` beneath dirfd, creating missing
    directories (mode 0o777 & ~umask) when `create`. Never follows a symlink."""
    _check_parts(parts)
    if not create:
        return open_beneath(dirfd, parts, O_PATH | O_DIRECTORY)
    fd = os.open(".", O_PATH | O_DIRECTORY | O_CLOEXEC, dir_fd=dirfd)
    try:
        for comp in parts:
            try:
                nfd = os.open(comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                try:
                    os.mkdir(comp, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                try:
                    nfd = os.open(comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise Raced() from None
                    raise
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise Raced() from None
                raise
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise
