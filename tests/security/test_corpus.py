"""The escape corpus (fuzz/corpus/): every header claim holds, and the checker itself is strict.

Each payload runs three times (fuzz/corpus.py): restricted (all layers), os (RestrictedPython
and the guards removed, the jail in force) and baseline (its header's layers removed, no jail),
where it must succeed: the proof that it is a real attack and that the stop is not an accident.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fuzz.corpus import (
    CORPUS_FILES,
    CORPUS_TIMEOUT,
    LAYER_ORDER,
    Entry,
    check_entry,
    check_stop,
    classify,
    load_corpus,
    parse_entry,
    run_baseline,
    run_os,
    run_restricted,
    verdict,
)
from fuzz.targets import CANARY, Sandbox
from tests.support import REPO

CLASSES = ("subclass walk", "function globals", "generator/coroutine/traceback frames", "format-string attribute access",
           "builtins recovery", "loader and module tricks", "look-alike unicode identifiers", "BaseException subclasses",
           "memory bomb", "CPU bomb", "recursion bomb", "fork bomb", "output bomb", "/proc and symlink tricks")


@pytest.fixture(scope="module")
def box():
    sandbox = Sandbox(CORPUS_FILES)
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def reports(box):
    """Every payload in every mode, two at a time (the machine has two cores)."""
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda e: check_entry(e, box.root, box.host_strings, CANARY), load_corpus()))


def test_the_corpus_has_at_least_100_payloads_over_every_attack_class():
    entries = load_corpus()
    assert len(entries) >= 100
    counts = {name: sum(e.attack == name for e in entries) for name in CLASSES}
    assert all(counts.values()), counts
    assert {e.attack for e in entries} <= set(CLASSES)


def test_every_payload_is_valid_python():
    # A payload that is a SyntaxError in CPython attacks nothing: RestrictedPython would refuse it anyway.
    for entry in load_corpus():
        compile(entry.code, entry.name, "exec")


def test_the_process_layer_and_each_layer_appear_in_the_table():
    entries = load_corpus()
    restricted = {e.stops.layer for e in entries}
    os_layers = {e.os.layer for e in entries}
    assert {"restrictedpython", "guards", "broker", "limits"} <= restricted
    # In the full jail seccomp answers first for every path (it refuses opens at the syscall's
    # entry): Landlock and the NOFILE/NPROC rlimits stand behind it, each shown stopping the
    # attacks alone in tests/security/test_layers.py.
    assert "process/seccomp" in os_layers
    assert "worker" in os_layers
    assert all(layer.split("/")[0] in LAYER_ORDER for layer in restricted)


def _problems(reports, mode):
    return [p for r in reports for p in r.problems if f"the {mode} run" in p or (mode == "baseline" and "not proven real" in p)]


def test_no_payload_escapes_and_each_is_stopped_where_and_why_its_header_says(reports):
    assert _problems(reports, "restricted") == []


def test_without_restrictedpython_and_the_guards_the_jail_broker_and_limits_hold(reports):
    assert _problems(reports, "os") == []


def test_every_payload_succeeds_in_its_baseline(reports):
    assert _problems(reports, "baseline") == []
    assert all(set(r.runs) == {"restricted", "os", "baseline"} for r in reports)


# ---------------------------------------------------------------- the checker is strict


def _entry(tmp_path: Path, header: str, code: str) -> Entry:
    path = tmp_path / "999_probe.py"
    path.write_text(textwrap.dedent(header).strip() + "\n" + textwrap.dedent(code).lstrip(), encoding="utf-8")
    return parse_entry(path)


def test_the_detector_flags_a_payload_that_succeeds(tmp_path, box):
    entry = _entry(tmp_path, """
        # attack: builtins recovery
        # stops: guards: variable 'open' is not defined
        # os: process/rlimits: Too many open files
        # baseline: -guards => escaped
        # a probe that succeeds in restricted mode
    """, 'print("ESCAPED")\n')
    run = run_restricted(entry, box.root, box.host_strings, CANARY)
    assert run.verdict == "escaped" and run.escaped
    assert any("ESCAPED in the restricted run" in p for p in check_stop(entry, run, entry.stops))
    # Completing without a stop is an escape too, and so is showing the canary or a host path.
    assert verdict("completed", None, "", CANARY) == "completed"
    assert verdict("failed", {"kind": "RuntimeError", "msg": "x"}, "..." + CANARY, CANARY) == "escaped"
    assert verdict("failed", {"kind": "RuntimeError", "msg": box.host_strings[0]}, box.host_strings[0], CANARY, box.host_strings) == "escaped"


def test_the_detector_sees_the_canary_read_by_an_unjailed_worker(tmp_path, box):
    entry = _entry(tmp_path, """
        # attack: builtins recovery
        # stops: guards: variable 'open' is not defined
        # os: process/rlimits: Too many open files
        # baseline: -guards => escaped
        # reads the canary by its host path
    """, f"print(open({str(box.canary)!r}).read())\n")
    run = run_baseline(entry, box.root, box.host_strings, CANARY)
    assert run.verdict == "escaped", run.detail


def test_an_unrelated_error_is_not_counted_as_the_stop(tmp_path, box):
    # The auditor's case: a NameError on the first line, before the primitive the header names.
    entry = _entry(tmp_path, """
        # attack: generator/coroutine/traceback frames
        # stops: guards: variable 'getattr' is not defined
        # os: process/seccomp: Operation not permitted
        # baseline: -guards => escaped
        # stops at an unrelated name first
    """, """
        x = IndexError
        print(getattr(1, "real"), "ESCAPED")
    """)
    problems = check_entry(entry, box.root, box.host_strings, CANARY, modes=("restricted",)).problems
    assert len(problems) == 1 and "not for the stated reason" in problems[0]


def test_an_error_no_layer_raises_is_unexplained_not_guards(tmp_path, box):
    entry = _entry(tmp_path, """
        # attack: builtins recovery
        # stops: guards: .*
        # os: process/seccomp: .*
        # baseline: -guards => escaped
        # divides by zero: no layer stopped anything
    """, "print(1 / 0)\n")
    run = run_restricted(entry, box.root, box.host_strings, CANARY)
    assert run.layer == "unexplained"
    assert check_stop(entry, run, entry.stops)
    assert classify("failed", {"kind": "RuntimeError", "msg": "division by zero"}) == "unexplained"


def test_a_payload_that_is_not_real_fails_its_baseline(tmp_path, box):
    # getattr does not normalize a look-alike dunder: even with every guard gone this gets nothing.
    entry = _entry(tmp_path, """
        # attack: look-alike unicode identifiers
        # stops: guards: variable 'getattr' is not defined
        # os: guards: has no attribute
        # baseline: -guards => escaped
        # a fullwidth dunder in a string
    """, 'print(getattr((), "\uff3f\uff3fclass\uff3f\uff3f"), "ESCAPED")\n')
    problems = check_entry(entry, box.root, box.host_strings, CANARY, modes=("baseline",)).problems
    assert len(problems) == 1 and "not proven real" in problems[0]


def test_a_stop_past_the_deadline_is_reported(tmp_path, box):
    entry = _entry(tmp_path, """
        # attack: CPU bomb
        # stops: limits: the script did not finish
        # os: limits: the script did not finish
        # baseline: -limits => outlives
        # an infinite loop
    """, "while True:\n    pass\n")
    run = run_os(entry, box.root, box.host_strings, CANARY)
    assert check_stop(entry, run, entry.os) == []
    run.seconds = CORPUS_TIMEOUT + 5
    assert "past its" in check_stop(entry, run, entry.os)[0]


# ---------------------------------------------------------------- the broker's regex deadline

REGEX_PROBE = """
import random, sys, time
sys.path.insert(0, {repo!r})
from runtime.errors import DeadlineExceeded
from runtime.services.textsearch import Searcher, compile_pattern
rng = random.Random(1)
text = {text}
pattern = compile_pattern({pattern!r})
started = time.monotonic()
print("ready", flush=True)
try:
    Searcher(started + 1.0).search(pattern, text)
