"""retry / timeout / guard with real semantics in the worker."""

from __future__ import annotations

import pytest

from tests.support.ps import lines, run_ps


def test_retry_counts_attempts_and_stops_at_success():
    r = run_ps("""
n = 0
retry 5 backoff 1:
  n = n + 1
  log("attempt " + n)
  guard n >= 3
log("done after " + n)
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] attempt 1", "[ps] attempt 2", "[ps] attempt 3", "[ps] done after 3"]


def test_retry_reraises_the_last_error_after_n_attempts_with_backoff():
    r = run_ps("""
n = 0
retry 3 backoff 40:
  n = n + 1
  log("attempt " + n)
  x = {}.missing + n
""")
    assert r.exit_code == 1 and r.error_kind == "RuntimeError"
    assert lines(r) == ["[ps] attempt 1", "[ps] attempt 2", "[ps] attempt 3"]
    assert "object has no key 'missing'" in r.error and r.error_line == 6
    assert r.figures["run_s"] >= 0.08  # two backoffs of 40 ms


def test_guard_names_the_expression_and_its_line():
    r = run_ps("files = 11\n\nguard files <= 10   # no more than 10\n")
    assert r.exit_code == 1
    assert "guard failed: files <= 10 (line 3)" in r.error and r.error_line == 3


def test_timeout_interrupts_a_pure_loop_within_100_ms():
    r = run_ps("log(\"start\")\ntimeout 150:\n  while true:\n    pass\nlog(\"never\")\n")
    assert r.exit_code == 1 and r.output == "[ps] start\n"
    assert "timeout: the block at line 2 did not finish within 150 ms" in r.error
    assert r.error_line == 2
    assert 0.15 <= r.figures["run_s"] < 0.25 + 0.05  # deadline + 100 ms (+ worker end)


def test_timeout_block_that_finishes_in_time_is_transparent():
    r = run_ps("timeout 2000:\n  x = 0\n  for i in range(1000):\n    x = x + i\nlog(x)\n")
    assert r.ok, r.error
    assert lines(r) == ["[ps] 499500"]


def test_nested_timeouts_inner_fires_first():
    r = run_ps("""
timeout 2000:
  timeout 50:
    while true:
      pass
""")
    assert r.exit_code == 1 and "block at line 3 did not finish within 50 ms" in r.error
    assert r.figures["run_s"] < 0.5


def test_nested_timeouts_outer_fires_first_and_inner_retry_cannot_swallow_it():
    r = run_ps("""
n = 0
timeout 120:
  retry 1000:
    n = n + 1
    timeout 5000:
      while true:
        pass
""")
    assert r.exit_code == 1 and "block at line 3 did not finish within 120 ms" in r.error
    assert r.figures["run_s"] < 0.5


def test_retry_catches_a_timeout():
    r = run_ps("""
n = 0
retry 3:
  n = n + 1
  log("attempt " + n)
  timeout 30:
    while n < 3:
      pass
log("ok at " + n)
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] attempt 1", "[ps] attempt 2", "[ps] attempt 3", "[ps] ok at 3"]


def test_timeout_interrupts_a_retry_backoff():
    r = run_ps("timeout 100:\n  retry 3 backoff 5000:\n    guard false\n")
    assert r.exit_code == 1 and "did not finish within 100 ms" in r.error
    assert r.figures["run_s"] < 0.5


def test_return_leaves_a_retry_block():
    r = run_ps("""
def f():
  retry 3:
    return "early"
  return "late"
log(f())
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] early"]


@pytest.mark.parametrize("source,message", [
    ("retry 0:\n  pass\n", "retry needs a whole number of attempts from 1"),
    ('retry 2 backoff "x":\n  pass\n', "backoff must be a number"),
    ("timeout -1:\n  pass\n", "timeout must be a number from 1"),
])
def test_block_arguments_are_validated(source, message):
    r = run_ps(source)
    assert r.exit_code == 1 and message in r.error, r.error


def test_retry_does_not_catch_a_budget():
    r = run_ps("retry 5:\n  log(\"try\")\n  while true:\n    pass\n", max_steps=100)
    assert r.exit_code == 1 and r.error_kind == "LimitError"
    assert lines(r) == ["[ps] try"]
