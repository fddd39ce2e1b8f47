"""python -m fuzz --minutes N [--seed S] [--targets a,b] [--jobs J]: run the fuzz targets, print a summary.

The corpus is a fixed set: when selected it runs first and in full, whatever the budget. The
generative targets share what is left of the budget. A pass in which a selected target could
not run (the corpus used up the budget) is incomplete: it says so and never exits 0.

Exit status: 0 complete with no failure, 1 a target found a failure, 2 usage error,
3 incomplete (the budget was too short for every selected target to run).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from fuzz import budgets
from fuzz.targets import TARGETS as BOUNDARY_TARGETS
from fuzz.targets import Stats, fuzz_corpus

TARGETS = {**BOUNDARY_TARGETS, **budgets.TARGETS}
# Shares of the budget left after the corpus.
SHARES = {"programs": 0.25, "ps_programs": 0.15, "paths": 0.15, "protocol": 0.2, "replies": 0.1, "documents": 0.15}
# A generative target given less than this is not run: a few seconds would prove nothing.
MIN_TARGET_SECONDS = 10.0
EXIT_OK, EXIT_FAILURES, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3


def summary(results: list[Stats], skipped: list[str], wall: float, budget: float) -> str:
    lines = [f"{'target':<12} {'count':>9} {'unit':<9} {'seconds':>8} {'per s':>9} {'failures':>8}  status"]
    for stats in results:
        lines.append(f"{stats.name:<12} {stats.count:>9} {stats.unit:<9} {stats.seconds:>8.1f} {stats.rate:>9.1f} "
                     f"{len(stats.failures):>8}  ran")
    for name in skipped:
        lines.append(f"{name:<12} {'-':>9} {'':<9} {'-':>8} {'-':>9} {'-':>8}  NOT RUN: no budget left")
    failures = sum(len(s.failures) for s in results)
    verdict = "INCOMPLETE" if skipped else "complete"
    lines.append(f"total wall time {wall:.1f} s of a {budget:.0f} s budget; failures {failures}; pass {verdict}")
    for stats in results:
        for key, value in sorted(stats.notes.items(), key=lambda kv: str(kv[0])):
            lines.append(f"  {stats.name}: {key}: {value}")
        for failure in stats.failures:
            lines.append(f"  FAILURE {stats.name}: {failure[:600]}")
    if skipped:
        lines.append(f"  INCOMPLETE: {', '.join(skipped)} did not run: each needs at least {MIN_TARGET_SECONDS:.0f} s "
                     "of what the budget leaves after the corpus (which always runs in full)")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description="Fuzz the sandbox boundary for a time budget.")
    parser.add_argument("--minutes", type=float, default=3.0, help="total time budget (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the pass (default 0)")
    parser.add_argument("--targets", default=",".join(TARGETS), help=f"comma-separated, of: {', '.join(TARGETS)}")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="corpus payloads run at once (default: up to 2)")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.targets.split(",") if n.strip()]
    unknown = [n for n in names if n not in TARGETS]
    if unknown or not names or args.minutes <= 0 or args.jobs < 1:
        print(f"python -m fuzz: unknown targets {unknown}" if unknown else "python -m fuzz: nothing to run", file=sys.stderr)
        return EXIT_USAGE
    budget = args.minutes * 60
    started = time.monotonic()
    results: list[Stats] = []
    if "corpus" in names:
        print("[fuzz] corpus: every payload, restricted, os and baseline runs", file=sys.stderr, flush=True)
        results.append(fuzz_corpus(0.0, args.seed, jobs=args.jobs))
    generative = [n for n in names if n != "corpus"]
    left = budget - (time.monotonic() - started)
    total_share = sum(SHARES[n] for n in generative)
    skipped = []
    for index, name in enumerate(generative):
        share = left * SHARES[name] / total_share if total_share else 0.0
        if share < MIN_TARGET_SECONDS:
            skipped.append(name)
            continue
        print(f"[fuzz] {name}: {share:.0f} s", file=sys.stderr, flush=True)
        results.append(TARGETS[name](share, args.seed + index))
    print(summary(results, skipped, time.monotonic() - started, budget))
    if any(s.failures for s in results):
        return EXIT_FAILURES
    return EXIT_INCOMPLETE if skipped else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
