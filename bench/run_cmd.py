"""What RUN_CMD's jail costs a command, against the same command started bare, in one run.

    python bench/run_cmd.py [--runs N]

Times `/bin/true` through runtime.promptscript.command.run_command (the launcher, its namespaces, the new
root, Landlock, seccomp, rlimits, then exec) against subprocess.run of the same program,
interleaved so noise hits both alike, and reports the medians and their ratio. The jail's
cost is a fixed start-up cost per command: a command that runs for a second pays it once.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runtime.promptscript.command import run_command  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    jailed, bare = [], []
    layers: dict = {}
    with tempfile.TemporaryDirectory() as project:
        for _ in range(args.runs):
            started = time.perf_counter()
            result = run_command("/bin/true", [], cwd=project, timeout_s=20, shown="true", layers=layers)
            jailed.append(time.perf_counter() - started)
            assert result["exitCode"] == 0, result
            started = time.perf_counter()
            subprocess.run(["/bin/true"], cwd=project, check=True)
            bare.append(time.perf_counter() - started)
    j, b = statistics.median(jailed), statistics.median(bare)
    print(f"layers: {', '.join(f'{k}={v}' for k, v in layers.items())}")
    print(f"RUN_CMD /bin/true, jailed: median {j * 1000:.1f} ms over {args.runs} runs")
    print(f"subprocess.run /bin/true:  median {b * 1000:.1f} ms")
    print(f"jail start-up: +{(j - b) * 1000:.1f} ms per command ({j / b:.1f}x a bare start)")


if __name__ == "__main__":
    main()
