"""Structured listings (seed: localfiles-v2): FileEntry, DirectoryEntry, SymbolicLinkEntry, OtherEntry.

Each entry has `name`, the virtual `path`, `size` and `lastModified` (epoch milliseconds); a
SymbolicLinkEntry also has `target`: the virtual path it names when that stays inside the
sandbox, else "(outside the sandbox)" (where it really points is never revealed). A symlink's
size is the length in bytes of that target as an absolute virtual path (or of the marker), not
of the host text it holds, which could tell how long an outside path or the mount's host
directory is. `to_json()` adds the
"@type" field, as in the seed:

    {"@type": "FileEntry", "name": "a.md", "path": "/docs/a.md", "size": 56, "lastModified": 1762473883050}

`list_directory(path)` returns a directory's entries sorted by name; `find_files(path,
recursive, glob)` the entries under it whose path relative to it matches the glob (see
runtime/services/files.py for the glob rules), sorted by path. Both skip files the mount's suffixes
refuse, ask before covering a read_approval mount, and list virtual directories (see
runtime/fs/vfs.py). Paths are absolute virtual paths ("/docs/a.md"); FilesDSL shows them
relative to "/" ("docs/a.md") with the same fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from runtime.fs.entries import OUTSIDE, WalkEntry
from runtime.plugins_off import PluginsOff

_plugins = PluginsOff()  # our models need no pydantic plugin (runtime/plugins_off.py)


class FileSystemEntry(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)

    name: str
    path: str
    size: int
    last_modified: int = Field(alias="lastModified")

    @property
    def type_name(self) -> str:
        return type(self).__name__

    def to_json(self) -> dict:
        return {"@type": type(self).__name__, **self.model_dump(by_alias=True)}


class FileEntry(FileSystemEntry):
    """A regular file."""


class DirectoryEntry(FileSystemEntry):
    """A directory (or a mount point)."""


class SymbolicLinkEntry(FileSystemEntry):
    """A symbolic link; `target` is virtual, or "(outside the sandbox)"."""

    target: str


class OtherEntry(FileSystemEntry):
    """A socket, FIFO, device..."""


_plugins.restore()


ENTRY_CLASSES = {"file": FileEntry, "directory": DirectoryEntry, "symlink": SymbolicLinkEntry, "other": OtherEntry}


def _shown(vpath: str, style: Literal["absolute", "relative"]) -> str:
    if style == "relative":
        return vpath
    return "/" if vpath == "." else "/" + vpath


def entry_of(e: WalkEntry, style: Literal["absolute", "relative"] = "absolute") -> FileSystemEntry:
    """The structured entry of a walk entry; `style` chooses '/docs/a.md' or 'docs/a.md'."""
    fields = {
        "name": e.name,
        "path": _shown(e.vpath, style),
        "size": e.lst.st_size,
        "lastModified": int(e.lst.st_mtime_ns // 1_000_000),
    }
    if e.kind == "symlink":
        target = e.link_target or OUTSIDE
        fields["target"] = target if target == OUTSIDE else _shown(target, style)
        fields["size"] = len((target if target == OUTSIDE else _shown(target, "absolute")).encode("utf-8"))
    return ENTRY_CLASSES[e.kind](**fields)
