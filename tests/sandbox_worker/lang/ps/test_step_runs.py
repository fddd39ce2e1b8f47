"""--max-steps counts statements, exactly, although loops and functions count a run of
statements at once (issue 13: ``if (ps_n := ps_n + k) < ps_at:`` before a run of k).

Each script runs in this process (the worker's runtime against a fake broker, as
test_interrupts.py does) with every budget from 0 to past its end, once as emitted and once in
the reference form where every statement counts itself (``_Emitter.runs = False``, what the
emitter did for every statement before runs): the output, the error and its DSL position, the
step count at the end and every count reported to the broker must be the same.
"""

from __future__ import annotations

import signal

import pytest
from RestrictedPython import compile_restricted_exec

from sandbox_worker.client import ScriptFailure
from sandbox_worker.lang import ps
from sandbox_worker.lang.ps.errors import STEP_REPORT_EVERY
from sandbox_worker.main import script_position
from transpiler import compile_script
from transpiler.ps import emit as ps_emit


class FakeBroker:
    """The broker's ps.* answers for these scripts; records what the worker tells it."""

    def __init__(self, max_steps: int) -> None:
        self.max_steps = max_steps
        self.out: list[str] = []
        self.reports: list[int] = []
        self.end = None
        self.events: list[str] = []

    def call(self, op, **args):
        if op == "ps.start":
            return {"max_steps": self.max_steps, "max_time_ms": 0, "policy": {"allowActions": ["REPORT"]},
                    "files_changed": 0}
        if op == "ps.steps":
            self.reports.append(args["count"])
            return None
        if op == "ps.event":
            if args["kind"] == "end":
                self.end = args["data"]["steps"]
            else:
                self.events.append(args["kind"])
            return None
        if op == "ps.scope":
            return {"allowActions": ["REPORT"]}
        if op == "ps.action":  # REPORT "late": the enclosing timeout block's deadline passed in the broker
            if args["args"].get("message") == "late":
                raise ScriptFailure("TimeoutError", "the block's deadline passed")
            raise ScriptFailure("RuntimeError", "REPORT: refused here")
        return None

    def output(self, text: str) -> None:
        self.out.append(text)


def run(source: str, max_steps: int, runs: bool = True, monkeypatch=None) -> dict:
    monkeypatch.setattr(ps_emit._Emitter, "runs", runs)
    emitted = compile_script(source, lang="ps")
    compiled = compile_restricted_exec(emitted.python, filename="<script>")
    assert not compiled.errors, compiled.errors
    broker = FakeBroker(max_steps)
    namespace = ps.restricted_globals(broker)
    error = None
    previous = signal.getsignal(signal.SIGALRM)
    try:
        exec(compiled.code, namespace)
    except BaseException as exc:  # noqa: BLE001 - what escapes is what the test compares
        line, col = script_position(exc.__traceback__)
        error = (getattr(exc, "kind", type(exc).__name__), getattr(exc, "message", str(exc)),
                 emitted.source_map.lookup(line, col) if line else None)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return {"out": "".join(broker.out), "error": error, "end": broker.end, "reports": broker.reports,
            "events": broker.events}


