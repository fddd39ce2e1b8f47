"""Start-up cost of the worker's full hardening, against the unhardened worker in the same run.

    python bench/hardening.py [--runs N] [--vs CHECKOUT]

Measures spawn -> "ready" frame (the worker's imports, then its hardening, then the frame)
with every layer and with none (`layers=()`, the test-only switch), interleaved so noise hits
both alike, and reports the medians and their ratio (target <= 1.3x). Also the import cost of
what hardening needs at start-up (ctypes, unicodedata), which both variants pay.

--vs CHECKOUT compares this checkout's fully hardened start against another checkout's (its
own .venv), interleaved in one run: e.g. the seccomp allow-list and the new namespaces
against the deny list they replaced (target <= 1.05x).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runtime.broker import Broker  # noqa: E402
from runtime.supervisor import Limits, run_worker  # noqa: E402


def start_seconds(layers) -> tuple[float, dict]:
    deadline = time.monotonic() + 30
    result = run_worker("", Broker({"ping": lambda: None}), Limits(timeout=30), deadline, lambda s: None, mode="os", layers=layers)
    assert result.status == "ok", result.error
    return result.figures["worker_start_s"], result.layers


def import_cost(runs: int) -> float:
    def timed(code: str) -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", code], check=True)
        return time.perf_counter() - started

    bare = statistics.median(timed("pass") for _ in range(runs))
    loaded = statistics.median(timed("import ctypes, unicodedata") for _ in range(runs))
    return loaded - bare


ONE_START = (
    "import time\nfrom runtime.broker import Broker\nfrom runtime.supervisor import Limits, run_worker\n"
    "r = run_worker('', Broker({'ping': lambda: None}), Limits(timeout=30), time.monotonic() + 30, lambda s: None, mode='os')\n"
    "assert r.status == 'ok', r.error\nprint(r.figures['worker_start_s'])\n"
)


def start_in(checkout: Path) -> float:
    python = checkout / ".venv" / "bin" / "python"
    out = subprocess.run([str(python), "-c", ONE_START], cwd=checkout, capture_output=True, text=True, check=True)
    return float(out.stdout)


def compare(other: Path, runs: int) -> None:
    start_in(REPO), start_in(other)  # warm the caches
    ours, theirs = [], []
    for _ in range(runs):
        ours.append(start_in(REPO))
        theirs.append(start_in(other))
    o, t = statistics.median(ours), statistics.median(theirs)
    print(f"worker start to ready, fully hardened, this checkout: {o * 1000:.1f} ms (median of {runs})")
    print(f"worker start to ready, fully hardened, {other}: {t * 1000:.1f} ms (median of {runs})")
    print(f"ratio this / other: {o / t:.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--vs", type=Path, help="another checkout (with its .venv) to compare against")
    args = parser.parse_args()
    if args.vs:
        compare(args.vs.resolve(), args.runs)
        return
    start_seconds(None), start_seconds(())  # warm the caches
    hardened, bare = [], []
    layers = None
    for _ in range(args.runs):
        seconds, layers = start_seconds(None)
        hardened.append(seconds)
        bare.append(start_seconds(())[0])
    h, b = statistics.median(hardened), statistics.median(bare)
    print(f"layers in force: {', '.join(f'{k}={v}' for k, v in layers.items())}")
    print(f"worker start to ready, unhardened (layers=()): {b * 1000:.1f} ms (median of {args.runs})")
    print(f"worker start to ready, fully hardened:          {h * 1000:.1f} ms (median of {args.runs})")
    print(f"ratio hardened / unhardened: {h / b:.3f}x (target <= 1.3x)")
    imports = import_cost(10)
    print(f"import of ctypes + unicodedata (paid by both, for hardening): {imports * 1000:.1f} ms")
    print(f"ratio counting those imports too (vs. a worker without them): {h / (b - imports):.3f}x")


if __name__ == "__main__":
    main()
