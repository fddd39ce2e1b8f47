"""Pagination, decoding, PDFs and the per-run document cache."""

from __future__ import annotations

import os

import pymupdf
import pytest

from runtime.errors import LimitError, ScriptError
from runtime.fs.vfs import VirtualFS
from runtime.services.documents import DocumentStore
from runtime.services.files import FilesService


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    return root


@pytest.fixture
def svc(root):
    return FilesService(VirtualFS([("/", root, False)]))


def numbered(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


@pytest.mark.parametrize("n, pages", [(1, 1), (79, 1), (80, 1), (81, 2), (160, 2), (161, 3)])
def test_page_counts_at_the_80_line_boundary(svc, root, n, pages):
    (root / "data" / "f.txt").write_text(numbered(n))
    assert svc.file_page_count("data/f.txt") == pages


def test_lines_80_and_81_are_on_pages_1_and_2(svc, root):
    (root / "data" / "f.txt").write_text(numbered(170))
    p1, p2, p3 = svc.file_read("data/f.txt", [1, 2, 3])
    assert p1.split("\n")[0] == "line 1" and p1.split("\n")[-1] == "line 80"
    assert p2.split("\n")[0] == "line 81" and p2.split("\n")[-1] == "line 160"
    assert p3 == "\n".join(f"line {i}" for i in range(161, 171))
    assert svc.file_head("data/f.txt") == p1
    assert svc.file_tail("data/f.txt") == p3
    assert svc.file_search("data/f.txt", r"^line 81$", False) == [2]
    assert svc.file_search("data/f.txt", r"^line 80$", False) == [1]


def test_empty_file_has_one_empty_page(svc, root):
    (root / "data" / "e.txt").write_bytes(b"")
    assert svc.file_page_count("data/e.txt") == 1
    assert svc.file_read("data/e.txt", None) == ""
    assert svc.file_read("data/e.txt", 1) == ""
    assert svc.file_read("data/e.txt", [1]) == [""]
    assert svc.file_head("data/e.txt") == "" and svc.file_tail("data/e.txt") == ""
    assert svc.file_search("data/e.txt", "x", False) == []
    assert svc.file_lines("data/e.txt", 1, 10) == ""


def test_read_whole_text_is_exact(svc, root):
    raw = "a\r\nb\n\nc"
    (root / "data" / "t.txt").write_bytes(raw.encode())
    assert svc.file_read("data/t.txt", None) == raw
    assert svc.file_read("data/t.txt", 1) == "a\nb\n\nc"


def test_read_page_lists_keep_order_and_duplicates(svc, root):
    (root / "data" / "f.txt").write_text(numbered(200))
    pages = svc.file_read("data/f.txt", [3, 1, 3])
    assert [p.split("\n")[0] for p in pages] == ["line 161", "line 1", "line 161"]
    assert svc.file_read("data/f.txt", []) == []


@pytest.mark.parametrize("pages, bad", [(0, 0), (-1, -1), (4, 4), ([1, 2, 12], 12), ([0], 0)])
def test_out_of_range_pages(svc, root, pages, bad):
    (root / "data" / "a.txt").write_text(numbered(200))
    with pytest.raises(ScriptError) as err:
        svc.file_read("data/a.txt", pages)
    assert str(err.value) == f"page {bad} is out of range: data/a.txt has 3 pages"


def test_out_of_range_single_page_grammar(svc, root):
    (root / "data" / "one.txt").write_text("x\n")
    with pytest.raises(ScriptError, match=r"^page 2 is out of range: data/one.txt has 1 page$"):
        svc.file_read("data/one.txt", 2)


def test_too_many_pages_in_one_read_is_a_limit(svc, root):
    (root / "data" / "a.txt").write_text("x\n")
    with pytest.raises(LimitError, match="10001 pages"):
        svc.file_read("data/a.txt", [1] * 10_001)


def test_invalid_utf8_never_crashes(svc, root):
    (root / "data" / "bad.txt").write_bytes(b"caf\xe9 ok\nnext \xff\xfe line\n\xe2\x82")
    text = svc.file_read("data/bad.txt", None)
    assert text == "caf\ufffd ok\nnext \ufffd\ufffd line\n\ufffd"
    assert svc.file_contains("data/bad.txt", "next", False)
    assert svc.file_search("data/bad.txt", "caf.", False) == [1]
    assert [f["path"] for f in svc.dir_search("data", "ok", "content", True, False)["files"]] == ["data/bad.txt"]
    assert svc.dir_grep("data", "line", None, False)["hits"] == [{"path": "data/bad.txt", "line": 2, "content": "next \ufffd\ufffd line"}]


def test_boms(svc, root):
    (root / "data" / "u8.txt").write_bytes(b"\xef\xbb\xbfhello\n")
    (root / "data" / "u16.txt").write_bytes("hello wide\n".encode("utf-16"))
    assert svc.file_read("data/u8.txt", None) == "hello\n"
    assert svc.file_read("data/u16.txt", None) == "hello wide\n"
    assert svc.file_contains("data/u16.txt", "wide", False)
    hits = svc.dir_search("data", "hello", "content", False, False)["files"]
    assert [f["path"] for f in hits] == ["data/u16.txt", "data/u8.txt"]


def test_size_limit(root):
    (root / "data" / "big.txt").write_text("x" * 5000)
    svc = FilesService(VirtualFS([("/", root, False)]), DocumentStore(max_bytes=4096))
    with pytest.raises(LimitError) as err:
        svc.file_read("data/big.txt", None)
    assert str(err.value) == "data/big.txt is 5000 bytes, over the limit of 4096 bytes per document"
    found = svc.dir_search("data", "x", "content", True, False)  # the search skips it and says so
    assert found["skipped"] == [{"path": "data/big.txt", "reason": str(err.value)}] and found["skipped_count"] == 1
    assert svc.file_open("data/big.txt")["size"] == 5000  # metadata is fine


def test_each_file_is_parsed_once_per_run(svc, root):
    f = root / "data" / "a.txt"
    f.write_text(numbered(100))
    for _ in range(3):
        svc.file_read("data/a.txt", 1)
        svc.file_search("data/a.txt", "line", False)
        svc.file_table("data/a.txt", 5)
        svc.file_lines("./data/../data/a.txt", 1, 5)
        svc.dir_grep("data", "line 7", None, False)["hits"]
        svc.dir_search("data", "line [0-9]", "content", True, False)["files"]
    assert svc.store.parse_count == 1
    # a changed file (size and mtime) is parsed again
    f.write_text(numbered(10))
    os.utime(f, ns=(1, 1))
    assert svc.file_page_count("data/a.txt") == 1
    assert svc.store.parse_count == 2


def test_content_search_does_not_parse(svc, root):
    for i in range(20):
        (root / "data" / f"f{i}.txt").write_text(f"file {i}\n")
    hits = svc.dir_search("data", "file 7", "content", True, False)["files"]
    assert [h["path"] for h in hits] == ["data/f7.txt"]
    hits = svc.dir_search("data", "FILE 1[0-9]", "content", True, True)["files"]
    assert [h["path"] for h in hits] == [f"data/f{i}.txt" for i in range(10, 20)]
    assert svc.store.parse_count == 0  # no pages built just to know whether a file matches


# ------------------------------------------------------------------------- PDF


def make_pdf(path, pages, toc=None, encrypt=False):
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        y = 72
        for line in text.split("\n"):
            page.insert_text((72, y), line)
            y += 14
    if toc:
        doc.set_toc(toc)
    if encrypt:
        doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="user")
    else:
        doc.save(path)
    doc.close()