SCRIPTS = {
    "straight-line": 'a = 1\nb = a + 2\nlog(a, b)\nc = b * 3\nlog(c)\n',
    "straight-line in a function": 'def f(n):\n  a = n\n  b = a + 2\n  log(a, b)\n  c = b * 3\n  log(c)\n'
                                   '  return c\nx = f(1)\ny = f(x)\n',
    "while": 'i = 0\nt = 0\nwhile i < 4:\n  t = t + i\n  log(t)\n  i = i + 1\nlog("end", t)\n',
    "nested loops": 'i = 0\nwhile i < 3:\n  j = 0\n  for k in range(2):\n    j = j + k\n    log(i, k)\n'
                    '  i = i + 1\n  x = j\nlog(x)\n',
    "if/elif/else": 'for i in range(6):\n  a = i\n  if i % 3 == 0:\n    log("a", i)\n    b = 1\n  elif i == 1:\n'
                    '    log("b")\n  else:\n    c = i - 1\n    log("c", c)\n  d = a\nlog("done")\n',
    "break/continue": 'i = 0\nwhile true:\n  i = i + 1\n  if i == 2:\n    log("skip")\n    continue\n  log(i)\n'
                      '  if i >= 4:\n    log("stop")\n    break\n    log("never")\n  x = i\nlog("after", i)\n',
    "functions": 'def f(n):\n  a = n + 1\n  b = a * 2\n  return b\ndef fib(n):\n  if n < 2:\n    return n\n'
                 '  return fib(n - 1) + fib(n - 2)\nfor i in range(3):\n  x = f(i)\n  log(x)\n  y = fib(i + 2)\n'
                 '  z = x + y\n  log(y, z)\n',
    "classes": 'class P:\n  def __init__(self, x):\n    self.x = x\n    self.y = 0\n  def bump(self):\n'
               '    self.y = self.y + 1\n    v = self.y\n    return v\np = P(1)\nfor i in range(3):\n  a = p.bump()\n'
               '  log(a)\n  b = a + i\nlog(b)\n',
    "body raises": 'i = 0\nwhile i < 10:\n  a = i\n  b = 10 / (3 - i)\n  log(b)\n  i = i + 1\n',
    "retry catches": 'n = 0\nretry 3:\n  n = n + 1\n  for i in range(3):\n    a = i\n    log(n, i)\n    guard i < n\n'
                     '    z = a\nlog("done", n)\n',
    "retry in a function": 'def g(k):\n  x = k\n  y = x / (k - 2)\n  log(y)\n  return y\nretry 4:\n'
                           '  for i in range(4):\n    v = g(i)\n    log("v", v)\nlog("end")\n',
    "raise uncaught": 'retry 2:\n  for i in range(3):\n    a = i\n    b = a / (i - 1)\n    log(b)\nlog("x")\n',
    "action refused": 'retry 2:\n  for i in range(3):\n    a = i\n    apply("REPORT", {message: "m"})\n    log(a)\n',
    "blocks in a loop": 'for i in range(3):\n  timeout 100000:\n    a = i\n    log(a)\n  b = i\n'
                        '  with policy { allowActions: ["REPORT"] }:\n    c = i\n    log(c)\nlog("end")\n',
    "timeout interrupts a run": 'n = 0\nretry 3:\n  n = n + 1\n  for i in range(2):\n    timeout 1000:\n'
                                '      a = i\n      apply("REPORT", {message: "late"})\n      b = a\n      log(b)\n'
                                '    c = i\nlog("end", n)\n',
    "guard lambda": 'for i in range(5):\n  a = i\n  guard a < 3\n  log(a)\n',
    "unbound in a loop": 'for i in range(3):\n  if i == 2:\n    log(zz)\n  a = i\n  log(a)\n  zz = 1\n',
    "multi-line literals": 'for i in range(3):\n  x = {\n    a: i,\n    b: [1,\n      2]\n  }\n  y = `two\nlines`\n'
                           '  z = 10 / (1 - i)\n  log(x, y, z)\n',
    "rebound built-in": 'plan = 3\nlog(plan)\nfor i in range(2):\n  plan = plan + i\n  log(plan)\n',
    # the static int analysis (transpiler/ps/ints.py): known ints, and names it must not trust
    "known ints in every scope": 'n = 5\ndef count():\n  s = 0\n  j = 0\n  while j < n:\n    s = s + j * 2 - 1\n'
                                 '    j = j + 1\n  return s\nclass C:\n  def m(self):\n    t = n % 3\n    return t\n'
                                 'c = C()\nretry 2:\n  timeout 100000:\n    r = count() + c.m()\n    q = -2\n'
                                 '    with policy { allowActions: ["REPORT"] }:\n      q = q * n - 1\nlog(r, q, n == 5, q < n)\n',
    "int rebound to a string in a function": 'x = 1\ni = 0\ndef f():\n  x = "a"\n  return x + 1\nwhile i < 3:\n'
                                             '  x = x + i\n  log(x, f())\n  i = i + 1\nlog(x + 1, x < 9)\n',
    "for target reuses an int name": 'n = 0\ntotal = 0\nwhile n < 3:\n  total = total + n\n  n = n + 1\n'
                                     'for n in ["a", "b"]:\n  log(n + 1)\n  total = total * 2\nlog(total, n)\n',
    "parameter named like an int": 'k = 2\nm = 0\ndef g(k):\n  return k + 1\nwhile m < 3:\n  m = m + 1\n'
                                   '  log(g("ab"), g(m), m * k, g(1.5) + m)\n',
    "int rebound to a float and a bool": 'a = 1\nc = 0\nf = 0\nwhile c < 3:\n  c = c + 1\n  a = a * 2\n'
                                         '  if c == 2:\n    a = 1.5\n    f = true\n  log(a + c)\n  f = f + c\nlog(f)\n',
    "known int read before it is assigned": 'def f(p):\n  return q + p\nq = 1\nlog(f(2))\ndef g():\n'
                                            '  return z * 2 < q\nlog(g())\nz = 3\n',
    "two unassigned names, a known int first": 'def g():\n  return q + w\nfor i in range(2):\n  log(i)\n'
                                               'log(g())\nq = 1\nw = "s"\n',
}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_every_budget_stops_at_the_same_statement_as_counting_each_statement(name, monkeypatch):
    source = SCRIPTS[name]
    whole = run(source, 0, runs=False, monkeypatch=monkeypatch)
    total = whole["end"]
    assert total and total >= 3, whole
    for max_steps in range(0, total + 3):
        reference = run(source, max_steps, runs=False, monkeypatch=monkeypatch)
        counted = run(source, max_steps, runs=True, monkeypatch=monkeypatch)
        assert counted == reference, (name, max_steps)


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_known_ints_change_nothing_a_script_does(name, monkeypatch):
    """The same run with the static int analysis off (every operand checked at run time, as
    before it): the output, the error and its position, the counts."""
    source = SCRIPTS[name]
    analysed = run(source, 0, monkeypatch=monkeypatch)
    monkeypatch.setattr(ps_emit, "known_ints", lambda module: frozenset())
    if name == "while":  # the analysis is off indeed
        assert "while (i < 4 if ps_type(i) is ps_int else ps_lt(i, 4)):" in compile_script(source, lang="ps").python
    assert run(source, 0, monkeypatch=monkeypatch) == analysed


