"""FilesDSL's content searches through the index give exactly what a full scan gives
(search(scope="content"), grep, file.search, contains), over generated corpora changed
between queries; and files the index rules out are not read."""

from __future__ import annotations

import io
import os
import tempfile
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from runtime.cli import main
from runtime.errors import ScriptError
from runtime.fs.vfs import VirtualFS
from runtime.index.prefilter import RunIndex
from runtime.services.files import FilesService
from tests.runtime.index.corpora import Clock, corpora, run_steps


@contextmanager
def cache_in(path: Path):
    """XDG_CACHE_HOME for one generated example (hypothesis runs many in one test)."""
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(path)
    try:
        yield
    finally:
        if old is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = old


def services(root: Path, deferred: bool = False) -> tuple[FilesService, FilesService]:
    plain = FilesService(VirtualFS([("/", root, False)]))
    indexed = FilesService(VirtualFS([("/", root, False)]), index=RunIndex(persistent=False, deferred=deferred))
    return plain, indexed


def answers(svc: FilesService, pattern: str, ignore_case: bool, names: list[str]) -> list:
    out = [svc.dir_grep(".", pattern, None, ignore_case, 7),
           svc.dir_search(".", pattern, "content", True, ignore_case),
           svc.dir_search("sub", pattern, "both", True, ignore_case)]
    for name in names:
        out.append((name, svc.file_search(name, pattern, ignore_case), svc.file_contains(name, pattern, ignore_case)))
    return out


@pytest.mark.parametrize("deferred", [False, True], ids=["learning", "deferred"])
@given(corpus=corpora, script=run_steps)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_searches_through_the_index_equal_a_full_scan(deferred, corpus, script):
    """`deferred`: the index learns what was read after every step (a kept runner between its
    runs), so texts read before a file changed are learned after the change."""
    with tempfile.TemporaryDirectory() as tmp, cache_in(Path(tmp) / "cache"):
        root = Path(tmp) / "root"
        (root / "sub").mkdir(parents=True)
        clock = Clock()
        for name, text in corpus.items():
            clock.write(root, name, text)
        plain, indexed = services(root, deferred)
        for step in script + [("query", "alpha", True), ("query", "alpha", True)]:
            if deferred:
                indexed.index.learn_pending(lambda: False)
            if step[0] == "build":
                with redirect_stdout(io.StringIO()):
                    assert main(["index", "build", str(root)]) == 0
            elif step[0] == "newrun":
                indexed = FilesService(VirtualFS([("/", root, False)]), index=RunIndex(deferred=deferred))
            elif step[0] == "write":
                clock.write(root, step[1], step[2])
            elif step[0] == "delete":
                (root / step[1]).unlink(missing_ok=True)
            else:
                names = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
                try:
                    expected = answers(plain, step[1], step[2], names)
                except ScriptError as exc:
                    with pytest.raises(type(exc)):
                        answers(indexed, step[1], step[2], names)
                    continue
                assert answers(indexed, step[1], step[2], names) == expected, step


def test_what_the_index_rules_out_is_not_read(tmp_path):
    clock = Clock()
    for i in range(20):
        clock.write(tmp_path, f"doc{i:02}.txt", f"common words here\nonly in {i:02}: token{i}\n")
    _, indexed = services(tmp_path)
    reads = []
    original = indexed.vfs.read_entry
    indexed.vfs.read_entry = lambda entry, *a: reads.append(entry.vpath) or original(entry, *a)
    assert indexed.dir_grep(".", "token7", None, True)["total"] == 1
    assert len(set(reads)) == 20  # the first search reads every file, and learns them
    reads.clear()
    hits = indexed.dir_grep(".", r"only in 13: token13\b", None, False)
    assert [h["path"] for h in hits["hits"]] == ["doc13.txt"]
    assert set(reads) == {"doc13.txt"}
    reads.clear()
    assert indexed.dir_search(".", "token5", "content", True, True)["files"][0]["path"] == "doc05.txt"
    assert indexed.file_contains("doc03.txt", "token5", True) is False
    assert reads == ["doc05.txt"]  # the one candidate; doc03.txt is ruled out unread


def test_a_deferred_index_learns_when_told_and_stops_when_asked(tmp_path):
    clock = Clock()
    for i in range(20):
        clock.write(tmp_path, f"doc{i:02}.txt", f"common words here\nonly in {i:02}: token{i}\n")
    _, indexed = services(tmp_path, deferred=True)
    reads = []
    original = indexed.vfs.read_entry
    indexed.vfs.read_entry = lambda entry, *a: reads.append(entry.vpath) or original(entry, *a)
    assert indexed.dir_grep(".", "token7", None, True)["total"] == 1
    assert indexed.index.learned == 0 and len(indexed.index.pending) == 20  # the search paid for no learning
    reads.clear()
    assert indexed.dir_grep(".", "token8", None, True)["total"] == 1
    # nothing learned yet: every file read again (doc07.txt, a hit, is in the document store)
    assert set(reads) == {f"doc{i:02}.txt" for i in range(20)} - {"doc07.txt"}
    asked = []
    assert indexed.index.learn_pending(lambda: asked.append(1) or len(asked) > 5) == 15  # stopped when asked
    assert indexed.index.learned == 5
    assert indexed.index.learn_pending(lambda: False) == 0 and indexed.index.learned == 20
    reads.clear()
    assert indexed.dir_grep(".", r"only in 13: token13\b", None, False)["total"] == 1
    assert set(reads) == {"doc13.txt"}


