"""Sandbox figures, each as a ratio against a baseline measured in the same run.

    python bench/sandbox.py

- resolve throughput (paths/second) on a 4-mount configuration, against os.path.realpath of
  the same host paths (the containment check of the first implementation);
- a policy-checked read of a 4 KiB file (FileSystemToolset.read and the broker's
  VirtualFS.read_bytes) against a plain open().read().
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime.fs import safeio  # noqa: E402
from runtime.fs.config import Mount, SandboxConfig  # noqa: E402
from runtime.fs.sandbox import Sandbox  # noqa: E402
from runtime.fs.vfs import VirtualFS  # noqa: E402
from runtime.services.toolset import FileSystemToolset  # noqa: E402


def rate(fn, items, min_seconds=0.5) -> float:
    n = 0
    start = time.perf_counter()
    while True:
        for it in items:
            fn(it)
        n += len(items)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return n / elapsed


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        measure(Path(tmp))


def measure(tmp: Path) -> None:
    mounts = []
    for i, point in enumerate(["/docs", "/data", "/data/special", "/out"]):
        host = tmp / f"m{i}"
        (host / "a" / "b").mkdir(parents=True)
        (host / "a" / "b" / "f.txt").write_bytes(b"x" * 4096)
        mounts.append(Mount(host_path=host, mount_point=point, mode="rw" if point == "/out" else "ro",
                            write_approval=False))
    sb = Sandbox(SandboxConfig(mounts=mounts))
    vpaths = [f"{m.mount_point}/a/b/f.txt" for m in mounts] + [f"{m.mount_point}/a/../a/b/missing.txt" for m in mounts]
    hosts = [str(sb.resolve(p)) for p in vpaths]

    base = rate(os.path.realpath, hosts)
    res = rate(sb.resolve, vpaths)
    print(f"openat2 in use: {safeio.uses_openat2()}")
    print(f"resolve, 4 mounts: {res:,.0f} paths/s; os.path.realpath baseline {base:,.0f} paths/s; "
          f"ratio {base / res:.2f}x the baseline's cost")

    host_file = hosts[0]

    def plain(_):
        with open(host_file, "rb") as f:
            f.read()

    ts = FileSystemToolset(sb)
    vfs = VirtualFS(sb)
    one = [vpaths[0]]
    p = rate(plain, one)
    t = rate(lambda v: ts.read(v), one)
    r = rate(lambda v: vfs.read_bytes(vfs.resolve(v)), one)
    print(f"4 KiB read: plain open().read() {1e6 / p:.1f} us; FileSystemToolset.read {1e6 / t:.1f} us "
          f"({p / t:.2f}x); broker VirtualFS resolve+read {1e6 / r:.1f} us ({p / r:.2f}x)")


if __name__ == "__main__":
    main()