def test_reports_to_the_broker_are_the_same_around_each_report():
    """A loop long enough for several reports of the counter: the same counts, and the budget
    just before, at and after each report stops at the same statement."""
    source = 'i = 0\nj = 0\nwhile i < 20000:\n  i = i + 1\n  j = j + i\n  k = j\nlog(j)\n'
    mp = pytest.MonkeyPatch()
    try:
        whole = run(source, 0, runs=True, monkeypatch=mp)
        assert whole["reports"] == [STEP_REPORT_EVERY * n for n in range(1, 4)]
        assert whole["end"] == 3 + 20000 * 3 + 1
        for max_steps in (STEP_REPORT_EVERY - 1, STEP_REPORT_EVERY, STEP_REPORT_EVERY + 1, 2 * STEP_REPORT_EVERY + 2,
                          60001, 60002, 60003, 60004, 60005):
            assert run(source, max_steps, True, mp) == run(source, max_steps, False, mp), max_steps
    finally:
        mp.undo()


@pytest.mark.parametrize("max_steps, logged, line", [
    # i = 0, t = 0, while: 3 statements; then each iteration: t = ..., log(t), i = ... (3 statements)
    (2, [], 3), (3, [], 4), (4, [], 5), (5, ["0"], 6), (6, ["0"], 4), (7, ["0"], 5), (14, ["0", "1", "3", "6"], 6),
])
def test_a_while_body_stops_exactly_before_statement_n_plus_1(max_steps, logged, line, monkeypatch):
    source = 'i = 0\nt = 0\nwhile i < 4:\n  t = t + i\n  log(t)\n  i = i + 1\nlog("end", t)\n'
    r = run(source, max_steps, monkeypatch=monkeypatch)
    assert r["out"].split() == [w for t in logged for w in ("[ps]", t)]
    kind, message, where = r["error"]
    assert kind == "LimitError"
    assert message == f"budget exceeded: --max-steps {max_steps} (the script executed {max_steps} statements)"
    assert where[0] == line  # the DSL line of statement max_steps + 1
    assert r["end"] == max_steps


def test_an_error_in_the_middle_of_a_run_counts_only_the_statements_that_ran(monkeypatch):
    # 2 (i = 0, while) + 3 iterations of 4 + a = 3, b = ... raises: 2 + 12 + 2
    r = run('i = 0\nwhile i < 10:\n  a = i\n  b = 10 / (3 - i)\n  log(b)\n  i = i + 1\n', 0, monkeypatch=monkeypatch)
    assert r["error"][:2] == ("RuntimeError", "division by zero") and r["error"][2] == (4, 7)
    assert r["end"] == 16


def test_loops_and_functions_count_runs_and_top_level_code_each_statement():
    python = compile_script('x = 1\ny = x + 1\nwhile x < 3:\n  x = x + 1\n  y = y + x\n'
                            'def f(a):\n  b = a + 1\n  return b\nh = 0.5\nk = h + 1\n', lang="ps").python
    assert "ps_step(); k = ps_add(h, 1)" in python  # top level: runs once, counted as before
    assert "ps_step(); y = (x + 1)" in python  # x and y only ever hold ints: Python's + even here
    assert "if (ps_n := ps_n + 2) < ps_at:" in python  # the loop body: one count for 2 statements
    assert "x = (x + 1)\n" in python and "y = (y + x)\n" in python
    assert "b = (a + 1 if ps_type(a) is ps_int else ps_add(a, 1))" in python  # a parameter: checked inline
    assert [line.strip() for line in python.splitlines()].count("def f(a):") == 1  # a def is never copied
    assert python.count("global ps_n") == 2  # the script's function and f: both count in the global counter
    assert compile_restricted_exec(python, filename="<script>").errors == ()
