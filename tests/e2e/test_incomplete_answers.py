"""A search over many files never gives a silently incomplete answer (issue 14, items 1, 2, 4):
files it cannot read are skipped and named, results it cut say how many there were."""

from __future__ import annotations

import pytest

from runtime.api import run_script
from runtime.fs.config import Mount, SandboxConfig
from runtime.fs.sandbox import Sandbox


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "good.md").write_text("# Guide\nthe needle is here\n")
    (tmp_path / "docs" / "broken.pdf").write_bytes(b"%PDF-1.5 not really a PDF")
    (tmp_path / "docs" / "tool.bin").write_bytes(b"\x7fELF\x00\x00GLIBC_2.34 needle\x00" * 10)
    (tmp_path / "docs" / "huge.log").write_text("needle\n" * 20_000)  # 140 KB: over the mount's limit below
    (tmp_path / "many.txt").write_text("".join(f"needle {i}\n" for i in range(942)))
    config = SandboxConfig(mounts=[Mount(host_path=tmp_path, mount_point="/", max_file_bytes=100_000)])
    return Sandbox(config)


def run(source: str, sandbox) -> tuple[str, str | None]:
    r = run_script(source, sandbox=sandbox, timeout=60)
    return r.output, r.error


def test_a_search_skips_what_it_cannot_read_and_says_so(tree):
    out, error = run('r = Directory("docs").search("needle", scope="content")\n'
                     'print(len(r), r.total, r.truncated, len(r.skipped), r.skipped.total)\n'
                     'for s in r.skipped:\n'
                     '    print(s.path)\n'
                     'print(r)\n', tree)
    assert error is None, error
    lines = out.splitlines()
    assert lines[0] == "1 1 false 3 3"
    assert lines[1:4] == ["docs/broken.pdf", "docs/huge.log", "docs/tool.bin"]
    assert lines[4].startswith("[docs/good.md] (skipped 3 files it could not read: cannot read PDF docs/broken.pdf")
    assert "docs/tool.bin is a binary file" in lines[4] and "docs/huge.log" in lines[4]


def test_reading_the_skipped_file_itself_gives_the_clear_error(tree):
    _out, error = run('print(File("docs/tool.bin").read())\n', tree)
    assert error.startswith("RuntimeError: docs/tool.bin is a binary file (it holds NUL bytes): only text, "
                            "markdown and PDF files can be read\n  at line 1"), error
    _out, error = run('print(File("docs/tool.bin").contains("GLIBC"))\n', tree)
    assert "docs/tool.bin is a binary file" in error
    _out, error = run('print(File("docs/huge.log").read())\n', tree)
    assert "over the limit of 100000 bytes for files in /" in error


def test_a_capped_grep_says_it_was_cut_and_how_many_there_were(tree):
    out, error = run('hits = Directory("/").grep("needle", glob="*.txt")\n'
                     'print(len(hits), hits.total, hits.truncated)\n'
                     'print(hits)\n'
                     'all = Directory("/").grep("needle", glob="*.txt", max_results=1000)\n'
                     'print(len(all), all.total, all.truncated)\n', tree)
    assert error is None, error
    lines = out.splitlines()
    assert lines[0] == "100 942 true"
    assert lines[1].endswith("(showing 100 of 942; grep(..., max_results=N) shows more)")
    assert lines[2] == "942 942 false"


def test_grep_skips_too_and_refuses_a_max_results_out_of_bounds(tree):
    out, error = run('hits = Directory("docs").grep("needle")\nprint(len(hits), hits.skipped.total)\n', tree)
    assert error is None and out == "1 3\n", (out, error)
    for bad in ("0", "10001"):
        _out, error = run(f'Directory("/").grep("needle", max_results={bad})\n', tree)
        assert error.startswith(f"RuntimeError: grep(): max_results must be from 1 to 10000, not {bad}"), error


def test_names_no_path_can_spell_are_left_out_and_said_to_be(tmp_path):
    """A name with a control character or bytes that are not UTF-8 cannot be named by a script:
    it is left out of listings and searches, and the run's warnings say how many and which."""
    import os

    (tmp_path / "ok.txt").write_text("word\n")
    (tmp_path / "bad\x07name.txt").write_text("word\n")
    with open(os.path.join(os.fsencode(tmp_path), b"x\xffy.txt"), "w") as f:
        f.write("word\n")
    r = run_script('print(Directory("/").files())\nprint(len(Directory("/").grep("word")))\n', root=str(tmp_path),
                   timeout=30)
    assert r.ok and r.output == "[ok.txt]\n1\n"
    assert r.warnings == ["2 entries were left out of listings and searches: their names hold control characters "
                          "or bytes that are not UTF-8, so no path can name them (bad\\x07name.txt, x\\xffy.txt)"]


def test_names_that_are_not_printable_but_spellable_are_listed(tmp_path):
    """Only control characters and undecodable bytes keep a name out (the listing's fast path
    asks str.isprintable() first, which is false for more: a no-break or zero-width space)."""
    for name in ("nbsp\u00a0name.txt", "zw\u200bname.txt", "ok.txt"):
        (tmp_path / name).write_text("word\n")
    r = run_script('print(len(Directory("/").files()))\nprint(len(Directory("/").grep("word")))\n',
                   root=str(tmp_path), timeout=30)
    assert r.ok and r.output == "3\n3\n" and r.warnings == [], (r.output, r.warnings)
