"""The broker's CPU per call of a FilesDSL op, each figure as a ratio against a baseline measured
in the same run.

    python bench/broker_call.py [--seconds S] [--profile OP]

What is timed is the broker's side of one round trip, in process, as the supervisor serves it
(runtime/supervisor.py `_readable` and `_call`): the call frame fed to a FrameBuffer (decoded),
`Broker.reply_frame` over the handlers `filesdsl_run` builds for a run over a Sandbox (checks,
path resolution, policy, the document store, the reply's budget), and the reply encoded. CPU
time (time.process_time), so it is the broker's cost, not the pipe's or the worker's.

- `f.read(1)`: file.read of page 1 of a small text file three directories deep;
- `File(p)`: file.open of the same file (a stat: FileInfo);
- `f.read(1)` again on a mount with suffixes and max_file_bytes (the per-call policy checks);
- `ping`: the floor every call pays (frame, op-table checks, reply), no file touched;
- baselines: a plain os.open + os.read(1) + os.close of the same host file, and an os.stat.

`--profile OP` (file.read or file.open) prints the top of a cProfile of that op's calls.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime.api import filesdsl_run  # noqa: E402
from runtime.broker import Broker  # noqa: E402
from runtime.fs import safeio  # noqa: E402
from runtime.fs.config import Mount, SandboxConfig  # noqa: E402
from runtime.fs.sandbox import Sandbox  # noqa: E402
from runtime.limits import Limits  # noqa: E402
from wire import protocol  # noqa: E402

FILE = "docs/guides/deep/intro.md"


ROUNDS = 9


def cpu_per_call(fns: dict, seconds: float) -> dict:
    """CPU microseconds per call of each fn(), the best of ROUNDS rounds (each about seconds /
    ROUNDS), the rounds of all of them interleaved: the figures least disturbed by whatever else
    the machine runs, and disturbed alike."""
    counts = {}
    for name, fn in fns.items():  # calls per round
        n = 100
        while True:
            start = time.process_time()
            for _ in range(n):
                fn()
            if time.process_time() - start >= seconds / ROUNDS / 4 or n >= 1 << 22:
                break
            n *= 2
        counts[name] = n * 4
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            n = counts[name]
            start = time.process_time()
            for _ in range(n):
                fn()
            best[name] = min(best[name], (time.process_time() - start) / n * 1e6)
    return best


def broker_for(sandbox: Sandbox):
    limits = Limits()
    handlers = filesdsl_run(sandbox, approve=None, limits=limits, deadline=time.monotonic() + 3600,
                            isolation="best", options={})
    return Broker(handlers, limits.max_reply_bytes), handlers


def served(broker: Broker, op: str, args: dict):
    """One call as the supervisor serves it: the frame read, decoded, answered, encoded."""
    frame = protocol.encode({"t": "call", "op": op, "a": args})
    frames = protocol.FrameBuffer(protocol.MAX_REQUEST_BYTES)

    def call():
        (message,) = frames.feed(frame)
        return broker.reply_frame(message)

    reply = protocol.decode(call()[protocol.HEADER.size:])
    assert reply["t"] == "ok", reply
    return call


def build(tmp: Path) -> tuple[Sandbox, Sandbox, Path]:
    root = tmp / "root"
    host = root / FILE
    host.parent.mkdir(parents=True)
    host.write_text("# Intro\n" + "Some text of the first page.\n" * 20)
    ruled = tmp / "ruled"
    (ruled / "docs").mkdir(parents=True)
    (ruled / "docs" / "a.md").write_text(host.read_text())
    plain = Sandbox(SandboxConfig(mounts=[Mount(host_path=root, mount_point="/", mode="ro")]))
    policed = Sandbox(SandboxConfig(mounts=[
        Mount(host_path=root, mount_point="/", mode="ro"),
        Mount(host_path=ruled, mount_point="/ruled", mode="ro", suffixes=[".md"], max_file_bytes=1 << 20),
    ]))
    return plain, policed, host


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="CPU seconds per figure, about (default 2)")
    ap.add_argument("--profile", choices=("file.read", "file.open"), help="print a cProfile of this op")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        measure(Path(tmp), opts.seconds, opts.profile)


def measure(tmp: Path, seconds: float, profile: str | None) -> None:
    plain, policed, host = build(tmp)
    broker, handlers = broker_for(plain)
    pbroker, phandlers = broker_for(policed)
    try:
        read = served(broker, "file.read", {"path": FILE, "pages": 1})
        info = served(broker, "file.open", {"path": FILE})
        ruled = served(pbroker, "file.read", {"path": "ruled/docs/a.md", "pages": 1})
        ping = served(broker, "ping", {})
        hostname = str(host)

        def os_read():
            fd = os.open(hostname, os.O_RDONLY)
            os.read(fd, 1)
            os.close(fd)

        def os_stat():
            os.stat(hostname)

        if profile:
            call = read if profile == "file.read" else info
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(20000):
                call()
            prof.disable()
            pstats.Stats(prof).sort_stats(os.environ.get("BENCH_SORT", "tottime")).print_stats(25)
            return

        us = cpu_per_call({"os_read": os_read, "os_stat": os_stat, "read": read, "info": info, "ruled": ruled,
                           "ping": ping}, seconds)
        base_read, base_stat = us["os_read"], us["os_stat"]
        figures = [
            ("file.read pages=1 (f.read(1))", us["read"], base_read, "os.open+read(1)+close"),
            ("file.open (File(p), a stat)", us["info"], base_stat, "os.stat"),
            ("file.read, suffix+size mount", us["ruled"], base_read, "os.open+read(1)+close"),
            ("ping (the framing and checks)", us["ping"], base_stat, "os.stat"),
        ]
        print(f"openat2 in use: {safeio.uses_openat2()}; broker CPU per call (best of {ROUNDS}), {FILE!r}")
        print(f"baselines: os.open+read(1)+close {base_read:.1f} us, os.stat {base_stat:.1f} us")
        for name, spent, base, base_name in figures:
            print(f"{name:32s} {spent:7.1f} us  = {spent / base:5.1f}x {base_name}")
    finally:
        handlers.close()
        phandlers.close()


if __name__ == "__main__":
    main()
