"""Interrupts land only at safe points: a `timeout` block's deadline (or --max-time) that passes
anywhere inside the set-up or clean-up of a block never leaks an internal error and never
leaves a policy scope or a deadline behind.

The deterministic test runs the worker's runtime in this process against a fake broker and
makes the deadline pass at every line the worker executes, one run per line (the signal
handler is called exactly there, as SIGALRM would), so every interleaving is tried.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest
from RestrictedPython import compile_restricted_exec

from sandbox_worker.client import ScriptFailure
from sandbox_worker.lang import ps
from sandbox_worker.lang.ps.errors import ACTIONS
from tests.support.ps import run_ps
from transpiler import compile_script

SCRIPT = """
retry 3:
  timeout 100000:
    with policy { allowActions: ["REPORT"] }:
      x = 1
    with policy { allowActions: [] }:
      pass
"""
BASE_POLICY = {"allowActions": list(ACTIONS), "allowCommands": [], "maxFileBytes": 500000,
               "maxFilesChanged": None, "allowRead": ["."], "allowWrite": ["."]}


class FakeBroker:
    """Answers the worker's ps.* calls as the broker does, keeping the scope depth."""

    def __init__(self, max_time_ms: int) -> None:
        self.max_time_ms = max_time_ms
        self.depth = 0
        self.events: list[str] = []

    def call(self, op, **args):
        if op == "ps.start":
            return {"max_steps": 0, "max_time_ms": self.max_time_ms, "policy": BASE_POLICY, "files_changed": 0}
        if op == "ps.scope":
            self.depth += 1 if args["change"] == "enter" else -1
            return dict(BASE_POLICY, **args["policy"]) if args["change"] == "enter" else BASE_POLICY
        if op == "ps.event":
            self.events.append(args["kind"])
            return None
        return None

    def output(self, text: str) -> None:
        pass


def compiled():
    python = compile_script(SCRIPT, lang="ps").python
    result = compile_restricted_exec(python, filename="<script>")
    assert not result.errors, result.errors
    return result.code


def run_once(code, monkeypatch, inject_at: int | None, budget: bool):
    """Run SCRIPT; at the inject_at-th line executed by the worker or the script, make the
    deadline pass and call the SIGALRM handler right there. -> (broker, runtime, exception)."""
    runtimes = []

    class Capturing(ps.Runtime):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            runtimes.append(self)

    monkeypatch.setattr(ps, "Runtime", Capturing)
    broker = FakeBroker(max_time_ms=10**6 if budget else 0)
    namespace = ps.restricted_globals(broker)
    rt = runtimes[0]
    seen = 0
    injected = False
    after_end = False
    files = {str(path) for path in Path(ps.__file__).parent.glob("*.py")} | {"<script>"}

    def local(frame, event, arg):
        nonlocal seen, injected, after_end
        if event == "line" and not injected:
            seen += 1
            if seen == inject_at:
                injected = True
                after_end = getattr(rt, "ended", False)
                for entry in rt.deadlines:
                    if entry.budget == budget:
                        entry.at = 0.0
                rt.on_alarm(signal.SIGALRM, frame)
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename in files else None

    previous = signal.getsignal(signal.SIGALRM)
    error = None
    sys.settrace(tracer)
    try:
        exec(code, namespace)
    except BaseException as exc:  # noqa: BLE001 - what escapes is what the test judges
        error = exc
    finally:
        sys.settrace(None)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return broker, rt, error, seen, after_end


@pytest.mark.parametrize("budget", [False, True], ids=["timeout-block", "max-time"])
def test_a_deadline_passing_at_any_line_is_handled_at_a_safe_point(monkeypatch, budget):
    code = compiled()
    _, _, error, lines_in_a_run, _ = run_once(code, monkeypatch, None, budget)
    assert error is None and lines_in_a_run > 50
    failures = []
    for k in range(1, lines_in_a_run + 1):
        broker, rt, error, _, after_end = run_once(code, monkeypatch, k, budget)
        problems = []
        if broker.depth != 0:
            problems.append(f"{broker.depth} policy scope(s) never left")
        if any(not e.budget for e in rt.deadlines):
            problems.append("a timeout block's deadline left behind")
        if broker.events.count("block_start") != broker.events.count("block_end"):
            problems.append("a block started without ending")
        if budget and after_end:
            # the deadline passed once the script was over (its run block was closing)
            if error is not None:
                problems.append(f"escaped after the end: {type(error).__name__}: {error}")
        elif budget:
            # --max-time ends the run with the budget's error, whatever it interrupted
            if not (isinstance(error, ScriptFailure) and error.kind == "LimitError"
                    and "--max-time" in error.message):
                problems.append(f"ended with {error!r} instead of the --max-time budget")
        elif error is not None:
            # the block's timeout is a script error the retry catches: the script completes
            problems.append(f"escaped: {type(error).__name__}: {error}")
        if problems:
            failures.append(f"deadline at line event {k}: {'; '.join(problems)}")
    assert not failures, "\n".join(failures[:10])


def test_stress_timeouts_around_policy_scopes_stay_balanced(tmp_path):
    """The audit's repro, shorter: a 2 ms timeout firing at random points of 5 policy scopes."""
    r = run_ps("""
k = 0
while k < 300:
  k = k + 1
  retry 1000:
    timeout 2:
      i = 0
      while i < 5:
        i = i + 1
        with policy { allowActions: ["REPORT"] }:
          pass
log("end")
""", project=tmp_path, max_time_ms=0)
    assert r.ok, r.error
    assert r.output == "[ps] end\n"
    (run_dir,) = (tmp_path / ".ps-runs").iterdir()
    kinds = [json.loads(line)["event"] for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert kinds.count("scope_enter") == kinds.count("scope_exit") > 0
    assert kinds.count("block_start") == kinds.count("block_end") > 0
