"""`fdsl index build|stats|pack|bench DIR`: the index of a directory from the command line.

- build DIR [-o FILE]: (re)index DIR into FILE (default: store.default_path(DIR), where runs
  look), reading only the files that changed since the file was written; a progress line on
  stderr (a terminal) once the build has taken a second.
- stats DIR: the seed's figures. pack DIR -o FILE: a blob for Index.from_blob.
- bench DIR [--pattern P] [--runs N]: our grep and read against system grep, rg when
  installed, and a plain read, measured in the same run.
Errors are one line on stderr, `fdsl index: <message>`, exit 1 (2 for a usage error).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from runtime.errors import ScriptError
from runtime.index import store
from runtime.index.memex import Index, MemexError, open_index, shown_name
from runtime.index.tokens import TokenIndex

PROGRESS_AFTER_S = 1.0


class Progress:
    """A one-line progress bar on a terminal, shown only once the work has taken a second."""

    def __init__(self, stream=None, force: bool = False, what: str = "indexing") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.shown = force or (hasattr(self.stream, "isatty") and self.stream.isatty())
        self.start = time.monotonic()
        self.bytes = 0
        self.what = what
        self.drawn = False

    def __call__(self, done: int, total: int, size: int) -> None:
        self.bytes += size
        if not self.shown or time.monotonic() - self.start < PROGRESS_AFTER_S:
            return
        width = 30
        filled = width * done // max(total, 1)
        self.stream.write(f"\r{self.what} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} files, "
                          f"{self.bytes / 1e6:.1f} MB")
        self.stream.flush()
        self.drawn = True

    def end(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def add_index_command(commands) -> None:
    index = commands.add_parser("index", help="build, inspect, pack or benchmark the search index of a directory")
    sub = index.add_subparsers(dest="index_command", required=True)
    build = sub.add_parser("build", help="index DIR (incrementally) where runs over it will find it")
    build.add_argument("dir")
    build.add_argument("-o", "--output", default=None, metavar="FILE", help="write the index here instead")
    stats = sub.add_parser("stats", help="documents, lines, size, unique tokens and memory of DIR's index")
    stats.add_argument("dir")
    pack = sub.add_parser("pack", help="pack DIR's documents and index into FILE (runtime.index.Index.from_blob)")
    pack.add_argument("dir")
    pack.add_argument("-o", "--output", required=True, metavar="FILE")
    bench = sub.add_parser("bench", help="our grep and read against system grep, rg and plain reads, on DIR")
    bench.add_argument("dir")
    bench.add_argument("--pattern", default=None, help="the pattern to grep (default: a word of the corpus)")
    bench.add_argument("--runs", type=int, default=200, metavar="N", help="repetitions of each timed call (default 200)")


def command_index(args) -> int:
    try:
        if not os.path.isdir(args.dir):
            raise MemexError(f"path not found: {shown_name(args.dir)}")
        return {"build": build, "stats": stats, "pack": pack, "bench": bench}[args.index_command](args)
    except (MemexError, ScriptError) as exc:
        print(f"fdsl index: {exc}", file=sys.stderr)
        return 1
    except sqlite3.Error as exc:  # writing the index file: a full disk, a locked file
        print(f"fdsl index: cannot write the index: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"fdsl index: {exc.strerror or exc}", file=sys.stderr)
        return 1


def build(args) -> int:
    target = Path(args.output) if args.output else store.default_path(args.dir)
    tokens, texts = TokenIndex(), {}
    if store.present(target):
        try:
            tokens, texts = store.load(target, with_texts=True, owned=True)
        except store.StoreError as exc:
            print(f"fdsl index: rebuilding {target}: {exc}", file=sys.stderr)
    index = Index(tokens, texts, open_index_vfs(args.dir))
    start = time.monotonic()
    progress = Progress()
    try:
        read = index.refresh(progress)
    finally:
        progress.end()
        index.close()
    index.pack(target)
    elapsed = time.monotonic() - start
    s = index.stats()
    print(f"indexed {s['documents']:,} documents ({read:,} read, {s['skipped']:,} skipped) in {elapsed:.2f} s; "
          f"{target.stat().st_size / 1e6:.1f} MB on disk for {s['bytes'] / 1e6:.1f} MB of files: {target}")
    return 0


def open_index_vfs(root: str):
    from runtime.fs.vfs import VirtualFS

    return VirtualFS([("/", os.path.abspath(root), False)])


def stats(args) -> int:
    index = open_index(args.dir, progress=Progress())
    s = index.stats()
    index.close()
    print(f"Documents: {s['documents']:,}\nTotal lines: {s['lines']:,}\nTotal size: {s['bytes'] / 1e6:.1f} MB\n"
          f"Unique tokens: {s['unique_tokens']:,}\nEstimated memory: ~{max(1, round(s['memory_bytes'] / 1e6))} MB\n"
          f"Skipped: {s['skipped']:,} (binary, too large or unreadable)")
    return 0


def pack(args) -> int:
    index = open_index(args.dir, progress=Progress())
    index.close()
    index.pack(args.output)
    print(f"packed {len(index.texts):,} documents into {args.output} ({os.path.getsize(args.output) / 1e6:.1f} MB)")
    return 0


def _timed(fn, runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        fn()
    return (time.perf_counter() - start) / runs


def _line(name: str, seconds: float, ours: float | None = None) -> str:
    text = f"  {name + ':':<22}{seconds * 1000:.3f} ms"
    if ours is not None and ours > 0:
        text += f" ({seconds / ours:.1f}x ours)"
    return text


def bench(args) -> int:
    if args.runs < 1:
        raise MemexError(f"--runs must be 1 or more, not {args.runs}")
    index = open_index(args.dir, progress=Progress())
    index.close()
    pattern = args.pattern or default_pattern(index)
    runs = args.runs
    ours = _timed(lambda: index.grep(pattern), runs)
    print(f'grep "{pattern}" ({index.grep(pattern)["total"]} matching lines)')
    print(_line("fdsl index grep", ours))
    fixed = ["-F"] if pattern.isalnum() or " " in pattern else ["-E"]
    for name, cmd in (("system grep -rin", ["grep", "-r", "-i", "-n", *fixed, "-e", pattern, args.dir]),
                      ("rg -in", ["rg", "-i", "-n", *fixed, "-e", pattern, args.dir])):
        if shutil.which(cmd[0]) is None:
            print(f"  {name + ':':<22}not installed")
            continue
        print(_line(name, _timed(lambda: subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False), max(3, runs // 20)), ours))
    target = min(index.texts)
    host = os.path.join(args.dir, target)
    ours = _timed(lambda: index.read(target), runs)
    print(f"read {target}")
    print(_line("fdsl index read", ours))
    print(_line("plain open().read()", _timed(lambda: Path(host).read_bytes().decode("utf-8", "replace"), runs), ours))
    return 0


def default_pattern(index: Index) -> str:
    """A word held by a few documents: the kind of lookup an agent makes."""
    live = index.tokens.live
    words = sorted((bin(bits & live).count("1"), token) for token, bits in index.tokens.postings.items()
                   if len(token) >= 5 and token.isalpha() and bits & live)
    return words[len(words) // 10][1] if words else "the"
