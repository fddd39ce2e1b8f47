"""Reading and writing one file through a Sandbox, the way every part of the runtime does it:
opened beneath the mount's directory descriptor, no symlink followed, checked for suffix and
size on the descriptor actually opened, written to a temporary name and renamed into place,
never into a protected directory (the PromptScript run logs), whatever path led there."""

from __future__ import annotations

import errno
import os
import secrets
import stat as statmod
from pathlib import Path

from runtime.errors import FileTooLargeError, SandboxError, ScriptError
from runtime.fs import paths, safeio
from runtime.fs.mounts import Location
from runtime.fs.paths import absolute, refuse_directory_syntax
from runtime.fs.sandbox import Sandbox
from runtime.terminal import printable

MAX_READ_BYTES = 32 << 20  # a hard cap beside each mount's max_file_bytes
MAX_PROTECTED_DEPTH = 256  # directories walked up from a write's parent (deeper: refused)


def shown_path(path) -> str:
    """A path as a message shows it: canonical and printable, or quoted when it cannot be split."""
    try:
        return printable(absolute(paths.split(path)))
    except (SandboxError, ScriptError):
        return printable(repr(path))


def os_error(vpath: str, exc: OSError) -> ScriptError:
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return ScriptError(f"no such file: {vpath}")
    if isinstance(exc, IsADirectoryError) or exc.errno == errno.EISDIR:
        return ScriptError(f"{vpath} is a directory, not a file")
    if isinstance(exc, FileExistsError):
        return ScriptError(f"{vpath} already exists")
    if exc.errno == errno.ENOTEMPTY:
        return ScriptError(f"{vpath} is a non-empty directory")
    if exc.errno == errno.ENOSPC:
        return ScriptError(f"no space left to write {vpath}")
    return ScriptError(f"cannot access {vpath}: {exc.strerror or 'error'}")


def regular(fd: int, shown: str, prefix: str = "") -> os.stat_result:
    """fstat of an opened file that must be a regular file: a directory or a FIFO is refused
    (a FIFO could block the broker)."""
    st = os.fstat(fd)
    if statmod.S_ISDIR(st.st_mode):
        raise ScriptError(f"{prefix}{shown} is a directory, not a file")
    if not statmod.S_ISREG(st.st_mode):
        raise ScriptError(f"{prefix}{shown} is not a regular file")
    return st


def read_upto(fd: int, size_hint: int, limit: int | None) -> tuple[bytes, int]:
    """At most ``limit`` bytes of an opened regular file (None: all of it), and how many bytes
    were seen (more than ``limit`` when the file holds more). One read when the file is as
    large as fstat said; a file that grew is read on in 1 MiB chunks; EAGAIN ends the read.
    OSError is the caller's to word."""
    chunks: list[bytes] = []
    seen = 0
    want = (size_hint if limit is None else min(size_hint, limit)) + 1
    try:
        while True:
            chunk = os.read(fd, want)
            if not chunk:
                break
            chunks.append(chunk)
            seen += len(chunk)
            if limit is not None and seen > limit:
                return b"".join(chunks)[:limit], seen
            if seen == size_hint < want:  # all fstat said, and no byte more: no read to see the end
                break
            want = 1 << 20
    except BlockingIOError:
        pass
    return b"".join(chunks), seen


