"""The run log is bounded: a script decides what is logged, and a short loop of actions with
large arguments once wrote 2 GB of events.jsonl in under a minute."""

from __future__ import annotations

import json

import pytest

from runtime.api import run_script
from runtime.errors import LimitError
from runtime.promptscript.runlog import MAX_EVENT_BYTES, RunLog, RunLogError, compact


def ps(source: str, project, **options):
    options.setdefault("max_steps", 0)
    return run_script(source, lang="ps", approve=lambda d: True,
                      options={"project": project, **options}, timeout=60)


def events(project) -> tuple[list[dict], int]:
    newest = max((project / ".ps-runs").iterdir(), key=lambda d: d.name)
    path = newest / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()], path.stat().st_size


def test_large_arguments_are_logged_as_their_length_and_hash(tmp_path):
    r = ps('big = "x" * 200000\nfor i in range(50):\n  apply("WRITE_FILE", { path: "out.txt", content: big })\n', tmp_path)
    assert r.ok, r.error
    logged, size = events(tmp_path)
    writes = [e for e in logged if e.get("action") == "WRITE_FILE"]
    assert len(writes) == 50 and size < 50_000  # 10 MB of arguments, a few KB of log
    assert writes[0]["args"]["content"] == {"chars": 200000, "sha256": writes[0]["args"]["content"]["sha256"]}
    assert len(writes[0]["args"]["content"]["sha256"]) == 16 and writes[0]["args"]["path"] == "out.txt"


def test_refused_actions_are_logged_compactly(tmp_path):
    r = ps('with policy { allowActions: ["REPORT"] }:\n'
           '  apply("WRITE_FILE", { path: "a.txt", content: "y" * 5000 })\n', tmp_path)
    assert r.exit_code == 1
    (refused,) = [e for e in events(tmp_path)[0] if e.get("action") == "WRITE_FILE"]
    assert refused["ok"] is False and "policy denies action WRITE_FILE" in refused["error"]
    assert refused["args"]["path"] == "a.txt" and refused["args"]["content"]["chars"] == 5000


def test_the_log_stops_at_its_size_limit_and_says_so_once(tmp_path):
    (tmp_path / "note.txt").write_text("a note\n")
    source = ('for i in range(5000):\n'
              '  apply("READ_FILE", { path: "note.txt" })\n'
              '  parallel([{ action: "READ_FILE", args: { path: "missing-" + i } }], { fail_fast: false })\n')
    r = ps(source, tmp_path, max_log_bytes=64 << 10, max_time_ms=0)
    logged, size = events(tmp_path)
    assert size <= 64 << 10
    assert [e["event"] for e in logged].count("log_truncated") == 1
    assert logged[-1]["event"] == "end"  # the run's last events keep their room
    truncated = next(e for e in logged if e["event"] == "log_truncated")
    assert "--max-log-bytes" in truncated["message"] and truncated["limit"] == 64 << 10
    assert r.ok, r.error  # the run went on to its end


def test_the_size_limit_is_a_command_line_flag(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "loop.ps"
    script.write_text('for i in range(3000):\n  apply("REPORT", { message: "step " + i })\n')
    done = subprocess.run([sys.executable, "-m", "runtime.cli", "run", str(script), "--project", str(tmp_path),
                           "--max-log-bytes", "20000", "--max-steps", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert events(tmp_path)[1] <= 20000
    done = subprocess.run([sys.executable, "-m", "runtime.cli", "run", str(script), "--project", str(tmp_path),
                           "--max-log-bytes", "100"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "the run log needs at least 16384 bytes" in done.stderr


def test_a_full_disk_stops_the_run_cleanly(tmp_path):
    log = RunLog(tmp_path)
    log.file.close()
    log.file = open("/dev/full", "w", encoding="utf-8")  # every write: ENOSPC
    log.write("action", action="REPORT", args={}, ok=True)  # buffered: it changed nothing
    with pytest.raises(LimitError, match=r"the run log cannot be written \(No space left on device\); the run is stopped"):
        log.write("action", action="WRITE_FILE", args={"path": "a.txt"}, ok=True)
    log.write("end", exit_code=1)  # nothing more is tried, nothing raises
    assert log.closed and log.failed == "No space left on device"


def test_events_that_change_nothing_wait_in_the_buffer_and_effects_flush_them(tmp_path, monkeypatch):
    from runtime.promptscript import runlog as ps_runlog

    log = RunLog(tmp_path)
    log.write("start", options={})
    on_disk = log.path.stat().st_size
    for _ in range(3):
        log.write("action", action="READ_FILE", args={"path": "a.txt"}, ok=True)
    log.write("block_start", kind="retry", line=1)
    assert log.path.stat().st_size == on_disk  # reads and block events: buffered
    log.write("action", action="WRITE_FILE", args={"path": "a.txt"}, ok=True)
    assert [json.loads(line)["event"] for line in log.path.read_text().splitlines()] == \
        ["start", "action", "action", "action", "block_start", "action"]
    monkeypatch.setattr(ps_runlog, "FLUSH_SECONDS", 0.0)  # and none waits longer than FLUSH_SECONDS
    log.write("action", action="SEARCH", args={"pattern": "x"}, ok=True)
    assert log.path.read_text().count("\n") == 7
    log.close()


def test_a_full_disk_during_a_run_ends_it_with_a_limit_error(tmp_path, monkeypatch):
    from runtime.promptscript import runlog as ps_runlog

    real_write = ps_runlog.RunLog.write

    def disk_fills_after_start(self, event, **fields):
        if event != "start" and not self.file.name == "/dev/full":
            self.file.close()
            self.file = open("/dev/full", "w", encoding="utf-8")
        return real_write(self, event, **fields)

    monkeypatch.setattr(ps_runlog.RunLog, "write", disk_fills_after_start)
    # An action with an effect flushes the log: the run stops there.
    r = ps('log("before")\napply("REPORT", { message: "hi" })\napply("WRITE_FILE", { path: "a.txt", content: "x" })\n'
           'log("after")\n', tmp_path)
    assert r.exit_code == 1 and r.error_kind == "LimitError" and "after" not in r.output
    assert "the run log cannot be written (No space left on device)" in r.error
    assert "Traceback" not in (r.error or "")
    # Only buffered events: the end flushes them, and the run that finished fails all the same.
    r = ps('log("before")\napply("REPORT", { message: "hi" })\nlog("after")\n', tmp_path)
    assert r.exit_code == 1 and r.error_kind == "LimitError" and "after" in r.output
    assert "the run log cannot be written (No space left on device)" in r.error


def test_one_event_cannot_outgrow_its_bound():
    nested = [[["z" * 900] * 100] * 100] * 100  # compact keeps 100 x 100 x 100 strings of 900 chars
    assert len(json.dumps(compact(nested))) > MAX_EVENT_BYTES


def test_a_full_disk_before_the_run_is_a_usage_error(tmp_path, monkeypatch):
    from runtime.promptscript import runlog as ps_runlog

    real_init = ps_runlog.RunLog.__init__

    def full_disk(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.file.close()
        self.file = open("/dev/full", "w", encoding="utf-8")

    monkeypatch.setattr(ps_runlog.RunLog, "__init__", full_disk)
    r = ps('log("never")\n', tmp_path)
    assert r.exit_code == 2 and r.error_kind == "UsageError"
    assert "the run log cannot be written (No space left on device)" in r.error


def test_the_log_needs_a_minimum_size(tmp_path):
    with pytest.raises(RunLogError, match="at least"):
        RunLog(tmp_path, max_bytes=10)
