"""Time: a `timeout` block bounds the broker's work too (SEARCH, parallel, ASK_USER, RUN_CMD),
--max-time counts the script (not the worker's start-up), and the command line's wall clock
follows --max-time."""

from __future__ import annotations

import io
import json
import os
import time

import pytest

from runtime.api import RunResult, run_script
from runtime.errors import LimitError, ScriptError
from runtime.promptscript.deadline import BlockDeadline
from runtime.promptscript.session import PSOptions, PSSession


def ps(source: str, project, **options):
    options.setdefault("max_steps", 0)
    return run_script(source, lang="ps", approve=lambda d: True,
                      options={"project": project, **options}, timeout=60)


@pytest.fixture(scope="module")
def big_project(tmp_path_factory):
    """2,000 files of 40,001 lines (hard links of one file) with the needle on the last line:
    a SEARCH for it reads and scans all 800 MB."""
    root = tmp_path_factory.mktemp("big")
    (root / "f0.txt").write_text(("x" * 9 + "\n") * 40000 + "NEEDLE\n")
    for i in range(1, 2000):
        os.link(root / "f0.txt", root / f"f{i}.txt")
    return root


def search_events(project) -> list[dict]:
    """The SEARCH action events of the newest run logged in `project`."""
    newest = max((project / ".ps-runs").iterdir(), key=lambda d: d.name)
    events = [json.loads(line) for line in (newest / "events.jsonl").read_text().splitlines()]
    return [e for e in events if e.get("event") == "action" and e.get("action") == "SEARCH"]


def test_search_is_stopped_at_the_timeout_blocks_deadline(big_project):
    control = ps('log(len(apply("SEARCH", { query: "NEEDLE", maxResults: 1000 })))\n', big_project)
    assert control.ok, control.error
    assert control.output == ("[ps] SEARCH 'NEEDLE': showing 1000 of 2000 matching lines (maxResults 1000, at most "
                              "10000; or narrow the query or globs)\n[ps] 1000\n")
    assert search_events(big_project)[0]["ok"] is True
    r = ps('timeout 5:\n  apply("SEARCH", { query: "NEEDLE", maxResults: 1000 })\n', big_project)
    assert r.exit_code == 1 and r.error_kind == "RuntimeError"
    assert "timeout: the block at line 1 did not finish within 5 ms" in r.error and r.error_line == 1
    # The broker stopped the search itself at the block's deadline (it did not run to its end:
    # 800 MB cannot be read in 5 ms).
    (event,) = search_events(big_project)
    assert event["ok"] is False and "stopped at the deadline of the enclosing timeout block" in event["error"]


def test_retry_catches_a_timeout_the_broker_reported(big_project):
    r = ps('''
n = 0
retry 3:
  n = n + 1
  timeout 50:
    if n < 3:
      apply("SEARCH", { query: "NEEDLE", maxResults: 1000 })
log("done at attempt " + n)
''', big_project)
    assert r.ok, r.error
    assert r.output == "[ps] done at attempt 3\n" and r.figures["run_s"] < 0.8


def test_parallel_is_stopped_at_the_timeout_blocks_deadline(big_project):
    r = ps('''
timeout 80:
  parallel([
    { action: "SEARCH", args: { query: "NEEDLE", globs: ["f1*"] } },
    { action: "SEARCH", args: { query: "NEEDLE", globs: ["f2*"] } },
    { action: "SEARCH", args: { query: "NEEDLE", globs: ["f3*"] } },
  ], { fail_fast: false })
''', big_project)
    assert r.exit_code == 1 and "timeout: the block at line 2 did not finish within 80 ms" in r.error, r.error
    assert r.figures["run_s"] < 0.5, r.figures["run_s"]


def test_a_command_in_a_timeout_block_fails_with_the_blocks_timeout(tmp_path):
    started = time.monotonic()
    r = ps('retry 2:\n  timeout 300:\n    apply("RUN_CMD", { cmd: "sleep", args: ["20"] })\n', tmp_path,
           allow_commands=("sleep",))
    assert r.exit_code == 1 and r.error_kind == "RuntimeError"
    assert "timeout: the block at line 2 did not finish within 300 ms" in r.error, r.error
    assert time.monotonic() - started < 5
    events = [json.loads(x) for x in next((tmp_path / ".ps-runs").iterdir()).joinpath("events.jsonl").read_text().splitlines()]
    assert [e["attempt"] for e in events if e["event"] == "retry"] == [1]  # retry caught the first


