"""Policies (scopes only narrow; restored on exit, error or break), actions, budgets, run log."""

from __future__ import annotations

import io
import json

import pytest

from runtime.errors import ScriptError
from runtime.promptscript.policy import ACTIONS, PolicyStack, intersect
from runtime.promptscript.session import PSOptions, PSSession
from tests.support.ps import lines, run_ps


def test_inner_scope_cannot_widen_outer():
    stack = PolicyStack(allow_commands=("npm", "git"))
    stack.enter({"allowActions": ["READ_FILE", "SEARCH"], "allowCommands": ["npm"], "maxFileBytes": 1000,
                 "allowRead": ["src"], "allowWrite": ["out/x"]})
    inner = stack.enter({"allowActions": ["READ_FILE", "WRITE_FILE", "RUN_CMD"], "allowCommands": ["git", "npm"],
                         "maxFileBytes": 10**9, "allowRead": [".", "src/a"], "allowWrite": ["out"]})
    assert inner["allowActions"] == ["READ_FILE"]
    assert inner["allowCommands"] == ["npm"]
    assert inner["maxFileBytes"] == 1000
    assert inner["allowRead"] == ["src", "src/a"]
    assert inner["allowWrite"] == ["out/x"]
    assert stack.exit()["allowActions"] == ["READ_FILE", "SEARCH"]
    assert stack.exit()["allowActions"] == list(ACTIONS)
    with pytest.raises(ScriptError, match="no policy scope to leave"):
        stack.exit()


def test_policy_paths_cannot_climb_and_keys_are_checked():
    stack = PolicyStack()
    with pytest.raises(ScriptError, match="climbs out"):
        stack.enter({"allowRead": ["../x"]})
    with pytest.raises(ScriptError, match="unknown policy key"):
        stack.enter({"allowEverything": True})
    assert intersect(stack.current, {})["allowActions"] == list(ACTIONS)


def test_policy_scope_in_a_script_narrows_and_is_restored():
    r = run_ps("""
with policy { allowActions: ["REPORT", "SEARCH"] }:
  apply("REPORT", { message: "inside" })
  with policy { allowActions: ["ASK_USER", "REPORT"] }:
    apply("REPORT", { message: "inner" })
for i in range(3):
  with policy { allowActions: ["SEARCH"] }:
    break
retry 2:
  with policy { allowActions: [] }:
    x = {}.boom
apply("REPORT", { message: "outside" })
""")
    assert r.exit_code == 1  # the retry re-raises; but first check what ran
    assert lines(r) == ["[ps] REPORT: inside", "[ps] REPORT: inner"]
    r = run_ps("""
for i in range(3):
  with policy { allowActions: ["SEARCH"] }:
    break
def f():
  with policy { allowActions: [] }:
    return 1
f()
retry 2:
  with policy { allowActions: [] }:
    log("try")
    y = {}.boom
""")
    assert lines(r) == ["[ps] try", "[ps] try"]
    r2 = run_ps("""
def fails():
  with policy { allowActions: [] }:
    x = {}.boom
retry 2:
  fails()
""")
    assert r2.exit_code == 1
    r3 = run_ps("""
for i in range(3):
  with policy { allowActions: ["SEARCH"] }:
    break
def f():
  with policy { allowActions: [] }:
    return 1
f()
apply("REPORT", { message: "restored" })
""")
    assert r3.ok, r3.error
    assert lines(r3) == ["[ps] REPORT: restored"]


def test_action_refused_outside_its_policy_names_what_is_allowed():
    r = run_ps('with policy { allowActions: ["READ_FILE", "SEARCH"] }:\n  apply("REPORT", { message: "x" })\n')
    assert r.exit_code == 1 and r.error_kind == "SandboxError"
    assert "policy denies action REPORT (allowed here: READ_FILE, SEARCH)" in r.error
    assert r.error_line == 2


def test_nested_policy_cannot_widen_in_a_script():
    r = run_ps("""
with policy { allowActions: ["ASK_USER"] }:
  with policy { allowActions: ["REPORT", "ASK_USER"] }:
    apply("REPORT", { message: "x" })
""")
    assert r.exit_code == 1 and "allowed here: ASK_USER" in r.error


@pytest.mark.parametrize("policy,message", [
    ('"all"', "a policy must be an object, not string"),
    ("{ allowActions: [\"FLY\"] }", "unknown action 'FLY'"),
    ("{ maxFileBytes: -1 }", "maxFileBytes must be a non-negative integer"),
    ("{ allowRead: \"src\" }", "allowRead must be an array of project paths"),
    ("{ sudo: true }", "unknown policy key 'sudo'"),
])
def test_policy_objects_are_validated(policy, message):
    r = run_ps(f"with policy {policy}:\n  pass\n")
    assert r.exit_code == 1 and message in r.error, r.error


