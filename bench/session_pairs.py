"""session.run in this checkout against another, run by run: two Sessions in two processes,
driven in turns with the same scripts and pauses, the ratio taken pair by pair.

    python bench/session_pairs.py --vs /path/to/other/checkout [--runs 30] [--pause 200]

A change worth a few tenths of a millisecond is lost in the drift of a shared machine between
two runs of bench/session.py; paired runs keep it (the order within a pair alternates). The
other checkout needs its bytecode compiled (python -m compileall) like this one.
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
KINDS = ("one line", "20 statements", "the same 20 again", "300 broker calls")


def one_line(n: int) -> str:
    return f'print("hi {n}")\n'  # a new script each run: a session compiles a script once


def twenty(n: int) -> str:
    return "".join(f"x{i} = {i} * {n}\n" for i in range(19)) + "print(x18)\n"


def calls(n: int) -> str:
    return f'for i in [1:300]:\n    found = Directory("/").files()\nprint({n})\n'  # a round trip each


def script(kind: str, n: int) -> str:
    """The scripts bench/session.py runs too (it imports them from here: this module imports
    nothing of the project, so that its other side can import another checkout's)."""
    if kind == "300 broker calls":
        return calls(n)
    return one_line(n) if kind == "one line" else twenty(0 if kind == "the same 20 again" else n)


def child() -> None:
    """One side: a Session of the checkout on sys.path; reads "kind index", answers ms."""
    from runtime.session import Session

    with Session(root=tempfile.mkdtemp(), timeout=30, workers=2) as session:
        session.run('print("first")\n')  # what the session keeps, paid once
        for line in sys.stdin:
            kind, n = line.rsplit(" ", 1)
            started = time.perf_counter()
            result = session.run(script(kind, int(n)))
            elapsed = time.perf_counter() - started
            print(f"{elapsed * 1000:.4f}" if result.ok else f"error {result.error}", flush=True)


def side(root: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.Popen([sys.executable, __file__, "--child"], cwd=root, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vs", type=Path, help="the other checkout (the baseline)")
    parser.add_argument("--runs", type=int, default=30, help="pairs of each kind")
    parser.add_argument("--pause", type=float, default=200, help="milliseconds before each run")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child()
    if args.vs is None or not (args.vs / "runtime" / "session.py").exists():
        parser.error("--vs must name another checkout of the project")
    sides = {"this": side(REPO), "vs": side(args.vs.resolve())}
    times: dict[tuple[str, str], list[float]] = {(kind, name): [] for kind in KINDS for name in sides}
    count = 0
    try:
        for pair in range(args.runs):
            for kind in KINDS:
                for name in (("this", "vs") if pair % 2 == 0 else ("vs", "this")):
                    time.sleep(args.pause / 1000)
                    count += 1
                    proc = sides[name]
                    proc.stdin.write(f"{kind} {count}\n")
                    proc.stdin.flush()
                    answer = proc.stdout.readline()
                    if not answer or answer.startswith("error"):
                        sys.exit(f"{name}: {answer.strip() or 'the session process ended'}")
                    times[(kind, name)].append(float(answer))
    finally:
        for proc in sides.values():
            proc.stdin.close()
            proc.wait()
    print(f"{args.runs} pairs of each kind, {args.pause:g} ms before each run; this: {REPO}, vs: {args.vs}")
    for kind in KINDS:
        mine, theirs = times[(kind, "this")], times[(kind, "vs")]
        ratios = [a / b for a, b in zip(mine, theirs)]
        print(f"  session.run {kind:18s} this {statistics.median(mine):6.2f} ms  vs {statistics.median(theirs):6.2f} ms"
              f"  this/vs (median of pairs) {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
