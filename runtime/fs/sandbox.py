"""The Sandbox policy layer (seed: filesystem-sandbox-api): mounts, derive, approvals, checks.

    config = SandboxConfig(mounts=[Mount(host_path="./docs", mount_point="/docs"),
                                   Mount(host_path="./out", mount_point="/out", mode="rw")])
    sandbox = Sandbox(config)
    sandbox.resolve("/docs/a.md")          # host Path, or PathNotInSandboxError
    child = sandbox.derive(allow_read="/docs/public")   # only ever narrows

Virtual paths are runtime.fs.paths': split once into components, shown with absolute().

Resolution (`Sandbox.locate`). The most specific mount wins. Components are looked up one by
one with lstat; a symlink is read and replaced by its target, which must stay inside the mount
that holds the link (a relative target may not climb above the mount's directory, an absolute
one must start with the mount's real host directory) and must not land under another, more
specific mount point (that would name a different file than the one the link points to).
Otherwise the path "leads outside the sandbox", whether or not the target exists, so a refusal
is never an existence oracle. The result is a canonical path with no symlink in it; the
policy (mount, derive allowlists, suffix) is checked on both the requested and the canonical
path. Files are then opened by `runtime.fs.safeio.open_beneath`, relative to the mount's
directory descriptor with no symlink followed: a component swapped for a symlink after the
check makes the open fail (and resolution is retried), it is never followed.

Writes, deletes and moves resolve the *parent* directory this way and act on the last
component itself: a symlink there is replaced, removed or renamed, never written through.

No message of this module contains a host path; denials say what is allowed.
"""

from __future__ import annotations

import os
import re
import stat as statmod
import weakref
from pathlib import Path
from typing import Literal

from runtime.errors import (
    FileTooLargeError,
    InvalidPathError,
    PathNotInSandboxError,
    PathNotWritableError,
    SandboxConfigError,
    SandboxError,
    ScriptError,
    SuffixNotAllowedError,
)
from runtime.fs import paths, safeio
from runtime.fs.config import Mount, SandboxConfig, _check_overlaps
from runtime.fs.mounts import Location, MountState, SharedMounts
from runtime.fs.paths import absolute

MAX_PATH_CHARS = 4096
MAX_SYMLINKS = 40
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]|[\ud800-\udfff]")
_POINT_COMPONENT_BAD = re.compile(r"[\x00-\x1f\x7f-\x9f\\]|[\ud800-\udfff]")


# --------------------------------------------------------------------------- the Sandbox


