"""The Sandbox policy layer (seed: filesystem-sandbox-api): mounts, derive, approvals, checks.

    config = SandboxConfig(mounts=[Mount(host_path="./docs", mount_point="/docs"),
                                   Mount(host_path="./out", mount_point="/out", mode="rw")])
    sandbox = Sandbox(config)
    sandbox.resolve("/docs/a.md")          # host Path, or PathNotInSandboxError
    child = sandbox.derive(allow_read="/docs/public")   # only ever narrows

Virtual paths. A path is a "/"-separated virtual path; a relative path is relative to "/".
"" and "." components are dropped and ".." pops one; a ".." at "/" is refused (never
clamped). A backslash, "~", "C:" are ordinary characters of a name (this is POSIX: nothing is
expanded or translated). NUL, control characters (U+0000-U+001F, U+007F-U+009F), lone
surrogates and paths over 4096 characters are refused with InvalidPathError. Unicode is not
normalized: "．．" (fullwidth) is an ordinary name, not "..".

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
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

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
from runtime.fs import safeio

MAX_PATH_CHARS = 4096
MAX_SYMLINKS = 40
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]|[\ud800-\udfff]")
_POINT_COMPONENT_BAD = re.compile(r"[\x00-\x1f\x7f-\x9f\\]|[\ud800-\udfff]")


# --------------------------------------------------------------------------- configuration


class Mount(BaseModel):
    """A host directory shown at a virtual mount point."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host_path: Path
    mount_point: str
    mode: Literal["ro", "rw"] = "ro"
    suffixes: list[str] | None = None
    max_file_bytes: int | None = Field(default=None, ge=0)
    write_approval: bool = True
    read_approval: bool = False

    @field_validator("mount_point")
    @classmethod
    def _point(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"must start with '/' (got {value!r})")
        if value != "/" and value.endswith("/"):
            raise ValueError(f"cannot end with '/' (got {value!r}; only '/' itself may)")
        if value != "/":
            for comp in value[1:].split("/"):
                if comp in ("", ".", ".."):
                    raise ValueError(f"must be a normalized path without '//', '.' or '..' (got {value!r})")
                if _POINT_COMPONENT_BAD.search(comp):
                    raise ValueError(f"contains a control character or a backslash (got {value!r})")
        return value

    @field_validator("suffixes")
    @classmethod
    def _suffixes(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        out = []
        for s in value:
            if not s.startswith(".") or len(s) < 2 or "/" in s or "\x00" in s:
                raise ValueError(f"each suffix must look like '.md' (got {s!r})")
            out.append(s.lower())
        return out

    @field_validator("host_path")
    @classmethod
    def _host(cls, value: Path) -> Path:
        if str(value) == "" or "\x00" in str(value):
            raise ValueError("must be a directory path")
        return value

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(p for p in self.mount_point.split("/") if p)


class SandboxConfig(BaseModel):
    """Top-level configuration: at least one mount."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mounts: list[Mount] = Field(min_length=1)

    @model_validator(mode="after")
    def _rules(self) -> "SandboxConfig":
        seen: dict[str, int] = {}
        for i, m in enumerate(self.mounts):
            if m.mount_point in seen:
                raise ValueError(
                    f"mounts[{i}].mount_point: duplicate mount point {m.mount_point!r} (also mounts[{seen[m.mount_point]}])"
                )
            seen[m.mount_point] = i
        # Host paths given as absolute paths are checked here; relative ones (and symlinked
        # ones) again by Sandbox once base_path is known.
        absolute = [(i, os.path.normpath(str(m.host_path))) for i, m in enumerate(self.mounts) if m.host_path.is_absolute()]
        _check_overlaps(absolute)
        return self


def _check_overlaps(paths: list[tuple[int, str]]) -> None:
    for a in range(len(paths)):
        for b in range(a + 1, len(paths)):
            (i, p), (j, q) = paths[a], paths[b]
            if p == q:
                raise ValueError(f"mounts[{j}].host_path: the same directory as mounts[{i}].host_path")
            if _inside(p, q) or _inside(q, p):
                raise ValueError(
                    f"mounts[{j}].host_path: overlaps mounts[{i}].host_path "
                    "(one mount's host directory cannot be inside another's)"
                )


def _inside(path: str, root: str) -> bool:
    """Is `path` strictly or equally inside `root` (both normalized, absolute)?"""
    if path == root:
        return True
    return path.startswith(root.rstrip("/") + "/")


def format_validation_error(exc: ValidationError, source: str | None = None) -> str:
    """One line per problem, each naming the field: 'mounts[1].mount_point: must start with '/''."""
    lines = []
    for err in exc.errors():
        loc = ""
        for item in err.get("loc", ()):
            loc += f"[{item}]" if isinstance(item, int) else (f".{item}" if loc else str(item))
        msg = err.get("msg", "invalid")
        msg = re.sub(r"^(Value|Assertion) error, ", "", msg)
        if re.match(r"^mounts\[\d+\]\.\w+: ", msg):  # model-level rules name their own field
            lines.append(msg)
        else:
            lines.append(f"{loc}: {msg}" if loc else msg)
    prefix = f"{source}: " if source else ""
    return "; ".join(prefix + line for line in lines)


def config_from_data(data, source: str | None = None) -> SandboxConfig:
    """Build a SandboxConfig from plain data, turning errors into one SandboxConfigError line."""
    try:
        return SandboxConfig.model_validate(data)
    except ValidationError as exc:
        raise SandboxConfigError(format_validation_error(exc, source)) from None


def load_config(path: str | Path) -> tuple[SandboxConfig, Path]:
    """Read a sandbox TOML file: `[[mounts]]` tables with the Mount fields. Returns the config
    and its base path (the file's directory: relative host paths are relative to the file)."""
    import tomllib

    path = Path(path)
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise SandboxConfigError(f"{path}: no such configuration file") from None
    except IsADirectoryError:
        raise SandboxConfigError(f"{path}: is a directory, not a configuration file") from None
    except UnicodeDecodeError:
        raise SandboxConfigError(f"{path}: is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise SandboxConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise SandboxConfigError(f"{path}: cannot read: {exc.strerror}") from None
    return config_from_data(data, str(path)), path.resolve().parent


# --------------------------------------------------------------------------- resolution state


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


@dataclass(frozen=True, eq=False)
class Location:
    """A resolved virtual path."""

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
        return vstr(self.requested)


def refuse_directory_syntax(path: str) -> None:
    """A file operation's path cannot end with '/' (it names a directory: POSIX ENOTDIR)."""
    if isinstance(path, str) and path.endswith("/") and path.strip("/"):
        shown = path if len(path) <= 200 else path[:100] + "..." + path[-100:]
        raise ScriptError(f"{shown!r} ends with '/', so it names a directory; a file path cannot end with '/'")


def vstr(parts) -> str:
    """Absolute virtual string: '/data/a.txt', '/' for the root."""
    return "/" + "/".join(parts)


class _Shared:
    """What a sandbox and all its derived children share: mounts and mount directory fds."""

    def __init__(self, mounts: list[MountState]) -> None:
        self.mounts = mounts  # most specific first
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
        self._shared = _Shared(sorted(states, key=lambda s: len(s.point), reverse=True))
        weakref.finalize(self._shared, _Shared.close_all, self._shared.fds)
        self._parent: Sandbox | None = None
        self._read_rules: tuple[tuple[str, ...], ...] | None = None  # None: everything the parent allows
        self._write_rules: tuple[tuple[str, ...], ...] | None = None
        self._readonly = False

    # ------------------------------------------------------------------ virtual paths

    @staticmethod
    def split(path: str) -> tuple[str, ...]:
        """Lexical canonical components of a virtual path (see module docstring)."""
        if not isinstance(path, str):
            raise InvalidPathError(f"a path must be a string, not {type(path).__name__}")
        if len(path) > MAX_PATH_CHARS:
            raise InvalidPathError(f"path is too long ({len(path)} characters, at most {MAX_PATH_CHARS})")
        bad = _BAD_CHARS.search(path)
        if bad:
            what = "an unpaired surrogate" if "\ud800" <= bad.group() <= "\udfff" else "a control character"
            raise InvalidPathError(f"path {path!r} contains {what} ({bad.group()!r})")
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
        return [vstr(r) for r in rules]

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
            requested = self.split(path)
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
                reason = f"cannot write {vstr(loc.requested)!r}: it is read-only here."
                raise PathNotWritableError(
                    f"{reason} Writable: {', '.join(self.writable_roots) or 'nothing (read-only)'}.", reason=reason
                )
            if parts is loc.requested:
                raise self._outside(f"path {vstr(loc.requested)!r} is not in the sandbox")
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
        return getattr(loc.mount.mount, flag) or getattr(self.mount_for(loc.requested).mount, flag)

    def get_path_config(self, path: str, *, op: Literal["read", "write"]) -> tuple[str, Path, Mount]:
        """(mount point, resolved host path, Mount) for `path`, checked for `op`."""
        if op not in ("read", "write"):
            raise ScriptError(f"op must be 'read' or 'write', not {op!r}")
        loc = self.locate(path, op=op, follow_last=op == "read")
        return loc.mount.point_str, Path(loc.host), loc.mount.mount

    def check_suffix(self, path: Path, mount: Mount, *, virtual_path: str) -> None:
        if mount.suffixes is None:
            return
        name = Path(path).name
        dot = name.rfind(".")
        suffix = name[dot:].lower() if dot > 0 else ""
        if suffix not in mount.suffixes:
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

        def prefixes(value, name) -> tuple[tuple[str, ...], ...] | None:
            if value is None:
                return None
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
                raise SandboxError(f"derive: {name} must be a path or a list of paths")
            try:
                return tuple(dict.fromkeys(self.split(i) for i in items))
            except PathNotInSandboxError as exc:
                raise self._outside(f"derive: {name}: {exc}") from None
            except InvalidPathError as exc:
                raise InvalidPathError(f"derive: {name}: {exc}. {self.describe_access()}") from None

        reads = prefixes(allow_read, "allow_read")
        writes = prefixes(allow_write, "allow_write")
        if readonly and writes:
            raise SandboxError("derive: allow_write contradicts readonly=True")
        for w in writes or ():
            if not self._allows(w, "write"):
                if self._allows(w, "read"):
                    raise PathNotWritableError(
                        f"derive: cannot allow writing {vstr(w)!r}: it is read-only in the parent. "
                        f"Writable: {', '.join(self.writable_roots) or 'nothing (read-only)'}."
                    )
                raise self._outside(f"derive: cannot allow writing {vstr(w)!r}: it is not in the parent sandbox")
        for r in reads or ():
            if not self._allows(r, "read"):
                raise self._outside(f"derive: cannot allow reading {vstr(r)!r}: it is not readable in the parent")
        if readonly is False and not self.writable_roots:
            raise PathNotWritableError("derive: readonly=False cannot give write access: the parent sandbox is read-only")

        child = object.__new__(Sandbox)
        child.config = self.config
        child._shared = self._shared
        child._parent = self
        child._readonly = bool(readonly)
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
        raise ScriptError(f"{vstr(self.split(path))} changed while it was being opened; try again")


def sandbox_from_options(
    root: str | Path | None = None,
    mounts: list | tuple = (),
    config_path: str | Path | None = None,
) -> Sandbox:
    """The Sandbox of the command line: the TOML file's mounts (relative host paths are
    relative to the file), then `root` at "/", then each `mounts` item (MountSpec-like:
    host_path, mount_point, writable) relative to the cwd. With none of the three, the
    current directory is the root. Raises SandboxConfigError with one line naming the
    option or the file's entry that is wrong ("--mount out:/out host_path: overlaps --root")."""
    items: list[dict] = []
    labels: list[str] = []
    if config_path is not None:
        config, base = load_config(config_path)
        for i, m in enumerate(config.mounts):
            data = m.model_dump()
            host = m.host_path if m.host_path.is_absolute() else base / m.host_path
            data["host_path"] = os.path.abspath(host)
            items.append(data)
            labels.append(f"{config_path}: mounts[{i}]")
    if root is None and config_path is None and not mounts:
        root = "."
    if root is not None:
        items.append({"host_path": os.path.abspath(root), "mount_point": "/", "mode": "ro"})
        labels.append(f"--root {root}")
    for spec in mounts:
        items.append({"host_path": os.path.abspath(spec.host_path), "mount_point": spec.mount_point,
                      "mode": "rw" if spec.writable else "ro"})
        labels.append(f"--mount {spec.host_path}:{spec.mount_point}{':rw' if spec.writable else ''}")

    def named(message: str) -> str:
        return re.sub(r"mounts\[(\d+)\](?:\.(\w+))?",
                      lambda m: labels[int(m.group(1))] + (f" {m.group(2)}" if m.group(2) else ""), message)

    try:
        return Sandbox(config_from_data({"mounts": items}))
    except SandboxConfigError as exc:
        raise SandboxConfigError("; ".join(named(line) for line in str(exc).split("; "))) from None
