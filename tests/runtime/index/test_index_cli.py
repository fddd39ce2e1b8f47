"""`fdsl index build|stats|pack|bench`, and runs over a built index: a file changed since the
build is searched as it is now, and the files the index rules out are not read."""

from __future__ import annotations

import io
import os
import sqlite3
import time

import pytest

from runtime.api import run_script
from runtime.cli import main
from runtime.fs.vfs import VirtualFS
from runtime.index import Index, open_index, store
from runtime.index.cli import Progress
from runtime.index.prefilter import RunIndex
from runtime.services.files import FilesService
from tests.runtime.index.corpora import Clock


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def docs(tmp_path):
    root = tmp_path / "docs"
    clock = Clock()
    for i in range(30):
        clock.write(root, f"sub/doc{i:02}.md", f"# Doc {i}\nshared words\nonly here: marker{i}\n")
    clock.write(root, "notes.txt", "the old wording\r\n")
    return root


def test_build_then_a_run_sees_the_change_not_the_old_text(docs, capsys):
    assert main(["index", "build", str(docs)]) == 0
    assert "indexed 31 documents (31 read, 0 skipped)" in capsys.readouterr().out
    assert store.default_path(str(docs)).exists()
    clock = Clock()
    clock.ns += 20_000 * 10**9
    clock.write(docs, "notes.txt", "the new wording\n")
    script = ('print(Directory("/").search("old wording", scope="content"))\n'
              'print(Directory("/").search("new wording", scope="content"))\n'
              'print(Directory("/").grep("marker7"))\n')
    result = run_script(script, root=str(docs), timeout=60)
    assert result.error is None, result.error
    assert result.output.splitlines() == ["[]", "[notes.txt]", "[sub/doc07.md:3: only here: marker7]"]
    assert result.warnings == []
    assert main(["index", "build", str(docs)]) == 0
    assert "indexed 31 documents (1 read, 0 skipped)" in capsys.readouterr().out  # incremental


def test_a_run_over_a_built_index_reads_only_candidates(docs):
    assert main(["index", "build", str(docs)]) == 0
    svc = FilesService(VirtualFS([("/", docs, False)]), index=RunIndex())
    reads = []
    original = svc.vfs.read_entry
    svc.vfs.read_entry = lambda entry, *a: reads.append(entry.vpath) or original(entry, *a)
    assert [h["path"] for h in svc.dir_grep(".", r"marker12\b", None, True)["hits"]] == ["sub/doc12.md"]
    assert set(reads) == {"sub/doc12.md"}
    assert svc.index.loaded == 1


def test_an_unusable_index_file_is_named_in_the_run_warnings(docs):
    path = store.default_path(str(docs))
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not an index at all" * 100)
    path.chmod(0o600)
    result = run_script('print(len(Directory("/").grep("marker1")))', root=str(docs), timeout=60)
    assert result.output == "11\n"
    assert any("the index of / was not used" in w for w in result.warnings)
    assert str(docs) not in " ".join(result.warnings)


def test_stats_pack_and_errors(docs, tmp_path, capsys):
    assert main(["index", "stats", str(docs)]) == 0
    out = capsys.readouterr().out
    assert "Documents: 31\nTotal lines: 91\n" in out and "Unique tokens:" in out
    assert main(["index", "pack", str(docs), "-o", str(tmp_path / "d.idx")]) == 0
    assert Index.from_blob(tmp_path / "d.idx").grep("marker3")["total"] == 1
    assert main(["index", "stats", str(tmp_path / "nope")]) == 1
    assert "fdsl index: path not found" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["index", "build", str(tmp_path / "empty")]) == 0
    assert main(["index", "stats", str(tmp_path / "empty")]) == 1
    assert "no documents found in empty" in capsys.readouterr().err


