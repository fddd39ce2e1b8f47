"""What the worst amplifications a valid script or a small document can ask for cost the broker.

    python bench/amplification.py [--fdsl PATH] [--cap-gib 8]

Runs `fdsl run` (the one on PATH, or --fdsl: e.g. another checkout's venv, to compare before
and after) on each case with --timeout 10, under an address-space cap (prlimit) so that a
broker without budgets cannot take the machine down, and prints each run's wall time against
the timeout and the peak resident size of the largest process of the run (the broker, or
since the PDF extractor exists, that jailed process, bounded by --pdf-memory).

Cases:
  pages    read(pages=[1] * 10000) of one 2 MB page: a 20 GB reply if encoded whole
  snippets snippets() with huge max_results and context_chars on 10,000 matches of a 2 MB page
  pdf      a 0.8 MB PDF whose one page repeats a text operator (MuPDF's text extraction grows
           ~650 bytes per repeat)
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fuzz.hostile import pdf_bomb  # noqa: E402

TIMEOUT_S = 10


def make_collection(root: Path) -> None:
    line = "amplify " * 3200 + "\n"  # 25.6 KB
    (root / "page.txt").write_text(line * 80)  # one page of ~2 MB
    (root / "bomb.pdf").write_bytes(pdf_bomb(10_000_000))


CASES = {
    "pages": 'x = File("page.txt").read(pages=[1] * 10000)\nprint(len(x))\n',
    "snippets": 'x = File("page.txt").snippets("amplify", max_results=1000000, context_chars=10000000)\nprint(len(x))\n',
    "pdf": 'print(File("bomb.pdf").page_count)\n',
}


def measure(fdsl: str, root: Path, source: str, cap_gib: int) -> tuple[float, int, int, str]:
    script = root / "case.fdsl"
    script.write_text(source)
    command = ["prlimit", f"--as={cap_gib << 30}", fdsl, "run", str(script), "--root", str(root),
               "--timeout", str(TIMEOUT_S)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.monotonic() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, the largest child so far
    error = (done.stderr.strip().splitlines() or [""])[0][:110]
    return wall, max(peak, before), done.returncode, error


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fdsl", default=shutil.which("fdsl"), help="the fdsl command to measure")
    parser.add_argument("--cap-gib", type=int, default=8, help="address-space cap of each run (GiB)")
    parser.add_argument("--only", choices=sorted(CASES), help="one case")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_collection(root)
        print(f"fdsl: {args.fdsl}; --timeout {TIMEOUT_S}; address space capped at {args.cap_gib} GiB")
        for name, source in CASES.items():
            if args.only and name != args.only:
                continue
            # A fresh process per case: RUSAGE_CHILDREN's peak is the largest child ever.
            out = subprocess.run([sys.executable, __file__, "--fdsl", args.fdsl, "--cap-gib", str(args.cap_gib),
                                  "--case", name, "--root", str(root)], capture_output=True, text=True)
            print(out.stdout.strip() or out.stderr.strip())


def one_case() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fdsl")
    parser.add_argument("--cap-gib", type=int)
    parser.add_argument("--case")
    parser.add_argument("--root")
    args = parser.parse_args()
    wall, peak_kib, code, error = measure(args.fdsl, Path(args.root), CASES[args.case], args.cap_gib)
    print(f"{args.case:9} exit {code:3}  wall {wall:6.2f} s ({wall / TIMEOUT_S:.2f}x --timeout)  "
          f"largest process {peak_kib / 1024:8.1f} MiB  {error}")


if __name__ == "__main__":
    if "--case" in sys.argv:
        one_case()
    else:
        main()
    os._exit(0)