class Sandbox:
    """Security boundary: permission checks and path resolution (seed: filesystem-sandbox-api)."""

    def __init__(self, config: SandboxConfig, base_path: Path | None = None) -> None:
        if not isinstance(config, SandboxConfig):
            raise SandboxConfigError("Sandbox needs a SandboxConfig")
        self.config = config
        base = Path(base_path) if base_path is not None else Path.cwd()
        states = []
        for i, m in enumerate(config.mounts):
            host = m.host_path if m.host_path.is_absolute() else base / m.host_path
            real = os.path.realpath(host)
            if not os.path.isdir(real):
                raise SandboxConfigError(f"mounts[{i}].host_path: {m.host_path} is not an existing directory")
            states.append(MountState(m, i, m.parts, real))
        try:
            _check_overlaps([(s.index, s.host) for s in states])
        except ValueError as exc:
            raise SandboxConfigError(str(exc)) from None
        self._shared = SharedMounts(sorted(states, key=lambda s: len(s.point), reverse=True))
        weakref.finalize(self._shared, SharedMounts.close_all, self._shared.fds)
        self._parent: Sandbox | None = None
        self._read_rules: tuple[tuple[str, ...], ...] | None = None  # None: everything the parent allows
        self._write_rules: tuple[tuple[str, ...], ...] | None = None
        self._readonly = False

    # ------------------------------------------------------------------ virtual paths

    def mount_for(self, parts: tuple[str, ...]) -> MountState | None:
        for m in self._shared.mounts:
            if parts[: len(m.point)] == m.point:
                return m
        return None

    @property
    def mounts(self) -> list[MountState]:
        return list(self._shared.mounts)

    # ------------------------------------------------------------------ policy

    def _allows(self, parts: tuple[str, ...], op: str) -> bool:
        if self._parent is None:
            m = self.mount_for(parts)
            return m is not None and (op == "read" or m.writable)
        if op == "write" and self._readonly:
            return False
        if not self._parent._allows(parts, op):
            return False
        rules = self._write_rules if op == "write" else self._read_rules
        if rules is None:
            return True
        return any(parts[: len(r)] == r for r in rules)

    def _roots(self, op: str) -> list[str]:
        if self._parent is None:
            return [m.mount_point for m in self.config.mounts if op == "read" or m.mode == "rw"]
        if op == "write" and self._readonly:
            return []
        rules = self._write_rules if op == "write" else self._read_rules
        if rules is None:
            return self._parent._roots(op)
        return [absolute(r) for r in rules]

    @property
    def readable_roots(self) -> list[str]:
        return self._roots("read")

    @property
    def writable_roots(self) -> list[str]:
        return self._roots("write")

    def describe_access(self) -> str:
        """What IS allowed, for error messages: readable and writable roots."""
        readable = ", ".join(self.readable_roots) or "nothing"
        writable = ", ".join(self.writable_roots) or "nothing (read-only)"
        return f"Readable: {readable}. Writable: {writable}."

    def _outside(self, message: str) -> PathNotInSandboxError:
        return PathNotInSandboxError(f"{message}. {self.describe_access()}", reason=f"{message}.")

    # ------------------------------------------------------------------ resolution

    def _follow(self, path: str, requested: tuple[str, ...]) -> tuple[tuple[str, ...], MountState, bool]:
        """Follow symlinks component by component (see module docstring). Components up to
        the mount point are virtual; the rest are lstat'ed in the mount's host directory."""
        parts = list(requested)
        links = 0
        while True:
            m = self.mount_for(tuple(parts))
            if m is None:
                raise self._outside(f"path {path!r} is outside every mount")
            rel = parts[len(m.point):]
            redirected = False
            for i in range(len(rel)):
                host = os.path.join(m.host, *rel[: i + 1])
                try:
                    lst = os.lstat(host)
                except OSError:  # missing, or a file used as a directory
                    return tuple(parts), m, False
                if not statmod.S_ISLNK(lst.st_mode):
                    continue
                links += 1
                if links > MAX_SYMLINKS:
                    raise ScriptError(f"path {path!r}: too many levels of symbolic links")
                try:
                    target = os.readlink(host)
                except OSError:
                    return tuple(parts), m, False
                new_rel = self._link_target(m, rel[:i], target)
                if new_rel is None or self.mount_for(m.point + new_rel) is not m:
                    raise self._outside(f"path {path!r} leads outside the sandbox")
                parts = list(m.point + new_rel) + rel[i + 1:]
                redirected = True
                break
            if not redirected:
                return tuple(parts), m, True

    @staticmethod
    def _link_target(m: MountState, link_dir: list[str] | tuple[str, ...], target: str) -> tuple[str, ...] | None:
        """Components (relative to the mount) a link's target names, or None if it leaves it."""
        if "\x00" in target:
            return None
        if target.startswith("/"):
            prefix = m.host.rstrip("/") + "/"
            if target == m.host or target.rstrip("/") == m.host:
                return ()
            if not target.startswith(prefix):
                return None
            comps = target[len(prefix):].split("/")
            base: list[str] = []
        else:
            comps = target.split("/")
            base = list(link_dir)
        for c in comps:
            if c in ("", "."):
                continue
            if c == "..":
                if not base:
                    return None
                base.pop()
            else:
                base.append(c)
        return tuple(base)

    def locate(self, path: str, *, op: str, follow_last: bool = True) -> Location:
        """Resolve and check `op` ("read", "write" or "any") on the requested and canonical path."""
        try:
            requested = paths.split(path)
        except PathNotInSandboxError as exc:
            raise self._outside(str(exc)) from None
        except InvalidPathError as exc:
            raise InvalidPathError(f"{exc}. {self.describe_access()}", reason=f"{exc}.") from None
        if follow_last or not requested or any(m.point == requested for m in self._shared.mounts):
            parts, m, exists = self._follow(path, requested)
        else:
            parent, m, exists = self._follow(path, requested[:-1])
            parts = parent + requested[-1:]
            m = self.mount_for(parts)
            if m is None:
                raise self._outside(f"path {path!r} is outside every mount")
        loc = Location(requested, parts, m, exists)
        self._check_op(loc, path, op)
        return loc

    def _check_op(self, loc: Location, path: str, op: str) -> None:
        for parts in dict.fromkeys((loc.requested, loc.parts)):
            if op == "any":
                ok = self._allows(parts, "read") or self._allows(parts, "write")
            else:
                ok = self._allows(parts, op)
            if ok:
                continue
            if op == "write" and self._allows(parts, "read"):
                reason = f"cannot write {absolute(loc.requested)!r}: it is read-only here."
                raise PathNotWritableError(
                    f"{reason} Writable: {', '.join(self.writable_roots) or 'nothing (read-only)'}.", reason=reason
                )
            if parts is loc.requested:
                raise self._outside(f"path {absolute(loc.requested)!r} is not in the sandbox")
            raise self._outside(f"path {path!r} leads outside the sandbox")

    def resolve(self, path: str) -> Path:
        """The host path a virtual path names (it may not exist yet). Symlinks are followed only
        inside their own mount. Raises PathNotInSandboxError if outside the sandbox."""
        return Path(self.locate(path, op="any").host)

    def can_read(self, path: str) -> bool:
        try:
            self.locate(path, op="read")
            return True
        except (SandboxError, ScriptError):
            return False

    def can_write(self, path: str) -> bool:
        try:
            self.locate(path, op="write", follow_last=False)
            return True
        except (SandboxError, ScriptError):
            return False

    def needs_read_approval(self, path: str) -> bool:
        try:
            loc = self.locate(path, op="any")
        except (SandboxError, ScriptError):
            return False
        return self.location_needs_approval(loc, "read")

    def needs_write_approval(self, path: str) -> bool:
        try:
            loc = self.locate(path, op="any", follow_last=False)
        except (SandboxError, ScriptError):
            return False
        return self.location_needs_approval(loc, "write")

    def location_needs_approval(self, loc: Location, op: Literal["read", "write"]) -> bool:
        """The mount of the path as asked, or of what it resolves to, wants approval for `op`."""
        flag = "read_approval" if op == "read" else "write_approval"
        if not self._shared.asks[flag]:
            return False
        return getattr(loc.mount.mount, flag) or getattr(self.mount_for(loc.requested).mount, flag)

    def get_path_config(self, path: str, *, op: Literal["read", "write"]) -> tuple[str, Path, Mount]:
        """(mount point, resolved host path, Mount) for `path`, checked for `op`."""
        if op not in ("read", "write"):
            raise ScriptError(f"op must be 'read' or 'write', not {op!r}")
        loc = self.locate(path, op=op, follow_last=op == "read")
        return loc.mount.point_str, Path(loc.host), loc.mount.mount

    @staticmethod
    def suffix_allowed(mount: Mount, name: str) -> bool:
        return mount.suffixes is None or paths.suffix(name).lower() in mount.suffixes

    def check_suffix(self, path: Path, mount: Mount, *, virtual_path: str) -> None:
        name = Path(path).name
        if not self.suffix_allowed(mount, name):
            suffix = paths.suffix(name).lower()
            shown = f"suffix {suffix!r}" if suffix else "no suffix"
            raise SuffixNotAllowedError(
                f"{virtual_path!r} has {shown}, not allowed in {mount.mount_point}. "
                f"Allowed suffixes there: {', '.join(mount.suffixes)}."
            )

    def check_size(self, path: Path, mount: Mount, *, virtual_path: str, size: int | None = None,
                   writing: bool = False) -> None:
        """`size` (else the host file's) against the mount's max_file_bytes; `writing`: the
        size of content about to be written (the advice differs)."""
        if mount.max_file_bytes is None:
            return
        if size is None:
            try:
                size = os.stat(path).st_size
            except OSError:
                return
        if size > mount.max_file_bytes:
            if writing:
                raise FileTooLargeError(
                    f"cannot write {size} bytes to {virtual_path!r}: files in {mount.mount_point} are limited to "
                    f"{mount.max_file_bytes} bytes. Write less, or split the content into smaller files."
                )
            raise FileTooLargeError(
                f"{virtual_path!r} is {size} bytes, over the limit of {mount.max_file_bytes} bytes "
                f"for files in {mount.mount_point}. Read a smaller file or ask for a larger limit."
            )

    # ------------------------------------------------------------------ derive

    def derive(
        self,
        *,
        allow_read: str | list[str] | None = None,
        allow_write: str | list[str] | None = None,
        readonly: bool | None = None,
        inherit: bool = False,
    ) -> "Sandbox":
        """A child sandbox that can only ever do less than this one.

        inherit=False (default): the child starts with no access; it may read allow_read and
        allow_write prefixes and write allow_write prefixes. inherit=True: it starts with this
        sandbox's access; allow_read / allow_write, when given, replace that part.
        readonly=True removes every write. Asking for more than the parent has raises:
        PathNotInSandboxError (a prefix the parent cannot read), PathNotWritableError (a
        prefix the parent cannot write, or readonly=False on a sandbox that cannot write)."""

        reads = self._prefixes(allow_read, "allow_read")
        writes = self._prefixes(allow_write, "allow_write")
        if readonly and writes:
            raise SandboxError("derive: allow_write contradicts readonly=True")
        self._check_narrower(reads, writes)
        if readonly is False and not self.writable_roots:
            raise PathNotWritableError("derive: readonly=False cannot give write access: the parent sandbox is read-only")
        return self._child(reads, writes, bool(readonly), inherit)

    def _prefixes(self, value, name) -> tuple[tuple[str, ...], ...] | None:
        if value is None:
            return None
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
            raise SandboxError(f"derive: {name} must be a path or a list of paths")
        try:
            return tuple(dict.fromkeys(paths.split(i) for i in items))
        except PathNotInSandboxError as exc:
            raise self._outside(f"derive: {name}: {exc}") from None
        except InvalidPathError as exc:
            raise InvalidPathError(f"derive: {name}: {exc}. {self.describe_access()}") from None

    def _check_narrower(self, reads, writes) -> None:
        """Refuse a derived sandbox that would read or write what this one cannot."""
        for w in writes or ():
            if not self._allows(w, "write"):
                if self._allows(w, "read"):
                    raise PathNotWritableError(
                        f"derive: cannot allow writing {absolute(w)!r}: it is read-only in the parent. "
                        f"Writable: {', '.join(self.writable_roots) or 'nothing (read-only)'}."
                    )
                raise self._outside(f"derive: cannot allow writing {absolute(w)!r}: it is not in the parent sandbox")
        for r in reads or ():
            if not self._allows(r, "read"):
                raise self._outside(f"derive: cannot allow reading {absolute(r)!r}: it is not readable in the parent")

    def _child(self, reads, writes, readonly: bool, inherit: bool) -> "Sandbox":
        child = object.__new__(Sandbox)
        child.config = self.config
        child._shared = self._shared
        child._parent = self
        child._readonly = readonly
        if inherit:
            child._write_rules = writes
            child._read_rules = None if reads is None and writes is None else (reads or ()) + (writes or ())
            if reads is None and writes is not None:
                child._read_rules = None  # reading stays as the parent's
        else:
            child._write_rules = writes or ()
            child._read_rules = (reads or ()) + (writes or ())
        return child

    # ------------------------------------------------------------------ safe opening

    def open_location(self, loc: Location, flags: int, mode: int = 0o666) -> int:
        """Open a located path beneath its mount's directory fd (no symlink followed)."""
        return safeio.open_beneath(self._shared.fd(loc.mount), loc.rel, flags, mode)

    def mount_fd(self, ms: MountState) -> int:
        return self._shared.fd(ms)

    def open_checked(self, path: str, flags: int, *, op: str = "read", attempts: int = 3) -> tuple[int, Location]:
        """Locate, check and open `path`; if a component is swapped for a symlink between
        the check and the open, check again (at most `attempts` times). Never follows it."""
        for _ in range(attempts):
            loc = self.locate(path, op=op)
            try:
                return self.open_location(loc, flags), loc
            except safeio.Raced:
                continue
        raise ScriptError(f"{absolute(paths.split(path))} changed while it was being opened; try again")
