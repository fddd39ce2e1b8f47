"""run-many on Ray (runtime/fleet.py run_many_ray): a local Ray cluster started by the test;
each script still runs in its own jailed worker, on the Ray worker that took the task, and a
Ray worker killed mid-run loses no result."""

from __future__ import annotations

import threading

import pytest
import ray

from runtime.fleet import run_many_ray
from tests.runtime.test_fleet import LONG, _kill_brokers, job


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def test_jobs_run_on_ray_each_in_its_own_jailed_worker(cluster, tmp_path):
    (tmp_path / "a.txt").write_text("from ray\n")
    jobs = [job(i, f"print({i} + 1)\n", tmp_path) for i in range(4)]
    jobs.append(job(4, 'print(File("/a.txt").read().strip())\n', tmp_path))
    jobs.append(job(5, "print(x)\n", tmp_path))
    results = {r["index"]: r for r in run_many_ray(jobs)}
    assert [results[i]["output"] for i in range(5)] == ["1\n", "2\n", "3\n", "4\n", "from ray\n"]
    assert results[5]["exit_code"] == 1 and results[5]["error"]["line"] == 1
    assert all(r["layers"]["seccomp"] == "active" for r in results.values() if r["layers"])


def test_a_ray_worker_killed_mid_run_loses_no_result(cluster, tmp_path):
    stop, kills = threading.Event(), []
    killer = threading.Thread(target=_kill_brokers, args=(stop, kills, 1))
    killer.start()
    try:
        (result,) = list(run_many_ray([job(0, LONG, tmp_path)], workers=1))
    finally:
        stop.set()
        killer.join()
    assert len(kills) == 1
    assert result["exit_code"] == 0 and result["output"] == "4000000\n" and result["attempts"] == 2