class SandboxFiles:
    def __init__(self, sandbox: Sandbox, protected: frozenset[tuple[int, int]] = frozenset()) -> None:
        self.sandbox = sandbox
        # (st_dev, st_ino) of directories nothing may be written into, at any depth (the
        # PromptScript run logs): checked on the directory actually opened, not on a spelling.
        self.protected = protected

    def read_bytes(self, path: str) -> tuple[bytes, Location]:
        sb = self.sandbox
        refuse_directory_syntax(path)
        try:
            fd, loc = sb.open_checked(path, os.O_RDONLY | safeio.O_NONBLOCK, op="read")
        except OSError as exc:
            raise os_error(shown_path(path), exc) from None
        shown = absolute(loc.requested)
        try:
            st = regular(fd, shown)
            mount = loc.mount.mount
            sb.check_suffix(Path(loc.parts[-1]), mount, virtual_path=shown)
            sb.check_size(Path(), mount, virtual_path=shown, size=st.st_size)
            limit = min(mount.max_file_bytes if mount.max_file_bytes is not None else MAX_READ_BYTES, MAX_READ_BYTES)
            if st.st_size > limit:
                raise FileTooLargeError(f"{shown!r} is {st.st_size} bytes, over the limit of {limit} bytes per read")
            data, seen = read_upto(fd, st.st_size, limit)
            if seen > limit:
                raise FileTooLargeError(f"{shown!r} grew over the limit of {limit} bytes while being read")
            return data, loc
        except OSError as exc:
            raise os_error(shown, exc) from None
        finally:
            os.close(fd)

    def open_parent(self, path: str, *, create: bool) -> tuple[int, str, Location]:
        """(O_PATH fd of the parent directory, last component, location) for a write-side op."""
        sb = self.sandbox
        refuse_directory_syntax(path)
        for _ in range(3):
            loc = sb.locate(path, op="write", follow_last=False)
            shown = absolute(loc.requested)
            if not loc.rel:
                raise ScriptError(f"{shown} is a mount point; it cannot be written, moved or deleted")
            try:
                pfd = safeio.open_parent(sb.mount_fd(loc.mount), loc.rel[:-1], create=create)
            except safeio.Raced:
                continue
            except OSError as exc:
                if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
                    raise ScriptError(f"no such directory: {absolute(loc.requested[:-1])}") from None
                raise os_error(shown, exc) from None
            return pfd, loc.rel[-1], loc
        raise ScriptError(f"{shown_path(path)} changed while it was being opened; try again")

    def check_new_file(self, loc: Location, size: int) -> None:
        shown = absolute(loc.requested)
        mount = loc.mount.mount
        self.sandbox.check_suffix(Path(loc.parts[-1]), mount, virtual_path=shown)
        self.sandbox.check_size(Path(), mount, virtual_path=shown, size=size, writing=True)

    def check_protected(self, pfd: int, loc: Location) -> None:
        """Refuse a write into a protected directory or below it, by the identity of the
        directory opened (its ancestors up to the mount's directory), whatever path led there."""
        if not self.protected:
            return
        root = os.fstat(self.sandbox.mount_fd(loc.mount))
        fd = os.dup(pfd)
        try:
            for _ in range(MAX_PROTECTED_DEPTH):
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) in self.protected:
                    break
                if (st.st_dev, st.st_ino) == (root.st_dev, root.st_ino):
                    return
                parent = os.open("..", safeio.O_PATH | safeio.O_DIRECTORY | safeio.O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = parent
        finally:
            os.close(fd)
        raise SandboxError(f"{absolute(loc.requested)} is in a directory that holds the run logs; it is not writable")

    def write_bytes(self, path: str, data: bytes, *, exclusive: bool = False) -> tuple[Location, bool]:
        """Write `data` to `path` through its parent's descriptor; (location, whether a file was
        there). `exclusive`: refuse when the name exists, decided by the kernel (link(2) fails
        with EEXIST), so nothing outside the parent is ever looked at."""
        pfd, name, loc = self.open_parent(path, create=True)
        shown = absolute(loc.requested)
        try:
            self.check_protected(pfd, loc)
            self.check_new_file(loc, len(data))
            try:
                os.stat(name, dir_fd=pfd, follow_symlinks=False)
                existed = True
            except FileNotFoundError:
                existed = False
            except OSError as exc:
                raise os_error(shown, exc) from None
            if existed and exclusive:
                raise ScriptError(f"{shown} already exists")
            tmp = f".{name[:100]}.{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | safeio.O_NOFOLLOW | safeio.O_CLOEXEC,
                             0o666, dir_fd=pfd)
            except OSError as exc:
                raise os_error(shown, exc) from None
            try:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                finally:
                    os.close(fd)
                if exclusive:
                    os.link(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd, follow_symlinks=False)
                    os.unlink(tmp, dir_fd=pfd)
                else:
                    os.replace(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
            except OSError as exc:
                try:
                    os.unlink(tmp, dir_fd=pfd)
                except OSError:
                    pass
                raise os_error(shown, exc) from None
            return loc, existed
        finally:
            os.close(pfd)
