"""FileSystemToolset (seed: filesystem-sandbox-api): file operations behind the Sandbox policy.

    toolset = FileSystemToolset(sandbox, approve=lambda description: True)
    toolset.write("/out/a.md", "# hi")        # "Wrote 4 chars to /out/a.md"
    toolset.read("/out/a.md").content          # ReadResult

Every operation resolves its paths with the Sandbox and opens files beneath the mount's
directory descriptor with no symlink followed (runtime/fs/safeio.py). Reads follow in-mount
symlinks (the policy is checked on the link and on its target); write, edit, delete, move and
copy's destination act on the last component itself: a symlink there is replaced, removed or
renamed, never written through. Writes go to a temporary file in the same directory that is
then renamed over the name (readers never see half a file).

Approvals follow the seed's table (`needs_approval`); an operation that needs approval asks
`approve(description) -> bool` with the seed's human-readable description ("Write 150 chars
to /output/file.txt"); with no approver it is refused with ApprovalDeniedError. An approval
is remembered for the toolset's lifetime for that exact call (tool and every argument,
content included): approving "Write 7 chars to /out/run.sh" once never lets a different
7 chars through. Characters that could disguise a path in a prompt (bidi controls,
zero-width and other invisible ones) are shown escaped ("\u202e").

Decisions: move and copy refuse an existing destination (delete it first, or write);
delete and move act on files and symlinks, not directories; a move across filesystems copies
then deletes a regular file; decoding is UTF-8 (invalid bytes replaced on read, refused on edit);
read gives a PDF's text (its pages joined by a blank line, as FilesDSL reads it; `close()` ends
the extractor) and refuses a binary file, as FilesDSL does.

The broker serves the toolset as the ops fs.read, fs.write, fs.edit, fs.delete, fs.move,
fs.copy, fs.list_files, fs.list_directory and fs.find_files (`toolset_handlers(toolset)`);
FilesDSL runs never get them.
"""

from __future__ import annotations

import errno
import os
import stat as statmod
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel

from runtime.errors import (
    EditError,
    SandboxError,
    ScriptError,
)
from runtime.fs import paths
from runtime.fs.approvals import ApprovalResult, Approvals  # noqa: F401  (ApprovalResult: the seed's name here)
from runtime.fs.config import Mount, SandboxConfig
from runtime.fs.fileio import SandboxFiles, os_error, shown_path
from runtime.fs.mounts import Location
from runtime.fs.paths import absolute
from runtime.fs.sandbox import Sandbox
from runtime.fs.vfs import VirtualFS
from runtime.plugins_off import PluginsOff
from runtime.services.documents import is_pdf_name, parse_pdf, text_of
from runtime.services.pdf import PdfExtractor

_plugins = PluginsOff()  # our models need no pydantic plugin (runtime/plugins_off.py)


class ReadResult(BaseModel):
    content: str
    truncated: bool
    total_chars: int
    offset: int
    chars_read: int


_plugins.restore()


# tool name (seed) -> method name
TOOLS = {
    "read_file": "read",
    "write_file": "write",
    "edit_file": "edit",
    "delete_file": "delete",
    "move_file": "move",
    "copy_file": "copy",
    "list_files": "list_files",
}


