"""VirtualFS's listings and walks: each directory opened beneath its mount's descriptor, no
directory symlink followed, entries a script could not open left out (a mixin of VirtualFS:
it uses its resolution, policy and approvals)."""

from __future__ import annotations

import os
import re
import stat as statmod
from typing import Callable, Iterator

from runtime.errors import SandboxError, ScriptError
from runtime.fs import safeio
from runtime.fs.entries import OUTSIDE, VIRTUAL_DIR_STAT, Resolved, WalkEntry, _kind_of
from runtime.fs.mounts import Location, MountState
from runtime.fs.paths import absolute, relative

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


MAX_UNNAMABLE_KEPT = 1000  # distinct names remembered (to count each once); the warning shows 5


class Listings:
    def _unnamable(self, vpath: str) -> None:
        seen = self.__dict__.setdefault("unnamable", {})
        if len(seen) < MAX_UNNAMABLE_KEPT:
            seen[repr(os.fsencode(vpath))[2:-1]] = None  # the name's bytes, escaped

    def forget_listing_warnings(self) -> None:
        """Start a new call's warnings (the agent tools keep one VirtualFS for all their calls)."""
        self.__dict__.pop("unnamable", None)

    def listing_warnings(self) -> list[str]:
        """What listings and searches left out: names no script path can spell."""
        seen = self.__dict__.get("unnamable") or {}
        if not seen:
            return []
        count = f"{len(seen)}{' or more' if len(seen) >= MAX_UNNAMABLE_KEPT else ''}"
        shown = ", ".join(list(seen)[:5]) + (", ..." if len(seen) > 5 else "")
        return [f"{count} entr{'y was' if len(seen) == 1 else 'ies were'} left out of listings and searches: their "
                f"names hold control characters or bytes that are not UTF-8, so no path can name them ({shown})"]

    def _child_mounts(self, parts: tuple[str, ...]) -> dict[str, MountState]:
        """Mounts whose point is a direct child of the virtual directory `parts`."""
        out = {}
        for m in self.sandbox.mounts:
            if len(m.point) == len(parts) + 1 and m.point[: len(parts)] == parts:
                out[m.point[-1]] = m
        return out

    def _link(self, vparts: tuple[str, ...]) -> tuple[Location | None, os.stat_result | None, str]:
        """(location, stat) of what a symlink names when it stays inside, and its shown target."""
        try:
            loc = self.sandbox.locate(absolute(vparts), op="read")
        except SandboxError:
            return None, None, OUTSIDE
        except ScriptError:  # a loop
            return None, None, OUTSIDE
        st = None
        if loc.exists:
            try:
                fd = self.sandbox.open_location(loc, safeio.O_PATH)
                try:
                    st = os.fstat(fd)
                finally:
                    os.close(fd)
            except (OSError, safeio.Raced):
                st = None
        return loc, st, relative(loc.parts)

    def list_dir(self, dir_res: Resolved, check: Callable[[], None] | None = None) -> list[WalkEntry]:
        """Entries of one directory, sorted by name. Unreadable entries are skipped.
        `check` is called for each entry met (deadline checks)."""
        self.check_listable(dir_res, recursive=False)
        return list(self._scan(dir_res.parts, dir_res.parts, dir_res.loc, check))

    def _readable_entry(self, e: WalkEntry) -> bool:
        """Listings show what a script could open: no file the mount's suffixes refuse.
        (_real_entries asks only where the answer can be no: a new rule here goes there too.)"""
        if e.kind == "directory" or e.loc is None:
            return True
        if e.kind == "symlink" and e.st is not None and statmod.S_ISDIR(e.st.st_mode):
            return True
        return self.suffix_allowed(e.loc)

    def _scan(self, base_parts: tuple[str, ...], parts: tuple[str, ...], dir_loc: Location | None,
              check: Callable[[], None] | None = None) -> Iterator[WalkEntry]:
        """The entries of the directory `parts` (virtual components as asked) at `dir_loc`
        (None: a virtual directory). Paths are shown relative to `base_parts` in `rel`.
        `check()` runs before each entry is looked at: a directory can hold millions."""
        rel_parts = parts[len(base_parts):]
        prefixes = ("/".join(parts) + "/" if parts else "", "/".join(rel_parts) + "/" if rel_parts else "")
        own_parts = dir_loc.parts if dir_loc is not None else parts
        child_mounts = self._child_mounts(own_parts)
        entries = self._real_entries(parts, own_parts, dir_loc, child_mounts, prefixes, check)
        entries += self._mount_entries(parts, child_mounts, prefixes)
        names = {e.name for e in entries}
        for name, root in self._leads_to(parts).items():
            if name not in names:
                entries += self._root_entries(parts, name, root, prefixes)
        entries.sort(key=lambda e: e.name)
        return iter(entries)

    def _real_entries(self, parts, own_parts, dir_loc, child_mounts, prefixes, check) -> list[WalkEntry]:
        """What the directory itself holds, read beneath its mount's descriptor."""
        fd = None
        if dir_loc is not None:
            try:
                fd = self.sandbox.open_location(dir_loc, os.O_RDONLY | safeio.O_DIRECTORY)
            except (OSError, safeio.Raced):
                fd = None
        if fd is None:
            return []
        vprefix, rprefix = prefixes
        host_prefix = dir_loc.host.rstrip("/") + "/"  # each entry's real path: Location.host, joined once
        # what _readable_entry() asks of an entry that is not a symlink: its mount's (this one's) suffixes
        any_suffix = dir_loc.mount.mount.suffixes is not None
        entries = []
        try:
            with os.scandir(fd) as it:
                for de in it:
                    if check is not None:
                        check()
                    name = de.name
                    if name in child_mounts:
                        continue  # shadowed by a mount
                    # isprintable(): C-fast, and false for every control character and surrogate
                    if not name.isprintable() and (_CONTROL.search(name) or any("\ud800" <= c <= "\udfff" for c in name)):
                        self._unnamable(vprefix + name)  # no script path can name it: left out, and said
                        continue
                    try:
                        lst = de.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    kind = _kind_of(lst.st_mode)
                    target = None
                    if kind == "symlink":
                        loc, st, target = self._link(parts + (name,))
                        real = loc.host if loc is not None else None
                    else:
                        loc = Location(parts + (name,), own_parts + (name,), dir_loc.mount, True)
                        st, real = lst, host_prefix + name
                    entry = WalkEntry(vprefix + name, rprefix + name, name, kind, lst, st, real, target, loc)
                    if (any_suffix or kind == "symlink") and not self._readable_entry(entry):
                        continue
                    entries.append(entry)
        finally:
            os.close(fd)
        return entries

    def _mount_entries(self, parts, child_mounts, prefixes) -> list[WalkEntry]:
        """The readable mount points right below the directory."""
        vprefix, rprefix = prefixes
        entries = []
        for name, m in child_mounts.items():
            if not self.sandbox.can_read(absolute(m.point)):
                continue
            loc = Location(parts + (name,), m.point, m, True)
            try:
                lst = os.fstat(self.sandbox.mount_fd(m))
            except (OSError, ScriptError):
                continue
            entries.append(WalkEntry(vprefix + name, rprefix + name, name, "directory", lst, lst, m.host, None, loc))
        return entries

    def _root_entries(self, parts, name: str, root, prefixes) -> list[WalkEntry]:
        """The next step toward a readable root below a virtual directory: the root itself (a
        real directory or file), or a purely virtual directory on the way to deeper roots."""
        vprefix, rprefix = prefixes
        if len(root) != len(parts) + 1:
            return [WalkEntry(vprefix + name, rprefix + name, name, "directory", VIRTUAL_DIR_STAT,
                              VIRTUAL_DIR_STAT, None, None, None, virtual=True)]
        try:
            loc = self.sandbox.locate(absolute(root), op="read")
            lst = self._fstat(self._resolved(loc), "no such directory")
        except (SandboxError, ScriptError):
            return []
        kind = _kind_of(lst.st_mode)
        entry = WalkEntry(vprefix + name, rprefix + name, name, kind, lst, lst, loc.host, None, loc)
        return [entry] if kind in ("directory", "file") and self._readable_entry(entry) else []

    def walk(self, dir_res: Resolved, recursive: bool, check: Callable[[], None] | None = None,
             prune: Callable[[WalkEntry], bool] | None = None) -> Iterator[WalkEntry]:
        """Entries under a directory, depth-first, each directory's entries in name order
        (callers sort by path). Directory symlinks are reported, never entered.
        `check` is called before each directory is read and for each entry met (deadline
        checks); `prune(entry)` true keeps a directory out of the walk (it is still yielded)."""
        self.check_listable(dir_res, recursive)
        # (virtual components, location or None for a virtual directory)
        stack: list[tuple[tuple[str, ...], Location | None]] = [(dir_res.parts, dir_res.loc)]
        base = dir_res.parts
        visited: set[tuple[int, int]] = set()
        while stack:
            parts, loc = stack.pop()
            if check is not None:
                check()
            if loc is not None:
                try:
                    fd = self.sandbox.open_location(loc, safeio.O_PATH | safeio.O_DIRECTORY)
                    try:
                        st = os.fstat(fd)
                    finally:
                        os.close(fd)
                except (OSError, safeio.Raced):
                    continue
                key = (st.st_dev, st.st_ino)
                if key in visited:
                    continue
                visited.add(key)
            subdirs = []
            for entry in self._scan(base, parts, loc, check):
                yield entry
                if recursive and entry.kind == "directory" and (entry.loc is not None or entry.virtual) \
                        and (prune is None or not prune(entry)):
                    subdirs.append((parts + (entry.name,), entry.loc))
            stack.extend(reversed(subdirs))
