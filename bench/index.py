"""The index's figures, each against a baseline measured in the same run.

    python bench/index.py [--docs 500] [--files 5000] [--stores]

1. Token grep on DOCS generated documents (the seed's target: 0.02 ms/query): Index.from_blob
   (a snapshot: no file checked) and open_index (each document answered from is stat'ed),
   against a linear scan of the same texts with the same compiled pattern, and FilesDSL's
   grep without the index.
2. A regex with a literal on FILES small files: cold (index build included) against
   `grep -rlE`; warm against `rg -l` when installed; and FilesDSL's grep through a built index
   (the run's RunIndex) against FilesDSL's grep without one.
3. Build throughput (MB/s) and size on disk against the corpus size.
4. (--stores) the stores this index chose between, on the DOCS corpus: SQLite FTS5 with the
   trigram tokenizer (detail=none and full) against folded word tokens.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime.fs.vfs import VirtualFS  # noqa: E402
from runtime.index import Index, open_index, store  # noqa: E402
from runtime.index.fold import fold  # noqa: E402
from runtime.index.prefilter import RunIndex  # noqa: E402
from runtime.index.tokens import tokens_of  # noqa: E402
from runtime.services.files import FilesService  # noqa: E402
from runtime.services.textsearch import Searcher, compile_pattern  # noqa: E402

OLD = time.time() - 86_400  # files a day old: past the index's racy window


def corpus(root: Path, count: int, lines: int, seed: int = 1) -> float:
    """`count` markdown documents of `lines` lines of words; their size in MB."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 10))) for _ in range(20_000)]
    total = 0
    for i in range(count):
        path = root / f"part{i % 10}" / f"doc{i:05}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(lines)) + "\n"
        text += f"reference code REF-{i:05}\n"
        path.write_text(text)
        os.utime(path, (OLD, OLD))
        total += len(text)
    return total / 1e6


def per_call(fn, min_seconds: float = 0.5) -> float:
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / n


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def token_grep(root: Path, count: int) -> None:
    index = open_index(root, persistent=False)
    blob_path = root.parent / "docs.fdslindex"
    index.pack(blob_path)
    blob = Index.from_blob(blob_path)
    word = "REF-00042"
    pat = compile_pattern(word, True)
    searcher = Searcher()
    texts = [t for _, t in blob.texts.values()]
    scan = per_call(lambda: [searcher.search(pat, t) for t in texts])
    snap = per_call(lambda: blob.grep(word))
    live = per_call(lambda: index.grep(word))
    svc = FilesService(VirtualFS([("/", root, False)]))
    fdsl = per_call(lambda: svc.dir_grep("/", word, None, True))
    learned = FilesService(VirtualFS([("/", root, False)]), index=RunIndex(persistent=False))
    learned.dir_grep("/", word, None, True)  # a first grep reads every file and learns it (a Session, the tools)
    fdsl_indexed = per_call(lambda: learned.dir_grep("/", word, None, True))
    print(f"1. token grep {word!r} on {count} documents ({blob.grep(word)['total']} hit):")
    print(f"   Index.from_blob grep {ms(snap)} (target 0.020 ms); open_index grep {ms(live)} (stat of each candidate)")
    print(f"   baselines: linear scan of the texts {ms(scan)} ({scan / snap:.0f}x the snapshot's time); "
          f"FilesDSL grep without index {ms(fdsl)} ({fdsl / live:.0f}x open_index's)")
    print(f"   FilesDSL grep through the run's index (a later grep: walk, stat, one file read) {ms(fdsl_indexed)} "
          f"({fdsl / fdsl_indexed:.1f}x faster than without)")


