"""Globs as anchored patterns over '/'-separated paths, run on RE2 (linear time whatever the
glob): ``*`` and ``?`` stay within one component, ``**/`` spans any number of them, ``[...]``
is a class that never matches '/'."""

from __future__ import annotations

import re

from runtime.errors import LimitError, ScriptError
from runtime.services.textsearch import Pattern, compile_trusted

MAX_GLOB_CHARS = 1_000


def glob_to_regex(glob: str) -> Pattern:
    """Translate a glob (see module docstring) to a pattern over '/'-paths, run on RE2:
    `.match(path)` is a full match."""
    out = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                i += 2
                if i < n and glob[i] == "/":
                    i += 1
                    out.append("(?:.*/)?")
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            while j < n and glob[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = glob[i + 1:j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                body = body.replace("\\", "\\\\")
                out.append("(?!/)[" + body + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return compile_trusted("".join(out) + r"\Z", re.DOTALL, what="glob", shown=glob)


def compile_glob(glob: str) -> Pattern:
    """A script's glob, checked, as an anchored regex (see glob_to_regex)."""
    if not isinstance(glob, str) or not glob:
        raise ScriptError("a glob must be a non-empty string such as '**/*.md'")
    if len(glob) > MAX_GLOB_CHARS:
        raise LimitError(f"glob is too long ({len(glob)} characters, at most {MAX_GLOB_CHARS})")
    if "\x00" in glob:
        raise ScriptError("a glob cannot contain a NUL character")
    return glob_to_regex(glob)


def glob_matcher(glob: str):
    """PromptScript's SEARCH globs: a glob without '/' matches a file's name at any depth ("*.py" matches "src/a.py", as in
    ripgrep and .gitignore); a glob with '/' matches the whole project-relative path, from the
    project root ("src/*.py", "**/test_*.py"; a leading '/' changes nothing: "/*.md")."""
    if "/" in glob:
        pattern = glob_to_regex(glob.lstrip("/"))
        return lambda rel: pattern.match(rel) is not None
    pattern = glob_to_regex(glob)
    return lambda rel: pattern.match(rel.rsplit("/", 1)[-1]) is not None
