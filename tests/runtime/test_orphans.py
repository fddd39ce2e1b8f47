"""No worker outlives its broker: one killed (SIGKILL, the OOM killer) mid-run leaves no script
running, in a one-shot run (a worker started fresh) and in a Session (forked by its zygote).
The worker's PID namespace parent watches the broker's end of its pipe (sandbox_worker/hardening.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.support import REPO, assert_all_end

LOOP = "x = 0\\nfor i in [1:1000000]:\\n    for j in [1:1000000]:\\n        x += 1\\n"
BROKERS = {
    "fresh": f'from runtime.api import run_script\nrun_script("{LOOP}", root=ROOT, timeout=300)\n',
    "forked": (f'from runtime.session import Session\nwith Session(root=ROOT, timeout=300, workers=1) as s:\n'
               f'    s.run("print(1)\\n")\n    s.run("{LOOP}")\n'),
}


@pytest.mark.parametrize("how", list(BROKERS))
def test_a_worker_dies_with_its_broker(tmp_path, how):
    code = f"ROOT = {str(tmp_path)!r}\n" + BROKERS[how]
    broker = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
    workers: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 60
        while True:  # the script's process: a worker that is burning CPU
            workers = [p for p in psutil.Process(broker.pid).children(recursive=True) if p.name() == "fdsl-worker"]
            if workers and any(p.cpu_times().user > 0.5 for p in workers):
                break
            assert time.monotonic() < deadline and broker.poll() is None, "the run did not start"
            time.sleep(0.1)
        os.kill(broker.pid, signal.SIGKILL)
        broker.wait()
        assert_all_end(workers, 10, "workers outlived their broker")
    finally:
        broker.kill()
        broker.wait()
        for p in workers:  # (orphans are no longer our descendants)
            try:
                p.kill()
            except psutil.Error:
                pass
