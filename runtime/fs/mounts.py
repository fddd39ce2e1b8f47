"""What a Sandbox resolves paths to: a validated mount, a resolved location, and the mount
directory descriptors a sandbox and the sandboxes derived from it share."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from runtime.errors import ScriptError
from runtime.fs import safeio
from runtime.fs.config import Mount
from runtime.fs.paths import absolute


@dataclass(frozen=True, eq=False)
class MountState:
    """A validated mount: its virtual components and its real host directory."""

    mount: Mount
    index: int
    point: tuple[str, ...]
    host: str  # realpath of the host directory (no symlink in it)

    @property
    def point_str(self) -> str:
        return "/" + "/".join(self.point)

    @property
    def writable(self) -> bool:
        return self.mount.mode == "rw"


@dataclass(slots=True, eq=False)
class Location:
    """A resolved virtual path, never changed once made (not frozen: a walk makes one per
    entry, and a frozen dataclass takes 3x as long to make)."""

    requested: tuple[str, ...]  # lexical canonical components of the path asked for
    parts: tuple[str, ...]  # components after following symlinks (no symlink left)
    mount: MountState
    exists: bool  # the last lstat found every component

    @property
    def rel(self) -> tuple[str, ...]:
        return self.parts[len(self.mount.point):]

    @property
    def host(self) -> str:
        rel = self.rel
        return os.path.join(self.mount.host, *rel) if rel else self.mount.host

    @property
    def vpath(self) -> str:
        return absolute(self.requested)


class SharedMounts:
    """What a sandbox and all its derived children share: mounts and mount directory fds."""

    def __init__(self, mounts: list[MountState]) -> None:
        self.mounts = mounts  # most specific first
        # Whether any mount asks for approval (of reads, of writes): most ask for none, and then
        # no path needs its mount looked up for it.
        self.asks = {flag: any(getattr(m.mount, flag) for m in mounts) for flag in ("read_approval", "write_approval")}
        self.fds: dict[int, int] = {}
        self.lock = threading.Lock()

    def fd(self, ms: MountState) -> int:
        fd = self.fds.get(ms.index)
        if fd is None:
            with self.lock:
                fd = self.fds.get(ms.index)
                if fd is None:
                    try:
                        fd = os.open(ms.host, os.O_RDONLY | safeio.O_DIRECTORY | safeio.O_NOFOLLOW | safeio.O_CLOEXEC)
                    except OSError:
                        raise ScriptError(f"mount {ms.point_str} is not available") from None
                    self.fds[ms.index] = fd
        return fd

    @staticmethod
    def close_all(fds: dict[int, int]) -> None:
        for fd in fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        fds.clear()