def test_pdf_pages_text_and_outline(svc, root):
    make_pdf(
        root / "data" / "r.pdf",
        ["Introduction\nThe language model", "Methods\nWe measured", "Results\nA language model wins"],
        toc=[[1, "Introduction", 1], [1, "Methods", 2], [2, "Setup", 2], [1, "Results", 3]],
    )
    assert svc.file_page_count("data/r.pdf") == 3
    pages = svc.file_read("data/r.pdf", [1, 2, 3])
    assert "Methods" in pages[1] and "We measured" in pages[1]
    assert svc.file_read("data/r.pdf", None) == "\n\n".join(pages)
    assert svc.file_search("data/r.pdf", "language model", False) == [1, 3]
    assert svc.file_table("data/r.pdf", 50) == "Introduction (p.1)\nMethods (p.2)\n  Setup (p.2)\nResults (p.3)"
    snippets = svc.file_snippets("data/r.pdf", "language", 5, 4, False)
    assert snippets[0].startswith("[page 1] ") and snippets[1].startswith("[page 3] ")
    assert svc.file_open("data/r.pdf")["suffix"] == ".pdf"
    with pytest.raises(ScriptError, match=r"^page 4 is out of range: data/r.pdf has 3 pages$"):
        svc.file_read("data/r.pdf", 4)


def test_pdf_without_outline_falls_back_to_toc_lines(svc, root):
    make_pdf(root / "data" / "n.pdf", ["Contents\n1 Overview ........ 2\n2 Details ........ 3", "Overview", "Details"])
    assert svc.file_table("data/n.pdf", 50) == "1 Overview (p.2)\n2 Details (p.3)"


