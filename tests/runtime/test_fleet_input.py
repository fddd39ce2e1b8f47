"""The job lines of `fdsl run-many --from` (runtime/fleet.py jobs_from_jsonl): every line is
checked before anything runs, and a bad one is a usage error naming its line, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from runtime.errors import RunSetupError
from runtime.fleet import MAX_NESTING, jobs_from_jsonl
from tests.support import REPO

GOOD = '{"source": "print(1)"}'


def _named(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "jobs.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RunSetupError) as caught:
        jobs_from_jsonl(str(path), {})
    assert f"--from {path}, {message}" in str(caught.value)


@pytest.mark.parametrize("line, message", [
    # types, each refused here rather than failing its job after the rest of the batch ran
    ('{"source": "print(1)", "mounts": "abc"}', '"mounts" must be a list of "HOST:/point[:ro|rw]" texts, not text'),
    ('{"source": "print(1)", "mounts": [1]}', '"mounts" must be a list'),
    ('{"source": "print(1)", "mounts": ["nowhere"]}', '"mounts": --mount \'nowhere\': expected HOST:/point'),
    ('{"source": "print(1)", "mounts": ["/no/such/dir:/d"]}', "\"mounts\": --mount '/no/such/dir:/d': /no/such/dir is not a directory"),
    ('{"source": "print(1)", "root": ["a"]}', '"root" must be a directory\'s path, not a list'),
    ('{"source": "print(1)", "root": 5}', '"root" must be a directory\'s path, not a number'),
    ('{"source": "print(1)", "root": "/no/such/dir"}', '"root" /no/such/dir: not a directory'),
    ('{"source": "log(1)", "lang": "ps", "project": 5}', '"project" must be a directory\'s path, not a number'),
    ('{"source": "print(1)", "memory_mb": [1]}', "memory_mb must be a number of MiB from 16 to 1048576, not [1]"),
    ('{"source": "print(1)", "memory_mb": true}', "memory_mb must be a number of MiB"),
    ('{"source": "print(1)", "max_output": 1.5}', "max_output must be a number of bytes"),
    ('{"source": "print(1)", "timeout": "5"}', "timeout must be a number of seconds from 0.001, not '5'"),
    ('{"source": "print(1)", "timeout": -1}', "timeout must be a number of seconds from 0.001, not -1"),
    ('{"script": 7}', '"script" must be a path'),
    ('{"source": "print(1)", "lang": "py"}', '"lang" must be "fdsl" or "ps", not "py"'),
    # a timeout that would never end, or numbers JSON does not have
    ('{"source": "print(1)", "timeout": Infinity}', "not JSON (Infinity is not a JSON number)"),
    ('{"source": "print(1)", "timeout": NaN}', "not JSON (NaN is not a JSON number)"),
    ('{"source": "print(1)", "timeout": -Infinity}', "not JSON (-Infinity is not a JSON number)"),
    ('{"source": "print(1)", "timeout": 1e400}', '"timeout" holds a number too large to be finite'),
    ('{"source": "print(1)", "timeout": 1' + "0" * 400 + "}", "timeout must be a number of seconds"),
    ('{"source": "print(1)", "id": 1' + "0" * 5000 + "}", "a number of more than 4300 digits"),
    # nesting: too deep to parse, or to send to a pool process
    ('{"source": "print(1)", "id": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ('{"source": "print(1)", "id": ' + "[" * 100 + "]" * 100 + "}", f'"id" is nested more than {MAX_NESTING} levels'),
    # text that is not: a lone surrogate cannot be written back as UTF-8
    ('{"source": "print(1)", "id": "\\ud800"}', "\"id\" holds a lone surrogate ('\\ud800')"),
    ('{"source": "print(\\"\\udfff\\")"}', '"source" holds a lone surrogate'),
    ('{"script": "\\ud800.fdsl"}', '"script" holds a lone surrogate'),
    ('{"source": "print(1)", "id": {"\\ud800": 1}}', '"id" holds a lone surrogate'),
])
def test_a_bad_value_is_named_with_its_line(tmp_path, line, message):
    _named(tmp_path, f"{GOOD}\n\n{line}\n{GOOD}\n", f"line 3: {message}")


def test_null_is_the_command_lines_value(tmp_path):
    """A key given null is as if absent: the command line's default, not the library's."""
    (tmp_path / "root").mkdir()
    path = tmp_path / "jobs.jsonl"
    path.write_text('{"source": "print(1)", "memory_mb": null, "root": null, "mounts": null, "timeout": null, '
                    '"lang": null, "id": null, "project": null}\n{"script": null, "source": "print(2)"}\n')
    defaults = {"root": str(tmp_path / "root"), "mounts": [f"{tmp_path}:/m"], "timeout": 7, "memory_mb": 64,
                "max_output": 10}
    first, second = jobs_from_jsonl(str(path), defaults)
    for job in (first, second):
        assert (job.root, job.mounts, job.lang, job.id) == (str(tmp_path / "root"), [f"{tmp_path}:/m"], "fdsl", None)
        assert job.limits == {"timeout": 7, "memory_mb": 64, "max_output": 10}
    assert second.source == "print(2)"


def test_lines_end_at_newline_alone(tmp_path):
    """JSON written with ensure_ascii=False may hold U+2028, U+0085, \\x0c... inside a string:
    they do not end its line (str.splitlines() would split there). A "\\r\\n" ending is one line end."""
    separators = "\u2028\u2029\u0085\x1c\x1d\x1e\x0b\x0c"
    lines = [json.dumps({"source": f'print("{sep}")', "id": f"a{sep}b"}, ensure_ascii=False) for sep in separators]
    path = tmp_path / "jobs.jsonl"
    path.write_bytes("\r\n".join(lines).encode("utf-8") + b"\r\n\r\n")
    jobs = jobs_from_jsonl(str(path), {})
    assert [job.id for job in jobs] == [f"a{sep}b" for sep in separators]
    assert [job.script for job in jobs] == [f"<source {n}>" for n in range(1, len(separators) + 1)]
    path.write_bytes(("\n".join(lines) + "\n{oops}\n").encode("utf-8"))
    with pytest.raises(RunSetupError, match=f"line {len(separators) + 1}: not JSON"):
        jobs_from_jsonl(str(path), {})


def test_a_file_that_is_not_utf8_is_named_with_its_line_and_byte(tmp_path):
    path = tmp_path / "jobs.jsonl"
    path.write_bytes(b'{"source": "print(1)"}\n{"source": "print(\xff)"}\n')
    with pytest.raises(RunSetupError, match=r"line 2: not UTF-8 text \(byte 41 of the file\)"):
        jobs_from_jsonl(str(path), {})


def test_a_utf8_bom_is_not_part_of_the_first_line(tmp_path):
    path = tmp_path / "jobs.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"source": "print(1)", "id": 1}\n')
    assert [job.id for job in jobs_from_jsonl(str(path), {})] == [1]


def fdsl(*args, cwd):
    return subprocess.run([sys.executable, "-m", "runtime.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("line, message", [
    ('{"source": "print(1)", "id": ' + "[" * 100_000 + "]" * 100_000 + "}", "line 2: nested too deeply"),
    ('{"source": "print(1)", "id": 1' + "0" * 5000 + "}", "line 2: a number of more than 4300 digits"),
    ('{"source": "print(1)", "mounts": "abc"}', 'line 2: "mounts" must be a list'),
    ('{"source": "print(1)", "timeout": Infinity}', "line 2: not JSON (Infinity is not a JSON number)"),
])
def test_fdsl_run_many_refuses_a_bad_line_before_running_anything(tmp_path, line, message):
    (tmp_path / "jobs.jsonl").write_text(f"{GOOD}\n{line}\n")
    proc = fdsl("run-many", "--from", "jobs.jsonl", "--root", ".", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--root", "nowhere"], "--root nowhere: not a directory"),
    (["--project", "nowhere"], "--project nowhere: not a directory"),
    (["--mount", "nowhere:/m"], "--mount 'nowhere:/m': nowhere is not a directory"),
])
def test_fdsl_run_many_checks_the_command_lines_sandbox_first(tmp_path, args, message):
    (tmp_path / "a.fdsl").write_text("print(1)\n")
    proc = fdsl("run-many", "a.fdsl", *args, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "" and message in proc.stderr, proc.stderr


def test_a_name_that_is_not_utf8_is_written_escaped_not_lost(tmp_path):
    """A script's name from the command line may hold bytes that are not UTF-8 (a lone surrogate
    once decoded): its result is written with a \\u escape, and the results after it too."""
    name = b"\xff.fdsl"
    (tmp_path / name.decode("utf-8", "surrogateescape")).write_text("print(1)\n")
    (tmp_path / "b.fdsl").write_text("print(2)\n")
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "run-many", name, b"b.fdsl", b"--root", b".",
                           b"--jobs", b"1"], cwd=tmp_path, capture_output=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines()]
    assert [(r["script"], r["output"]) for r in results] == [("\udcff.fdsl", "1\n"), ("b.fdsl", "2\n")]


def test_for_a_cluster_the_paths_are_not_checked_here_but_the_types_are(tmp_path):
    """--backend ray: the directories a job names are the nodes' (docs/scale.md), maybe not this machine's."""
    path = tmp_path / "jobs.jsonl"
    path.write_text('{"source": "print(1)", "root": "/on/the/nodes", "mounts": ["/there:/d"]}\n')
    (job,) = jobs_from_jsonl(str(path), {}, check_paths=False)
    assert (job.root, job.mounts) == ("/on/the/nodes", ["/there:/d"])
    path.write_text('{"source": "print(1)", "root": 5}\n')
    with pytest.raises(RunSetupError, match='line 1: "root" must be a directory\'s path, not a number'):
        jobs_from_jsonl(str(path), {}, check_paths=False)
