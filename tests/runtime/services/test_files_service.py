"""FilesService op semantics: listings, searches, snippets, tables, grep, lines, dispatch."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.errors import LimitError, ScriptError
from runtime.fs.vfs import VirtualFS
from runtime.services.documents import decode_text
from runtime.services.files import FilesService
from runtime.services.globs import glob_to_regex
from runtime.services.textsearch import Searcher, compile_pattern
from wire.protocol import OPS

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    (root / "data" / "sub" / "deep").mkdir(parents=True)
    (root / "data" / "a.txt").write_text("alpha\nThe Language Model is here\n")
    (root / "data" / "b.md").write_text("# Title\n\nnothing to see\n")
    (root / "data" / "sub" / "c.txt").write_text("gamma\nlanguage model again\n")
    (root / "data" / "sub" / "deep" / "d.md").write_text("delta\n")
    os.utime(root / "data" / "a.txt", (1795356575, 1795356575))
    return root


@pytest.fixture
def svc(root):
    return FilesService(VirtualFS([("/", root, False)]))


def paths(items):
    return [i["path"] for i in items]


def test_every_op_has_a_method_with_the_op_table_arguments(svc):
    import inspect

    file_ops = {op: args for op, args in OPS.items() if op.startswith(("dir.", "file."))}
    assert len(file_ops) == 17
    for op, args in file_ops.items():
        method = getattr(svc, op.replace(".", "_"))
        assert list(inspect.signature(method).parameters) == list(args), op


def test_dispatch(svc):
    assert svc.dispatch("dir.open", {"path": "/data/"}) == "data"
    assert svc.dispatch("file.read", {"path": "data/a.txt", "pages": 1}).startswith("alpha")
    with pytest.raises(ScriptError, match="unknown operation 'file.delete'"):
        svc.dispatch("file.delete", {"path": "x"})


def test_file_info(svc):
    info = svc.file_open("data/a.txt")
    assert info == {"path": "data/a.txt", "name": "a.txt", "suffix": ".txt", "size": 33, "modified": "2026-11-22T14:09:35Z"}


def test_dir_files(svc):
    assert paths(svc.dir_files("data", True)) == ["data/a.txt", "data/b.md", "data/sub/c.txt", "data/sub/deep/d.md"]
    assert paths(svc.dir_files("data", False)) == ["data/a.txt", "data/b.md"]
    assert paths(svc.dir_files("data/sub", False)) == ["data/sub/c.txt"]
    for f in svc.dir_files(".", True):
        assert ISO.match(f["modified"]) and isinstance(f["size"], int)


def test_search_scope_name(svc):
    assert paths(svc.dir_search("data", r"\.md$", "name", True, False)["files"]) == ["data/b.md", "data/sub/deep/d.md"]
    # the path relative to the searched directory is searched too
    assert paths(svc.dir_search("data", "^sub/", "name", True, False)["files"]) == ["data/sub/c.txt", "data/sub/deep/d.md"]
    assert paths(svc.dir_search("data/sub", "^sub/", "name", True, False)["files"]) == []
    assert paths(svc.dir_search("data", "^deep/", "name", True, False)["files"]) == []
    assert paths(svc.dir_search("data", "A.TXT", "name", True, True)["files"]) == ["data/a.txt"]
    assert paths(svc.dir_search("data", "language", "name", True, False)["files"]) == []
    assert paths(svc.dir_search("data", r"\.txt$", "name", False, False)["files"]) == ["data/a.txt"]


def test_search_scope_content_and_both(svc):
    assert paths(svc.dir_search("data", "language model", "content", True, False)["files"]) == ["data/sub/c.txt"]
    assert paths(svc.dir_search("data", "language model", "content", True, True)["files"]) == ["data/a.txt", "data/sub/c.txt"]
    assert paths(svc.dir_search("data", "language model", "content", False, True)["files"]) == ["data/a.txt"]
    assert paths(svc.dir_search("data", r"^gam+a$", "content", True, False)["files"]) == ["data/sub/c.txt"]
    assert paths(svc.dir_search("data", "d", "content", True, False)["files"]) == ["data/a.txt", "data/sub/c.txt", "data/sub/deep/d.md"]
    assert paths(svc.dir_search("data", "^b|delta", "both", True, False)["files"]) == ["data/b.md", "data/sub/deep/d.md"]
    assert paths(svc.dir_search("data", "^b|delta", "name", True, False)["files"]) == ["data/b.md"]


def test_search_bad_scope_and_bad_regex(svc):
    with pytest.raises(ScriptError, match=r"^invalid scope 'all': expected one of 'name', 'content', 'both'$"):
        svc.dir_search("data", "x", "all", True, False)["files"]
    with pytest.raises(ScriptError, match=r"^invalid regex '\[unclosed': unterminated character set"):
        svc.dir_search("data", "[unclosed", "name", True, False)["files"]
    with pytest.raises(ScriptError, match=r"^invalid regex '\(a': missing \)"):
        svc.file_search("data/a.txt", "(a", False)


def test_regex_is_multiline_and_searched(svc):
    assert svc.file_contains("data/a.txt", "^The", False)
    assert svc.file_contains("data/a.txt", "alpha$", False)
    assert not svc.file_contains("data/a.txt", r"\Athe", False)
    assert svc.file_contains("data/a.txt", "Model", False)
    assert not svc.file_contains("data/a.txt", "model", False)


def test_dir_list_entries(svc, root):
    os.symlink("a.txt", root / "data" / "link")
    entries = svc.dir_list("data")
    assert [e["name"] for e in entries] == ["a.txt", "b.md", "link", "sub"]
    a, _, link, sub = entries
    assert a["@type"] == "FileEntry" and a["type"] == "file" and a["path"] == "data/a.txt"
    assert a["size"] == 33 and a["lastModified"] == 1795356575000 and a["modified"] == "2026-11-22T14:09:35Z"
    assert sub["@type"] == "DirectoryEntry" and sub["type"] == "directory"
    assert link["@type"] == "SymbolicLinkEntry" and link["target"] == "data/a.txt"
    assert "target" not in a
    assert [e["path"] for e in svc.dir_list(".")] == ["data"]


@pytest.mark.parametrize(
    "glob, expected",
    [
        ("*.txt", ["data/a.txt"]),
        ("**/*.txt", ["data/a.txt", "data/sub/c.txt"]),
        ("**/*.md", ["data/b.md", "data/sub/deep/d.md"]),
        ("sub/**", ["data/sub/c.txt", "data/sub/deep", "data/sub/deep/d.md"]),
        ("sub/*", ["data/sub/c.txt", "data/sub/deep"]),
        ("?.md", ["data/b.md"]),
        ("[ab].*", ["data/a.txt", "data/b.md"]),
        ("[!a]*", ["data/b.md", "data/sub"]),
        ("sub", ["data/sub"]),
        ("nothing*", []),
    ],
)
def test_dir_find_globs(svc, glob, expected):
    assert paths(svc.dir_find("data", glob)) == expected


def test_glob_translation():
    assert glob_to_regex("**/x").match("x") and glob_to_regex("**/x").match("a/b/x")
    assert not glob_to_regex("*x").match("a/x")
    assert glob_to_regex("a[").match("a[")


def test_grep_results_and_order(svc):
    assert svc.dir_grep("data", "a", "**/*.md", False)["hits"] == [
        {"path": "data/sub/deep/d.md", "line": 1, "content": "delta"},
    ]
    hits = svc.dir_grep("data", "model", None, True)["hits"]
    assert hits == [
        {"path": "data/a.txt", "line": 2, "content": "The Language Model is here"},
        {"path": "data/sub/c.txt", "line": 2, "content": "language model again"},
    ]
    # each line once, even with many matches on it
    assert svc.dir_grep("data/sub", "a", None, False)["hits"] == [
        {"path": "data/sub/c.txt", "line": 1, "content": "gamma"},
        {"path": "data/sub/c.txt", "line": 2, "content": "language model again"},
        {"path": "data/sub/deep/d.md", "line": 1, "content": "delta"},
    ]
    assert svc.dir_grep("data", "zzz", None, False)["hits"] == []


def test_grep_is_capped_at_100_in_path_line_order(root):
    for name in ("z.txt", "m.txt"):
        (root / "data" / name).write_text("".join(f"hit {i}\n" for i in range(1, 81)))
    svc = FilesService(VirtualFS([("/", root, False)]))
    hits = svc.dir_grep("data", r"hit \d+", None, False)["hits"]
    assert len(hits) == 100
    assert [h["path"] for h in hits] == ["data/m.txt"] * 80 + ["data/z.txt"] * 20
    assert [h["line"] for h in hits] == list(range(1, 81)) + list(range(1, 21))


def test_grep_line_numbers_with_crlf_and_multiline_patterns(svc, root):
    (root / "data" / "w.txt").write_bytes(b"one\r\ntwo\r\n\r\nthree two\n")
    assert svc.dir_grep("data", "two", "w.txt", False)["hits"] == [
        {"path": "data/w.txt", "line": 2, "content": "two"},
        {"path": "data/w.txt", "line": 4, "content": "three two"},
    ]
    # a match spanning lines is reported on the line where it starts
    assert svc.dir_grep("data", "two\r\n\r\nthree", "w.txt", False)["hits"] == [{"path": "data/w.txt", "line": 2, "content": "two"}]


def test_snippets_format(svc, root):
    text = "first line\nthe language model\r\nis good.\n" + "pad\n" * 100 + "another language model here\n"
    (root / "data" / "s.txt").write_text(text, newline="")
    assert svc.file_snippets("data/s.txt", "language", 5, 10, False) == [
        "[page 1] line the language model is",
        "[page 2] d another language model her",
    ]
    assert svc.file_snippets("data/s.txt", "language", 1, 0, False) == ["[page 1] language"]
    assert svc.file_snippets("data/s.txt", "LANGUAGE", 5, 0, True) == ["[page 1] language", "[page 2] language"]
    assert svc.file_snippets("data/s.txt", "language", 0, 10, False) == []
    assert svc.file_snippets("data/s.txt", "absent", 5, 10, False) == []
    with pytest.raises(ScriptError, match="context_chars must be 0 or more"):
        svc.file_snippets("data/s.txt", "language", 5, -1, False)


def test_table_markdown_headings(svc, root):
    lines = ["# Guide", "", "## Install", "```", "# not a heading", "```", "~~~~", "## also not", "~~~~"]
    lines += ["text"] * (90 - len(lines)) + ["### Deep part ###", "#nospace", "####### seven"]
    (root / "data" / "g.md").write_text("\n".join(lines) + "\n")
    assert svc.file_table("data/g.md", 50) == "# Guide (p.1)".replace("# ", "") + "\n  Install (p.1)\n    Deep part (p.2)"


def test_table_dotted_and_numbered_toc(svc, root):
    (root / "data" / "toc.txt").write_text(
        "Contents\n"
        "1. Overview ........ 1\n"
        "1.1 Scope . . . . . . 2\n"
        "1.1.1 Fine print ....... 3\n"
        "Appendix ........ 9\n"
        "2 Methods     7\n"
        "2.1 Data\t8\n"
        "3 apples 5\n"  # a single space before the number: not a TOC line
        "4 .... 12\n"  # no letter in the title
    )
    assert svc.file_table("data/toc.txt", 50) == (
        "1. Overview (p.1)\n"
        "  1.1 Scope (p.2)\n"
        "    1.1.1 Fine print (p.3)\n"
        "Appendix (p.9)\n"
        "2 Methods (p.7)\n"
        "  2.1 Data (p.8)"
    )


def test_table_max_items_and_none(svc, root):
    (root / "data" / "h.md").write_text("".join(f"# H{i}\n" for i in range(1, 8)))
    assert svc.file_table("data/h.md", 3) == "H1 (p.1)\nH2 (p.1)\nH3 (p.1)\n... (4 more entries)"
    assert svc.file_table("data/sub/c.txt", 50) == "No table of contents detected for data/sub/c.txt"
    with pytest.raises(ScriptError, match="max_items must be 1 or more"):
        svc.file_table("data/h.md", 0)


def test_lines_format(svc, root):
    (root / "data" / "p.md").write_text("# Password Reset\n\n## How to reset your password\n\n1. Go to Settings > Account\n")
    assert svc.file_lines("data/p.md", 1, 2000) == (
        "  1  # Password Reset\n  2\n  3  ## How to reset your password\n  4\n  5  1. Go to Settings > Account"
    )
    assert svc.file_lines("data/p.md", 3, 1) == "  3  ## How to reset your password"
    assert svc.file_lines("data/p.md", 6, 10) == ""
    (root / "data" / "long.txt").write_text("".join(f"l{i}\n" for i in range(1, 1201)))
    out = svc.file_lines("data/long.txt", 998, 4).split("\n")
    assert out == [" 998  l998", " 999  l999", "1000  l1000", "1001  l1001"]
    with pytest.raises(ScriptError, match="offset must be 1 or more"):
        svc.file_lines("data/p.md", 0, 10)
    with pytest.raises(ScriptError, match="limit must be 1 or more"):
        svc.file_lines("data/p.md", 1, 0)


def test_result_caps(root):
    for i in range(12):
        (root / "data" / f"many{i:02}.txt").write_text("x\n")
    svc = FilesService(VirtualFS([("/", root, False)]), max_entries=10)
    for call in (
        lambda: svc.dir_files("data", True),
        lambda: svc.dir_search("data", "many", "name", True, False)["files"],
        lambda: svc.dir_list("data"),
        lambda: svc.dir_find("data", "**"),
    ):
        with pytest.raises(LimitError, match="more than 10 entries; narrow it with a glob"):
            call()
    assert len(svc.dir_find("data", "many0*")) == 10


# ------------------------------------------------------------------ the literal fast path


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=40)
    | st.lists(st.sampled_from(["a", "K", "k", "\u212a", "s", "\u017f", "\u0130", "i", "é", "\ufffd", " ", "\n"]), max_size=12).map(
        lambda xs: "".join(xs).encode("utf-8")
    ),
    literal=st.text(alphabet="aksiKSI é\ufffd", min_size=1, max_size=3),
    ignore_case=st.booleans(),
)
def test_bytes_verdict_agrees_with_the_regex(data, literal, ignore_case):
    pat = compile_pattern(literal, ignore_case)
    verdict = pat.bytes_verdict(data)
    if verdict is not None:
        assert verdict == Searcher().text_matches(pat, decode_text(data))


def test_iteration_replies_cover_the_listing_once_and_walk_it_once(tmp_path, monkeypatch):
    root = tmp_path / "many"
    root.mkdir()
    for i in range(300):
        (root / f"f{i:03}.txt").write_text("")
    svc = FilesService(VirtualFS([("/", root, False)]), max_reply_bytes=8 * 1024)
    walks = []
    original = svc.regular_files
    monkeypatch.setattr(svc, "regular_files", lambda *a: walks.append(a) or original(*a))
    seen, offset = [], 0
    while offset is not None:
        reply = svc.dir_iter("/", True, offset)
        assert reply["files"], "every reply makes progress"
        seen += [f["path"] for f in reply["files"]]
        offset = reply["next"]
    assert seen == [f"f{i:03}.txt" for i in range(300)]
    assert len(walks) == 1  # the later replies reuse the first one's listing
    assert svc.dir_iter("/", True, 300) == {"files": [], "next": None}
    with pytest.raises(ScriptError, match="offset must be 0 or more"):
        svc.dir_iter("/", True, -1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "é", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85",
                                 "\u2028", "\u2029"]), max_size=40).map("".join))
def test_line_starts_are_the_ends_of_splitlines_line_breaks(text):
    from runtime.services.searching import line_starts

    breaks = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # str.splitlines()'s breaks
    assert line_starts(text) == [0] + [m.end() for m in breaks.finditer(text)]


@pytest.mark.parametrize("how", ["in place", "renamed over"])
def test_a_file_replaced_with_the_same_size_and_mtime_is_read_again(tmp_path, how):
    """The document store keeps parsed files while they are unchanged: mtime and size alone
    would serve a same-size replacement whose mtime was set back; the inode and ctime tell."""
    target = tmp_path / "a.txt"
    target.write_text("aaaa\n")
    before = os.stat(target)
    svc = FilesService(VirtualFS([("/", tmp_path, False)]))
    assert svc.file_read("a.txt", None) == "aaaa\n"
    if how == "in place":
        target.write_text("bbbb\n")
    else:
        (tmp_path / "new.txt").write_text("bbbb\n")
        os.replace(tmp_path / "new.txt", target)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(target)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert svc.file_read("a.txt", None) == "bbbb\n"
