"""The virtual filesystem: script paths -> host paths, and nothing the other way.

Scripts name files by *virtual* paths ("data/a.txt", "/data/a.txt", "./data/../data/a.txt").
Every virtual path is absolute under "/" (a relative path is relative to "/"), and every host
directory is reachable only through a mount. All resolution happens in `VirtualFS.resolve`;
a later issue replaces this module's policy with the full `Sandbox`, keeping that entry point.

Rules (decided here, tested in tests/runtime/test_vfs.py):

- Normalization is component-wise: "" and "." components are dropped, ".." pops one. A ".."
  at the root is refused with PathNotInSandboxError ("path '../x' climbs above the root"):
  it is never clamped.
- "/etc/passwd" is the virtual path /etc/passwd under the root mount, not a host path.
- NUL and other control characters (U+0000-U+001F, U+007F) are refused with a ScriptError.
- A backslash is an ordinary character of a file name (this is POSIX): "a\\b" is one
  component named "a\\b", never a separator.
- The canonical form shown to scripts is relative to "/" without a leading slash
  ("data/a.txt"); the root itself is ".".
- The most specific mount wins ("/docs/x" uses the "/docs" mount over "/").
- Symlinks are followed only while they stay inside their mount: the joined host path is
  realpath'ed and must lie inside the realpath of the mount directory. Otherwise the path is
  refused with "path 'link' leads outside the sandbox" (also when the outside target does not
  exist, so that the refusal is not an existence oracle for host files). A dangling symlink
  whose target would be inside is "no such file".
- Files are opened by their resolved real path with O_NOFOLLOW|O_NONBLOCK, and fstat'ed: only
  regular files are read (a FIFO is refused, it could block the broker).
- Directory walks never follow directory symlinks (no cycles, no escapes); file symlinks that
  stay inside are listed as files; symlinks leaving the mount are skipped silently.

No host path ever appears in a return value or an error message of this module.
"""

from __future__ import annotations

import errno
import os
import re
import stat as statmod
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from runtime.errors import PathNotInSandboxError, ScriptError

MAX_PATH_CHARS = 4096
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Mount:
    point: tuple[str, ...]  # virtual components, () for "/"
    host: str  # realpath of the host directory
    writable: bool


@dataclass(frozen=True)
class Resolved:
    """A resolved virtual path."""

    parts: tuple[str, ...]  # canonical virtual components
    vpath: str  # canonical virtual string ("." for the root)
    mount: Mount
    host: str  # the joined host path (may be a symlink itself)
    real: str  # realpath of `host`, inside mount.host


@dataclass(slots=True)
class WalkEntry:
    """One entry met while listing or walking a directory."""

    vpath: str  # canonical virtual path
    rel: str  # path relative to the walked directory, "/"-separated
    name: str
    kind: str  # "file" | "directory" | "symlink" | "other" (lstat kind, symlinks not followed)
    lst: os.stat_result  # lstat of the entry
    st: os.stat_result | None  # stat following a symlink that stays inside (None otherwise)
    real: str | None  # host realpath when it stays inside the mount (None for escapes)
    link_target: str | None  # for symlinks: virtual target or "(outside the sandbox)"


OUTSIDE = "(outside the sandbox)"


def to_virtual(parts: tuple[str, ...] | list[str]) -> str:
    """Canonical virtual string: 'data/a.txt', or '.' for the root."""
    return "/".join(parts) if parts else "."


def _is_inside(path: str, root: str) -> bool:
    if path == root:
        return True
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def _kind_of(mode: int) -> str:
    if statmod.S_ISREG(mode):
        return "file"
    if statmod.S_ISDIR(mode):
        return "directory"
    if statmod.S_ISLNK(mode):
        return "symlink"
    return "other"


