"""PromptScript pure-loop throughput: statements per second under `fdsl run` (guards, ps_step,
ps_add, ps_lt) against the same loop as plain Python in this process, measured in the same run.

    python bench/promptscript.py [--n 300000] [--runs 3]

Also: one REPORT action through the broker against a plain function call. Ratios matter,
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
    result = run_script(source, lang="ps", root=str(REPO / "examples"), options=options, timeout=120)
    assert result.ok, result.error
    return result.figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    n = args.n
    empty = statistics.median(run_ps("x = 0\n")["run_s"] for _ in range(args.runs))
    ps = statistics.median(run_ps(LOOP.format(n=n))["run_s"] for _ in range(args.runs)) - empty
    py = statistics.median(plain_python(n) for _ in range(args.runs))
    statements = n * STATEMENTS_PER_ITERATION
    print(f"pure loop, {n} iterations ({statements} statements):")
    print(f"  fdsl run (PromptScript): {ps * 1000:8.1f} ms  {statements / ps / 1e6:6.2f} M statements/s")
    print(f"  plain Python:            {py * 1000:8.1f} ms  {statements / py / 1e6:6.2f} M statements/s")
    print(f"  ratio: {ps / py:.1f}x slower (guards, ps_step per statement, ps_add and ps_lt calls)")

    k = 200
    actions = f'for i in range({k}):\n  apply("REPORT", {{ message: "m" }})\n'
    act = statistics.median(run_ps(actions)["run_s"] for _ in range(args.runs)) - empty
    started = time.perf_counter()
    for _ in range(k):
        (lambda message: message)("m")
    local = time.perf_counter() - started
    print(f"one REPORT action through the broker: {act / k * 1e6:.0f} us  (a plain call: {local / k * 1e6:.2f} us)")


if __name__ == "__main__":
    main()