def test_apply_plan_objects_are_validated():
    r = run_ps("""
p = { action: "REPORT", args: { message: "from a plan", nextSuggestions: ["tests"] }, done: true, confidence: 0.9, reason: "fin" }
apply(p)
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] REPORT: from a plan", "  next: tests"]


@pytest.mark.parametrize("plan,message", [
    ("3", "apply(plan) needs a plan object, not number"),
    ('{ args: {}, done: true }', "plan is missing its 'action' field"),
    ('{ action: "REPORT", done: true }', "plan is missing its 'args' field"),
    ('{ action: "REPORT", args: {} }', "plan is missing its 'done' field"),
    ('{ action: 1, args: {}, done: true }', "plan.action must be a string"),
    ('{ action: "REPORT", args: [], done: true }', "plan.args must be an object"),
    ('{ action: "REPORT", args: {}, done: "yes" }', "plan.done must be true or false"),
    ('{ action: "REPORT", args: {}, done: true, confidence: 2 }', "plan.confidence must be a number from 0 to 1"),
    ('{ action: "REPORT", args: {}, done: true, reason: 1 }', "plan.reason must be a string"),
    ('{ action: "REPORT", args: {}, done: true, extra: 1 }', "plan has an unknown field 'extra'"),
    ('{ action: "FLY", args: {}, done: true }', "unknown action 'FLY'"),
    ('{ action: "REPORT", args: {}, done: true }', "REPORT: the 'message' argument (a string) is required"),
    ('{ action: "REPORT", args: { message: 1 }, done: true }', "REPORT: message must be a string"),
])
def test_bad_plans_fail_clearly(plan, message):
    r = run_ps(f"apply({plan})\n")
    assert r.exit_code == 1 and message in r.error, r.error


def test_file_actions_without_a_sandbox_say_what_they_need():
    for action in ("READ_FILE", "WRITE_FILE", "PATCH_FILE", "SEARCH", "RUN_CMD"):
        session = PSSession(PSOptions())
        with pytest.raises(ScriptError, match=f"action {action} needs files to act on: this session has no sandbox"):
            session.op_action(action, {})


def test_ask_user_without_a_terminal_fails_at_once():
    r = run_ps('a = apply("ASK_USER", { question: "Which?", choices: ["a", "b"] })\n')
    assert r.exit_code == 1 and "ASK_USER needs a terminal" in r.error
    assert r.figures["run_s"] < 1


def test_ask_user_reads_a_terminal_answer(monkeypatch):
    import os

    session = PSSession(PSOptions(), stdin=io.StringIO("2\n"), stderr=io.StringIO())
    monkeypatch.setattr(os, "isatty", lambda fd: True)
    session.stdin.fileno = lambda: 0
    reply = session.op_action("ASK_USER", {"question": "Which?", "choices": ["React", "Vue"]})
    assert reply["value"] == "Vue"
    assert "Which?" in session.stderr.getvalue() and "2. Vue" in session.stderr.getvalue()


# ---- budgets ----

def test_max_steps_stops_at_the_figure():
    r = run_ps("n = 0\nwhile true:\n  n = n + 1\n", max_steps=1001)
    assert r.exit_code == 1 and r.error_kind == "LimitError"
    assert "budget exceeded: --max-steps 1001 (the script executed 1001 statements)" in r.error
    r = run_ps("for i in range(5):\n  log(i)\n", max_steps=6)  # the for, then 5 logs: 6 fits
    assert r.ok, r.error


def test_max_steps_exact_boundary():
    r = run_ps("for i in range(5):\n  log(i)\n", max_steps=5)
    assert r.exit_code == 1 and len(lines(r)) == 4
    assert "--max-steps 5 (the script executed 5 statements)" in r.error


def test_max_steps_boundaries_in_loops_and_calls_through_the_worker():
    """Loops and functions count runs of statements at once (issue 13); the budget still stops
    the script right before statement N+1 (tests/sandbox_worker/lang/ps/test_step_runs.py
    tries every budget)."""
    # i = 0, while: 2; then 3 statements per iteration. 4 iterations + 2: stops before `x = i` (5)
    r = run_ps("i = 0\nwhile i < 100:\n  i = i + 1\n  log(i)\n  x = i\n", max_steps=2 + 3 * 4 + 2)
    assert lines(r) == [f"[ps] {n}" for n in range(1, 6)] and r.error_line == 5
    assert "--max-steps 16 (the script executed 16 statements)" in r.error
    # def, t = 0, for: 3; each iteration: t = ..., f's two statements, log: 4. Two iterations,
    # then t = t + f(2) and f's two: stops before log(t) of the third iteration
    source = "def f(n):\n  a = n + 1\n  return a\nt = 0\nfor i in range(10):\n  t = t + f(i)\n  log(t)\n"
    r = run_ps(source, max_steps=3 + 4 * 2 + 3)
    assert lines(r) == ["[ps] 1", "[ps] 3"] and r.error_line == 7
    r = run_ps(source, max_steps=3 + 4 * 2 + 1)  # stops inside f, before `a = n + 1`
    assert lines(r) == ["[ps] 1", "[ps] 3"] and r.error_line == 2


def test_run_log_end_counts_only_the_statements_that_ran_when_a_loop_body_raises(tmp_path):
    # i = 0, while: 2; 3 iterations of 4; then a = 3 and the division by zero: 16 (log(b) and
    # i = i + 1 of that iteration never ran, though the loop body counts its run at once)
    r = run_ps("i = 0\nwhile i < 10:\n  a = i\n  b = 10 / (3 - i)\n  log(b)\n  i = i + 1\n", project=tmp_path)
    assert r.exit_code == 1 and "division by zero" in r.error and r.error_line == 4
    (run_dir,) = (tmp_path / ".ps-runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[-1] == {**events[-1], "event": "end", "exit_code": 1, "steps": 16}


def test_max_time_stops_a_pure_loop():
    r = run_ps("while true:\n  pass\n", max_time_ms=150)
    assert r.exit_code == 1 and r.error_kind == "LimitError"
    assert "budget exceeded: --max-time 150 ms" in r.error
    assert r.figures["run_s"] < 0.4


def test_max_tool_calls_counts_actions_in_the_broker():
    r = run_ps('for i in range(10):\n  apply("REPORT", { message: "r" + i })\n', max_tool_calls=3)
    assert r.exit_code == 1 and lines(r) == ["[ps] REPORT: r0", "[ps] REPORT: r1", "[ps] REPORT: r2"]
    assert "budget exceeded: --max-tool-calls 3 (action 4, REPORT, refused)" in r.error


def test_a_spent_budget_cannot_be_retried():
    r = run_ps('retry 5:\n  apply("REPORT", { message: "r" })\n  apply("REPORT", { message: "s" })\n', max_tool_calls=1)
    assert r.exit_code == 1 and r.error_kind == "LimitError" and lines(r) == ["[ps] REPORT: r"]


def test_halt_on_loop_stops_the_same_action_repeating():
    source = 'for i in range(5):\n  apply("REPORT", { message: "same" })\n'
    r = run_ps(source, halt_on_loop=True)
    assert r.exit_code == 1 and len(lines(r)) == 2
    assert "loop detected: REPORT with the same arguments 3 times in a row" in r.error
    assert run_ps(source).ok
    assert run_ps('for i in range(5):\n  apply("REPORT", { message: "m" + i })\n', halt_on_loop=True).ok


def test_verbose_traces_each_action():
    err = io.StringIO()
    session = PSSession(PSOptions(verbose=True), stderr=err)
    session.op_action("REPORT", {"message": "x"})
    assert err.getvalue().startswith('[ps] action #1 REPORT {"message": "x"} -> ok')


def test_run_log_records_blocks_actions_and_errors(tmp_path):
    r = run_ps("""
n = 0
retry 2:
  n = n + 1
  guard n > 1
with policy { allowActions: ["REPORT"] }:
  apply("REPORT", { message: "hi" })
timeout 20:
  while true:
    pass
""", project=tmp_path)
    assert r.exit_code == 1
    (run_dir,) = (tmp_path / ".ps-runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds == ["start", "block_start", "retry", "block_end", "scope_enter", "action", "scope_exit",
                     "block_start", "timeout", "block_end", "error", "end"]
    assert events[1] == {**events[1], "block": "retry", "line": 3, "attempts": 2}
    assert events[2]["line"] == 3 and "guard failed: n > 1" in events[2]["error"]
    assert events[3] == {**events[3], "block": "retry", "line": 3, "outcome": "ok", "attempts_made": 2}
    assert events[5]["action"] == "REPORT" and events[5]["ok"] is True
    assert events[7] == {**events[7], "block": "timeout", "line": 8, "ms": 20}
    assert events[9] == {**events[9], "block": "timeout", "line": 8, "outcome": "timeout"}
    assert events[10]["line"] == 8 and events[-1]["exit_code"] == 1 and events[-1]["tool_calls"] == 1
    assert events[-1]["steps"] >= 10  # 9 statements before the loop, then the loop's own


def test_run_log_end_reports_the_real_step_count(tmp_path):
    r = run_ps("for i in range(5):\n  x = i\n", project=tmp_path)
    assert r.ok, r.error
    (run_dir,) = (tmp_path / ".ps-runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[-1] == {**events[-1], "event": "end", "exit_code": 0, "steps": 6}


def test_run_log_blocks_that_succeed_or_fail_leave_start_and_end(tmp_path):
    r = run_ps("""
retry 3:
  timeout 1000:
    x = 1
with policy { allowActions: ["REPORT"] }:
  pass
timeout 1000:
  retry 2:
    x = {}.nope
""", project=tmp_path)
    assert r.exit_code == 1
    (run_dir,) = (tmp_path / ".ps-runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    blocks = [(e["event"], e.get("block"), e["line"], e.get("outcome")) for e in events
              if e["event"] in ("block_start", "block_end", "scope_enter", "scope_exit")]
    assert blocks == [
        ("block_start", "retry", 2, None), ("block_start", "timeout", 3, None),
        ("block_end", "timeout", 3, "ok"), ("block_end", "retry", 2, "ok"),
        ("scope_enter", None, 5, None), ("scope_exit", None, 5, None),
        ("block_start", "timeout", 7, None), ("block_start", "retry", 8, None),
        ("block_end", "retry", 8, "error"), ("block_end", "timeout", 7, "error"),
    ]
    assert "object has no key 'nope'" in events[-3]["error"]


@pytest.mark.parametrize("source,options,message", [
    ("while true:\n  pass\n", {"max_steps": 500}, "--max-steps 500"),
    ("while true:\n  pass\n", {"max_time_ms": 100}, "--max-time 100 ms"),
])
def test_budgets_the_worker_enforces_are_logged_as_budget(tmp_path, source, options, message):
    r = run_ps(source, project=tmp_path, **options)
    assert r.exit_code == 1 and r.error_kind == "LimitError" and message in r.error
    (run_dir,) = (tmp_path / ".ps-runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events][-3:] == ["budget", "error", "end"]
    assert message in events[-3]["message"] and events[-2]["kind"] == "LimitError"


def test_broker_refuses_bad_worker_requests():
    session = PSSession(PSOptions())
    with pytest.raises(ScriptError):
        session.op_scope("exit", {}, 1)
    with pytest.raises(ScriptError):
        session.op_scope("widen", {}, 1)
    with pytest.raises(ScriptError):
        session.op_action("REPORT", "not json")
    with pytest.raises(ScriptError):
        session.op_event("made_up", 1, {})
    with pytest.raises(ScriptError):
        session.op_action("FORMAT_DISK", {})


def test_halt_on_loop_catches_a_short_repeating_cycle():
    source = """
for i in range(10):
  apply("REPORT", { message: "check" })
  apply("REPORT", { message: "fix" })
"""
    r = run_ps(source, halt_on_loop=True)
    assert r.exit_code == 1 and r.error_kind == "LimitError"
    assert len(lines(r)) == 5  # A B A B A, and the sixth call (B) completes the third round
    assert "loop detected: the same 2 actions (REPORT, REPORT) with the same arguments 3 times in a row" in r.error
    assert run_ps(source).ok
    r = run_ps('for i in range(4):\n  for m in ["a", "b", "c"]:\n    apply("REPORT", { message: m })\n', halt_on_loop=True)
    assert r.exit_code == 1 and len(lines(r)) == 8 and "the same 3 actions" in r.error
    # progress (different arguments each round) is not a loop
    assert run_ps('for i in range(6):\n  apply("REPORT", { message: "a" })\n  apply("REPORT", { message: "b" + i })\n',
                  halt_on_loop=True).ok


def test_repeating_cycle_lengths():
    from runtime.promptscript.session import repeating_cycle

    assert repeating_cycle(list("AAA")) == 1
    assert repeating_cycle(list("XABABAB")) == 2
    assert repeating_cycle(list("ABCABCABC")) == 3
    assert repeating_cycle(list("ABCDABCDABCD")) == 4
    assert repeating_cycle(list("ABCDEABCDEABCDE")) == 0  # longer cycles are not looked for
    assert repeating_cycle(list("ABABA")) == 0
    assert repeating_cycle(list("AABAAB")) == 0
    assert repeating_cycle([]) == 0
