"""Many scripts on a local pool (runtime/fleet.py, `fdsl run-many`): every job gives exactly one
result, each in its own worker, and a broker process that dies loses no result silently, costs
no other job an attempt, and no process of the pool outlives the command (a signal, SIGKILL).
tests/runtime/test_fleet_input.py: the job lines of --from."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from runtime.errors import RunSetupError
from runtime.fleet import Job, jobs_from_jsonl, run_many
from tests.support import REPO, assert_all_end

LONG = "x = 0\nfor i in [1:1000000]:\n    for j in [1:4]:\n        x += 1\nprint(x)\n"  # a few seconds


def job(index: int, source: str, root, **limits) -> Job:
    return Job(index, f"<job {index}>", source, "fdsl", root=str(root), limits={"timeout": 60, **limits})


def test_every_job_gives_one_result(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    jobs = [job(i, f'print({i} * 3)\n', tmp_path) for i in range(5)]
    jobs.append(job(5, 'print(File("/a.txt").read().strip())\n', tmp_path))
    jobs.append(job(6, "print(1 +)\n", tmp_path))
    jobs.append(job(7, "x = 0\nfor i in [1:1000000]:\n    for j in [1:1000000]:\n        x += 1\n", tmp_path, timeout=1))
    seen = []
    results = {r["index"]: r for r in run_many(jobs, workers=2, on_progress=lambda done, total: seen.append((done, total)))}
    assert sorted(results) == list(range(8))
    assert [results[i]["output"] for i in range(5)] == [f"{i * 3}\n" for i in range(5)]
    assert results[5]["output"] == "hello\n"
    assert results[6]["exit_code"] == 1 and results[6]["error"]["kind"] == "SyntaxError"
    assert results[6]["error"]["line"] == 1
    assert results[7]["exit_code"] == 124 and results[7]["error"]["kind"] == "TimeoutError"
    assert all(r["attempts"] == 1 for r in results.values())
    assert seen == [(n, 8) for n in range(1, 9)]


def _kill_brokers(stop: threading.Event, kills: list, most: int, memory_mb: int | None = None) -> None:
    """Kill the process (a pool's broker, a Ray worker: our descendants only) whose worker is
    running a script (it has burnt CPU: not a worker started ahead and waiting), up to `most` times;
    with `memory_mb`, only one whose script runs with that memory limit."""
    me = psutil.Process()
    while not stop.is_set() and len(kills) < most:
        for proc in me.children(recursive=True):
            try:
                if proc.name() != "fdsl-worker" or proc.pid in kills:
                    continue
                running = [p for p in [proc, *proc.children()] if sum(p.cpu_times()[:2]) > 0.3]
                if memory_mb is not None:
                    running = [p for p in running if _address_space_limit(p.pid) == memory_mb << 20]
                broker = proc.parent()
                if broker is None or broker.name() == "fdsl-worker":
                    continue  # the script's process in the worker's PID namespace: its parent is the worker
                if running and broker.pid != me.pid:
                    kills.append(proc.pid)
                    broker.kill()
                    break
            except (psutil.Error, OSError):  # (it ended meanwhile)
                continue
        time.sleep(0.05)


def _address_space_limit(pid: int) -> int | None:
    """From /proc (psutil's prlimit is refused for a worker in its own user namespace)."""
    with open(f"/proc/{pid}/limits") as limits:
        for line in limits:
            if line.startswith("Max address space"):
                soft = line.split()[3]
                return None if soft == "unlimited" else int(soft)
    return None


def test_a_broker_process_that_dies_is_replaced_and_its_job_run_again(tmp_path):
    stop, kills = threading.Event(), []
    killer = threading.Thread(target=_kill_brokers, args=(stop, kills, 1))
    killer.start()
    try:
        (result,) = list(run_many([job(0, LONG, tmp_path)], workers=1))
    finally:
        stop.set()
        killer.join()
    assert len(kills) == 1
    assert result["exit_code"] == 0 and result["output"] == "4000000\n" and result["attempts"] == 2


def test_a_job_whose_broker_dies_twice_is_reported_not_dropped(tmp_path):
    stop, kills = threading.Event(), []
    killer = threading.Thread(target=_kill_brokers, args=(stop, kills, 2))
    killer.start()
    try:
        results = list(run_many([job(0, LONG, tmp_path), job(1, "print(1)\n", tmp_path)], workers=1))
    finally:
        stop.set()
        killer.join()
    assert len(kills) == 2
    by_index = {r["index"]: r for r in results}
    assert by_index[0]["exit_code"] is None and by_index[0]["error"]["kind"] == "InternalError"
    assert "died 2 times" in by_index[0]["error"]["message"] and by_index[0]["attempts"] == 2
    assert by_index[1]["output"] == "1\n"


def test_a_dying_broker_costs_only_its_own_job_and_is_noticed_at_once(tmp_path):
    """A's broker is killed while B runs beside it: B keeps running, charged one attempt; A is
    run again at once (on a new pool process), not once B's run ends."""
    shorter = LONG.replace("[1:4]", "[1:2]")
    spin = "x = 0\nfor i in [1:1000000]:\n    for j in [1:1000000]:\n        x += 1\n"
    stop, kills = threading.Event(), []
    killer = threading.Thread(target=_kill_brokers, args=(stop, kills, 1, 300))
    killer.start()
    try:
        results = list(run_many([job(0, shorter, tmp_path, memory_mb=300), job(1, spin, tmp_path, timeout=20)],
                                workers=2))
    finally:
        stop.set()
        killer.join()
    assert len(kills) == 1
    assert [r["index"] for r in results] == [0, 1]  # A's second run ended within B's one
    assert results[0]["exit_code"] == 0 and results[0]["output"] == "2000000\n" and results[0]["attempts"] == 2
    assert results[1]["exit_code"] == 124 and results[1]["attempts"] == 1, results[1]


@pytest.mark.parametrize("line, message", [
    ('{"source": "print(1)", "colour": 1}', "line 1: unknown key(s) colour"),
    ('{"source": "print(1)", "script": "a.fdsl"}', "line 1: give exactly one of"),
    ('{"source": 3}', "line 1: \"source\" must be text"),
    ('[1]', "line 1: expected an object"),
    ('{"source": ', "line 1: not JSON"),
    ('{"script": "missing.fdsl"}', "line 1: no such script: missing.fdsl"),
])
def test_a_bad_job_line_is_named(tmp_path, line, message):
    path = tmp_path / "jobs.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(RunSetupError, match=message.replace("(", r"\(").replace(")", r"\)")):
        jobs_from_jsonl(str(path), {})


def fdsl(*args, cwd):
    return subprocess.run([sys.executable, "-m", "runtime.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_fdsl_run_many_prints_json_lines_and_a_summary(tmp_path):
    (tmp_path / "a.fdsl").write_text("print(6 * 7)\n")
    (tmp_path / "bad.fdsl").write_text("print(\n")
    (tmp_path / "jobs.jsonl").write_text('{"source": "log(\\"ps\\")", "lang": "ps", "id": "p"}\n\n'
                                         '{"script": "a.fdsl", "id": 7}\n')
    proc = fdsl("run-many", "a.fdsl", "bad.fdsl", "--from", "jobs.jsonl", "--root", ".", "--jobs", "2", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    results = sorted((json.loads(line) for line in proc.stdout.splitlines()), key=lambda r: r["index"])
    assert [(r["script"], r["id"], r["exit_code"], r["output"]) for r in results] == [
        ("a.fdsl", None, 0, "42\n"), ("bad.fdsl", None, 1, ""), ("<source 1>", "p", 0, "[ps] ps\n"),
        ("a.fdsl", 7, 0, "42\n")]
    assert "run-many: 4 scripts, 3 ok, 1 failed" in proc.stderr
    ok = fdsl("run-many", "a.fdsl", "--root", ".", cwd=tmp_path)
    assert ok.returncode == 0 and json.loads(ok.stdout)["output"] == "42\n"


@pytest.mark.parametrize("args, message", [
    ([], "give scripts, or --from FILE.jsonl"),
    (["a.txt"], "cannot tell its language"),
    (["--from", "nope.jsonl"], "--from nope.jsonl: cannot read it"),
    (["a.fdsl", "--jobs", "-1"], "--jobs cannot be negative"),
])
def test_run_many_usage_errors_exit_2(tmp_path, args, message):
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "a.fdsl").write_text("print(1)\n")
    proc = fdsl("run-many", *args, cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr and proc.stdout == ""


def test_jobs_that_differ_only_in_timeout_share_a_session_and_keep_their_own(tmp_path):
    from runtime import fleet

    spin = "x = 0\nfor i in [1:1000000]:\n    for j in [1:1000000]:\n        x += 1\n"
    try:
        first = fleet.run_job(job(0, "print(1)\n", tmp_path, timeout=2))
        second = fleet.run_job(job(1, "print(2)\n", tmp_path, timeout=30))  # longer: the session is made again for it
        third = fleet.run_job(job(2, spin, tmp_path, timeout=1))  # shorter: the session's, with its own wall clock
        fourth = fleet.run_job(job(3, "print(4)\n", tmp_path))  # none given: the default, 60 s, makes it again
        bad = fleet.run_job(job(4, "print(5)\n", tmp_path, timeout="soon"))
        sessions = list(fleet._sessions.values())
        assert len(sessions) == 1 and sessions[0].limits.timeout == 60
    finally:
        for session in fleet._sessions.values():
            session.close()
        fleet._sessions.clear()
    assert [first["output"], second["output"], fourth["output"]] == ["1\n", "2\n", "4\n"]
    assert third["exit_code"] == 124 and third["error"]["kind"] == "TimeoutError"
    assert third["figures"]["wall_s"] < 10, third  # its own 1 s, not the session's 30
    assert bad["exit_code"] == 2 and "timeout" in bad["error"]["message"], bad


def test_the_fdsl_command_runs_a_batch(tmp_path):
    """bin/fdsl (the installed `fdsl`) is the main module there: a pool that ran it again in
    each pool process (as multiprocessing's forkserver did) ran the command again and died, for
    every job."""
    (tmp_path / "a.fdsl").write_text("print(6 * 7)\n")
    (tmp_path / "b.fdsl").write_text("print(1)\n")
    proc = subprocess.run([sys.executable, str(REPO / "bin" / "fdsl"), "run-many", "a.fdsl", "b.fdsl", "--root", ".",
                           "--jobs", "2"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    results = sorted((json.loads(line) for line in proc.stdout.splitlines()), key=lambda r: r["index"])
    assert [(r["script"], r["output"], r["attempts"]) for r in results] == [("a.fdsl", "42\n", 1), ("b.fdsl", "1\n", 1)]


def test_bin_fdsl_imported_again_as_a_module_runs_nothing():
    """multiprocessing's spawn and forkserver import the main module again in every child, as
    __mp_main__: bin/fdsl must not run the command then, nor import more than it needs."""
    code = ("import runpy, sys\nsys.argv = ['fdsl', 'run-many']\n"
            "runpy.run_path('bin/fdsl', run_name='__mp_main__')\n"
            "print('imported', 'runtime.cli' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert (proc.returncode, proc.stdout) == (0, "imported False\n"), proc.stderr


SPIN = "x = 0\nfor i in [1:1000000]:\n    for j in [1:1000000]:\n        x += 1\n"


def _spinning_batch(tmp_path) -> tuple[subprocess.Popen, list[psutil.Process]]:
    """`fdsl run-many` on two scripts that never end (--timeout inf), once both run: the command
    and every process under it (pool processes, zygotes, workers)."""
    (tmp_path / "spin.fdsl").write_text(SPIN)
    proc = subprocess.Popen([sys.executable, "-m", "runtime.cli", "run-many", "spin.fdsl", "spin.fdsl", "--root", ".",
                             "--jobs", "2", "--timeout", "inf"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    deadline = time.monotonic() + 90
    while True:
        processes = psutil.Process(proc.pid).children(recursive=True)
        try:
            spinning = [p for p in processes if p.name() == "fdsl-worker" and sum(p.cpu_times()[:2]) > 0.3]
        except psutil.Error:
            spinning = []
        if len(spinning) >= 2:
            return proc, processes
        assert time.monotonic() < deadline and proc.poll() is None, "the scripts did not start"
        time.sleep(0.1)


def _end_left(proc: subprocess.Popen, processes: list[psutil.Process]) -> None:
    """(After a failure: orphans are no longer our descendants, and these scripts never end.)"""
    proc.kill()
    for p in processes:
        try:
            p.kill()
        except psutil.Error:
            pass
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()


def test_sigterm_ends_every_running_script_at_once_and_exits_143(tmp_path):
    proc, processes = _spinning_batch(tmp_path)
    try:
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)  # the scripts have no wall clock: only the signal ends them
        assert proc.returncode == 143 and time.monotonic() - sent < 15, err
        assert "stopped by SIGTERM" in err and out == ""
        assert_all_end(processes, 5, "outlived the command")
    finally:
        _end_left(proc, processes)


def test_a_killed_command_leaves_no_process_running(tmp_path):
    """SIGKILL (or the OOM killer) gives the command no chance to end its pool: each pool process
    ends with it (PR_SET_PDEATHSIG), and its script's worker with that."""
    proc, processes = _spinning_batch(tmp_path)
    try:
        proc.kill()
        proc.wait()
        assert_all_end(processes, 10, "outlived the command")
    finally:
        _end_left(proc, processes)


def test_a_stdout_closed_early_is_not_a_success(tmp_path):
    (tmp_path / "a.fdsl").write_text("print(1)\n")
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads the results: the first one cannot be written
    try:
        proc = subprocess.run([sys.executable, "-m", "runtime.cli", "run-many", "a.fdsl", "a.fdsl", "--root", ".",
                               "--jobs", "1"], cwd=tmp_path, stdout=writer, stderr=subprocess.PIPE, text=True,
                              timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    finally:
        os.close(writer)
    assert proc.returncode == 1, proc.stderr
    assert "stdout closed after 0 of 2 results" in proc.stderr and "Traceback" not in proc.stderr


def test_a_closed_stdout_is_a_usage_error(tmp_path):
    (tmp_path / "a.fdsl").write_text("print(1)\n")
    proc = subprocess.run(["sh", "-c", 'exec "$0" "$@" >&-', sys.executable, "-m", "runtime.cli", "run-many", "a.fdsl",
                           "--root", "."], cwd=tmp_path, stderr=subprocess.PIPE, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2 and "stdout is closed" in proc.stderr, proc.stderr
