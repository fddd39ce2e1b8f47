"""End to end (a jailed worker): the emitter's static int analysis (transpiler/ps/ints.py) drops
run-time type checks only where a variable can never hold anything but an int; a variable that
looks like an int but is rebound to a string somewhere behaves exactly as before."""

from __future__ import annotations

import pytest

from runtime.api import run_script
from transpiler.ps import emit as ps_emit

REBOUND = '''x = 1
i = 0
def f():
  x = "a"
  return x + 1
while i < 3:
  x = x + i
  log(x, f())
  i = i + 1
def g():
  x = "b"
  return x
y = 0
while y < 2:
  y = y + 1
  s = g()
  log(s + y, y < 2)
log(x + 1, s * 2)
'''


def outcome(source: str) -> tuple:
    r = run_script(source, lang="ps", options={"max_steps": 0}, timeout=60)
    return r.exit_code, r.output, r.error_kind, r.error_message, r.error_line, r.error_column


@pytest.mark.parametrize("source, output", [
    (REBOUND, "1 a1\n2 a1\n4 a1\nb1 true\nb2 false\n5 bb\n"),
    ('n = 0\nwhile n < 3:\n  n = n + 1\ndef h():\n  n = true\n  return n + 1\nlog(n)\nlog(h())\n', "3\n"),
])
def test_an_int_looking_variable_rebound_elsewhere_behaves_as_before(source, output, monkeypatch):
    analysed = outcome(source)
    assert analysed[1] == "".join(f"[ps] {line}\n" for line in output.splitlines())
    monkeypatch.setattr(ps_emit, "known_ints", lambda module: frozenset())  # every operand checked
    assert outcome(source) == analysed


def test_the_last_script_fails_the_promptscript_way():
    r = run_script('n = 0\nwhile n < 3:\n  n = n + 1\ndef h():\n  n = true\n  return n + 1\nlog(n)\nlog(h())\n',
                   lang="ps", options={"max_steps": 0}, timeout=60)
    assert r.exit_code == 1 and r.error_message == "cannot add number to boolean" and r.error_line == 6