def test_encrypted_and_broken_pdfs(svc, root):
    make_pdf(root / "data" / "locked.pdf", ["secret"], encrypt=True)
    with pytest.raises(ScriptError, match=r"^cannot read PDF data/locked.pdf: it is encrypted"):
        svc.file_read("data/locked.pdf", None)
    (root / "data" / "broken.pdf").write_bytes(b"not a pdf at all")
    with pytest.raises(ScriptError, match=r"^cannot read PDF data/broken.pdf: "):
        svc.file_page_count("data/broken.pdf")
    # a content search over them goes on, and names what it skipped and why (issue 14)
    (root / "data" / "ok.txt").write_text("x marks the spot\n")
    found = svc.dir_search("data", "x", "content", True, False)
    assert [f["path"] for f in found["files"]] == ["data/ok.txt"]
    assert found["skipped_count"] == 2
    assert [s["path"] for s in found["skipped"]] == ["data/broken.pdf", "data/locked.pdf"]
    assert found["skipped"][1]["reason"].startswith("cannot read PDF data/locked.pdf: it is encrypted")
    # name searches never open files
    assert len(svc.dir_search("data", r"\.pdf$", "name", True, False)["files"]) == 2


def test_underlined_headings_and_toc_leaders_on_their_own_line_are_found():
    """Issue 14, item 5: reStructuredText/setext headings (the underline's character gives the
    level, in order of appearance) and TOC lines whose leader the PDF text layer put on the
    next line (bzip2's manual)."""
    from runtime.services.documents import detect_toc

    rst = "Guide\n=====\n\nInstall\n-------\ntext\n---\nUsage\n-------\nFlags\n^^^^^\n\n  indented\n==========\n"
    assert detect_toc([rst]) == [(1, "Guide", 1), (2, "Install", 1), (2, "Usage", 1), (3, "Flags", 1)]
    toc = "Contents\n1. Introduction\n....................... 1\n2. How to use bzip2\n. . . . . . . . 2\n2.1 NAME\n...... 3\n"
    assert detect_toc([toc]) == [(1, "1. Introduction", 1), (1, "2. How to use bzip2", 2), (2, "2.1 NAME", 3)]


def test_a_truncated_pdf_with_no_text_left_says_it_is_damaged(svc, root):
    doc = pymupdf.open()
    for i in range(3):
        doc.new_page().insert_text((72, 72), f"page {i} " * 20)
    data = doc.tobytes()
    (root / "data" / "cut.pdf").write_bytes(data[: len(data) // 3])
    with pytest.raises(ScriptError, match=r"^cannot read PDF data/cut.pdf: the file is damaged \(truncated or corrupt\)"):
        svc.file_read("data/cut.pdf", None)


def test_a_pdf_repaired_with_part_of_its_text_is_read_and_named_as_damaged(root, tmp_path):
    """Issue 14, item 5: the text that survived is read, and the run says the file is damaged."""
    from runtime.api import run_script

    doc = pymupdf.open()
    for i in range(3):
        doc.new_page().insert_text((72, 72), f"page {i} " * 5)
    data = doc.tobytes()
    (root / "data" / "half.pdf").write_bytes(data[: len(data) // 2])
    r = run_script('print(File("/data/half.pdf").read(1).strip())\n', root=str(root), timeout=60)
    assert r.ok, r.error
    assert r.output.startswith("page 0 page 0")
    assert r.warnings == ["damaged PDF repaired on opening, whose text may be incomplete: data/half.pdf"]
    (root / "data" / "a.txt").write_text("fine\n")
    r = run_script('print(len(File("/data/a.txt").read()) > 0)\n', root=str(root), timeout=60)
    assert r.ok and r.warnings == []


def test_table_of_a_pdf_with_an_outline_extracts_no_page(svc, root):
    """Issue 13: table() answered from the outline alone; the text is extracted only when it
    is needed (no outline, or a read)."""
    make_pdf(root / "data" / "m.pdf", [f"Chapter {i}\nbody" for i in range(1, 6)],
             toc=[[1, "One", 1], [1, "Two", 3], [2, "Two.a", 4]])
    make_pdf(root / "data" / "plain.pdf", ["1 Intro ........ 2", "Intro"])
    assert svc.file_table("data/m.pdf", 50) == "One (p.1)\nTwo (p.3)\n  Two.a (p.4)"
    assert svc.store.parse_count == 0  # no page's text was extracted
    assert svc.file_table("data/m.pdf", 50) == "One (p.1)\nTwo (p.3)\n  Two.a (p.4)"  # kept while unchanged
    assert svc.store.parse_count == 0
    assert svc.file_table("data/plain.pdf", 50) == "1 Intro (p.2)"  # no outline: from the text
    assert svc.store.parse_count == 1
    assert "Chapter 2" in svc.file_read("data/m.pdf", 2)
    assert svc.file_table("data/m.pdf", 1).startswith("One (p.1)")  # from the parsed document now