def test_a_changed_file_is_searched_again(tmp_path):
    clock = Clock()
    clock.write(tmp_path, "a.txt", "old words\n")
    _, indexed = services(tmp_path)
    assert indexed.dir_grep(".", "old", None, True)["total"] == 1
    clock.write(tmp_path, "a.txt", "new words\n")
    assert indexed.dir_grep(".", "new", None, True)["total"] == 1
    assert indexed.dir_grep(".", "old", None, True)["total"] == 0


def test_a_recent_file_is_not_trusted(tmp_path):
    (tmp_path / "a.txt").write_text("fresh words\n")  # modified now: within the racy window
    _, indexed = services(tmp_path)
    assert indexed.dir_grep(".", "fresh", None, True)["total"] == 1
    assert indexed.index.learned == 0


def test_refusals_are_the_same_with_the_index(tmp_path):
    from runtime.fs.config import Mount, SandboxConfig
    from runtime.fs.sandbox import Sandbox

    clock = Clock()
    clock.write(tmp_path, "a.txt", "needle\n")
    clock.write(tmp_path, "big.txt", "word " * 100)
    sandbox = Sandbox(SandboxConfig(mounts=[Mount(host_path=tmp_path, mount_point="/", max_file_bytes=100)]))
    plain = FilesService(VirtualFS(sandbox))
    indexed = FilesService(VirtualFS(sandbox), index=RunIndex(persistent=False))
    for _ in range(2):  # the second time the index knows a.txt
        for svc in (plain, indexed):
            r = svc.dir_search(".", "needle", "content", True, False)
            assert [f["path"] for f in r["files"]] == ["a.txt"]
            assert r["skipped_count"] == 1 and r["skipped"][0]["path"] == "big.txt"
        with pytest.raises(ScriptError, match="over the limit"):
            indexed.file_contains("big.txt", "zzz", False)


def test_a_file_rewritten_with_the_same_text_is_still_found(tmp_path):
    # found by the property test: a cached vocabulary scan outlived the documents it named
    clock = Clock()
    _, indexed = services(tmp_path)
    clock.write(tmp_path, "a.txt", "alpha ")
    assert indexed.dir_grep(".", "alpha", None, False)["total"] == 1
    clock.write(tmp_path, "a.txt", "alpha ")
    assert indexed.dir_grep(".", "alpha", None, True)["total"] == 1
    assert indexed.file_contains("a.txt", "alpha", True) is True


def test_a_document_with_an_overlong_token_is_always_a_candidate(tmp_path):
    clock = Clock()
    clock.write(tmp_path, "long.txt", "x" * 100 + "needle" + "y" * 100 + "\n")
    clock.write(tmp_path, "short.txt", "nothing\n")
    plain, indexed = services(tmp_path)
    for pattern in ("needle", "xneedley", "zzz"):
        for _ in range(2):
            assert indexed.dir_grep(".", pattern, None, True) == plain.dir_grep(".", pattern, None, True)
    assert indexed.index.learned == 2
    assert indexed.dir_grep(".", "needle", None, True)["total"] == 1


def test_pdf_pages_through_the_index(tmp_path):
    from tests.e2e.conftest import make_pdf

    make_pdf(tmp_path / "report.pdf", ["Introduction\nthe scope", "Methods\nlanguage model", "Results\nmodel wins"])
    os.utime(tmp_path / "report.pdf", (1_000_000_000, 1_000_000_000))
    Clock().write(tmp_path, "sub/other.md", "no such words\n")
    plain, indexed = services(tmp_path)
    try:
        for _ in range(2):  # the second time, the index knows both files
            for pattern, ignore_case in (("model", True), ("MODEL", False), ("^Results", True), ("scope\nMethods", False),
                                         ("nothing", True), (r"language\s+model", True)):
                assert answers(indexed, pattern, ignore_case, ["report.pdf"]) == answers(plain, pattern, ignore_case, ["report.pdf"])
        assert indexed.file_search("report.pdf", "model", True) == [2, 3]
        assert indexed.index.learned == 2
    finally:
        plain.store.close()
        indexed.store.close()


def test_a_refused_approval_is_refused_through_the_index_too(tmp_path):
    from runtime.errors import ApprovalDeniedError
    from runtime.fs.config import Mount, SandboxConfig
    from runtime.fs.sandbox import Sandbox

    clock = Clock()
    clock.write(tmp_path, "a.txt", "alpha words\n")
    sandbox = Sandbox(SandboxConfig(mounts=[Mount(host_path=tmp_path, mount_point="/", read_approval=True)]))
    answers_given = iter([True, True, False])
    indexed = FilesService(VirtualFS(sandbox, approve=lambda _: next(answers_given)), index=RunIndex(persistent=False))
    assert indexed.file_contains("a.txt", "alpha", False) is True  # read, approved, learned
    assert indexed.index.learned == 1
    fresh = FilesService(VirtualFS(sandbox, approve=lambda _: False), index=indexed.index)
    with pytest.raises(ApprovalDeniedError):
        fresh.file_contains("a.txt", "zzz", False)  # ruled out by the index, still asked, refused


