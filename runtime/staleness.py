"""Whether the server's code is still the project's: a server whose packages changed on disk
after it started is stale (runtime/server.py answers such a client "stale", and the client starts
a new server).

The server watches its packages' directories with inotify, so each request costs one read of a
non-blocking descriptor (the client used to fingerprint every source file itself: 1.1 ms of each
`fdsl run`). A source file (.py, .lark) written, touched, created, removed or renamed, a new
directory (a new subpackage), or a watched directory removed or moved makes it stale; bytecode
(__pycache__) does not. Where inotify cannot be had (its limits reached), the sources' fingerprint
is taken again at each request instead. A change detector, not a defence: only this user can
change the project and talk to its server.
"""

from __future__ import annotations

import ctypes
import os
import struct
import time

PACKAGES = ("runtime", "transpiler", "sandbox_worker", "wire")
SOURCE_SUFFIXES = (b".py", b".lark")

IN_MODIFY, IN_ATTRIB, IN_MOVED_FROM, IN_MOVED_TO = 0x2, 0x4, 0x40, 0x80
IN_CREATE, IN_DELETE, IN_DELETE_SELF, IN_MOVE_SELF = 0x100, 0x200, 0x400, 0x800
IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED, IN_ONLYDIR, IN_ISDIR = 0x2000, 0x4000, 0x8000, 0x01000000, 0x40000000
WATCHED = IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
WHOLE_DIRECTORY = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED
EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name


def source_directories(root: str, packages=PACKAGES) -> list[str]:
    found = []
    for package in packages:
        for folder, dirs, _ in os.walk(os.path.join(root, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            found.append(folder)
    return found


def fingerprint(root: str, packages=PACKAGES) -> list[tuple[str, int, int]]:
    """(path, size, mtime_ns) of every source file of the packages."""
    seen = []
    for folder in source_directories(root, packages):
        for name in sorted(os.listdir(folder)):
            if name.endswith((".py", ".lark")):
                st = os.stat(os.path.join(folder, name))
                seen.append((os.path.join(folder, name), st.st_size, st.st_mtime_ns))
    return seen


def relevant(mask: int, name: bytes) -> bool:
    """Whether one inotify event changes the code."""
    if mask & WHOLE_DIRECTORY:
        return True
    if mask & IN_ISDIR:
        return name != b"__pycache__"
    return name.endswith(SOURCE_SUFFIXES)


class SourceWatch:
    """`changed()`: whether a source file of the packages under `root` changed since this watch
    began, or since `since` (a time.time() taken before the server process started, by the client
    that starts it: what changed while the server was importing counts too)."""

    def __init__(self, root: str, packages=PACKAGES, since: float | None = None) -> None:
        self.root, self.packages = root, packages
        self.stale = False
        self.fd = self._watch()
        watched_ns = time.time_ns()
        # Taken after the watches are set: a change from here on is seen both ways.
        self.initial = fingerprint(root, packages)
        if since is not None:
            # written between the client's start and the watch (a write sets the mtime to the
            # time it happened); an mtime in the future was set by hand (an archive's), not then
            since_ns = int(since * 1e9)
            self.stale = any(since_ns <= mtime <= watched_ns for _, _, mtime in self.initial)

    def _watch(self) -> int | None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        for folder in source_directories(self.root, self.packages):
            if libc.inotify_add_watch(fd, os.fsencode(folder), WATCHED | IN_ONLYDIR) < 0:
                os.close(fd)  # a watch missing would miss changes: fingerprint instead
                return None
        return fd

    def changed(self) -> bool:
        if self.stale:
            return True
        if self.fd is None:
            self.stale = fingerprint(self.root, self.packages) != self.initial
            return self.stale
        while not self.stale:
            try:
                data = os.read(self.fd, 64 << 10)
            except BlockingIOError:
                break
            offset = 0
            while offset + EVENT.size <= len(data):
                _, mask, _, size = EVENT.unpack_from(data, offset)
                name = data[offset + EVENT.size: offset + EVENT.size + size].rstrip(b"\0")
                offset += EVENT.size + size
                if relevant(mask, name):
                    self.stale = True
                    break
        return self.stale

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
