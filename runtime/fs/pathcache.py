"""A VirtualFS's memory of the script paths it resolved: the lexical and policy work of a
resolution done once, the opening of the file done again at every call.

What a resolution (`Sandbox.locate`) of a path depends on: the path's text, the sandbox's
policy (mounts, derive rules: fixed once the Sandbox exists) and, on the filesystem, only
which components are symlinks and where they point. An entry is kept only for a path whose
resolution met no symlink (the canonical components are the requested ones) and found the
file: then everything but the filesystem's part is a pure function of the text, and the
filesystem's part is what the kernel checks again at each use. A hit opens the cached
canonical components beneath the mount's directory descriptor with openat2 RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS (or the O_NOFOLLOW walk), exactly the opening an uncached call makes, and
fstats that descriptor: a component that became a symlink fails the open (ELOOP), a deleted or
renamed component fails it (ENOENT), a replaced file is the new file (its own fstat), and a
descriptor can never be opened above the mount's directory. Any failure, and any answer that
is not the one the caller wants (a regular file, a directory), drops the entry and the caller
resolves from scratch, so every refusal and every error message is the uncached one. Only a
success is served from the cache, and a success is the state the uncached resolution would
find at that moment.

No directory descriptor is kept: a directory opened by an earlier call follows itself when it
is renamed, even out of the mount (`mv root/docs /elsewhere`), so a descriptor kept across
calls could open what the path no longer names, or what is outside the sandbox. Each hit
walks from the mount's own directory descriptor instead (one openat2, as every call did).

Paths through a symlink are not cached (the link may be pointed elsewhere between two calls,
even outside, and only a new resolution reads it again). The cache is bounded (MAX_ENTRIES
paths of at most MAX_PATH_CHARS characters; it is emptied when full) and lives as long as its
VirtualFS: one run of the broker, or a FileSystemToolset's life.
"""

from __future__ import annotations

import os
import stat as statmod
from dataclasses import dataclass

from runtime.errors import ScriptError
from runtime.fs import safeio
from runtime.fs.entries import Resolved
from runtime.fs.mounts import MountState

MAX_ENTRIES = 1024
MAX_PATH_CHARS = 1024

_FAILED = (OSError, safeio.Raced, ScriptError)


@dataclass(frozen=True, slots=True)
class _Entry:
    res: Resolved
    mount: MountState
    rel: tuple[str, ...]  # components beneath the mount's directory (checked by safeio.check_parts)
    encoded: bytes  # "/".join(rel), encoded once


class PathCache:
    """Script path (the text as the script wrote it) -> its resolution, re-validated per use."""

    def __init__(self, sandbox) -> None:
        self.sandbox = sandbox
        self.entries: dict[str, _Entry] = {}

    def stat(self, path) -> tuple[Resolved, os.stat_result] | None:
        """The cached resolution of `path` and an fstat of what its canonical path holds now
        (opened beneath the mount, no symlink followed); None, the entry dropped, when there is
        no entry or the opening fails."""
        entry = self.entries.get(path) if type(path) is str else None
        if entry is None:
            return None
        try:
            st = safeio.stat_encoded(self.sandbox.mount_fd(entry.mount), entry.rel, entry.encoded)
        except _FAILED:
            self.entries.pop(path, None)
            return None
        if statmod.S_ISLNK(st.st_mode):  # the O_NOFOLLOW walk opens a final symlink itself
            self.entries.pop(path, None)
            return None
        return entry.res, st

    def drop(self, path) -> None:
        if type(path) is str:
            self.entries.pop(path, None)

    def remember(self, path, res: Resolved, st: os.stat_result) -> None:
        """Keep the resolution of `path` that an uncached call just made and validated by
        opening it (`st`), if it met no symlink and found the file."""
        loc = res.loc
        if (type(path) is not str or len(path) > MAX_PATH_CHARS or loc is None or not loc.exists
                or loc.parts != loc.requested or statmod.S_ISLNK(st.st_mode)):
            return
        rel = loc.rel
        if not safeio.check_parts(rel):
            return
        if len(self.entries) >= MAX_ENTRIES:
            self.entries.clear()
        self.entries[path] = _Entry(res, loc.mount, rel, os.fsencode("/".join(rel)))