def test_a_large_text_is_not_learned_and_is_searched_every_time(tmp_path, monkeypatch):
    from runtime.index import prefilter

    monkeypatch.setattr(prefilter, "MAX_LEARNED_CHARS", 50)
    clock = Clock()
    clock.write(tmp_path, "big.txt", "filler words " * 10 + "needle\n")
    clock.write(tmp_path, "small.txt", "needle\n")
    plain, indexed = services(tmp_path)
    for _ in range(2):
        assert indexed.dir_grep(".", "needle", None, True) == plain.dir_grep(".", "needle", None, True)
        assert indexed.dir_grep(".", "absent", None, True)["total"] == 0
    assert indexed.index.learned == 1


def test_a_file_rewritten_with_its_size_and_mtime_kept_is_searched_again(tmp_path):
    """What the index learned in memory is trusted only while the file has its size, mtime,
    inode and ctime: a same-size rewrite with the mtime set back (as cp -p or tar restore
    it) changes the ctime, a file renamed over it the inode."""
    for how in ("in place", "renamed over"):
        clock = Clock()
        clock.write(tmp_path, "a.txt", "old words\n")
        _, indexed = services(tmp_path)
        assert indexed.dir_grep(".", "old", None, True)["total"] == 1
        assert indexed.index.learned == 1
        before = os.stat(tmp_path / "a.txt")
        if how == "in place":
            (tmp_path / "a.txt").write_text("new words\n")
        else:
            (tmp_path / "b.txt").write_text("new words\n")
            os.replace(tmp_path / "b.txt", tmp_path / "a.txt")
        os.utime(tmp_path / "a.txt", ns=(before.st_atime_ns, before.st_mtime_ns))
        assert indexed.dir_grep(".", "new", None, True)["total"] == 1, how
        assert indexed.dir_grep(".", "old", None, True)["total"] == 0, how


def test_a_document_learned_during_a_search_is_not_ruled_out_by_that_search(tmp_path):
    """A file symlink's key is its target's path: one search meets the same key twice. What it
    learned on the first meeting is newer than the search's candidates, and not ruled out."""
    clock = Clock()
    clock.write(tmp_path, "0.txt", "nothing here\n")
    clock.write(tmp_path, "a.txt", "the needle is here\n")
    (tmp_path / "z.txt").symlink_to("a.txt")
    plain, indexed = services(tmp_path)
    assert indexed.dir_grep(".", "zzz", "0.txt", True)["total"] == 0  # learns 0.txt only
    assert indexed.index.learned == 1
    for _ in range(2):
        for service in (plain, indexed):
            assert [h["path"] for h in service.dir_grep(".", "needle", None, True)["hits"]] == ["a.txt", "z.txt"]
            assert [f["path"] for f in service.dir_search(".", "needle", "content", True, True)["files"]] == ["a.txt", "z.txt"]


def test_a_symlink_named_as_another_kind_than_its_target_is_read_as_named_with_or_without_the_index(tmp_path):
    """"0.txt" -> "a.pdf" is text (the PDF's bytes), its target a PDF (its extracted text): the
    document cache and the index keep the two apart, in either order of reading."""
    import pymupdf

    pdf = pymupdf.open()
    pdf.new_page().insert_text((72, 72), "the needle is here")
    # uncompressed, so its bytes hold no NUL (readable as text) and its text only hex-encoded
    (tmp_path / "a.pdf").write_bytes(pdf.tobytes(expand=255, garbage=0))
    os.utime(tmp_path / "a.pdf", (1_000_000_000, 1_000_000_000))
    (tmp_path / "0.txt").symlink_to("a.pdf")
    plain, indexed = services(tmp_path)
    fresh = FilesService(VirtualFS([("/", tmp_path, False)]))
    try:
        expected = {"needle": ["a.pdf"], "endobj": ["0.txt"]}
        for service in (plain, indexed):
            for _ in range(2):  # the second time from the document cache, and the index
                for pattern, names in expected.items():
                    found = [f["path"] for f in service.dir_search(".", pattern, "content", True, False)["files"]]
                    assert found == names, (pattern, found)
                    assert service.file_contains("a.pdf", pattern, False) == ("a.pdf" in names)
                    assert service.file_contains("0.txt", pattern, False) == ("0.txt" in names)
        assert fresh.file_contains("0.txt", "endobj", False) and fresh.file_contains("a.pdf", "needle", False)
        assert not fresh.file_contains("a.pdf", "endobj", False)  # the PDF's text, from the cache of the link's read
    finally:
        for service in (plain, indexed, fresh):
            service.store.close()
