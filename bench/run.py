"""Benchmarks for the FilesDSL pipeline, each reported against a baseline measured in the same run.

    python bench/run.py [--runs N] [--files N] [--only regex|search]

Machines are shared and noisy: read the ratios, not the absolute times. Nothing here is a
test; targets are printed beside the figures for the closing note.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runtime import run_script  # noqa: E402
from runtime.api import file_handlers  # noqa: E402
from runtime.broker import Broker  # noqa: E402
from runtime.fs.vfs import VirtualFS  # noqa: E402
from runtime.index.prefilter import RunIndex  # noqa: E402
from runtime.services.files import FilesService  # noqa: E402
from runtime.supervisor import Limits, run_worker  # noqa: E402

WORDS = "the a model language transformer data page report search index table result method metric".split()


def median_ms(values) -> float:
    return statistics.median(values) * 1000


def one_line_script(runs: int, root: Path) -> None:
    figures = [run_script('print("hi")', root=root, timeout=30).figures for _ in range(runs)]
    bare = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
        bare.append(time.perf_counter() - started)
    cli = []
    for _ in range(max(3, runs // 4)):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "runtime.cli", "run", str(REPO / "examples/tour.fdsl"), "--root", str(root)],
            check=True, capture_output=True, cwd=REPO,
        )
        cli.append(time.perf_counter() - started)
    start = median_ms(f["worker_start_s"] for f in figures)
    print("## One-line script (run_script, in-process broker)")
    print(f"  transpile          {median_ms(f['transpile_s'] for f in figures):8.2f} ms")
    print(f"  worker start       {start:8.2f} ms   (to first request; target <= 60 ms)")
    print(f"  run                {median_ms(f['run_s'] for f in figures):8.2f} ms")
    print(f"  wall               {median_ms(f['wall_s'] for f in figures):8.2f} ms")
    print(f"  baseline: bare `python -I -S -c pass` {median_ms(bare):.2f} ms -> worker start is {start / median_ms(bare):.2f}x")
    print(f"  whole `fdsl run examples/tour.fdsl` as a command: {median_ms(cli):.1f} ms (includes interpreter start and imports)")
    peak = statistics.median(f["worker_peak_rss_kib"] for f in figures)
    print(f"  worker peak RSS    {peak / 1024:8.1f} MiB (target <= 40 MiB)")


def round_trip(calls: int, root: Path) -> None:
    code = (
        "import time\n"
        "samples = []\n"
        f"for _ in range({calls}):\n"
        "    t = time.perf_counter_ns()\n"
        "    broker.call('ping')\n"
        "    samples.append(time.perf_counter_ns() - t)\n"
        "samples.sort()\n"
        "broker.output(str(samples[len(samples) // 2]))\n"
    )
    deadline = time.monotonic() + 120
    service = FilesService(VirtualFS([("/", root, False)]), deadline=deadline)
    out: list[str] = []
    result = run_worker(code, Broker(file_handlers(service)), Limits(timeout=120), deadline, out.append, mode="os")
    assert result.status == "ok", result
    broker_ns = int("".join(out))

    # Baseline: the same frames echoed by a bare process over a pipe pair, no validation.
    echo = subprocess.Popen(
        [sys.executable, "-I", "-c",
         "import os\nwhile True:\n    d = os.read(0, 65536)\n    if not d: break\n    os.write(1, d)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    from wire import protocol

    frame = protocol.encode({"t": "call", "op": "ping", "a": {}})
    samples = []
    for _ in range(calls):
        t = time.perf_counter_ns()
        os.write(echo.stdin.fileno(), frame)
        protocol.read_exact(echo.stdout.fileno(), len(frame))
        samples.append(time.perf_counter_ns() - t)
    echo.stdin.close()
    echo.wait()
    samples.sort()
    pipe_ns = samples[len(samples) // 2]
    print(f"## Broker round trip ({calls} calls, median)")
    print(f"  ping through the broker  {broker_ns / 1000:7.1f} us   (target <= 50 us)")
    print(f"  baseline: raw pipe echo  {pipe_ns / 1000:7.1f} us -> {broker_ns / pipe_ns:.2f}x")


def make_corpus(root: Path, files: int) -> int:
    rng = random.Random(7)
    total = 0
    for i in range(files):
        folder = root / f"d{i % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(160)]
        if i % 97 == 0:
            lines[rng.randrange(len(lines))] += " needle-in-haystack"
        text = "\n".join(lines) + "\n"
        (folder / f"f{i:05d}.txt").write_text(text)
        total += len(text)
    # A collection written an hour ago, not this instant (an index never trusts a file changed
    # in the last seconds, which a search could not tell from one changing while it reads it)
    old = time.time() - 3600
    for path in root.rglob("*.txt"):
        os.utime(path, (old, old))
    return total


def stat_walk(root: Path) -> int:
    """lstat of every entry under root, in plain Python (os.scandir): a learned search's floor."""
    count, stack = 0, [str(root)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                entry.stat(follow_symlinks=False)
                count += 1
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return count


def content_search(runs: int, files: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        size = make_corpus(root, files)
        script_file = root.parent / f"{root.name}-search.fdsl"
        script_file.write_text(SEARCH_SCRIPT + "\n")
        # The `fdsl` command an agent's shell runs (bin/fdsl, installed beside this interpreter)
        installed = Path(sys.executable).parent / "fdsl"
        client = [str(installed) if installed.exists() else sys.executable, *(() if installed.exists() else ("-m", "runtime.client")), "run"]
        server_env = {k: v for k, v in os.environ.items() if k not in ("CI", "FDSL_NO_SERVER")}
        started = time.perf_counter()  # the first run starts the server (or finds it running)
        first = subprocess.run(client + [str(script_file), "--root", str(root)], capture_output=True, text=True,
                               env=server_env, cwd=REPO)
        first_s = time.perf_counter() - started
        assert first.returncode == 0, first.stderr
        empty_file = root.parent / f"{root.name}-empty.fdsl"
        empty_file.write_text("print(1)\n")
        grep, ours, script, served, empty, walk = [], [], [], [], [], []
        for _ in range(runs):
            started = time.perf_counter()
            proc = subprocess.run(["grep", "-rl", "needle-in-haystack", str(root)], capture_output=True, text=True)
            grep.append(time.perf_counter() - started)
            expected = len(proc.stdout.split())

            service = FilesService(VirtualFS([("/", root, False)]), deadline=time.monotonic() + 60)
            started = time.perf_counter()
            found = service.dir_search(".", "needle-in-haystack", "content", True, False)["files"]
            ours.append(time.perf_counter() - started)
            assert len(found) == expected, (len(found), expected)

            result = run_script(SEARCH_SCRIPT, root=root, timeout=60)
            assert result.output.strip() == str(expected), result.error
            script.append(result.figures["run_s"])

            # End to end, as an agent's shell runs it: the fdsl client, through the per-user server
            started = time.perf_counter()
            proc = subprocess.run(client + [str(script_file), "--root", str(root)], capture_output=True, text=True,
                                  env=server_env, cwd=REPO)
            served.append(time.perf_counter() - started)
            assert proc.returncode == 0 and proc.stdout.strip() == str(expected), proc.stderr

            # The floors of any served search: a script that searches nothing, through the same
            # client and server; and a bare Python stat of every file (what a sound index must do)
            started = time.perf_counter()
            proc = subprocess.run(client + [str(empty_file), "--root", str(root)], capture_output=True, text=True,
                                  env=server_env, cwd=REPO)
            empty.append(time.perf_counter() - started)
            assert proc.returncode == 0 and proc.stdout == "1\n", proc.stderr
            started = time.perf_counter()
            stat_walk(root)
            walk.append(time.perf_counter() - started)
        # The broker's part of a learned search: an index that has read every file (as a kept
        # runner's has after its first searches), back to back
        index = RunIndex()
        FilesService(VirtualFS([("/", root, False)]), index=index).dir_search(".", "needle-in-haystack", "content", True, False)
        indexed = []
        for _ in range(runs * 4):
            service = FilesService(VirtualFS([("/", root, False)]), deadline=time.monotonic() + 60, index=index)
            started = time.perf_counter()
            found = service.dir_search(".", "needle-in-haystack", "content", True, False)["files"]
            indexed.append(time.perf_counter() - started)
            assert len(found) == expected, (len(found), expected)
        # The server keeps the runner of a FilesDSL command line, whose index learns while it waits:
        # the same search again once it has had the time (an agent thinks between its calls)
        time.sleep(LEARN_S)
        learned, paused_grep = [], []
        for _ in range(runs):
            # as an agent calls it: a pause before each call (grep's too), so the runner's
            # replacement worker is ready; back to back, its start competes with the next run
            time.sleep(AGENT_PAUSE_S)
            started = time.perf_counter()
            subprocess.run(["grep", "-rl", "needle-in-haystack", str(root)], capture_output=True, text=True)
            paused_grep.append(time.perf_counter() - started)
            time.sleep(AGENT_PAUSE_S)
            started = time.perf_counter()
            proc = subprocess.run(client + [str(script_file), "--root", str(root)], capture_output=True, text=True,
                                  env=server_env, cwd=REPO)
            learned.append(time.perf_counter() - started)
            assert proc.returncode == 0 and proc.stdout.strip() == str(expected), proc.stderr
        broker = subprocess.run(
            [sys.executable, "-m", "runtime.cli", "run", str(REPO / "bench/corpus_search.fdsl"), "--root", str(root), "--verbose"],
            capture_output=True, text=True, cwd=REPO,
        )
        peak = [line for line in broker.stderr.splitlines() if "broker_peak_rss_kib" in line]
        print(f"## Content search for a literal over {files} files ({size / 1e6:.1f} MB)")
        print(f"  grep -rl (baseline)    {median_ms(grep):7.1f} ms")
        print(f"  dir.search in broker   {median_ms(ours):7.1f} ms -> {median_ms(ours) / median_ms(grep):.2f}x grep (target <= 2x)")
        print(f"  dir.search, index learned {median_ms(indexed):4.1f} ms -> {median_ms(indexed) / median_ms(grep):.2f}x grep"
              f" (every file ruled out or searched by the index; each still stat'ed, as it may have changed)")
        print(f"  whole script run       {median_ms(script):7.1f} ms -> {median_ms(script) / median_ms(grep):.2f}x grep")
        print(f"  fdsl run via server    {median_ms(served):7.1f} ms -> {median_ms(served) / median_ms(grep):.2f}x grep"
              f" (target <= 1x; end to end: client, server, worker; first run {first_s * 1000:.0f} ms)")
        print(f"  floors: `fdsl run` of print(1) via server {median_ms(empty):5.1f} ms -> {median_ms(empty) / median_ms(grep):.2f}x grep;"
              f" a bare Python stat of every file {median_ms(walk):.1f} ms")
        print(f"  the same, index learned {median_ms(learned):7.1f} ms -> {median_ms(learned) / median_ms(paused_grep):.2f}x grep"
              f" (the kept runner's index, after {LEARN_S:g} s without a request; {AGENT_PAUSE_S * 1000:g} ms before each"
              f" call, grep {median_ms(paused_grep):.1f} ms so)")
        script_file.unlink()
        empty_file.unlink()
        if peak:
            kib = int(peak[0].split(":")[1])
            print(f"  broker peak RSS after searching and reading every file: {kib / 1024:.1f} MiB (target <= 150 MiB)")


LEARN_S = 10.0
AGENT_PAUSE_S = 0.2  # between calls in the learned loop (bench/session.py pauses as long)
SEARCH_SCRIPT = 'print(len(Directory("/").search("needle-in-haystack", scope="content")))'
REGEX_PATTERNS = {"literal": "needle-in-haystack", "regex": r"need\w+-in-\w+|(metric|method)\s+\d+"}


def regex_engines(runs: int, files: int) -> None:
    """RE2 (the broker's engine, through its Searcher) against Python's `re` and the `regex`
    module (the engine before RE2), on the same decoded texts: does any file match?"""
    import re

    import regex

    from runtime.services.textsearch import Searcher, compile_pattern

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        size = make_corpus(root, files)
        texts = [path.read_text() for path in sorted(root.rglob("*.txt"))]
    print(f"## Regex engines: any match in each of {len(texts)} texts ({size / 1e6:.1f} MB), median of {runs}")
    for kind, pattern in REGEX_PATTERNS.items():
        engines = {
            "re": re.compile(pattern, re.MULTILINE).search,
            "regex": regex.compile(pattern, regex.MULTILINE | regex.VERSION0).search,
            "RE2": lambda text, pat=compile_pattern(pattern), searcher=Searcher(None): searcher.search(pat, text),
        }
        times, counts = {}, {}
        for name, search in engines.items():
            samples = []
            for _ in range(runs):
                started = time.perf_counter()
                counts[name] = sum(1 for text in texts if search(text) is not None)
                samples.append(time.perf_counter() - started)
            times[name] = median_ms(samples)
        assert len(set(counts.values())) == 1, counts
        print(f"  {kind:8} {pattern!r}: {counts['RE2']} files match")
        print(f"    re (baseline) {times['re']:8.1f} ms   regex {times['regex']:8.1f} ms ({times['regex'] / times['re']:.2f}x re)"
              f"   RE2 {times['RE2']:8.1f} ms ({times['RE2'] / times['re']:.2f}x re, {times['RE2'] / times['regex']:.2f}x regex)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--only", choices=["regex", "search"], help="run one benchmark only")
    args = parser.parse_args()
    if args.only == "regex":
        regex_engines(max(3, args.runs // 4), args.files)
        return
    if args.only == "search":
        content_search(max(3, args.runs // 4), args.files)
        return
    one_line_script(args.runs, REPO / "examples/docs")
    round_trip(args.calls, REPO / "examples/docs")
    content_search(max(3, args.runs // 4), args.files)
    regex_engines(max(3, args.runs // 4), args.files)


if __name__ == "__main__":
    main()
