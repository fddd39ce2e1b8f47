"""`fdsl run x.ps` end to end in a subprocess, the examples, and PromptScript escape attempts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from _ps import REPO, run_ps


def fdsl(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "runtime.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


EXPECTED = {
    "loops.ps": "[ps] Imagen 2: c.jpg",
    "retry_guard.ps": "[ps] total = 499500, files = 4",
    "classes.ps": "[ps] ok, 2 images",
    "policies.ps": "[ps] REPORT: done",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_examples_run(name, tmp_path):
    proc = fdsl("run", REPO / "examples" / name, "--project", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert EXPECTED[name] in proc.stdout.splitlines()
    assert proc.stderr == ""
    assert len(list((tmp_path / ".ps-runs").iterdir())) == 1


def test_cli_errors_budgets_and_verbose(tmp_path):
    script = tmp_path / "x.ps"
    script.write_text('log("a")\nfor i in range(5):\n  apply("REPORT", { message: "r" + i })\n')
    proc = fdsl("run", script, "--project", tmp_path, "--max-tool-calls", "2", "--verbose")
    assert proc.returncode == 1
    assert proc.stdout == "[ps] a\n[ps] REPORT: r0\n[ps] REPORT: r1\n"
    assert "LimitError: budget exceeded: --max-tool-calls 2 (action 3, REPORT, refused)\n  at line 3, column 3" in proc.stderr
    assert '[ps] action #1 REPORT {"message": "r0"} -> ok' in proc.stderr
    assert "Traceback" not in proc.stderr
    events = (next((tmp_path / ".ps-runs").iterdir()) / "events.jsonl").read_text()
    assert '"event": "budget"' in events and '"event": "error"' in events


def test_cli_syntax_error_ask_user_and_usage(tmp_path):
    bad = tmp_path / "bad.ps"
    bad.write_text("if true:\n\tlog(1)\n")
    proc = fdsl("run", bad, "--project", tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("SyntaxError: tab character in indentation (indent with spaces only)\n  at line 2, column 1")
    ask = tmp_path / "ask.ps"
    ask.write_text('apply("ASK_USER", { question: "name?" })\n')
    proc = fdsl("run", ask, "--project", tmp_path)
    assert proc.returncode == 1 and "ASK_USER needs a terminal" in proc.stderr
    proc = fdsl("run", ask, "--project", tmp_path / "missing")
    assert proc.returncode == 2 and "not a directory" in proc.stderr
    proc = fdsl("run", ask, "--max-steps", "-1")
    assert proc.returncode == 2


def test_cli_max_steps_and_max_time(tmp_path):
    loop = tmp_path / "loop.ps"
    loop.write_text("while true:\n  pass\n")
    proc = fdsl("run", loop, "--project", tmp_path, "--max-steps", "5000")
    assert proc.returncode == 1 and "--max-steps 5000 (the script executed 5000 statements)" in proc.stderr
    proc = fdsl("run", loop, "--project", tmp_path, "--max-steps", "0", "--max-time", "200")
    assert proc.returncode == 1 and "budget exceeded: --max-time 200 ms" in proc.stderr


# ---- escape attempts: each refused by the grammar/checker (layer 1) or the worker's guards (layer 2)

@pytest.mark.parametrize("source,message", [
    ("x = 1\ny = x.__class__\n", "names cannot start with '_'"),
    ("import os\n", "'import' is not PromptScript"),
    ('f = open("/etc/passwd")\n', "'open' is not defined"),
    ('eval("1")\n', "reserved name"),
    ('exec("1")\n', "reserved name"),
    ('x = getattr(log, "y")\n', "'getattr' is not defined"),
    ("x = __builtins__\n", "names cannot start with '_'"),
    ("x = log.__globals__\n", "names cannot start with '_'"),
    ("class A:\n  def __init__(self):\n    pass\nA().__init__()\n", "names cannot start with '_'"),
    ('x = {}\nx["__class__"] = 1\ny = x.__class__\n', "names cannot start with '_'"),
    ("x = type(1)\n", "'type' is not defined"),
    ("ps_step = 1\n", "reserved"),
])
def test_escapes_refused_by_the_language(source, message):
    r = run_ps(source)
    assert r.exit_code == 1 and r.error_kind == "SyntaxError" and message in r.error, r.error


@pytest.mark.parametrize("source,message", [
    ('x = "{0.__class__}"\nlog(x.format(x))\n', "string has no member 'format'"),
    ("x = [1]\ny = x.copy\n", "array has no member 'copy'"),
    ("y = log.name\n", "function has no member 'name'"),
    ("def f():\n  return 1\ny = f.code\n", "function has no member 'code'"),
    ("class A:\n  def m(self):\n    return 1\ny = A.methods\n", "class has no member 'methods'"),
    ("class A:\n  def m(self):\n    return 1\ny = A().ps_class\n", "no field or method 'ps_class'"),
    ("class A:\n  def m(self):\n    return 1\ny = A().fields\n", "no field or method 'fields'"),
    ("class A:\n  def m(self):\n    return 1\ny = A().m.fn\n", "function has no member 'fn'"),
    ("x = 3\nx.real = 1\n", "number cannot be modified"),
    ("x = range(3)\nfor i in log:\n  pass\n", "cannot iterate over function"),
    ("x = log[0]\n", "function cannot be indexed"),
])
def test_escapes_refused_by_the_worker_guards(source, message):
    r = run_ps(source)
    assert r.exit_code == 1 and r.error_kind == "RuntimeError" and message in r.error, r.error


def test_hand_written_python_cannot_reach_underscore_members_through_the_guards():
    from sandbox_worker import promptscript as ps

    for obj in ({}, [], "", ps.PSInstance(ps.PSClass("A", {})), ps.ps_add):
        with pytest.raises(ps.PSError):
            ps.guarded_getattr(obj, "__class__")
    with pytest.raises(ps.PSError):
        ps.guarded_write({}).__setattr__("__class__", 1)
    with pytest.raises(ps.PSError):
        ps.guarded_iter(object())
