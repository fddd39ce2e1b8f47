"""PromptScript's run log: ``<project>/.ps-runs/<id>/events.jsonl``, one JSON object a line.

Made without following symbolic links: ``.ps-runs`` must be a real directory of the project
(a link there, even to a directory, is refused), the run's directory is new and the file is
created exclusively. Any failure to make it is a ``RunLogError`` naming the path and why.

Bounded, because a script decides what is logged: a short loop of actions with large arguments
once wrote 2 GB in under a minute.
- A string over MAX_LOGGED_CHARS is logged as {"chars": n, "sha256": first 16 hex digits};
  lists and objects keep their first MAX_LOGGED_ITEMS items (then {"more": n}), nested at most
  MAX_LOGGED_DEPTH deep; an event still over MAX_EVENT_BYTES keeps only its small fields and a
  digest of the rest.
- A refused action is logged compactly: its error cut to 500 characters, and its arguments with
  every string over 200 characters and every container past 20 items as a digest.
- The log holds at most `max_bytes` (--max-log-bytes, default 16 MiB). When the next event would
  pass it, one `log_truncated` event says so and the events after it are dropped, except the
  run's last ones (`error`, `end`), for which room is kept.
- Written buffered: events that change nothing (reads, searches, reports, block and scope
  events) wait in the buffer; an action with an effect (a write, a patch, a command, a question
  to the user), an LLM call, a budget, the start, the error and the end are flushed with what
  came before them, and so is anything once FLUSH_SECONDS have passed since the last flush.
- A write or flush that fails (a full disk) stops the run with a LimitError saying so, at the
  latest at the first event with an effect after it; the log is then closed and nothing more
  is written.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import stat as statmod
import time
from pathlib import Path

from runtime.errors import LimitError, RunSetupError
from runtime.jsonlines import json_line

RUN_LOG_DIR = ".ps-runs"
DEFAULT_MAX_LOG_BYTES = 16 << 20
MIN_LOG_BYTES = 16 << 10
MAX_LOGGED_CHARS = 1024
MAX_LOGGED_ITEMS = 100
MAX_LOGGED_DEPTH = 8
MAX_EVENT_BYTES = 64 << 10
FINAL_RESERVE = 8 << 10  # kept for the `error` and `end` events once the log is full
FINAL_EVENTS = frozenset({"error", "end"})
SMALL_FIELDS = ("event", "t_ms", "action", "ok", "line", "kind", "parallel")
# What may wait in the buffer (see the module docstring); every other event is flushed.
BUFFERED_EVENTS = frozenset({"retry", "timeout", "block_start", "block_end", "scope_enter", "scope_exit"})
BUFFERED_ACTIONS = frozenset({"READ_FILE", "SEARCH", "REPORT"})
FLUSH_SECONDS = 1.0


class RunLogError(RunSetupError):
    """The run log cannot be created: a problem of the command line or the project (exit 2),
    not of the script."""


def digest(value) -> dict:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    data = text.encode("utf-8", "surrogatepass")
    return {"chars" if isinstance(value, str) else "json_bytes": len(text if isinstance(value, str) else data),
            "sha256": hashlib.sha256(data).hexdigest()[:16]}


def compact(value, depth: int = 0, chars: int = MAX_LOGGED_CHARS, items: int = MAX_LOGGED_ITEMS):
    """`value` as the log records it: strings over `chars` and containers past
    MAX_LOGGED_DEPTH as digests, containers cut after `items` (see the module docstring)."""
    if isinstance(value, str):
        return value if len(value) <= chars else digest(value)
    if isinstance(value, (list, tuple, dict)) and depth >= MAX_LOGGED_DEPTH:
        return digest(value)
    if isinstance(value, (list, tuple)):
        kept = [compact(v, depth + 1, chars, items) for v in value[:items]]
        return kept + [{"more": len(value) - items}] if len(value) > items else kept
    if isinstance(value, dict):
        pairs = list(value.items())
        kept = {str(k)[:100]: compact(v, depth + 1, chars, items) for k, v in pairs[:items]}
        if len(pairs) > items:
            kept["..."] = {"more": len(pairs) - items}
        return kept
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return compact(str(value), depth, chars, items)


class RunLog:
    def __init__(self, project: Path, max_bytes: int = DEFAULT_MAX_LOG_BYTES) -> None:
        if max_bytes < MIN_LOG_BYTES:
            raise RunLogError(f"the run log needs at least {MIN_LOG_BYTES} bytes (--max-log-bytes {max_bytes})")
        self.started = time.monotonic()
        self.run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        self.max_bytes = max_bytes
        self.written = 0
        self.dropped = 0  # events not written once the log was full
        self.failed: str | None = None
        project = Path(os.path.abspath(project))
        fd, self.identity = self._create(project)
        self.dir = project / RUN_LOG_DIR / self.run_id
        self.path = self.dir / "events.jsonl"
        self.file = os.fdopen(fd, "a", encoding="utf-8")
        self.flushed_at = self.started
        self.closed = False

    def _create(self, project: Path) -> tuple[int, tuple[int, int]]:
        """(descriptor of the new events.jsonl, (st_dev, st_ino) of .ps-runs)."""
        logs = project / RUN_LOG_DIR
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
        fds: list[int] = []

        def fail(what: str, exc: OSError):
            reason = exc.strerror or str(exc)
            raise RunLogError(f"cannot create the run log in {logs}: {what} ({reason})") from None

        try:
            try:
                fds.append(os.open(project, flags))
            except OSError as exc:
                fail(f"the project directory {project} cannot be opened", exc)
            try:
                os.mkdir(RUN_LOG_DIR, 0o755, dir_fd=fds[-1])
            except FileExistsError:
                pass
            except OSError as exc:
                fail(f"{RUN_LOG_DIR} cannot be made", exc)
            try:
                fds.append(os.open(RUN_LOG_DIR, flags | os.O_NOFOLLOW, dir_fd=fds[0]))
            except OSError as exc:
                try:
                    link = statmod.S_ISLNK(os.lstat(RUN_LOG_DIR, dir_fd=fds[0]).st_mode)
                except OSError:
                    link = False
                if link or exc.errno == errno.ELOOP:
                    raise RunLogError(f"cannot create the run log in {logs}: it is a symbolic link, "
                                      "and the run log never follows one") from None
                if exc.errno == errno.ENOTDIR:
                    raise RunLogError(f"cannot create the run log in {logs}: it is not a directory") from None
                fail(f"{RUN_LOG_DIR} cannot be opened", exc)
            st = os.fstat(fds[-1])
            try:
                os.mkdir(self.run_id, 0o755, dir_fd=fds[-1])
                fds.append(os.open(self.run_id, flags | os.O_NOFOLLOW, dir_fd=fds[-1]))
                fd = os.open("events.jsonl", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o644, dir_fd=fds[-1])
            except OSError as exc:
                fail(f"the run's directory {self.run_id} cannot be made", exc)
        finally:
            for fd_ in fds:
                os.close(fd_)
        return fd, (st.st_dev, st.st_ino)

    def _line(self, event: str, fields: dict) -> str:
        record = {"t_ms": round((time.monotonic() - self.started) * 1000, 3), "event": event,
                  **{k: compact(v) for k, v in fields.items()}}
        line = json_line(record)
        if len(line) > MAX_EVENT_BYTES // 4 and len(line.encode("utf-8")) > MAX_EVENT_BYTES:
            kept = {k: v for k, v in record.items() if k in SMALL_FIELDS}
            kept["fields"] = digest({k: v for k, v in record.items() if k not in SMALL_FIELDS})
            line = json_line(kept)
        return line

    def write(self, event: str, **fields) -> None:
        if self.closed or self.failed:
            return
        buffered = event in BUFFERED_EVENTS or (event == "action" and fields.get("action") in BUFFERED_ACTIONS)
        line = self._line(event, fields)
        size = len(line.encode("utf-8"))
        room = self.max_bytes - self.written - (0 if event in FINAL_EVENTS else FINAL_RESERVE)
        if size > room:
            if event in FINAL_EVENTS:
                return
            self.dropped += 1
            if self.dropped > 1:
                return
            line = self._line("log_truncated", {"limit": self.max_bytes,
                                                "message": "the run log reached its size limit (--max-log-bytes); "
                                                           "later events are not logged"})
            size = len(line.encode("utf-8"))
        try:
            self.file.write(line)  # the text layer writes through once its buffer is full
            now = time.monotonic()
            if not buffered or now - self.flushed_at >= FLUSH_SECONDS:
                self.file.flush()
                self.flushed_at = now
        except OSError as exc:
            self.failed = exc.strerror or str(exc)
            try:
                self.file.close()
            except OSError:
                pass
            self.closed = True
            raise LimitError(f"the run log cannot be written ({self.failed}); the run is stopped") from None
        self.written += size

    def action(self, name: str, args: dict, ok: bool, **fields) -> None:
        """An action's event; a refused one is compact (see the module docstring)."""
        if ok:
            self.write("action", action=name, args=args, ok=True, **fields)
        else:
            fields["error"] = str(fields.get("error", ""))[:500]
            self.write("action", action=name, args=compact(args, chars=200, items=20), ok=False, **fields)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.file.close()
            except OSError:
                pass


def start_fields(options) -> dict:
    """The options a run log's ``start`` event records."""
    return {k: v for k, v in vars(options).items() if k not in ("project", "approve", "run_log", "replay")}


def log_unstarted_run(log: RunLog, options, result) -> None:
    """The run log of a script that never started (a syntax error): start, error, end."""
    log.write("start", options=start_fields(options))
    log.write("error", kind=result.error_kind, line=result.error_line, column=result.error_column,
              message=(result.error or "").splitlines()[0] if result.error else "")
    log.write("end", exit_code=result.exit_code, steps=0, tool_calls=0)
    log.close()
