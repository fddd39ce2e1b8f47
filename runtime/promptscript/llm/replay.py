"""Recording and replaying a run's LLM answers: ``fdsl replay RUN_ID``.

A run started by ``fdsl run`` with a project keeps, beside its run log in
``.ps-runs/<id>/``: ``script.ps`` (the script) and ``llm.jsonl``, one line per request sent
to a provider, in order: ``{"ok": true, "text", "tokens_in", "tokens_out", "model"}`` or
``{"ok": false, "what", "retryable"}`` (the text with the run's keys redacted). Calls answered
by mock_plan or provider mock are not recorded: they answer the same again. A replay runs the
script with the run's options and these answers in order, and sends nothing to any provider
(no key is needed); a script that asks for more answers than were recorded fails saying so.
The recording stops (and says so in the run log) past --max-log-bytes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from runtime.errors import RunSetupError
from runtime.jsonlines import json_line
from runtime.promptscript.runlog import RUN_LOG_DIR

ANSWERS = "llm.jsonl"
SCRIPT = "script.ps"


def attach(run_dir: Path, name: str, text: str) -> None:
    """A new file of the run's directory (never through a symbolic link, never an existing one)."""
    fd = os.open(run_dir / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def rewrite(path: Path, change) -> None:
    """Replace a file of the run's directory by ``change(text)`` (a new file, then rename)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # no copy kept (a run not started by fdsl run)
    with os.fdopen(fd, encoding="utf-8") as f:
        text = f.read()
    changed = change(text)
    if changed != text:
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(changed)
        os.replace(tmp, path)


class Recorder:
    def __init__(self, log) -> None:
        self.log = log
        self.file = None
        self.written = 0
        self.full = False

    def record(self, entry: dict) -> None:
        if self.log is None or self.full:
            return
        line = json_line(entry)
        size = len(line.encode("utf-8"))
        if self.written + size > min(self.log.max_bytes, MAX_ANSWERS_BYTES):
            self.full = True
            self.log.write("replay_truncated", message=f"the recorded LLM answers reached their limit of "
                                                       f"{min(self.log.max_bytes, MAX_ANSWERS_BYTES)} bytes "
                                                       "(--max-log-bytes); this run cannot be replayed whole")
            return
        if self.file is None:
            fd = os.open(self.log.dir / ANSWERS, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            self.file = os.fdopen(fd, "w", encoding="utf-8")
        self.file.write(line)
        self.file.flush()
        self.written += size

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


MAX_SCRIPT_BYTES = 1 << 20  # the transpiler's own limit on a script
MAX_START_BYTES = 1 << 20  # the run log's first line (its start event)
MAX_ANSWERS_BYTES = 64 << 20  # a recording is never larger (Recorder stops there, or at --max-log-bytes)
MAX_TOKENS = 10 ** 12
STOPS = ("BlockDeadline", "DeadlineExceeded", "LimitError")  # what a recorded stop may be
RECORDED_NAMES = {"provider": 200, "model": 200, "base_url": 2000}  # what a replay takes from the log: names only


def _read(dir_fd: int, name: str, cap: int, what: str) -> str | None:
    """A file of the run's directory (never through a symbolic link), at most ``cap`` bytes."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RunSetupError(f"replay: cannot open {what}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise RunSetupError(f"replay: {what} is not a regular file")
        data = f.read(cap + 1)
    if len(data) > cap and name != "events.jsonl":
        raise RunSetupError(f"replay: {what} is over {cap} bytes")
    try:
        return data[:cap].decode("utf-8", "replace" if name == "events.jsonl" else "strict")
    except UnicodeDecodeError:
        raise RunSetupError(f"replay: {what} is not UTF-8 text") from None


def _json(line: str, what: str):
    try:
        return json.loads(line, parse_constant=_no_constant)
    except (RecursionError, ValueError) as exc:
        raise RunSetupError(f"replay: {what} is not valid JSON ({str(exc)[:80]})") from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number")


def _finite(n) -> bool:
    return type(n) is int and 0 <= n <= MAX_TOKENS


def check_entry(entry, where: str) -> dict:
    """One recorded answer, as the recorder writes it (else a RunSetupError naming where)."""
    if type(entry) is dict and entry.get("ok") is True:
        if (type(entry.get("text")) is str and _finite(entry.get("tokens_in")) and _finite(entry.get("tokens_out"))
                and type(entry.get("model")) is str):
            return entry
    elif type(entry) is dict and entry.get("ok") is False and type(entry.get("what")) is str:
        if type(entry.get("retryable")) is bool and _finite(entry.get("billed", 0)):
            return entry
        if entry.get("stopped") in STOPS:  # a deadline met while waiting for the answer
            return entry
    raise RunSetupError(f"replay: {where} is not a recorded answer "
                        "({ok: true, text, tokens_in, tokens_out, model}, {ok: false, what, retryable[, billed]} "
                        "or {ok: false, what, stopped})")


def recorded_names(options: dict) -> dict:
    """The provider, model and base URL the run log names (strings or null): all a replay takes
    from it; its budgets and allowed commands are the replay's command line's."""
    out = {}
    for name, most in RECORDED_NAMES.items():
        value = options.get(name)
        if value is not None and not (type(value) is str and len(value) <= most):
            raise RunSetupError(f"replay: the run log's option {name} must be a string or null")
        out[name] = value
    return out


def load(project: Path, run_id: str) -> tuple[str, dict, list]:
    """(script, the run's options as logged, the recorded answers) of a run: each file opened
    without following a link and read to a cap, each entry checked."""
    if not run_id or "/" in run_id or run_id.startswith(".") or "\0" in run_id:
        raise RunSetupError(f"replay: {run_id!r} is not a run id (the name of a directory in {RUN_LOG_DIR}/)")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        logs = os.open(Path(project) / RUN_LOG_DIR, flags)
        try:
            run_fd = os.open(run_id, flags, dir_fd=logs)
        finally:
            os.close(logs)
    except OSError:
        run_fd = None
    try:
        source = None if run_fd is None else _read(run_fd, SCRIPT, MAX_SCRIPT_BYTES, f"{run_id}/{SCRIPT}")
        if source is None:
            raise RunSetupError(f"replay: {RUN_LOG_DIR}/{run_id} has no recorded script (only runs of `fdsl run` "
                                f"with a project can be replayed)")
        first = (_read(run_fd, "events.jsonl", MAX_START_BYTES, f"{run_id}/events.jsonl") or "").partition("\n")[0]
        answers_text = _read(run_fd, ANSWERS, MAX_ANSWERS_BYTES, f"{run_id}/{ANSWERS}") or ""
    finally:
        if run_fd is not None:
            os.close(run_fd)
    start = _json(first, f"{run_id}/events.jsonl's first line") if first.strip() else {}
    options = start.get("options") if type(start) is dict else None
    if type(start) is not dict or start.get("event") != "start" or type(options) is not dict:
        raise RunSetupError(f"replay: the run log of {run_id} does not start with its options")
    answers = [check_entry(_json(line, f"{run_id}/{ANSWERS} line {n}"), f"{run_id}/{ANSWERS} line {n}")
               for n, line in enumerate(answers_text.splitlines(), 1) if line.strip()]
    return source, options, answers
