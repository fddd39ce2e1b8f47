"""PromptScript pure-loop throughput: statements per second under `fdsl run` (the loop body
counted once per iteration, integer fast paths, RestrictedPython) against the same loop as
plain Python in this process, measured in the same run. Issue 13's target: at most 4x.

    python bench/promptscript.py [--n 300000] [--runs 3]

Also: one REPORT action through the broker against a plain function call, and one READ_FILE
of a 4 KiB file through the broker (worker -> pipe -> broker -> policy -> openat2) against a
plain open()+read() of the same file. Ratios matter,
not the absolute figures (shared, noisy machines).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runtime import run_script  # noqa: E402

LOOP = """
i = 0
total = 0
while i < {n}:
  total = total + i
  i = i + 1
log(total)
"""
STATEMENTS_PER_ITERATION = 2  # the two assignments (the while itself counts once)


def plain_python(n: int) -> float:
    started = time.perf_counter()
    i = 0
    total = 0
    while i < n:
        total = total + i
        i = i + 1
    return time.perf_counter() - started


def run_ps(source: str, **options) -> dict:
    options.setdefault("max_steps", 0)
    root = None if "project" in options else str(REPO / "examples")  # project is mounted at / itself
    result = run_script(source, lang="ps", root=root, options=options, timeout=120)
    assert result.ok, result.error
    return result.figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    n = args.n
    # Interleaved, so that the load of a shared machine weighs on the three alike.
    empties, loops, plains = [], [], []
    for _ in range(args.runs):
        empties.append(run_ps("x = 0\n")["run_s"])
        loops.append(run_ps(LOOP.format(n=n))["run_s"])
        plains.append(plain_python(n))
    empty = statistics.median(empties)
    ps = statistics.median(loops) - empty
    py = statistics.median(plains)
    statements = n * STATEMENTS_PER_ITERATION
    print(f"pure loop, {n} iterations ({statements} statements):")
    print(f"  fdsl run (PromptScript): {ps * 1000:8.1f} ms  {statements / ps / 1e6:6.2f} M statements/s")
    print(f"  plain Python:            {py * 1000:8.1f} ms  {statements / py / 1e6:6.2f} M statements/s")
    print(f"  ratio: {ps / py:.1f}x slower (a count per run of statements, integer fast paths)")
    best = (min(loops) - min(empties)) / min(plains)
    print(f"  best of {args.runs}: {best:.1f}x (the least disturbed runs of each)")

    k = 200
    actions = f'for i in range({k}):\n  apply("REPORT", {{ message: "m" }})\n'
    act = statistics.median(run_ps(actions)["run_s"] for _ in range(args.runs)) - empty
    started = time.perf_counter()
    for _ in range(k):
        (lambda message: message)("m")
    local = time.perf_counter() - started
    print(f"one REPORT action through the broker: {act / k * 1e6:.0f} us  (a plain call: {local / k * 1e6:.2f} us)")

    # One READ_FILE (a 4 KiB file of the project, through the worker, the broker, the policy
    # and the openat2-beneath open) against a plain open()+read() of the same file.
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "data.txt").write_text("x" * 4095 + "\n")
        reads = f'for i in range({k}):\n  apply("READ_FILE", {{ path: "data.txt" }})\n'
        loop = f'for i in range({k}):\n  x = i\n'
        base = statistics.median(run_ps(loop, project=project)["run_s"] for _ in range(args.runs))
        rf = statistics.median(run_ps(reads, project=project)["run_s"] for _ in range(args.runs)) - base
        timings = []
        for _ in range(args.runs):
            started = time.perf_counter()
            for _ in range(k):
                with open(project / "data.txt", encoding="utf-8") as f:
                    f.read()
            timings.append(time.perf_counter() - started)
        plain = statistics.median(timings)
    print(f"one READ_FILE (4 KiB) through the broker: {rf / k * 1e6:.0f} us  "
          f"(a plain open+read: {plain / k * 1e6:.1f} us, ratio {rf / plain:.0f}x)")


if __name__ == "__main__":
    main()