class FileSystemToolset:
    """File I/O tools over a Sandbox (seed: FileSystemToolset + ApprovableFileSystemToolset)."""

    def __init__(
        self,
        sandbox: Sandbox,
        id: str | None = None,
        max_retries: int = 1,
        *,
        approve: Callable[[str], bool] | None = None,
        protected: frozenset[tuple[int, int]] = frozenset(),
        approvals: Approvals | None = None,
    ) -> None:
        if not isinstance(sandbox, Sandbox):
            raise TypeError("FileSystemToolset needs a Sandbox")
        self._sandbox = sandbox
        self.files = SandboxFiles(sandbox, protected)
        self.id = id
        self.max_retries = max_retries
        # what the approver said yes to, by tool and arguments (shared with the run's other parts)
        self.approvals = approvals if approvals is not None else Approvals(approve)
        # Listings walk through a VirtualFS; the toolset has already asked (_gate) by then.
        self._vfs = VirtualFS(sandbox, approve=lambda description: True)
        self._extractor = PdfExtractor()  # PDFs' text; its process starts on the first PDF read

    @property
    def approve(self) -> Callable[[str], bool] | None:
        return self.approvals.approve

    @classmethod
    def create_default(cls, root: str | Path, mode: str = "rw", id: str | None = None, *,
                       approve: Callable[[str], bool] | None = None) -> "FileSystemToolset":
        """A toolset with one mount, `root` at "/data" (no write approval: nobody to ask)."""
        config = SandboxConfig(mounts=[Mount(host_path=Path(root).resolve(), mount_point="/data", mode=mode,
                                             write_approval=False)])
        return cls(Sandbox(config), id=id, approve=approve)

    @property
    def sandbox(self) -> Sandbox:
        return self._sandbox

    # ------------------------------------------------------------------ approvals

    def get_approval_description(self, name: str, tool_args: dict[str, Any], ctx: Any = None) -> str:
        a = tool_args
        if name == "read_file":
            return f"Read from {shown_path(a.get('path'))}"
        if name == "write_file":
            return f"Write {len(a.get('content') or '')} chars to {shown_path(a.get('path'))}"
        if name == "edit_file":
            return (f"Edit {shown_path(a.get('path'))}: replace {len(a.get('old_text') or '')} chars "
                    f"with {len(a.get('new_text') or '')} chars")
        if name == "delete_file":
            return f"Delete {shown_path(a.get('path'))}"
        if name == "move_file":
            return f"Move {shown_path(a.get('source'))} to {shown_path(a.get('destination'))}"
        if name == "copy_file":
            return f"Copy {shown_path(a.get('source'))} to {shown_path(a.get('destination'))}"
        if name == "list_files":
            return f"List files in {shown_path(a.get('path', '/'))}"
        return f"Run {name}"

    def _classify(self, name: str, a: dict[str, Any]) -> bool:
        """Does this call need approval? Raises the policy's refusal when it cannot be done.

        Approval is a property of the mount a path names and of the one it resolves to (the
        same: a link never leaves its mount), so a call classified here is classified for any
        later resolution of its paths; a path that cannot be resolved now is refused, never
        waved through (a component swapped back before the operation would otherwise slip by).
        Moving or copying a file reads it: the source needs read approval where reading would."""
        sb = self._sandbox

        def reading(path) -> bool:
            return sb.location_needs_approval(sb.locate(path, op="read"), "read")

        def writing(path) -> bool:
            return sb.location_needs_approval(sb.locate(path, op="write", follow_last=False), "write")

        try:
            if name == "read_file":
                return reading(a["path"])
            if name in ("write_file", "edit_file", "delete_file"):
                return writing(a["path"])
            if name == "move_file":  # the name itself moves (a link is moved, not followed)
                source = sb.locate(a["source"], op="write", follow_last=False)
                return (sb.location_needs_approval(source, "write") | sb.location_needs_approval(source, "read")
                        | writing(a["destination"]))
            if name == "copy_file":
                return reading(a["source"]) | writing(a["destination"])
            if name == "list_files":
                return self._vfs.listing_needs_approval(self._vfs.locate_dir(a.get("path", "/")), recursive=True)
        except KeyError as exc:
            raise ScriptError(f"{name}: missing argument {exc.args[0]!r}") from None
        raise ScriptError(f"unknown tool {name!r}")

    def needs_approval(self, name: str, tool_args: dict[str, Any], ctx: Any = None) -> ApprovalResult:
        """Per the seed's table: blocked (policy refuses), pre_approved or needs_approval."""
        try:
            need = self._classify(name, tool_args)
        except (SandboxError, ScriptError) as exc:
            return ApprovalResult.blocked(str(exc))
        return ApprovalResult.needs_approval() if need else ApprovalResult.pre_approved()

    def _gate(self, name: str, args: dict[str, Any]) -> None:
        if not self._classify(name, args):  # a refusal raises here: fail closed
            return
        self.approvals.ask(name, args, self.get_approval_description(name, args), self.without_approval(name))

    def without_approval(self, name: str) -> str:
        """What this kind of operation may do without asking, for refusal messages."""
        sb = self._sandbox

        def mount_of(root: str) -> Mount:
            return sb.mount_for(paths.split(root)).mount

        readable = [r for r in sb.readable_roots if not mount_of(r).read_approval]
        writable = [r for r in sb.writable_roots if not mount_of(r).write_approval]
        if name in ("read_file", "list_files"):
            return f"Readable without approval: {', '.join(readable) or 'nothing'}."
        if name in ("move_file", "copy_file"):
            return (f"Readable without approval: {', '.join(readable) or 'nothing'}; "
                    f"writable without approval: {', '.join(writable) or 'nothing'}.")
        return f"Writable without approval: {', '.join(writable) or 'nothing'}."

    # ------------------------------------------------------------------ the tools

    def read(self, path: str, max_chars: int = 20_000, offset: int = 0) -> ReadResult:
        """Read a text file (UTF-8, invalid bytes replaced) from `offset`, at most `max_chars`."""
        if max_chars < 0 or offset < 0:
            raise ScriptError("max_chars and offset must be 0 or more")
        self._gate("read_file", {"path": path})
        data, loc = self.files.read_bytes(path)
        text = self._text(absolute(loc.requested), data)
        chunk = text[offset: offset + max_chars]
        return ReadResult(content=chunk, truncated=offset + len(chunk) < len(text), total_chars=len(text),
                          offset=offset, chars_read=len(chunk))

    def _text(self, shown: str, data: bytes) -> str:
        """A file's text as FilesDSL reads it: a PDF's pages (extracted by the jailed
        extractor, started on the first PDF), a text file decoded; a binary file is refused."""
        if is_pdf_name(shown):
            return parse_pdf(shown, data, self._extractor).text
        return text_of(shown, data)

    def close(self) -> None:
        """End the PDF extractor, if a PDF was read."""
        self._extractor.close()

    def write(self, path: str, content: str) -> str:
        """Write a text file; parent directories are created. A symlink there is replaced."""
        loc, _existed = self.put(path, content)
        return f"Wrote {len(content)} chars to {absolute(loc.requested)}"

    def put(self, path: str, content: str, *, create_only: bool = False) -> tuple[Location, bool]:
        """write() for callers that need (location, whether a file was there); `create_only`
        refuses an existing file, decided beneath the parent's descriptor."""
        if not isinstance(content, str):
            raise ScriptError("content must be a string")
        self._gate("write_file", {"path": path, "content": content})
        return self.files.write_bytes(path, content.encode("utf-8", errors="surrogatepass"), exclusive=create_only)

    def edit(self, path: str, old_text: str, new_text: str) -> str:
        """Replace the one exact occurrence of old_text (else EditError)."""
        self._sandbox.locate(path, op="write", follow_last=False)  # refuse read-only paths first
        self._gate("edit_file", {"path": path, "old_text": old_text, "new_text": new_text})
        data, loc = self.files.read_bytes(path)
        shown = absolute(loc.requested)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise EditError(f"{shown} is not UTF-8 text; it cannot be edited") from None
        if not old_text:
            raise EditError("old_text must not be empty")
        count = text.count(old_text)
        if count == 0:
            raise EditError(f"old_text was not found in {shown}; read the file and copy the exact text")
        if count > 1:
            raise EditError(f"old_text appears {count} times in {shown}; include more context so it is unique")
        self.files.write_bytes(path, text.replace(old_text, new_text, 1).encode("utf-8"))
        return f"Edited {shown}: replaced {len(old_text)} chars with {len(new_text)} chars"

    def delete(self, path: str) -> str:
        """Delete a file (a symlink itself, never its target). Directories are refused."""
        self._gate("delete_file", {"path": path})
        pfd, name, loc = self.files.open_parent(path, create=False)
        shown = absolute(loc.requested)
        try:
            st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
            if statmod.S_ISDIR(st.st_mode):
                raise ScriptError(f"{shown} is a directory; delete removes files only")
            os.unlink(name, dir_fd=pfd)
        except OSError as exc:
            raise os_error(shown, exc) from None
        finally:
            os.close(pfd)
        return f"Deleted {shown}"

    def move(self, source: str, destination: str) -> str:
        """Move or rename a file or symlink; the destination's parents are created."""
        self._gate("move_file", {"source": source, "destination": destination})
        sfd, sname, sloc = self.files.open_parent(source, create=False)
        try:
            sshown = absolute(sloc.requested)
            try:
                st = os.stat(sname, dir_fd=sfd, follow_symlinks=False)
            except OSError as exc:
                raise os_error(sshown, exc) from None
            if statmod.S_ISDIR(st.st_mode):
                raise ScriptError(f"{sshown} is a directory; move handles files only")
            dfd, dname, dloc = self.files.open_parent(destination, create=True)
            dshown = absolute(dloc.requested)
            try:
                self.files.check_new_file(dloc, st.st_size if statmod.S_ISREG(st.st_mode) else 0)
                try:
                    os.stat(dname, dir_fd=dfd, follow_symlinks=False)
                    raise ScriptError(f"{dshown} already exists; delete it first or choose another name")
                except FileNotFoundError:
                    pass
                try:
                    os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
                except OSError as exc:
                    if exc.errno != errno.EXDEV or not statmod.S_ISREG(st.st_mode):
                        raise os_error(dshown, exc) from None
                    data, _ = self.files.read_bytes(source)
                    self.files.write_bytes(destination, data, exclusive=True)
                    os.unlink(sname, dir_fd=sfd)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)
        return f"Moved {sshown} to {dshown}"

    def copy(self, source: str, destination: str) -> str:
        """Copy a file: the source may be read-only, the destination must be writable."""
        self._gate("copy_file", {"source": source, "destination": destination})
        self._sandbox.locate(destination, op="write", follow_last=False)
        data, sloc = self.files.read_bytes(source)
        pfd, dname, dloc = self.files.open_parent(destination, create=True)
        try:
            try:
                os.stat(dname, dir_fd=pfd, follow_symlinks=False)
                raise ScriptError(f"{absolute(dloc.requested)} already exists; delete it first or choose another name")
            except FileNotFoundError:
                pass
        finally:
            os.close(pfd)
        self.files.write_bytes(destination, data, exclusive=True)
        return f"Copied {absolute(sloc.requested)} to {absolute(dloc.requested)}"

    def list_files(self, path: str = "/", pattern: str = "**/*") -> list[str]:
        """Virtual paths of the files under `path` whose path relative to it matches `pattern`."""
        from runtime.services.files import FilesService
        from runtime.services.globs import compile_glob

        self._gate("list_files", {"path": path, "pattern": pattern})
        rx = compile_glob(pattern)
        svc = FilesService(self._vfs)
        res, _ = self._vfs.resolve_dir(path)
        out = []
        for e, _st in svc.regular_files(res, True):
            if rx.match(e.rel):
                out.append("/" + e.vpath)
                if len(out) > svc.max_entries:
                    raise svc._too_many("list_files()", res.vpath)
        return sorted(out)

    def list_directory(self, path: str = "/") -> list[dict]:
        from runtime.services.files import list_directory

        self._gate("list_files", {"path": path})
        return [e.to_json() for e in list_directory(self._vfs, path)]

    def find_files(self, path: str = "/", recursive: bool = True, glob: str = "**/*") -> list[dict]:
        from runtime.services.files import find_files

        self._gate("list_files", {"path": path})
        return [e.to_json() for e in find_files(self._vfs, path, recursive, glob)]

    def call(self, name: str, args: dict[str, Any]):
        """Run a tool by its seed name ("write_file"...) with its arguments."""
        method = TOOLS.get(name)
        if method is None:
            raise ScriptError(f"unknown tool {name!r}; tools: {', '.join(TOOLS)}")
        result = getattr(self, method)(**args)
        return result.model_dump() if isinstance(result, ReadResult) else result


def toolset_handlers(toolset: FileSystemToolset) -> dict[str, Callable[..., object]]:
    """The broker's handler table for the fs.* ops of wire.protocol.OPS."""
    return {
        "fs.read": lambda path, max_chars, offset: toolset.read(path, max_chars, offset).model_dump(),
        "fs.write": toolset.write,
        "fs.edit": toolset.edit,
        "fs.delete": toolset.delete,
        "fs.move": toolset.move,
        "fs.copy": toolset.copy,
        "fs.list_files": toolset.list_files,
        "fs.list_directory": toolset.list_directory,
        "fs.find_files": toolset.find_files,
    }


