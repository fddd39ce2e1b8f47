"""What the process-layer tests share: plain Python run in a hardened worker, and a loopback
listener for the network attacks."""

from __future__ import annotations

import socket
import time

import pytest

from runtime.broker import Broker
from runtime.supervisor import Limits, run_worker, start_worker
from runtime.zygote import Zygote
from wire.layers import LAYERS


class Ahead(frozenset):
    """Every layer, applied by a worker started and hardened before its script arrives (a
    Session's pool, runtime/session.py): the attacks must fail there exactly as in a one-shot
    worker with every layer."""


class Forked(Ahead):
    """Every layer, applied by a worker forked from a zygote (runtime/zygote.py, a Session's
    usual worker) before its script arrives."""


AHEAD = Ahead(LAYERS)
FORKED = Forked(LAYERS)
ZYGOTE = Zygote()  # one for the test process: its forks are this process's children


@pytest.fixture(scope="session", autouse=True)
def _close_zygote():
    yield
    ZYGOTE.close()


def forked_worker():
    worker = ZYGOTE.spawn()
    assert worker is not None, f"the zygote cannot fork: {ZYGOTE.broken}"
    return worker


def run_os(code: str, layers, timeout: float = 10.0, memory_mb: int = 256, limits: Limits | None = None):
    """Run `code` as plain Python (`--mode os`) in a worker with only `layers` applied (None:
    all; AHEAD: all, in a worker hardened ahead; FORKED: the same, forked from a zygote). Returns
    (WorkerResult, everything it printed)."""
    output: list[str] = []
    limits = limits or Limits(timeout=timeout, memory_mb=memory_mb, max_output=100_000)
    ahead = isinstance(layers, Ahead)
    proc = (forked_worker() if isinstance(layers, Forked) else start_worker(preload=True)) if ahead else None
    deadline = time.monotonic() + limits.timeout
    result = run_worker(code, Broker({"ping": lambda: None}), limits, deadline, output.append, mode="os",
                        layers=None if layers is None or ahead else frozenset(layers), proc=proc)
    return result, "".join(output)


@pytest.fixture
def listener():
    """The port of a TCP listener on 127.0.0.1 (what a connect attack aims at)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()
