"""PromptScript's SEARCH: a literal query over the files a scope may read, line by line.

The walk goes through the one VirtualFS (runtime/fs/vfs.py) of the scope's Sandbox: each
directory opened beneath its mount's descriptor, no symlink followed, the mounts' suffixes
and read approvals honoured; each file is read through the same reader. Files over the
policy's maxFileBytes or a mount's size limit, binary files (documents.is_binary) and
files that changed since they were listed are skipped and named; `.git` and `.ps-runs` are
not entered. The scan goes on past maxResults to count every match, so a cut answer says so:
`Found.info` is {total, truncated, skipped, skipped_count}, and `Found.notice()` the line the
run prints when the answer is cut or incomplete.
"""

from __future__ import annotations

import time

from runtime.errors import ApprovalDeniedError, LimitError, ScriptError
from runtime.fs.entries import WalkEntry
from runtime.fs.vfs import VirtualFS
from runtime.promptscript.arguments import ActionArgError
from runtime.services.documents import is_binary
from runtime.services.globs import glob_matcher
from runtime.services.searching import Skipped
from wire import protocol

DEFAULT_SEARCH_RESULTS = 200
MAX_SEARCH_RESULTS = protocol.PS_MAX_SEARCH_RESULTS
MAX_SEARCH_FILES = 100_000
MAX_LINE_CHARS = 300
SKIPPED_DIRS = frozenset({".git", ".ps-runs"})


class Found(list):
    """SEARCH's value (a plain array to the script) and what it left out."""

    def __init__(self, items: list, query: str, limit: int, total: int, skipped: Skipped) -> None:
        super().__init__(items)
        self.query, self.limit = query, limit
        self.info = {"total": total, "truncated": total > len(items), **skipped.reply()}

    def notice(self) -> str | None:
        """One line for the run's output when the answer is cut or incomplete, else None."""
        info, parts = self.info, []
        what = "files" if not self.query else "matching lines"
        if info["truncated"]:
            parts.append(f"showing {len(self)} of {info['total']} {what} (maxResults {self.limit}, "
                         f"at most {MAX_SEARCH_RESULTS}; or narrow the query or globs)")
        count = info["skipped_count"]
        if count:
            shown = "; ".join(f"{row['path']} ({row['reason']})" for row in info["skipped"][:3])
            parts.append(f"skipped {count} file{'s' if count != 1 else ''} it could not read: "
                         f"{shown}{'; ...' if count > 3 else ''}")
        if not parts:
            return None
        label = f"SEARCH {self.query[:60]!r}" if self.query else "SEARCH (list files)"
        return f"[ps] {label}: " + "; ".join(parts) + "\n"


def search(vfs: VirtualFS, args: dict, policy: dict, deadline) -> Found:
    """SEARCH: ``[{path}]`` of the files the scope may read (empty query), or ``[{path, line,
    text}]`` of the lines holding the query, sorted by path then line, at most maxResults of
    them (the Found says how many there were); ``deadline`` is the op's OpDeadline, checked
    per directory entry and per file."""
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
    skipped = Skipped()
    if not query:
        return Found([{"path": e.vpath} for e in files[:limit]], query, limit, len(files), skipped)
    needle = query.encode("utf-8", "surrogatepass")
    results = []
    total = 0
    cap = policy["maxFileBytes"]
    for e in files:
        deadline_check()
        try:
            data = vfs.read_entry(e, cap)
        except ApprovalDeniedError:  # a question the approver said no to: not a file to skip
            raise
        except OverflowError:
            skipped.add(e.vpath, f"larger than maxFileBytes {cap:,}")
            continue
        except ScriptError as exc:  # over the mount's limit, or changed since it was listed
            skipped.add(e.vpath, exc)
            continue
        if is_binary(data):
            skipped.add(e.vpath, "a binary file")
            continue
        if needle not in data:
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if query in line:
                total += 1
                if len(results) < limit:
                    results.append({"path": e.vpath, "line": number, "text": _shown(line)})
    return Found(results, query, limit, total, skipped)


def _shown(line: str) -> str:
    shown = line.strip()
    return shown if len(shown) <= MAX_LINE_CHARS else shown[:MAX_LINE_CHARS - 3] + "..."


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