class VirtualFS:
    def __init__(self, mounts: list[tuple[str, str | Path, bool]]) -> None:
        if not mounts:
            raise ValueError("at least one mount is required")
        parsed: list[Mount] = []
        for point, host, writable in mounts:
            if not isinstance(point, str) or not point.startswith("/"):
                raise ValueError(f"mount point must start with '/': {point!r}")
            parts = tuple(p for p in point.split("/") if p)
            if any(p in (".", "..") for p in parts):
                raise ValueError(f"mount point must be normalized: {point!r}")
            real = os.path.realpath(os.fspath(host))
            if not os.path.isdir(real):
                raise ValueError(f"mount host directory does not exist: {host}")
            if any(m.point == parts for m in parsed):
                raise ValueError(f"duplicate mount point {point!r}")
            parsed.append(Mount(parts, real, bool(writable)))
        # Most specific first.
        self.mounts: list[Mount] = sorted(parsed, key=lambda m: len(m.point), reverse=True)

    # ----------------------------------------------------------------- normalization

    @staticmethod
    def normalize(path: str) -> tuple[str, ...]:
        """Virtual components of a script path (see module docstring)."""
        if not isinstance(path, str):
            raise ScriptError(f"a path must be a string, not {type(path).__name__}")
        if len(path) > MAX_PATH_CHARS:
            raise ScriptError(f"path is too long ({len(path)} characters, at most {MAX_PATH_CHARS})")
        bad = _CONTROL.search(path)
        if bad:
            raise ScriptError(f"path {path!r} contains a control character ({bad.group()!r})")
        parts: list[str] = []
        for comp in path.split("/"):
            if comp in ("", "."):
                continue
            if comp == "..":
                if not parts:
                    raise PathNotInSandboxError(f"path {path!r} climbs above the root")
                parts.pop()
            else:
                parts.append(comp)
        return tuple(parts)

    def canonical(self, path: str) -> str:
        return to_virtual(self.normalize(path))

    def mount_for(self, parts: tuple[str, ...]) -> Mount | None:
        for m in self.mounts:
            if parts[: len(m.point)] == m.point:
                return m
        return None

    # ----------------------------------------------------------------- resolution

    def resolve(self, path: str) -> Resolved:
        """Resolve a script path. The result may not exist; symlink escapes are refused."""
        parts = self.normalize(path)
        vpath = to_virtual(parts)
        mount = self.mount_for(parts)
        if mount is None:
            raise PathNotInSandboxError(f"path {vpath!r} is outside every mount")
        rest = parts[len(mount.point):]
        host = os.path.join(mount.host, *rest) if rest else mount.host
        real = os.path.realpath(host)
        if not _is_inside(real, mount.host):
            raise PathNotInSandboxError(f"path {vpath!r} leads outside the sandbox")
        return Resolved(parts, vpath, mount, host, real)

    def stat(self, res: Resolved) -> os.stat_result:
        """stat of a resolved path; ScriptError 'no such file' if missing (or dangling)."""
        try:
            return os.stat(res.real)
        except FileNotFoundError:
            raise ScriptError(f"no such file or directory: {res.vpath}") from None
        except NotADirectoryError:
            raise ScriptError(f"no such file or directory: {res.vpath}") from None
        except OSError as exc:
            raise ScriptError(f"cannot access {res.vpath}: {exc.strerror or 'error'}") from None

    def resolve_file(self, path: str) -> tuple[Resolved, os.stat_result]:
        res = self.resolve(path)
        try:
            st = os.stat(res.real)
        except (FileNotFoundError, NotADirectoryError):
            raise ScriptError(f"no such file: {res.vpath}") from None
        except OSError as exc:
            raise ScriptError(f"cannot access {res.vpath}: {exc.strerror or 'error'}") from None
        if statmod.S_ISDIR(st.st_mode):
            raise ScriptError(f"{res.vpath} is a directory, not a file")
        if not statmod.S_ISREG(st.st_mode):
            raise ScriptError(f"{res.vpath} is not a regular file")
        return res, st

    def resolve_dir(self, path: str) -> tuple[Resolved, os.stat_result]:
        res = self.resolve(path)
        try:
            st = os.stat(res.real)
        except (FileNotFoundError, NotADirectoryError):
            raise ScriptError(f"no such directory: {res.vpath}") from None
        except OSError as exc:
            raise ScriptError(f"cannot access {res.vpath}: {exc.strerror or 'error'}") from None
        if not statmod.S_ISDIR(st.st_mode):
            raise ScriptError(f"{res.vpath} is a file, not a directory")
        return res, st

    def read_bytes(self, res: Resolved, max_bytes: int | None = None) -> tuple[bytes, os.stat_result]:
        """Read a regular file by its resolved real path (O_NOFOLLOW|O_NONBLOCK, fstat'ed).
        A file larger than max_bytes raises OverflowError(size): the caller owns the limit."""
        fd = self._open(res.real, res.vpath)
        try:
            st = os.fstat(fd)
            if statmod.S_ISDIR(st.st_mode):
                raise ScriptError(f"{res.vpath} is a directory, not a file")
            if not statmod.S_ISREG(st.st_mode):
                raise ScriptError(f"{res.vpath} is not a regular file")
            if max_bytes is not None and st.st_size > max_bytes:
                raise OverflowError(st.st_size)
            return self._read_fd(fd, st.st_size, max_bytes, res.vpath), st
        finally:
            os.close(fd)

    def read_entry(self, entry: WalkEntry, max_bytes: int | None = None) -> bytes:
        """Read a regular file met in a walk (its stat is known: no fstat). A file swapped
        for a directory or a FIFO since the walk fails or reads nothing; never blocks."""
        assert entry.real is not None and entry.st is not None
        fd = self._open(entry.real, entry.vpath)
        try:
            return self._read_fd(fd, entry.st.st_size, max_bytes, entry.vpath)
        finally:
            os.close(fd)

    @staticmethod
    def _open(real: str, vpath: str) -> int:
        try:
            return os.open(real, _OPEN_FLAGS)
        except FileNotFoundError:
            raise ScriptError(f"no such file: {vpath}") from None
        except OSError as exc:
            raise ScriptError(f"cannot open {vpath}: {exc.strerror or 'error'}") from None

    @staticmethod
    def _read_fd(fd: int, size_hint: int, max_bytes: int | None, vpath: str) -> bytes:
        try:
            data = os.read(fd, size_hint + 1)
            if len(data) <= size_hint:
                return data  # EOF reached (the common case: one read)
            chunks = [data]
            total = len(data)
            while True:  # the file grew: keep reading, bounded by max_bytes
                if max_bytes is not None and total > max_bytes:
                    raise OverflowError(total)
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
                total += len(chunk)
        except BlockingIOError:
            return b""
        except OSError as exc:
            if exc.errno == errno.EISDIR:
                raise ScriptError(f"{vpath} is a directory, not a file") from None
            raise ScriptError(f"cannot read {vpath}: {exc.strerror or 'error'}") from None

    # ----------------------------------------------------------------- listings

    def _link_target(self, mount: Mount, host_entry: str) -> tuple[str | None, str]:
        """(real path if inside the mount else None, virtual target or OUTSIDE)."""
        real = os.path.realpath(host_entry)
        if not _is_inside(real, mount.host):
            return None, OUTSIDE
        rel = os.path.relpath(real, mount.host)
        rel_parts = () if rel == "." else tuple(rel.split(os.sep))
        return real, to_virtual(mount.point + rel_parts)

    def _child_mounts(self, parts: tuple[str, ...]) -> dict[str, Mount]:
        """Mounts whose point is a direct child of the virtual directory `parts`."""
        out = {}
        for m in self.mounts:
            if len(m.point) == len(parts) + 1 and m.point[: len(parts)] == parts:
                out[m.point[-1]] = m
        return out

    def list_dir(self, dir_res: Resolved) -> list[WalkEntry]:
        """Entries of one directory, sorted by name. Unreadable entries are skipped."""
        return list(self._scan(dir_res.parts, dir_res.mount, dir_res.real, dir_res.parts))

    def _scan(self, base_parts: tuple[str, ...], mount: Mount, real_dir: str,
              parts: tuple[str, ...]) -> Iterator[WalkEntry]:
        entries: list[WalkEntry] = []
        child_mounts = self._child_mounts(parts)
        vprefix = "/".join(parts) + "/" if parts else ""
        rel_parts = parts[len(base_parts):]
        rprefix = "/".join(rel_parts) + "/" if rel_parts else ""
        try:
            it = os.scandir(real_dir)
        except OSError:
            it = None
        if it is not None:
            with it:
                for de in it:
                    name = de.name
                    if name in child_mounts:
                        continue  # shadowed by a mount
                    if _CONTROL.search(name):
                        continue  # not addressable by a script path
                    try:
                        lst = de.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    kind = _kind_of(lst.st_mode)
                    host_entry = de.path
                    target = None
                    if kind == "symlink":
                        st: os.stat_result | None = None
                        real, target = self._link_target(mount, host_entry)
                        if real is not None:
                            try:
                                st = os.stat(real)
                            except OSError:
                                st = None
                    else:
                        st, real = lst, host_entry
                    entries.append(WalkEntry(vprefix + name, rprefix + name, name, kind, lst, st, real, target))
        for name, m in child_mounts.items():
            try:
                lst = os.stat(m.host)
            except OSError:
                continue
            entries.append(WalkEntry(vprefix + name, rprefix + name, name, "directory", lst, lst, m.host, None))
        entries.sort(key=lambda e: e.name)
        return iter(entries)

    def walk(self, dir_res: Resolved, recursive: bool, check=None) -> Iterator[WalkEntry]:
        """Entries under a directory, depth-first, each directory's entries in name order
        (callers sort by path). Directory symlinks are reported, never entered.
        `check` is called before each directory is read (deadline checks)."""
        stack: list[tuple[tuple[str, ...], Mount, str]] = [(dir_res.parts, dir_res.mount, dir_res.real)]
        base = dir_res.parts
        visited: set[tuple[int, int]] = set()
        while stack:
            parts, mount, real_dir = stack.pop()
            if check is not None:
                check()
            try:
                st = os.stat(real_dir)
                key = (st.st_dev, st.st_ino)
            except OSError:
                continue
            if key in visited:
                continue
            visited.add(key)
            subdirs = []
            for entry in self._scan(base, mount, real_dir, parts):
                yield entry
                if recursive and entry.kind == "directory" and entry.real is not None:
                    vparts = tuple(entry.vpath.split("/"))
                    sub_mount = self.mount_for(vparts) or mount
                    subdirs.append((vparts, sub_mount, entry.real))
            stack.extend(reversed(subdirs))
