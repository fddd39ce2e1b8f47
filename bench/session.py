"""The warm path against the cold one, in one run: a Session with pre-started workers against
run_script (a worker started per script) against a bare `python -c pass`.

    python bench/session.py [--runs N] [--pause MS]

Every run's script is new (a session compiles a script once), except in the last line.
`--pause` leaves that long between runs, so the pool's replacement worker is ready (an agent
thinks between scripts); 0 measures back-to-back throughput, where on a small machine the
replacement's start (a fork of the session's zygote) competes with the run. The last line
times one worker's start, forked against fresh. Nothing here is a test; read the ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from session_pairs import one_line, twenty  # noqa: E402 (bench/ is the script's directory)

from runtime.api import run_script  # noqa: E402
from runtime.session import Session  # noqa: E402
from runtime.supervisor import Limits, _collect, prime, start_worker  # noqa: E402
from runtime.zygote import Zygote  # noqa: E402

ONE_LINE = 'print("hi")\n'



def timed(call, runs: int, pause: float) -> tuple[float, list[dict]]:
    times, figures = [], []
    for n in range(runs):
        time.sleep(pause)
        started = time.perf_counter()
        result = call(n)
        times.append(time.perf_counter() - started)
        assert result.ok, result.error
        figures.append(result.figures)
    return statistics.median(times) * 1000, figures


def worker_start(start, runs: int, pause: float) -> float:
    """Median ms from asking for a worker to its ready frame (hardened, limits applied)."""
    times = []
    for _ in range(runs):
        time.sleep(pause)
        started = time.perf_counter()
        proc = start()
        prime(proc, Limits(), "best")
        frame = b""
        while b'"ready"' not in frame:
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            assert chunk, "the worker ended before it was ready"
            frame += chunk
        times.append(time.perf_counter() - started)
        _collect(proc)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--pause", type=float, default=200, help="milliseconds between runs")
    args = parser.parse_args()
    pause = args.pause / 1000
    root = Path(tempfile.mkdtemp())
    bare = []
    for _ in range(args.runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - started)
    bare_ms = statistics.median(bare) * 1000
    cold_ms, _ = timed(lambda n: run_script(one_line(n), root=root, timeout=30), args.runs, pause)
    with Session(root=root, timeout=30, workers=2) as session:
        session.run(ONE_LINE)  # the first run pays for what the session keeps
        warm_ms, figures = timed(lambda n: session.run(one_line(n)), args.runs, pause)
        twenty_ms, _ = timed(lambda n: session.run(twenty(n)), args.runs, pause)
        again_ms, _ = timed(lambda n: session.run(twenty(0)), args.runs, pause)
    start_ms = statistics.median(f["worker_start_s"] for f in figures) * 1000
    zygote = Zygote()
    first = zygote.spawn()  # (its own start, once per session)
    if first is not None:
        _collect(first)
    forked_ms = worker_start(zygote.spawn, args.runs, pause)
    zygote.close()
    fresh_ms = worker_start(lambda: start_worker(preload=True), args.runs, pause)
    print(f"runs {args.runs}, {args.pause:g} ms between runs (medians)")
    print(f"  python -c pass             {bare_ms:7.2f} ms")
    print(f"  run_script one line        {cold_ms:7.2f} ms")
    print(f"  session.run one line       {warm_ms:7.2f} ms   {cold_ms / warm_ms:.1f}x faster than run_script"
          f"   (target <= 2 ms; of it, waiting for the worker's ready frame: {start_ms:.2f} ms)")
    print(f"  session.run 20 statements  {twenty_ms:7.2f} ms   (target <= 5 ms)")
    print(f"  the same 20 again          {again_ms:7.2f} ms   (compiled once by the session)")
    print(f"  a worker, asked for -> ready: forked by the session's zygote {forked_ms:.2f} ms,"
          f" started fresh {fresh_ms:.2f} ms ({fresh_ms / forked_ms:.1f}x)")


if __name__ == "__main__":
    main()