def test_bench_measures_against_system_grep(docs, capsys):
    assert main(["index", "bench", str(docs), "--pattern", "marker1", "--runs", "3"]) == 0
    out = capsys.readouterr().out
    assert 'grep "marker1" (11 matching lines)' in out
    assert "fdsl index grep:" in out and "system grep -rin:" in out and "plain open().read():" in out


def test_progress_is_drawn_only_after_a_second(monkeypatch):
    stream = io.StringIO()
    progress = Progress(stream, force=True)
    progress(1, 10, 100)
    assert stream.getvalue() == ""
    monkeypatch.setattr(time, "monotonic", lambda: progress.start + 1.5)
    progress(5, 10, 100)
    progress.end()
    assert stream.getvalue() == "\rindexing [###############...............] 5/10 files, 0.0 MB\n"


def test_a_cache_directory_that_cannot_be_looked_at_is_no_index(docs, tmp_path, monkeypatch):
    # a name too long to stat (ENAMETOOLONG): pathlib's exists() raises for it, as for EACCES
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ("x" * 300)))
    result = run_script('print(len(Directory("/").grep("marker1")))', root=str(docs), timeout=60)
    assert (result.output, result.error) == ("11\n", None)
    assert open_index(docs).grep("marker1")["total"] == 11


@pytest.mark.parametrize("how", ["in place", "renamed over"])
def test_a_built_index_does_not_trust_a_file_rewritten_with_its_size_and_mtime_kept(docs, capsys, how):
    """A stored index records each file's inode and ctime too (format 2): a rewrite of the same
    size with the mtime set back (cp -p, tar x) moves the ctime, a file renamed over it brings
    another inode; either way the old words are not served and the new ones are found."""
    assert main(["index", "build", str(docs)]) == 0
    capsys.readouterr()
    notes = docs / "notes.txt"
    before = notes.stat()
    if how == "in place":
        notes.write_bytes(b"the new wording\r\n")
    else:
        (docs / "next.tmp").write_bytes(b"the new wording\r\n")
        (docs / "next.tmp").replace(notes)
    os.utime(notes, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (notes.stat().st_size, notes.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    script = ('print(Directory("/").search("old wording", scope="content"))\n'
              'print(Directory("/").search("new wording", scope="content"))\n')
    result = run_script(script, root=str(docs), timeout=60)
    assert result.error is None and result.warnings == [], (result.error, result.warnings)
    assert result.output.splitlines() == ["[]", "[notes.txt]"]
    assert open_index(docs).grep("new wording")["total"] == 1
    assert main(["index", "build", str(docs)]) == 0
    assert "indexed 31 documents (1 read, 0 skipped)" in capsys.readouterr().out


def test_an_index_of_the_previous_format_is_rebuilt(docs, capsys):
    """Format 1 (size and mtime only) is refused as another format: a run searches without it
    and says so, and `fdsl index build` rebuilds it whole."""
    path = store.default_path(str(docs))
    path.parent.mkdir(parents=True, mode=0o700)
    con = sqlite3.connect(path)
    with con:
        con.execute("CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID")
        con.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, size INTEGER NOT NULL, "
                    "mtime_ns INTEGER NOT NULL, kind TEXT NOT NULL, text BLOB NOT NULL)")
        con.execute("CREATE TABLE postings(token TEXT PRIMARY KEY, docs BLOB NOT NULL) WITHOUT ROWID")
        con.execute("INSERT INTO meta VALUES ('format', 'fdsl-index 1')")
    con.close()
    path.chmod(0o600)
    result = run_script('print(len(Directory("/").grep("marker1")))', root=str(docs), timeout=60)
    assert result.output == "11\n"
    assert any("the index of / was not used" in w for w in result.warnings), result.warnings
    assert main(["index", "build", str(docs)]) == 0
    out = capsys.readouterr()
    assert "rebuilding" in out.err and "indexed 31 documents (31 read, 0 skipped)" in out.out
    assert store.load(path, with_texts=False, owned=True)[0].docs["notes.txt"].change is not None
