"""``memory_key``: a compact memory an agent keeps across calls and runs, in
``<project>/.ps-runs/memory/<key>.json`` (scripts cannot write under .ps-runs):

  {"key": str, "objective": str, "summary": str,
   "filesTouched": {path: sha256 of its content, first 16 hex digits | null},
   "recentDiffSummary": [str, ...], "openIssues": [str, ...], "updated": unix time}

``objective`` is the prompt of the latest run_agent naming the key; ``summary`` is what
summarize() last wrote; ``filesTouched`` and ``recentDiffSummary`` are written by the runtime
after each WRITE_FILE/PATCH_FILE (never by the model); ``openIssues`` the failed actions
of the latest agent steps. Kept under MAX_MEMORY_BYTES (~2k tokens): the oldest diff lines, then
files, go first. An update locks the directory's ``.lock`` (flock), re-reads, changes and
replaces the file atomically (a new file, then rename): concurrent runs never tear it."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import stat
import time
from pathlib import Path

from runtime.promptscript.llm.config import LLMError
from runtime.promptscript.runlog import RUN_LOG_DIR

MEMORY_DIR = "memory"
KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
MAX_MEMORY_BYTES = 8 << 10
MAX_DIFF_LINES = 12
MAX_ISSUES = 8
MAX_LINE = 200
MAX_OBJECTIVE = 600
FIELDS = ("objective", "summary", "filesTouched", "recentDiffSummary", "openIssues")


def empty(key: str) -> dict:
    return {"key": key, "objective": "", "summary": "", "filesTouched": {}, "recentDiffSummary": [], "openIssues": []}


def bounded(memory: dict) -> dict:
    memory["objective"] = memory["objective"][:MAX_OBJECTIVE]
    memory["recentDiffSummary"] = [line[:MAX_LINE] for line in memory["recentDiffSummary"][-MAX_DIFF_LINES:]]
    memory["openIssues"] = [line[:MAX_LINE] for line in memory["openIssues"][-MAX_ISSUES:]]
    while len(json.dumps(memory, ensure_ascii=False).encode()) > MAX_MEMORY_BYTES:
        if memory["recentDiffSummary"]:
            memory["recentDiffSummary"].pop(0)
        elif memory["filesTouched"]:
            memory["filesTouched"].pop(next(iter(memory["filesTouched"])))
        elif memory["openIssues"]:
            memory["openIssues"].pop(0)
        else:
            memory["summary"] = memory["summary"][: len(memory["summary"]) // 2]
    return memory


class Memories:
    """The run's memories; ``pending`` holds the file changes since the last call that named a key."""

    def __init__(self, session) -> None:
        project = session.options.project
        if project is None:
            raise LLMError("memory_key needs a project to keep the memory in (run with --project DIR)")
        self.session = session
        self.dir = Path(project) / RUN_LOG_DIR / MEMORY_DIR
        self.active: str | None = None

    def _path(self, key) -> Path:
        if type(key) is not str or not KEY.fullmatch(key):
            raise LLMError(f"memory_key must be 1 to 100 letters, digits, '.', '_' or '-' (first a letter or digit), "
                           f"not {json.dumps(key)[:60]}")
        base = self.dir.parent
        if base.is_symlink() or self.dir.is_symlink():
            raise LLMError(f"{RUN_LOG_DIR}/{MEMORY_DIR} must be a real directory, not a symbolic link")
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LLMError(f"the memory {key} cannot be kept in {RUN_LOG_DIR}/{MEMORY_DIR} "
                           f"({exc.strerror or type(exc).__name__})") from None
        return self.dir / f"{key}.json"

    def _read(self, path: Path, key: str) -> dict:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return empty(key)
        except OSError:
            raise LLMError(f"the memory {key} cannot be read ({RUN_LOG_DIR}/{MEMORY_DIR}/{key}.json)") from None
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise LLMError(f"the memory {key} is not a regular file")
            data = f.read(MAX_MEMORY_BYTES * 4)
        try:
            stored = json.loads(data)
        except (ValueError, RecursionError):
            return empty(key)  # a damaged memory starts over; the next update replaces it whole
        memory = empty(key)
        for field, value in (stored.items() if type(stored) is dict else ()):
            if field in FIELDS and type(value) is type(memory[field]):
                memory[field] = _items(value)
        return memory

    def update(self, key: str, change) -> dict:
        """Lock, re-read, change, bound and replace the memory ``key``; returns it."""
        try:
            return self._update(key, change)
        except OSError as exc:
            raise LLMError(f"the memory {key} cannot be written in {RUN_LOG_DIR}/{MEMORY_DIR} "
                           f"({exc.strerror or type(exc).__name__})") from None

    def _update(self, key: str, change) -> dict:
        path = self._path(key)
        lock = os.open(self.dir / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            memory = self._read(path, key)
            change(memory)
            memory = bounded(memory)
            memory["updated"] = int(time.time())
            tmp = self.dir / f".{key}.{os.getpid()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(memory, f, ensure_ascii=False, indent=1)
            os.replace(tmp, path)
            return memory
        finally:
            os.close(lock)

    def load(self, key, objective: str | None) -> dict:
        """The memory to show the model (objective set by run_agent's first step); the file
        changes since the last call are written into the active memory first."""
        self._path(key)
        self.active = key

        def change(memory):
            if objective:
                memory["objective"] = objective
        return self.update(key, change)

    def set_summary(self, key: str, summary: str) -> str:
        """Write the summary; returns it as kept (schema.MAX_SUMMARY_BYTES makes that all of it)."""
        return self.update(key, lambda memory: memory.__setitem__("summary", summary))["summary"]

    def note(self, action: str, values: dict, ok: bool, error: str | None = None) -> None:
        """An action of the script or of an agent, into the active memory (if any)."""
        if self.active is None:
            return
        path = values.get("path")
        if ok and action in ("WRITE_FILE", "PATCH_FILE") and type(path) is str:
            digest = self._hash(path)
            line = _diff_line(action, values)

            def change(memory):
                memory["filesTouched"].pop(path, None)
                memory["filesTouched"][path] = digest
                memory["recentDiffSummary"].append(line)
            self.update(self.active, change)
        elif not ok and error:
            self.update(self.active, lambda memory: memory["openIssues"].append(f"{action}: {error}"))
        elif ok and action == "REPORT" and values.get("done") is True:
            self.update(self.active, lambda memory: memory["openIssues"].clear())

    def _hash(self, path: str) -> str | None:
        s = self.session
        try:
            value, _ = s.dispatch("READ_FILE", {"path": path}, s.policies.current)
        except Exception:  # noqa: BLE001 - unreadable now: no hash, the change is still noted
            return None
        return hashlib.sha256(str(value).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _items(value):
    """A stored field with only the items of the types it holds (strings; file -> hash or null)."""
    if type(value) is list:
        return [item for item in value if type(item) is str]
    if type(value) is dict:
        return {k: v for k, v in value.items() if type(v) is str or v is None}
    return value


def _diff_line(action: str, values: dict) -> str:
    path = values["path"]
    if action == "WRITE_FILE":
        content = values.get("content", "")
        return f"wrote {path}: {content.count(chr(10)) + 1} lines, {len(content.encode('utf-8', 'surrogatepass'))} bytes"
    edits = values.get("edits")
    if isinstance(edits, list):
        return f"patched {path}: {len(edits)} edit(s)"
    patch = values.get("patch") or ""
    added = sum(1 for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in patch.splitlines() if line.startswith("-") and not line.startswith("---"))
    return f"patched {path}: +{added} -{removed} lines" if (added or removed) else f"patched {path}"
