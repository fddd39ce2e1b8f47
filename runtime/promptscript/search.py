"""PromptScript's SEARCH: a literal query over the files a scope may read, line by line.

The walk goes through the one VirtualFS (runtime/fs/vfs.py) of the scope's Sandbox: each
directory opened beneath its mount's descriptor, no symlink followed, the mounts' suffixes
and read approvals honoured; each file is read through the same reader. Files over the
policy's maxFileBytes or a mount's size limit, binary files (documents.is_binary) and
files that changed since they were listed are skipped; `.git` and `.ps-runs` are not entered.
"""

from __future__ import annotations

import time

from runtime.errors import ApprovalDeniedError, LimitError, ScriptError
from runtime.fs.entries import WalkEntry
from runtime.fs.vfs import VirtualFS
from runtime.promptscript.arguments import ActionArgError
from runtime.services.documents import is_binary
from runtime.services.globs import glob_matcher
from wire import protocol

DEFAULT_SEARCH_RESULTS = 200
MAX_SEARCH_RESULTS = protocol.PS_MAX_SEARCH_RESULTS
MAX_SEARCH_FILES = 100_000
MAX_LINE_CHARS = 300
SKIPPED_DIRS = frozenset({".git", ".ps-runs"})


def search(vfs: VirtualFS, args: dict, policy: dict, deadline) -> list[dict]:
    """SEARCH: ``[{path}]`` of the files the scope may read (empty query), or ``[{path, line,
    text}]`` of the lines holding the query, sorted by path then line; ``deadline`` is the op's
    OpDeadline, checked per directory entry and per file."""
    a = args  # checked by runtime/promptscript/arguments.py
    query = a.get("query", "")
    globs = a.get("globs", [])
    limit = a.get("maxResults", DEFAULT_SEARCH_RESULTS)
    if not 1 <= limit <= MAX_SEARCH_RESULTS:
        raise ActionArgError(f"SEARCH: maxResults must be an integer from 1 to {MAX_SEARCH_RESULTS}")
    if "\n" in query:
        raise ActionArgError("SEARCH: the query is one line of text (it is matched line by line)")
    for g in globs:
        if not g or "\x00" in g or len(g) > 1000:
            raise ActionArgError("SEARCH: each glob must be a non-empty pattern such as 'src/**/*.py'")
    try:
        patterns = [glob_matcher(g) for g in globs]
    except ScriptError as exc:
        raise ActionArgError(f"SEARCH: {exc}") from None
    started = time.monotonic()

    def deadline_check():
        left = deadline.left()
        if left is not None and left <= 0:
            raise deadline.expired(f"SEARCH was stopped after {int((time.monotonic() - started) * 1000)} ms")

    files = _files(vfs, patterns, deadline_check)
    if not query:
        return [{"path": e.vpath} for e in files[:limit]]
    needle = query.encode("utf-8", "surrogatepass")
    results = []
    cap = policy["maxFileBytes"]
    for e in files:
        deadline_check()
        rel = e.vpath
        try:
            data = vfs.read_entry(e, cap)
        except ApprovalDeniedError:  # a question the approver said no to: not a file to skip
            raise
        except (OverflowError, ScriptError):
            continue  # over maxFileBytes or the mount's limit, or changed since it was listed
        if is_binary(data) or needle not in data:
            continue
        text = data.decode("utf-8", "replace")
        for number, line in enumerate(text.splitlines(), 1):
            if query in line:
                shown = line.strip()
                if len(shown) > MAX_LINE_CHARS:
                    shown = shown[:MAX_LINE_CHARS - 3] + "..."
                results.append({"path": rel, "line": number, "text": shown})
                if len(results) >= limit:
                    return results
    return results


def _files(vfs: VirtualFS, patterns: list, deadline_check) -> list[WalkEntry]:
    """The regular files the scope may read, sorted by path. The walk opens each directory
    beneath its mount's descriptor and follows no symlink (runtime/fs/vfs.py): a directory
    swapped for a symlink mid-walk is not entered. Covering a read_approval mount asks first."""
    top, _ = vfs.resolve_dir("/")
    vfs.check_listable(top, True)
    out: list[WalkEntry] = []
    for e in vfs.walk(top, True, check=deadline_check, prune=lambda e: e.name in SKIPPED_DIRS):
        if e.kind != "file":
            continue  # directories, symlinks and special files are not searched
        if patterns and not any(match(e.vpath) for match in patterns):
            continue
        out.append(e)
        if len(out) > MAX_SEARCH_FILES:
            raise LimitError(f"SEARCH: more than {MAX_SEARCH_FILES} files to search; narrow it with globs")
    return sorted(out, key=lambda e: e.vpath)
