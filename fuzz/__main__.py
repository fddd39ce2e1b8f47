"""python -m fuzz --minutes N [--seed S] [--targets a,b]: run the fuzz targets, print a summary.

Exit status 0 when no target found a failure, 1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys
import time

from fuzz.targets import TARGETS

# Share of the budget per target (the corpus is finite: it takes what it needs, ~10-20 s).
SHARES = {"programs": 0.35, "paths": 0.2, "protocol": 0.3, "corpus": 0.15}


def summary(results, wall: float) -> str:
    lines = [f"{'target':<10} {'count':>9} {'unit':<9} {'seconds':>8} {'per s':>9} {'failures':>8}"]
    for stats in results:
        lines.append(f"{stats.name:<10} {stats.count:>9} {stats.unit:<9} {stats.seconds:>8.1f} {stats.rate:>9.1f} {len(stats.failures):>8}")
    lines.append(f"total wall time {wall:.1f} s; failures {sum(len(s.failures) for s in results)}")
    for stats in results:
        for key, value in sorted(stats.notes.items(), key=lambda kv: str(kv[0])):
            lines.append(f"  {stats.name}: {key}: {value}")
        for failure in stats.failures:
            lines.append(f"  FAILURE {stats.name}: {failure[:600]}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description="Fuzz the sandbox boundary for a time budget.")
    parser.add_argument("--minutes", type=float, default=1.0, help="total time budget (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the pass (default 0)")
    parser.add_argument("--targets", default=",".join(TARGETS), help=f"comma-separated, of: {', '.join(TARGETS)}")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.targets.split(",") if n.strip()]
    unknown = [n for n in names if n not in TARGETS]
    if unknown or not names or args.minutes <= 0:
        print(f"python -m fuzz: unknown targets {unknown}" if unknown else "python -m fuzz: nothing to run", file=sys.stderr)
        return 2
    budget = args.minutes * 60
    total_share = sum(SHARES[n] for n in names)
    started = time.monotonic()
    results = []
    for index, name in enumerate(names):
        print(f"[fuzz] {name}: {budget * SHARES[name] / total_share:.0f} s", file=sys.stderr, flush=True)
        results.append(TARGETS[name](budget * SHARES[name] / total_share, args.seed + index))
    print(summary(results, time.monotonic() - started))
    return 1 if any(s.failures for s in results) else 0


if __name__ == "__main__":
    sys.exit(main())
