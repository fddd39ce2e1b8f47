"""What tests share beyond fixtures: the repository's places, annotated test data, runners."""

from __future__ import annotations

import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
TESTDATA = TESTS / "testdata"

# What every escape test plants outside the sandbox: finding it in any output is a leak.
CANARY = "CANARY-7f3a-do-not-leak"


def assert_all_end(processes: list, within: float, what: str) -> None:
    """Every psutil.Process of `processes` ends (or is a zombie) within `within` seconds; else
    fail with `what` and those still alive."""
    import psutil

    deadline = time.monotonic() + within
    while True:
        alive = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return
        assert time.monotonic() < deadline, f"{what}: {[(p.pid, p.name()) for p in alive]}"
        time.sleep(0.05)
