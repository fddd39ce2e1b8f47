"""`fdsl run x.ps` end to end in a subprocess, the examples, and PromptScript escape attempts."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.support.ps import REPO, run_ps


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
    from sandbox_worker.lang.ps.classes import PSClass, PSInstance
    from sandbox_worker.lang.ps.errors import PSError
    from sandbox_worker.lang.ps.guards import guarded_getattr, guarded_iter, guarded_write
    from sandbox_worker.lang.ps.values import ps_add

    for obj in ({}, [], "", PSInstance(PSClass("A", {})), ps_add):
        with pytest.raises(PSError):
            guarded_getattr(obj, "__class__")
    with pytest.raises(PSError):
        guarded_write({}).__setattr__("__class__", 1)
    with pytest.raises(PSError):
        guarded_iter(object())


# ---- the run log cannot be made: a clear usage error, never a traceback, never a followed link

def test_run_log_in_a_plain_file_or_a_symlink_is_refused(tmp_path):
    script = tmp_path / "x.ps"
    script.write_text('log("ran")\n')
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".ps-runs").write_text("not a directory")
    proc = fdsl("run", script, "--project", plain)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"fdsl: cannot create the run log in {plain}/.ps-runs: it is not a directory\n"
    linked, outside = tmp_path / "linked", tmp_path / "outside"
    linked.mkdir()
    outside.mkdir()
    (linked / ".ps-runs").symlink_to(outside)
    proc = fdsl("run", script, "--project", linked)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "it is a symbolic link, and the run log never follows one" in proc.stderr
    assert "Traceback" not in proc.stderr and list(outside.iterdir()) == []


def test_run_log_where_nothing_can_be_made_is_a_usage_error(tmp_path):
    script = tmp_path / "x.ps"
    script.write_text('log("ran")\n')
    proc = fdsl("run", script, cwd="/proc")  # --project defaults to the current directory
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("fdsl: cannot create the run log in /proc/.ps-runs: .ps-runs cannot be made (")
    assert "Traceback" not in proc.stderr


def test_a_syntax_error_is_logged_as_a_run_that_never_started(tmp_path):
    bad = tmp_path / "bad.ps"
    bad.write_text("x = 1\nx = = 2\n")
    proc = fdsl("run", bad, "--project", tmp_path)
    assert proc.returncode == 1 and proc.stderr.startswith("SyntaxError: ")
    (run_dir,) = (tmp_path / ".ps-runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events] == ["start", "error", "end"]
    assert events[1]["kind"] == "SyntaxError" and events[1]["line"] == 2 and events[1]["column"] == 5
    assert events[2]["exit_code"] == 1 and events[2]["steps"] == 0


def test_help_names_both_languages():
    proc = fdsl("run", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "FilesDSL (.fdsl) or PromptScript (.ps)" in text
    assert "--max-files-changed" in text and "--max-time plus 5 s" in text
    top = fdsl("--help")
    assert "FilesDSL (.fdsl) and PromptScript (.ps)" in " ".join(top.stdout.split())


def test_max_files_changed_on_the_command_line(tmp_path):
    script = tmp_path / "w.ps"
    script.write_text('guard max_files_changed <= 5\n'
                      'for name in ["a.txt", "b.txt", "a.txt", "c.txt"]:\n'
                      '  apply("WRITE_FILE", { path: name, content: "x" })\n  log(files_changed)\n')
    proc = fdsl("run", script, "--project", tmp_path, "--yes", "--max-files-changed", "2")
    assert proc.returncode == 1 and proc.stdout == "[ps] 1\n[ps] 2\n[ps] 2\n"
    assert ("LimitError: budget exceeded: --max-files-changed 2 (WRITE_FILE c.txt would be changed file 3; "
            "changed so far: a.txt, b.txt)") in proc.stderr
    assert not (tmp_path / "c.txt").exists()
    proc = fdsl("run", script, "--project", tmp_path, "--yes")
    assert proc.returncode == 1 and "guard failed: max_files_changed <= 5 (line 1; max_files_changed is null" in proc.stderr
    proc = fdsl("run", script, "--project", tmp_path, "--max-files-changed", "-1")
    assert proc.returncode == 2 and "--max-files-changed cannot be negative" in proc.stderr


def test_the_python_api_returns_a_run_log_it_cannot_make_as_a_usage_error(tmp_path):
    from runtime.api import EXIT_USAGE, run_script

    (tmp_path / ".ps-runs").write_text("a plain file")
    result = run_script('log("never runs")', lang="ps", options={"project": tmp_path}, timeout=20)
    assert result.exit_code == EXIT_USAGE and result.output == ""
    assert result.error.startswith("UsageError: cannot create the run log") and "not a directory" in result.error


def test_timeout_ends_the_run_while_the_broker_works_for_an_action(tmp_path):
    """The supervisor cannot end a run while the broker serves a request, so the broker's
    own work (here a RUN_CMD of 20 s) must stop at the run's --timeout too."""
    import time

    script = tmp_path / "cmd.ps"
    script.write_text('r = apply("RUN_CMD", { cmd: "sleep", args: ["20"] })\n')
    started = time.monotonic()
    proc = fdsl("run", script, "--project", tmp_path, "--allow-command", "sleep", "--timeout", "2", "--yes")
    elapsed = time.monotonic() - started
    assert proc.returncode == 124, proc.stderr
    assert "TimeoutError: the script did not finish within 2 s" in proc.stderr
    assert "at line 1, column" in proc.stderr, proc.stderr
    assert elapsed < 10, elapsed  # not the 20 s of the command


