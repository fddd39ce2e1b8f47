"""The virtual filesystem: script paths -> files opened safely, and nothing the other way.

VirtualFS is the reading and walking layer over a `runtime.fs.sandbox.Sandbox`, which owns every
rule about paths (normalization, mounts, symlinks, derive, suffixes, sizes; see its module
docstring). FilesDSL shows paths relative to "/" without a leading slash ("data/a.txt"; the
root itself is "."); the Sandbox's own API uses "/data/a.txt".

- Files are opened relative to their mount's directory descriptor with no symlink followed
  (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where available), O_NONBLOCK, and fstat'ed:
  only regular files are read (a FIFO is refused, it could block the broker). stat() goes
  through an O_PATH descriptor opened the same way.
- A symlink is followed only while it stays inside its own mount (and the policy); otherwise
  "path 'link' leads outside the sandbox", also when the outside target does not exist, so a
  refusal is never an existence oracle for host files. A dangling symlink inside is "no such file".
- Directory walks open each directory beneath its mount's descriptor, never follow directory
  symlinks (no cycles, no escapes), list file symlinks that stay inside as files, and report
  symlinks leaving the sandbox with the target "(outside the sandbox)".
- A mount with `suffixes` only lets files with those suffixes be read, and listings and walks
  skip the others; `max_file_bytes` bounds what is read; a mount with `read_approval` asks the
  run's approver before a file is read ("Read from /cfg/a.json") and before a listing or walk
  covers it ("List files in /cfg"); with no approver it is refused.
- Virtual directories: a directory that is not readable itself but leads to readable roots
  (the root "/" when the mounts are "/docs" and "/out"; "/docs" in a sandbox derived with
  allow_read="/docs/public") can be listed and walked: its entries are the next component of
  each readable root below it, as DirectoryEntry (a root's own size and time; 0 and 0 for a
  purely virtual step), or FileEntry for a readable root that is a file. Nothing can be
  written there.

No host path ever appears in a return value or an error message of this module.
"""

from __future__ import annotations

import errno
import os
import stat as statmod
from pathlib import Path
from typing import Callable

from runtime.errors import PathNotInSandboxError, SandboxError, ScriptError
from runtime.fs import paths, safeio
from runtime.fs.approvals import Approvals
from runtime.fs.config import config_from_data
from runtime.fs.entries import VIRTUAL_DIR_STAT, Resolved, WalkEntry
from runtime.fs.fileio import read_upto, regular
from runtime.fs.listings import Listings
from runtime.fs.mounts import Location, MountState
from runtime.fs.pathcache import PathCache
from runtime.fs.paths import absolute, refuse_directory_syntax, relative
from runtime.fs.sandbox import Sandbox

_READ_FLAGS = os.O_RDONLY | safeio.O_NONBLOCK


