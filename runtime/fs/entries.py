"""What VirtualFS hands out: a resolved path and an entry met in a listing or a walk."""

from __future__ import annotations

import os
import stat as statmod
from dataclasses import dataclass

from runtime.fs.mounts import Location, MountState


@dataclass(frozen=True)
class Resolved:
    """A resolved virtual path (`loc` is None for a virtual directory: see runtime/fs/vfs.py)."""

    parts: tuple[str, ...]  # canonical virtual components (as asked, links not followed)
    vpath: str  # canonical virtual string ("." for the root)
    mount: MountState | None
    host: str | None  # host path of the canonical (link-free) location: a cache key, never shown
    real: str | None  # same as host (kept for callers of the first implementation)
    loc: Location | None


@dataclass(slots=True)
class WalkEntry:
    """One entry met while listing or walking a directory."""

    vpath: str  # canonical virtual path
    rel: str  # path relative to the walked directory, "/"-separated
    name: str
    kind: str  # "file" | "directory" | "symlink" | "other" (lstat kind, symlinks not followed)
    lst: os.stat_result  # lstat of the entry
    st: os.stat_result | None  # stat following a symlink that stays inside (None otherwise)
    real: str | None  # host path of what it names when inside (a cache key; None for escapes)
    link_target: str | None  # for symlinks: virtual target or "(outside the sandbox)"
    loc: Location | None = None  # where to open it (None for escapes and virtual directories)
    virtual: bool = False  # a virtual directory (see runtime/fs/vfs.py)


OUTSIDE = "(outside the sandbox)"
# What a purely virtual directory reports: a directory, size 0, modified at the epoch.
VIRTUAL_DIR_STAT = os.stat_result((statmod.S_IFDIR | 0o555, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0, 0, 0))


def _kind_of(mode: int) -> str:
    if statmod.S_ISREG(mode):
        return "file"
    if statmod.S_ISDIR(mode):
        return "directory"
    if statmod.S_ISLNK(mode):
        return "symlink"
    return "other"