def test_ask_user_waits_only_until_the_timeout_blocks_deadline(monkeypatch):
    read_end, write_end = os.pipe()  # a terminal nobody answers
    try:
        stdin = os.fdopen(read_end, "r")
        session = PSSession(PSOptions(), stdin=stdin, stderr=io.StringIO())
        monkeypatch.setattr(os, "isatty", lambda fd: True)
        session.op_start()
        started = time.monotonic()
        with pytest.raises(BlockDeadline, match="no answer to ASK_USER in time") as caught:
            session.op_action("ASK_USER", {"question": "Go on?"}, deadline_ms=100)
        assert caught.value.kind == "TimeoutError"  # the worker turns it into the block's timeout
        assert 0.09 < time.monotonic() - started < 1
        # --max-time, when it comes first, is the budget's error instead
        session = PSSession(PSOptions(max_time_ms=100), stdin=stdin, stderr=io.StringIO())
        session.op_start()
        with pytest.raises(LimitError, match=r"budget exceeded: --max-time 100 ms \(the script ran for \d+ ms; "
                                             r"no answer to ASK_USER in time\)"):
            session.op_action("ASK_USER", {"question": "Go on?"}, deadline_ms=5000)
    finally:
        os.close(write_end)
        stdin.close()


def test_max_time_counts_from_the_script_start_not_the_worker_start():
    session = PSSession(PSOptions(max_time_ms=50))
    time.sleep(0.1)  # the worker starting up
    session.op_start()
    assert session.op_action("REPORT", {"message": "first"})["print"] == "[ps] REPORT: first\n"
    time.sleep(0.06)
    session.op_start()  # a second ps.start (a hostile worker) does not restart the clock
    with pytest.raises(LimitError, match="budget exceeded: --max-time 50 ms"):
        session.op_action("REPORT", {"message": "late"})


def test_max_time_is_the_scripts_running_time_end_to_end(tmp_path):
    r = ps('apply("REPORT", { message: "first" })\n', tmp_path, max_time_ms=40)
    assert r.ok, (r.error, r.figures)


def test_a_command_cut_by_max_time_is_the_budgets_error(tmp_path):
    started = time.monotonic()
    r = ps('retry 3:\n  apply("RUN_CMD", { cmd: "sleep", args: ["5"] })\n', tmp_path, max_time_ms=300,
           allow_commands=("sleep",))
    assert r.exit_code == 1 and r.error_kind == "LimitError", r.error
    assert "budget exceeded: --max-time 300 ms (the script ran for" in r.error
    assert "RUN_CMD sleep 5 was killed" in r.error
    assert time.monotonic() - started < 5
    events = [json.loads(x) for x in next((tmp_path / ".ps-runs").iterdir()).joinpath("events.jsonl").read_text().splitlines()]
    assert not [e for e in events if e["event"] == "retry"]  # a budget is never retried
    assert [e["event"] for e in events if e["event"] in ("budget", "error", "end")] == ["budget", "error", "end"]


def test_a_command_with_its_own_short_timeout_is_a_catchable_error(tmp_path):
    r = ps('retry 2:\n  apply("RUN_CMD", { cmd: "sleep", args: ["5"], timeoutMs: 100 })\n', tmp_path,
           allow_commands=("sleep",))
    assert r.exit_code == 1 and r.error_kind == "RuntimeError"
    assert "RUN_CMD: sleep 5 timed out after 100 ms and was killed" in r.error


# ---- the command line's wall clock ---------------------------------------------------------

@pytest.mark.parametrize("argv,expected", [
    (["x.ps"], 605.0),  # --max-time's default 600000 ms, plus 5 s
    (["x.ps", "--max-time", "120000"], 125.0),
    (["x.ps", "--max-time", "0"], float("inf")),  # no time limit asked: no wall clock either
    (["x.ps", "--max-time", "120000", "--timeout", "7"], 7.0),  # --timeout given: it applies
    (["x.fdsl"], 60.0),
])
def test_the_wall_clock_follows_max_time(tmp_path, monkeypatch, argv, expected):
    from runtime import cli

    (tmp_path / "x.ps").write_text("x = 1\n")
    (tmp_path / "x.fdsl").write_text("x = 1\n")
    seen = {}

    def fake_run_script(source, **kwargs):
        seen.update(kwargs)
        return RunResult(exit_code=0, output="")

    monkeypatch.setattr(cli, "run_script", fake_run_script)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", *argv, "--root", str(tmp_path)]) == 0
    assert seen["timeout"] == expected


def test_a_run_without_a_wall_clock_still_runs(tmp_path):
    import math

    r = run_script("log(1)\n", lang="ps", root=str(tmp_path), options={"max_time_ms": 0}, timeout=math.inf)
    assert r.ok, r.error
    assert r.output == "[ps] 1\n"


def test_script_errors_are_not_mistaken_for_deadlines():
    session = PSSession(PSOptions())
    session.op_start()
    with pytest.raises(ScriptError) as caught:
        session.op_action("REPORT", {}, deadline_ms=10_000)
    assert caught.value.kind == "RuntimeError"
    with pytest.raises(ScriptError, match="deadline_ms must be a non-negative integer"):
        session.op_action("REPORT", {"message": "m"}, deadline_ms=-1)