def regex_grep(root: Path, files: int, mb: float) -> None:
    pattern = r"REF-0123\d"
    start = time.perf_counter()
    index = open_index(root, persistent=False)
    hits = index.grep(pattern)
    cold = time.perf_counter() - start
    grep_cmd = ["grep", "-rlE", "REF-0123[0-9]", str(root)]
    start = time.perf_counter()
    subprocess.run(grep_cmd, stdout=subprocess.DEVNULL, check=False)
    grep_s = time.perf_counter() - start
    warm = per_call(lambda: index.grep(pattern))
    print(f"2. regex {pattern!r} on {files} files ({mb:.1f} MB, {hits['total']} hits):")
    print(f"   cold, build included: ours {cold:.2f} s; grep -rlE {grep_s:.3f} s (ours {cold / grep_s:.0f}x its time)")
    if shutil.which("rg"):
        rg_s = per_call(lambda: subprocess.run(["rg", "-l", pattern, str(root)], stdout=subprocess.DEVNULL, check=False))
        print(f"   warm: ours {ms(warm)}; rg -l {ms(rg_s)} ({rg_s / warm:.1f}x ours)")
    else:
        warm_grep = per_call(lambda: subprocess.run(grep_cmd, stdout=subprocess.DEVNULL, check=False))
        print(f"   warm: ours {ms(warm)}; rg not installed; grep -rlE warm {ms(warm_grep)} ({warm_grep / warm:.1f}x ours)")
    store.save(store.default_path(str(root)), index.tokens, index.texts)
    plain = FilesService(VirtualFS([("/", root, False)]))
    plain_s = per_call(lambda: plain.dir_grep("/", pattern, None, True), 2.0)
    first_s = per_call(lambda: FilesService(VirtualFS([("/", root, False)]), index=RunIndex()).dir_grep(
        "/", pattern, None, True), 2.0)
    indexed = FilesService(VirtualFS([("/", root, False)]), index=RunIndex())
    later_s = per_call(lambda: indexed.dir_grep("/", pattern, None, True), 2.0)
    print(f"   FilesDSL grep without the index {plain_s:.3f} s; through the built index: a run's first grep (loading "
          f"it) {first_s:.3f} s ({plain_s / first_s:.1f}x), later greps {later_s:.3f} s ({plain_s / later_s:.1f}x)")


def build_figures(root: Path, mb: float) -> None:
    out = root.parent / "build.fdslindex"
    start = time.perf_counter()
    index = open_index(root, persistent=False)
    index.pack(out)
    elapsed = time.perf_counter() - start
    size = out.stat().st_size / 1e6
    print(f"3. build: {mb:.1f} MB in {elapsed:.2f} s = {mb / elapsed:.1f} MB/s (walk, read, fold, tokens, write); "
          f"on disk {size:.1f} MB = {size / mb:.2f}x the corpus (texts kept, compressed, for read and from_blob)")


def stores(root: Path, mb: float) -> None:
    texts = [p.read_text() for p in sorted(root.rglob("*.md"))]
    print("4. stores, on the same texts:")
    for detail in ("none", "full"):
        path = root.parent / f"fts-{detail}.db"
        start = time.perf_counter()
        con = sqlite3.connect(path)
        con.execute(f"CREATE VIRTUAL TABLE g USING fts5(t, tokenize='trigram case_sensitive 1', content='', detail={detail})")
        with con:
            con.executemany("INSERT INTO g(rowid, t) VALUES (?, ?)", ((i, fold(t)) for i, t in enumerate(texts)))
        con.close()
        elapsed = time.perf_counter() - start
        con = sqlite3.connect(path)
        try:
            query = ms(per_call(lambda: con.execute("SELECT rowid FROM g WHERE g MATCH ?", ('"ref-00042"',)).fetchall()))
        except sqlite3.OperationalError as exc:  # detail=none cannot tell where its trigrams are
            query = f"no substring query ({exc})"
        con.close()
        print(f"   FTS5 trigram detail={detail}: {mb / elapsed:.1f} MB/s, {path.stat().st_size / 1e6:.1f} MB, {query}")
    start = time.perf_counter()
    sets = [tokens_of(t) for t in texts]
    elapsed = time.perf_counter() - start
    print(f"   folded word tokens: {mb / elapsed:.1f} MB/s to tokenize ({sum(map(len, sets)):,} postings; "
          f"the whole build with reads, postings and the file: figure 3)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--stores", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        docs = Path(tmp) / "docs"
        mb = corpus(docs, args.docs, 100)
        token_grep(docs, args.docs)
        many = Path(tmp) / "many" / "tree"
        many_mb = corpus(many, args.files, 10, seed=2)
        regex_grep(many, args.files, many_mb)
        build_figures(docs, mb)
        if args.stores:
            stores(docs, mb)


if __name__ == "__main__":
    main()
