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
from pathlib import Path

from runtime.errors import RunSetupError
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
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        if self.written + len(line) > self.log.max_bytes:
            self.full = True
            self.log.write("replay_truncated", message="the recorded LLM answers reached --max-log-bytes; "
                                                       "this run cannot be replayed whole")
            return
        if self.file is None:
            fd = os.open(self.log.dir / ANSWERS, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            self.file = os.fdopen(fd, "w", encoding="utf-8")
        self.file.write(line)
        self.file.flush()
        self.written += len(line)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def load(project: Path, run_id: str) -> tuple[str, dict, list]:
    """(script, the run's options as PSOptions fields, the recorded answers) of a run."""
    if not run_id or "/" in run_id or run_id.startswith("."):
        raise RunSetupError(f"replay: {run_id!r} is not a run id (the name of a directory in {RUN_LOG_DIR}/)")
    run_dir = Path(project) / RUN_LOG_DIR / run_id
    try:
        source = (run_dir / SCRIPT).read_text(encoding="utf-8")
        first = (run_dir / "events.jsonl").open(encoding="utf-8").readline()
    except OSError:
        raise RunSetupError(f"replay: {RUN_LOG_DIR}/{run_id} has no recorded script (only runs of `fdsl run` "
                            f"with a project can be replayed)") from None
    start = json.loads(first) if first.strip() else {}
    options = start.get("options")
    if start.get("event") != "start" or type(options) is not dict:
        raise RunSetupError(f"replay: the run log of {run_id} does not start with its options")
    answers = []
    path = run_dir / ANSWERS
    if path.exists():
        answers = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return source, options, answers
