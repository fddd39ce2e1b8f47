"""run-many throughput (scripts/s) on this machine: the local pool against Ray against a plain
loop of run_script, in one run.

    python bench/fleet.py [--scripts 60] [--jobs 2] [--roots 1] [--no-ray]

`--roots N` spreads the jobs over N directories, as rollouts each in its own workspace are
(a pool process then makes a session per root).

Nothing here is a test; read the ratios (shared, noisy machines).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runtime.api import run_script  # noqa: E402
from runtime.fleet import Job, run_many, run_many_ray  # noqa: E402

SOURCE = 'n = 0\nfor f in Directory("/").files():\n    n += len(f.read())\nprint(n)\n'


def rate(label: str, count: int, run) -> float:
    started = time.perf_counter()
    results = list(run())
    elapsed = time.perf_counter() - started
    assert len(results) == count and all(r["exit_code"] == 0 for r in results), results[:1]
    print(f"  {label:26} {count / elapsed:7.1f} scripts/s  ({elapsed:.2f} s)")
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scripts", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--roots", type=int, default=1, help="directories the jobs are spread over")
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    roots = [Path(tempfile.mkdtemp()) for _ in range(args.roots)]
    for root in roots:
        for i in range(20):
            (root / f"d{i}.txt").write_text("word " * 2000)
    jobs = [Job(i, f"<{i}>", SOURCE, "fdsl", root=str(roots[i % args.roots]), limits={"timeout": 60})
            for i in range(args.scripts)]
    print(f"{args.scripts} scripts over {args.roots} root(s), {args.jobs} at once")
    serial = rate("run_script in a loop", args.scripts,
                  lambda: ({"exit_code": run_script(SOURCE, root=roots[i % args.roots]).exit_code}
                           for i in range(args.scripts)))
    local = rate("run-many, local pool", args.scripts, lambda: run_many(jobs, workers=args.jobs))
    print(f"  local pool / loop: {local / serial:.1f}x")
    if not args.no_ray:
        import ray

        ray.init(num_cpus=args.jobs, include_dashboard=False, log_to_driver=False, configure_logging=False)
        rate("run-many, Ray (warm-up)", args.scripts, lambda: run_many_ray(jobs, workers=args.jobs))
        on_ray = rate("run-many, Ray local", args.scripts, lambda: run_many_ray(jobs, workers=args.jobs))
        print(f"  Ray local / local pool: {on_ray / local:.2f}x")
        ray.shutdown()


if __name__ == "__main__":
    main()