class VirtualFS(Listings):
    """Reads and walks through a Sandbox.

    `VirtualFS(sandbox)`, or `VirtualFS([(mount_point, host_dir, writable), ...])` which builds a
    SandboxConfig (mode "rw"/"ro", no approvals) for callers of the first implementation.
    `approve(description) -> bool` is asked before reading from a mount with read_approval;
    `approvals` (runtime/fs/approvals.py), when given, is the run's shared memory of answers."""

    @property
    def approve(self) -> Callable[[str], bool] | None:
        return self.approvals.approve

    def __init__(self, mounts, approve: Callable[[str], bool] | None = None,
                 approvals: Approvals | None = None) -> None:
        if isinstance(mounts, Sandbox):
            self.sandbox = mounts
        else:
            mounts = list(mounts)
            if not mounts:
                raise ValueError("at least one mount is required")
            config = config_from_data(
                {
                    "mounts": [
                        {"host_path": os.path.abspath(os.fspath(host)), "mount_point": point,
                         "mode": "rw" if writable else "ro", "write_approval": False}
                        for point, host, writable in mounts
                    ]
                }
            )
            self.sandbox = Sandbox(config)
        self.approvals = approvals if approvals is not None else Approvals(approve)
        self._roots = tuple(paths.split(r) for r in self.sandbox.readable_roots)

    # ----------------------------------------------------------------- normalization

    @staticmethod
    def normalize(path: str) -> tuple[str, ...]:
        """Virtual components of a script path (see runtime/fs/sandbox.py)."""
        return paths.split(path)

    def canonical(self, path: str) -> str:
        return relative(self.normalize(path))

    def mount_for(self, parts: tuple[str, ...]) -> MountState | None:
        return self.sandbox.mount_for(parts)

    # ----------------------------------------------------------------- resolution

    def resolve(self, path: str) -> Resolved:
        """Resolve a script path for reading. The result may not exist; escapes are refused."""
        loc = self.sandbox.locate(path, op="read")
        return self._resolved(loc)

    @staticmethod
    def _resolved(loc: Location) -> Resolved:
        host = loc.host
        return Resolved(loc.requested, relative(loc.requested), loc.mount, host, host, loc)

    def _fstat(self, res: Resolved, missing: str) -> os.stat_result:
        return self._fstat_at(res, missing)[1]

    def _fstat_at(self, res: Resolved, missing: str) -> tuple[Location, os.stat_result]:
        """(the location opened, its fstat): `res.loc`, or its new resolution if a component
        was swapped for a symlink in between."""
        loc = res.loc
        for _ in range(3):
            try:
                fd = self.sandbox.open_location(loc, safeio.O_PATH)
            except safeio.Raced:
                loc = self.sandbox.locate(absolute(res.parts), op="read")
                continue
            except (FileNotFoundError, NotADirectoryError):
                hint = self.root_hint(res.parts) if len(res.parts) > 1 or missing == "no such directory" else ""
                raise ScriptError(f"{missing}: {res.vpath}{hint}") from None
            except OSError as exc:
                raise ScriptError(f"cannot access {res.vpath}: {exc.strerror or 'error'}") from None
            try:
                return loc, os.fstat(fd)
            finally:
                os.close(fd)
        raise ScriptError(f"{res.vpath} changed while it was being opened; try again")

    def root_hint(self, parts: tuple[str, ...], shown: int = 8) -> str:
        """For a path under a directory that is not in the sandbox's root ("/etc/passwd" written
        for the machine's own file): that paths are inside the sandbox, and what its root holds."""
        if not parts:
            return ""
        try:
            top, _ = self.resolve_dir("/")
            if self.listing_needs_approval(top, recursive=False):
                return ""
            names = sorted(e.name for e in self.list_dir(top))
        except ScriptError:
            return ""
        if parts[0] in names:
            return ""
        listed = ", ".join(names[:shown]) + (", ..." if len(names) > shown else "") if names else "nothing"
        return f' (paths are inside the sandbox: "/" is its root, not the machine\'s; the root holds: {listed})'

    def stat(self, res: Resolved) -> os.stat_result:
        """stat of a resolved path; ScriptError 'no such file' if missing (or dangling)."""
        return self._fstat(res, "no such file or directory")

    @property
    def path_cache(self) -> PathCache:
        """The resolutions this VirtualFS made (runtime/fs/pathcache.py), for its sandbox."""
        cache = self.__dict__.get("_paths")
        if cache is None or cache.sandbox is not self.sandbox:
            cache = self.__dict__["_paths"] = PathCache(self.sandbox)
        return cache

    def _cached(self, path: str, want: Callable[[int], bool]) -> tuple[Resolved, os.stat_result] | None:
        """The path cache's resolution of `path` and a fresh fstat of what it names, served only
        when that is what the caller wants (`want(st_mode)`); otherwise None (the entry dropped),
        and the caller resolves afresh: its refusals and errors are the uncached ones."""
        cache = self.path_cache
        hit = cache.stat(path)
        if hit is not None:
            if want(hit[1].st_mode):
                return hit
            cache.drop(path)
        return None

    def resolve_file(self, path: str) -> tuple[Resolved, os.stat_result]:
        refuse_directory_syntax(path)
        hit = self._cached(path, statmod.S_ISREG)
        if hit is not None:
            return hit
        res = self.resolve(path)
        loc, st = self._fstat_at(res, "no such file")
        if statmod.S_ISDIR(st.st_mode):
            raise ScriptError(f"{res.vpath} is a directory, not a file")
        if not statmod.S_ISREG(st.st_mode):
            raise ScriptError(f"{res.vpath} is not a regular file")
        if loc is res.loc:
            self.path_cache.remember(path, res, st)
        return res, st

    def locate_dir(self, path: str) -> Resolved:
        """Resolve a directory path without touching it: a real location, or a virtual one."""
        try:
            return self.resolve(path)
        except PathNotInSandboxError as exc:
            try:
                parts = self.normalize(path)
            except SandboxError:
                raise exc from None
            if not self._leads_to(parts):
                raise
            return self._virtual(parts)

    def resolve_dir(self, path: str) -> tuple[Resolved, os.stat_result]:
        """A directory to list or walk: a real one, or a virtual one leading to readable roots."""
        hit = self._cached(path, statmod.S_ISDIR)
        if hit is not None:
            return hit
        res = self.locate_dir(path)
        if res.loc is None:
            return res, VIRTUAL_DIR_STAT
        try:
            loc, st = self._fstat_at(res, "no such directory")
        except ScriptError:
            if not self._leads_to(res.parts):
                raise
            return self._virtual(res.parts), VIRTUAL_DIR_STAT
        if not statmod.S_ISDIR(st.st_mode):
            raise ScriptError(f"{res.vpath} is a file, not a directory")
        if loc is res.loc:
            self.path_cache.remember(path, res, st)
        return res, st

    def _leads_to(self, parts: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        """Next component -> readable root, for the readable roots strictly below `parts`."""
        out: dict[str, tuple[str, ...]] = {}
        for root in self._roots:
            if len(root) > len(parts) and root[: len(parts)] == parts:
                out.setdefault(root[len(parts)], root)
        return out

    @staticmethod
    def _virtual(parts: tuple[str, ...]) -> Resolved:
        return Resolved(parts, relative(parts), None, None, None, None)

    # ----------------------------------------------------------------- policy on reads

    def check_readable(self, loc: Location, vpath: str, size: int | None) -> None:
        """Suffix, size and read approval of the mount the file lives in."""
        mount = loc.mount.mount
        # Each check is made only when its mount sets it (what each does first): a search
        # through the index makes these checks for every file it rules out.
        if mount.suffixes is not None:
            self.sandbox.check_suffix(Path(loc.parts[-1] if loc.parts else ""), mount, virtual_path=absolute(loc.requested))
        if size is not None and mount.max_file_bytes is not None:
            self.sandbox.check_size(Path(), mount, virtual_path=absolute(loc.requested), size=size)
        if self.sandbox.location_needs_approval(loc, "read"):
            shown = absolute(loc.requested)
            self.approvals.ask("read", {"path": shown}, f"Read from {shown}")

    def listing_needs_approval(self, dir_res: Resolved, recursive: bool) -> bool:
        """Does listing (or walking) this directory cover a read_approval mount (seed: list_files)?"""
        if dir_res.loc is not None and self.sandbox.location_needs_approval(dir_res.loc, "read"):
            return True
        if not recursive:  # a flat listing shows the mount points below, not what they hold
            return False
        n = len(dir_res.parts)
        return any(m.mount.read_approval for m in self.sandbox.mounts
                   if m.point[:n] == dir_res.parts and len(m.point) > n and self.sandbox.can_read(absolute(m.point)))

    def check_listable(self, dir_res: Resolved, recursive: bool) -> None:
        if self.listing_needs_approval(dir_res, recursive):
            self.approvals.ask("list", {"path": absolute(dir_res.parts)}, f"List files in {absolute(dir_res.parts)}")

    def suffix_allowed(self, loc: Location) -> bool:
        return Sandbox.suffix_allowed(loc.mount.mount, loc.parts[-1] if loc.parts else "")

    # ----------------------------------------------------------------- reading

    def _open_read(self, loc: Location, vpath: str) -> int:
        try:
            return self.sandbox.open_location(loc, _READ_FLAGS)
        except safeio.Raced:
            raise ScriptError(f"{vpath} changed while it was being opened; try again") from None
        except (FileNotFoundError, NotADirectoryError):
            raise ScriptError(f"no such file: {vpath}") from None
        except OSError as exc:
            if exc.errno == errno.EISDIR:
                raise ScriptError(f"{vpath} is a directory, not a file") from None
            raise ScriptError(f"cannot open {vpath}: {exc.strerror or 'error'}") from None

    def read_bytes(self, res: Resolved, max_bytes: int | None = None,
                   upto: int | None = None) -> tuple[bytes, os.stat_result]:
        """Read a regular file beneath its mount (no symlink followed, O_NONBLOCK, fstat'ed).
        A file larger than max_bytes raises OverflowError(size): the caller owns the limit.
        `upto` reads only the file's first `upto` bytes (a longer file is not an error)."""
        fd = self._open_read(res.loc, res.vpath)
        try:
            st = regular(fd, res.vpath)
            self.check_readable(res.loc, res.vpath, st.st_size)
            if max_bytes is not None and st.st_size > max_bytes:
                raise OverflowError(st.st_size)
            limit = _min_limit(max_bytes, res.loc.mount.mount.max_file_bytes)
            if upto is not None and (limit is None or upto < limit):
                return self._read_fd(fd, st.st_size, upto, res.vpath, cut=True), st
            return self._read_fd(fd, st.st_size, limit, res.vpath, res.loc), st
        finally:
            os.close(fd)

    def read_entry(self, entry: WalkEntry, max_bytes: int | None = None) -> bytes:
        """Read a regular file met in a walk. A file swapped for a directory, a FIFO or a
        symlink since the walk fails or reads nothing; never blocks, never follows."""
        assert entry.loc is not None and entry.st is not None
        self.check_readable(entry.loc, entry.vpath, entry.st.st_size)
        fd = self._open_read(entry.loc, entry.vpath)
        try:
            st = os.fstat(fd)
            if not statmod.S_ISREG(st.st_mode):  # swapped since the walk: even a directory is "not a regular file"
                raise ScriptError(f"{entry.vpath} is not a regular file")
            limit = _min_limit(max_bytes, entry.loc.mount.mount.max_file_bytes)
            return self._read_fd(fd, st.st_size, limit, entry.vpath, entry.loc)
        finally:
            os.close(fd)

    def _read_fd(self, fd: int, size_hint: int, max_bytes: int | None, vpath: str, loc: Location | None = None,
                 cut: bool = False) -> bytes:
        try:
            data, seen = read_upto(fd, size_hint, max_bytes)
        except OSError as exc:
            if exc.errno == errno.EISDIR:
                raise ScriptError(f"{vpath} is a directory, not a file") from None
            raise ScriptError(f"cannot read {vpath}: {exc.strerror or 'error'}") from None
        if max_bytes is not None and seen > max_bytes and not cut:  # the file grew past the limit while read
            if loc is not None:
                self.check_readable(loc, vpath, seen)
            raise OverflowError(seen)
        return data


def _min_limit(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
