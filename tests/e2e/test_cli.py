"""The real `fdsl` and `fdslc` commands in a subprocess: streams, exit codes, limits, escapes."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import CANARY, REPO


def fdsl(*args, cwd=REPO, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "runtime.cli", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def fdslc(*args):
    return subprocess.run([sys.executable, "-m", "runtime.fdslc", *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=60)


def script(tmp_path: Path, text: str, name: str = "s.fdsl") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_example_runs_and_matches_the_readme():
    proc = fdsl("run", "examples/tour.fdsl", "--root", "examples/docs", "--timeout", "60")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    readme = (REPO / "README.md").read_text()
    assert proc.stdout.strip() in readme


@pytest.mark.parametrize("name", ["tour", "reading", "inventory"])
def test_every_example_runs(name):
    proc = fdsl("run", f"examples/{name}.fdsl", "--root", "examples/docs")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout


def test_runtime_error_goes_to_stderr_with_exit_1(tmp_path, corpus):
    path = script(tmp_path, 'print("before")\nFile("docs/missing.txt")\n')
    proc = fdsl("run", path, "--root", corpus)
    assert proc.returncode == 1
    assert proc.stdout == "before\n"
    assert proc.stderr.startswith("RuntimeError: no such file: docs/missing.txt\n  at line 2, column 1\n")


def test_syntax_error_exit_1(tmp_path, corpus):
    proc = fdsl("run", script(tmp_path, "for x in [1]\n    print(x)\n"), "--root", corpus)
    assert proc.returncode == 1
    assert proc.stderr.startswith("SyntaxError:")
    assert "at line 1, column" in proc.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "missing.fdsl"], "no such script"),
        (["run", "README.md"], "cannot tell the language"),
        (["run", "examples/tour.fdsl", "--root", "no/such/dir"], "not a directory"),
        (["run", "examples/tour.fdsl", "--timeout", "abc"], "--timeout: expected a number of seconds, not 'abc'"),
        (["run", "examples/tour.fdsl", "--timeout", "nan"], "--timeout: must be a positive number of seconds"),
        (["run", "examples/tour.fdsl", "--timeout", "0"], "--timeout: must be a positive number of seconds"),
        (["run", "examples/tour.fdsl", "--timeout", "-1"], "--timeout: must be a positive number of seconds"),
        (["run", "examples/tour.fdsl", "--mount", "examples:docs"], "must start with '/'"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_usage_errors_exit_2(args, message):
    proc = fdsl(*args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_timeout_inf_means_no_limit_also_for_regex_searches(tmp_path, corpus):
    proc = fdsl("run", script(tmp_path, 'print(len(Directory("docs").search("lang.+model", scope="content")))\n'),
                "--root", corpus, "--timeout", "inf")
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) > 0


def test_endless_loop_ends_at_the_timeout_with_124(tmp_path, corpus):
    # What this machine takes to start the CLI and run a script at all, measured first (on a
    # slow one that alone came to 1.1 s, more than the 0.5 s once allowed for it), up to 1.5 s.
    started = time.monotonic()
    assert fdsl("run", script(tmp_path, "print(1)\n", "one.fdsl"), "--root", corpus).returncode == 0
    start_cost = min(time.monotonic() - started, 1.5)
    path = script(tmp_path, "x = 0\nfor i in [1:1000000]:\n    for j in [1:1000000]:\n        x += 1\n")
    started = time.monotonic()
    proc = fdsl("run", path, "--root", corpus, "--timeout", "2")
    elapsed = time.monotonic() - started
    assert proc.returncode == 124
    assert "TimeoutError: the script did not finish within 2 s" in proc.stderr
    assert re.search(r"within 2 s\n  at line [234], column ", proc.stderr), proc.stderr  # in the loops
    # Within a second of the deadline, beyond what a one-line run takes here.
    assert elapsed < 2 + 1 + start_cost, (elapsed, start_cost)


def test_memory_bomb_ends_with_a_limit_error(tmp_path, corpus):
    path = script(tmp_path, 'x = "a"\nfor i in [1:40]:\n    x = x + x\nprint(len(x))\n')
    proc = fdsl("run", path, "--root", corpus, "--memory", "128")
    assert proc.returncode == 1
    assert proc.stderr.startswith("LimitError: memory limit exceeded (128 MiB)")
    assert "at line 3" in proc.stderr


def test_output_flood_is_cut_at_the_cap(tmp_path, corpus):
    path = script(tmp_path, 'for i in [1:1000000]:\n    print("0123456789")\n')
    proc = fdsl("run", path, "--root", corpus, "--max-output", "5000")
    assert proc.returncode == 1
    assert len(proc.stdout.encode()) == 5000
    assert "LimitError: output limit exceeded: the script printed more than 5000 bytes" in proc.stderr


DSL_ESCAPES = [
    'f = File("docs/plain.txt")\nprint(f.read.__globals__)',
    'print(Directory("docs").__class__)',
    'f = File("docs/plain.txt")\nprint("{0.__class__}".format(f))',
    'print(getattr(File("docs/plain.txt"), "path"))',
    "import os",
    'print(open("/etc/passwd"))',
    'print(eval("1"))',
    'x = File("docs/plain.txt")\nprint(x._client)',
    'print(__import__("os"))',
]


@pytest.mark.parametrize("source", DSL_ESCAPES)
def test_dsl_level_escapes_end_in_a_clean_error(tmp_path, corpus, source):
    proc = fdsl("run", script(tmp_path, source), "--root", corpus)
    assert proc.returncode == 1
    assert proc.stderr.startswith(("SyntaxError:", "RuntimeError:"))
    assert "  at line " in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


CANARY_PATHS = [
    "../canary.txt",
    "docs/../../canary.txt",
    "/../canary.txt",
    "docs/escape",
    "docs/escape_dir/canary.txt",
]


@pytest.mark.parametrize("path", CANARY_PATHS)
def test_paths_cannot_reach_the_canary_beside_the_root(tmp_path, corpus, path):
    proc = fdsl("run", script(tmp_path, f'print(File("{path}").read())'), "--root", corpus)
    assert proc.returncode == 1
    assert CANARY not in proc.stdout + proc.stderr
    assert str(corpus.parent) not in proc.stderr
    assert proc.stderr.startswith(("SandboxError:", "RuntimeError:"))


def test_absolute_host_path_is_a_virtual_path(tmp_path, corpus):
    canary = corpus.parent / "canary.txt"
    proc = fdsl("run", script(tmp_path, f'print(File("{canary}").read())'), "--root", corpus)
    assert proc.returncode == 1
    assert CANARY not in proc.stdout + proc.stderr
    assert str(corpus.parent) not in proc.stderr.replace(str(canary).lstrip("/"), "")


def test_listings_skip_symlinks_out_and_never_reveal_targets(tmp_path, corpus):
    source = 'for f in Directory("docs").files():\n    print(f)\nprint(Directory("docs").list())\n'
    proc = fdsl("run", script(tmp_path, source), "--root", corpus)
    assert proc.returncode == 0, proc.stderr
    assert str(corpus.parent) not in proc.stdout
    assert "canary" not in proc.stdout


def test_verbose_prints_figures(tmp_path, corpus):
    proc = fdsl("run", script(tmp_path, "print(1)"), "--root", corpus, "--verbose")
    assert proc.returncode == 0
    for figure in ("transpile_s", "worker_start_s", "run_s", "wall_s", "worker_peak_rss_kib"):
        assert f"[fdsl] {figure}:" in proc.stderr


def test_fdslc_emit_and_check():
    emitted = fdslc("examples/tour.fdsl", "--emit")
    assert emitted.returncode == 0
    assert "# L2: docs = Directory(\"/\")" in emitted.stdout
    assert fdslc("examples/tour.fdsl", "--check").returncode == 0


def test_a_script_on_stdin_runs_and_an_absolute_host_path_is_explained(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "run", "-", "--root", str(tmp_path)], cwd=REPO,
                          input='print(File("notes.txt").read())\nprint(File("/etc/passwd").read())\n',
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == "hello\n\n"  # the file ends with a newline; print adds one
    assert proc.stderr.startswith('RuntimeError: no such file: etc/passwd (paths are inside the sandbox: "/" is its '
                                  "root, not the machine's; the root holds: notes.txt)\n  at line 2"), proc.stderr
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "run", "-", "--lang", "ps", "--root", str(tmp_path)],
                          cwd=REPO, input='log("from stdin")\n', capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "[ps] from stdin\n", proc.stderr


def test_mounting_the_machines_root_is_warned_about():
    proc = fdsl("run", "examples/tour.fdsl", "--root", "/", "--timeout", "20")
    assert ("fdsl: warning: / is the machine's own root directory: the script sees every file this user can read "
            "(read-only)") in proc.stderr


@pytest.mark.parametrize("signum,code", [(2, 130), (15, 143), (1, 129)])
def test_sigint_sigterm_and_sighup_end_the_worker_with_one_line(tmp_path, signum, code):
    """Ctrl-C (SIGINT), SIGTERM and SIGHUP (the terminal closed): one line on stderr, exit 128 +
    the signal, and not one process of the run left (the worker ran at 100% CPU as init's child
    before)."""
    import psutil

    path = script(tmp_path, "x = 0\nfor j in [1:1000000]:\n    for i in [1:1000000]:\n        x = x + i\n")
    proc = subprocess.Popen([sys.executable, "-m", "runtime.cli", "run", str(path), "--root", str(tmp_path),
                             "--timeout", "60"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 20
    while not parent.children(recursive=True) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # the worker is running the loop
    started = parent.children(recursive=True)
    assert started
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == code, err
    name = {1: "SIGHUP", 2: "SIGINT", 15: "SIGTERM"}[signum]
    assert err == f"fdsl: stopped by {name}; the script's worker and every process it started were ended\n"
    gone, alive = psutil.wait_procs(started, timeout=5)
    assert not alive, alive


def test_a_stopped_run_with_json_still_prints_its_one_object(tmp_path):
    import json

    import psutil

    path = script(tmp_path, "x = 0\nfor j in [1:1000000]:\n    for i in [1:1000000]:\n        x = x + i\n")
    proc = subprocess.Popen([sys.executable, "-m", "runtime.cli", "run", str(path), "--root", str(tmp_path), "--json"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 20
    while not parent.children(recursive=True) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(2)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 130
    obj = json.loads(out)
    assert obj["exit_code"] == 130 and obj["error"]["kind"] == "Stopped"


def test_help_shows_each_language_on_one_screen_and_the_full_reference_on_demand():
    proc = fdsl("--help")
    assert proc.returncode == 0 and "FilesDSL (.fdsl):" in proc.stdout and "PromptScript (.ps):" in proc.stdout
    assert proc.stdout.count("example:") == 2
    proc = fdsl("help", "promptscript")
    assert proc.returncode == 0 and proc.stdout == (REPO / "docs" / "promptscript.md").read_text(encoding="utf-8")
    proc = fdsl("help", "python")
    assert proc.returncode == 2 and "invalid choice: 'python'" in proc.stderr
