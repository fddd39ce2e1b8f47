"""`fdsl run --json`: one JSON object on stdout (exit_code, output, error with kind, message,
line and column, figures, warnings) and nothing else there; the exit code as without --json.
Success, a script error, a timeout and usage errors, for FilesDSL and PromptScript."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support import REPO


def run_json(*args, cwd=REPO, stdin: str | None = None) -> tuple[int, dict, str]:
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "run", "--json", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=60, input=stdin)
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout  # one object, nothing else on stdout
    return proc.returncode, json.loads(lines[0]), proc.stderr


def test_success_carries_the_output_and_the_figures():
    code, obj, stderr = run_json("examples/tour.fdsl", "--root", "examples/docs")
    assert code == 0 and stderr == ""
    assert set(obj) == {"exit_code", "output", "error", "figures", "warnings", "layers"}
    assert obj["exit_code"] == 0 and obj["error"] is None and obj["warnings"] == []
    assert obj["output"].startswith("Collection: 6 files\nFILE: reports/annual-report.pdf - 4 pages\n")
    assert obj["figures"]["wall_s"] > 0 and "worker_start_s" in obj["figures"]


def test_a_script_error_is_located(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "s.fdsl").write_text('print("before")\nprint(File("docs/missing.txt").read())\n')
    code, obj, stderr = run_json(tmp_path / "s.fdsl", "--root", tmp_path)
    assert code == 1 and stderr == ""
    assert obj["exit_code"] == 1 and obj["output"] == "before\n"
    assert obj["error"] == {
        "kind": "RuntimeError", "message": "no such file: docs/missing.txt", "line": 2, "column": 7,
        "text": obj["error"]["text"],
    }
    assert obj["error"]["text"].startswith("RuntimeError: no such file: docs/missing.txt\n  at line 2, column 7\n")


def test_a_syntax_error_is_located(tmp_path: Path):
    (tmp_path / "s.fdsl").write_text("for x in [1]\n    print(x)\n")
    code, obj, _ = run_json(tmp_path / "s.fdsl", "--root", tmp_path)
    assert code == 1 and obj["error"]["kind"] == "SyntaxError" and obj["error"]["line"] == 1
    assert isinstance(obj["error"]["column"], int)


def test_a_timeout_is_exit_124_with_the_line(tmp_path: Path):
    loops = "n = 0\nfor i in [1:1000]:\n    for j in [1:1000]:\n        for k in [1:1000]:\n            n = n + 1\n"
    (tmp_path / "slow.fdsl").write_text(loops)
    code, obj, _ = run_json(tmp_path / "slow.fdsl", "--root", tmp_path, "--timeout", "1")
    assert code == 124 and obj["exit_code"] == 124
    assert obj["error"]["kind"] == "TimeoutError" and obj["error"]["line"] in (2, 3, 4, 5)


def test_a_usage_error_is_the_object_too(tmp_path: Path):
    code, obj, stderr = run_json(tmp_path / "missing.fdsl")
    assert code == 2 and stderr == ""
    assert obj["exit_code"] == 2 and obj["output"] == ""
    assert obj["error"]["kind"] == "UsageError" and obj["error"]["message"].startswith("no such script:")
    (tmp_path / "s.fdsl").write_text("print(1)\n")
    code, obj, _ = run_json(tmp_path / "s.fdsl", "--root", tmp_path / "nowhere")
    assert code == 2 and "not a directory" in obj["error"]["message"] and obj["error"]["line"] is None
    code, obj, _ = run_json(tmp_path / "s.fdsl", "--root", tmp_path, "--memory", "0")
    assert code == 2 and obj["error"]["message"].startswith("--memory")


def test_an_option_argparse_refuses_leaves_stdout_empty():
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "run", "--json", "x.fdsl", "--timeout", "-1"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == "" and "--timeout" in proc.stderr


def test_stdin_and_promptscript(tmp_path: Path):
    code, obj, _ = run_json("-", "--root", tmp_path, stdin='print("from stdin")\n')
    assert code == 0 and obj["output"] == "from stdin\n"
    (tmp_path / "p.ps").write_text('log("hello")\n')
    code, obj, _ = run_json(tmp_path / "p.ps", "--project", tmp_path)
    assert code == 0 and obj["output"] == "[ps] hello\n" and obj["error"] is None