except DeadlineExceeded:
    print(f"{{time.monotonic() - started:.2f}}", flush=True)
"""


@pytest.mark.parametrize("pattern, text", [
    ("(?=a)(a|aa)+$", '"a" * 40 + "!"'),  # backtracks exponentially: only the fallback can run it
    ("[ab]*a[ab]{200}", '"".join(rng.choice("ab") for _ in range(1_200_000))'),  # RE2's slowest, still linear
], ids=["fallback", "re2"])
def test_a_long_regex_search_in_the_broker_stops_at_the_wall_clock_deadline(pattern, text):
    # The broker is paused for 1.5 s mid-search (as heavy CPU contention would do): a wall-clock
    # deadline of 1 s has passed when it resumes, so the search must end at once.
    repo = str(REPO)
    probe = subprocess.Popen([sys.executable, "-c", REGEX_PROBE.format(repo=repo, pattern=pattern, text=text)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert probe.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        os.kill(probe.pid, signal.SIGSTOP)
        time.sleep(1.5)
        os.kill(probe.pid, signal.SIGCONT)
        elapsed = float(probe.stdout.readline())
    finally:
        probe.kill()
        probe.wait()
    assert elapsed < 2.1, f"the regex stopped {elapsed:.2f} s after the search began, for a 1 s deadline"


def test_percent_formatting_shows_no_python_repr_of_an_api_object(box):
    from runtime.api import run_script

    result = run_script('d = Directory("/")\nprint("%r" % [d])\n', root=box.root, timeout=10)
    assert "sandbox_worker" not in result.output and " at 0x" not in result.output, result.output
    # The DSL's % is the integer remainder only: string formatting is refused, not rendered.
    assert result.exit_code == 1 and "% works on two integers, not string and list" in result.error