def test_a_timeout_names_the_line_of_a_pure_loop(tmp_path):
    script = tmp_path / "loop.ps"
    script.write_text('log("start")\ni = 0\nwhile true:\n  i = i + 1\n')
    proc = fdsl("run", script, "--root", tmp_path, "--timeout", "1", "--max-steps", "1000000000")
    assert proc.returncode == 124, proc.stderr
    # The loop's line, or the `while` line when the signal lands on its jump back.
    assert re.search(r"TimeoutError: the script did not finish within 1 s\n  at line [34], column ", proc.stderr), proc.stderr


def test_root_is_read_only_and_project_read_write_for_a_ps_script(tmp_path):
    """--root and --project mean what they mean for FilesDSL: --root mounts the directory at /
    read-only, --project read-write with the run log (docs/promptscript.md, "The run's files")."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.txt").write_text("from the project\n")
    script = tmp_path / "rw.ps"
    script.write_text('log(apply("READ_FILE", { path: "a.txt" }))\napply("WRITE_FILE", { path: "b.txt", content: "b" })\n')
    proc = fdsl("run", script, "--root", project, "--yes", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout.startswith("[ps] from the project")
    assert "WRITE_FILE: cannot write '/b.txt': it is read-only here. Readable: /. Writable: nothing (read-only)." in proc.stderr
    assert not (project / "b.txt").exists() and not (project / ".ps-runs").exists()  # no project: no run log
    proc = fdsl("run", script, "--project", project, "--yes", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (project / "b.txt").read_text() == "b" and len(list((project / ".ps-runs").iterdir())) == 1
    proc = fdsl("run", script, "--root", project, "--project", tmp_path, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "both name the directory at /" in proc.stderr


def test_mounts_and_config_give_a_ps_script_the_same_sandbox_as_a_fdsl_one(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "d.txt").write_text("datum\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "s.toml").write_text(
        '[[mounts]]\nhost_path = "data"\nmount_point = "/data"\nmode = "ro"\nread_approval = true\n'
        '[[mounts]]\nhost_path = "out"\nmount_point = "/out"\nmode = "rw"\nsuffixes = [".txt"]\n'
        'write_approval = false\n')
    script = tmp_path / "m.ps"
    script.write_text('log(apply("READ_FILE", { path: "/data/d.txt" }))\n'
                      'log(apply("WRITE_FILE", { path: "/out/z.txt", content: "z" }))\n'
                      'apply("WRITE_FILE", { path: "/out/z.sh", content: "z" })\n')
    proc = fdsl("run", script, "--config", "s.toml", cwd=tmp_path)  # read_approval, and no terminal to ask
    assert proc.returncode == 1 and proc.stdout == ""
    assert "Read from /data/d.txt: needs approval" in proc.stderr
    proc = fdsl("run", script, "--config", "s.toml", "--yes", cwd=tmp_path)
    assert proc.stdout.splitlines() == ["[ps] datum", "", '[ps] {path: "out/z.txt", bytes: 1, created: true}']
    assert proc.returncode == 1 and "has suffix '.sh', not allowed in /out. Allowed suffixes there: .txt." in proc.stderr
    assert (tmp_path / "out" / "z.txt").read_text() == "z" and not (tmp_path / "out" / "z.sh").exists()
    script.write_text('log(apply("SEARCH", { query: "datum" }))\n')
    proc = fdsl("run", script, "--mount", "data:/data", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == '[ps] [{path: "data/d.txt", line: 1, text: "datum"}]\n', proc.stderr
    script.write_text('apply("RUN_CMD", { cmd: "ls" })\n')
    proc = fdsl("run", script, "--mount", "data:/data", "--allow-command", "ls", cwd=tmp_path)
    assert proc.returncode == 1 and "RUN_CMD: commands run in the project, and this run has none" in proc.stderr


@pytest.mark.parametrize("option", [["--project", "."], ["--max-steps", "5"], ["--max-time", "10"],
                                    ["--max-tool-calls", "1"], ["--max-files-changed", "0"], ["--halt-on-loop"],
                                    ["--max-log-bytes", "100000"], ["--allow-command", "ls"]])
def test_promptscript_options_on_a_fdsl_script_are_usage_errors(tmp_path, option):
    script = tmp_path / "x.fdsl"
    script.write_text('print("a")\n')
    proc = fdsl("run", script, *option, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"fdsl: {option[0]}: only for PromptScript (.ps) scripts\n"
    assert proc.stdout == ""
