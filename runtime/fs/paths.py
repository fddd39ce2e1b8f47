"""The one virtual path of the runtime: what a script names, split once into components.

Virtual paths. A path is a "/"-separated virtual path; a relative path is relative to "/".
"" and "." components are dropped and ".." pops one; a ".." at "/" is refused (never
clamped). A backslash, "~", "C:" are ordinary characters of a name (this is POSIX: nothing is
expanded or translated). NUL, control characters (U+0000-U+001F, U+007F-U+009F), lone
surrogates and paths over 4096 characters are refused with InvalidPathError. Unicode is not
normalized: "．．" (fullwidth) is an ordinary name, not "..".

A path is shown as ``absolute(parts)`` ("/data/a.txt", "/" for the root) or, where the
language speaks relative paths (FilesDSL records, PromptScript's project paths), as
``relative(parts)`` ("data/a.txt", "." for the root). ``rooted(text)`` turns a project path
("src/a.py", "/src/a.py", ".") into the virtual path the Sandbox resolves. No host path is
ever built here: ``runtime.fs.sandbox`` maps components to a mount.
"""

from __future__ import annotations

import re

from runtime.errors import InvalidPathError, PathNotInSandboxError, ScriptError

__all__ = ["MAX_PATH_CHARS", "split", "absolute", "relative", "rooted", "suffix", "refuse_directory_syntax"]

MAX_PATH_CHARS = 4096
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]|[\ud800-\udfff]")


def split(path: str) -> tuple[str, ...]:
    """Lexical canonical components of a virtual path (see the module docstring)."""
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


def absolute(parts) -> str:
    """'/data/a.txt', '/' for the root."""
    return "/" + "/".join(parts)


def relative(parts) -> str:
    """'data/a.txt', '.' for the root."""
    return "/".join(parts) if parts else "."


def rooted(text: str) -> str:
    """A project path ('src/a.py', '/src/a.py', '.') as a virtual path below '/'."""
    return "/" + text.lstrip("/")


def suffix(name: str) -> str:
    """A file name's suffix as written ('.PDF' of 'a.PDF'; '' for 'README', '.bashrc', 'a.')."""
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


def refuse_directory_syntax(path: str) -> None:
    """A file operation's path cannot end with '/' (it names a directory: POSIX ENOTDIR)."""
    if isinstance(path, str) and path.endswith("/") and path.strip("/"):
        shown = path if len(path) <= 200 else path[:100] + "..." + path[-100:]
        raise ScriptError(f"{shown!r} ends with '/', so it names a directory; a file path cannot end with '/'")
