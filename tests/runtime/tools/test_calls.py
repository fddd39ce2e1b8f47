"""runtime/tools/calls.py: Tools.call for grep, read, ls, find and run_fdsl over a sandbox whose
host directory has a distinctive name that must never reach a result or an error; the seed's
errors (document not found, invalid regex, unknown tool), cut results saying so, the read
format, hostile parameters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.tools import ToolError, Tools, calls
from runtime.tools.definitions import MAX_RUN_TIMEOUT_S
from tests.support import CANARY

HOST_MARK = "HOSTDIR-q8z"  # in the host path of the root: never in what a model reads


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / HOST_MARK
    root = base / "root"
    (root / "billing" / "sub").mkdir(parents=True)
    (root / "billing" / "refunds.md").write_text("# Refunds\n\nA refund takes 5 days.\nREFUND policy\n")
    (root / "billing" / "sub" / "deep.md").write_text("nothing\nrefund here too\n")
    (root / "account.txt").write_text("password reset\n")
    (root / "many.txt").write_text("".join(f"hit {i}\n" for i in range(1, 151)))
    (root / "wide.txt").write_text("hit " + "w" * 5000 + "\n")
    (root / "tool.bin").write_bytes(b"hit\x00\x00binary")
    (base / "canary.txt").write_text(CANARY)
    (root / "escape.md").symlink_to(base / "canary.txt")
    return root


@pytest.fixture
def tools(root: Path):
    t = Tools(root=root)
    yield t
    t.close()


def call(tools: Tools, name: str, params: dict) -> str:
    text = tools.call(name, params)
    assert HOST_MARK not in text and CANARY not in text
    return text


def error(tools: Tools, name, params) -> str:
    with pytest.raises(ToolError) as info:
        tools.call(name, params)
    text = str(info.value)
    assert HOST_MARK not in text and CANARY not in text and "Traceback" not in text
    return text


def test_grep_results_in_path_then_line_order_case_insensitive(tools):
    out = json.loads(call(tools, "grep", {"pattern": "refund", "glob": "billing/**/*.md"}))
    assert out == {"results": [
        {"path": "billing/refunds.md", "line": 1, "content": "# Refunds"},
        {"path": "billing/refunds.md", "line": 3, "content": "A refund takes 5 days."},
        {"path": "billing/refunds.md", "line": 4, "content": "REFUND policy"},
        {"path": "billing/sub/deep.md", "line": 2, "content": "refund here too"},
    ], "total": 4, "truncated": False}
    strict = json.loads(call(tools, "grep", {"pattern": "refund", "glob": "billing/*.md", "ignore_case": False}))
    assert [r["line"] for r in strict["results"]] == [3] and strict["total"] == 1


def test_a_globs_leading_directories_are_where_grep_walks():
    from runtime.tools.calls import split_glob

    assert split_glob(None) == ("/", None)
    assert split_glob("*.md") == ("/", "*.md")
    assert split_glob("billing/**/*.md") == ("/billing", "**/*.md")
    assert split_glob("a/b/c.md") == ("/a/b", "c.md")
    assert split_glob("a/*/b/c.md") == ("/a", "*/b/c.md")
    assert split_glob("../x/*.md") == ("/", "../x/*.md") and split_glob("./a/b") == ("/", "./a/b")
    assert split_glob("/a/b") == ("/", "/a/b") and split_glob("a//b") == ("/a", "/b")


def test_grep_under_a_directory_leaves_a_mount_needing_approval_alone(tmp_path):
    from runtime.fs.config import Mount, SandboxConfig
    from runtime.fs.sandbox import Sandbox

    for name in ("docs", "cfg"):
        (tmp_path / name).mkdir()
    (tmp_path / "docs" / "a.md").write_text("alpha\n")
    (tmp_path / "cfg" / "s.json").write_text("alpha\n")
    sandbox = Sandbox(SandboxConfig(mounts=[Mount(host_path=tmp_path / "docs", mount_point="/docs"),
                                            Mount(host_path=tmp_path / "cfg", mount_point="/cfg", read_approval=True)]))
    tools = Tools(sandbox)
    assert json.loads(tools.call("grep", {"pattern": "alpha", "glob": "docs/**"}))["results"] == \
        [{"path": "docs/a.md", "line": 1, "content": "alpha"}]
    with pytest.raises(ToolError, match="^SandboxError: List files in /: needs approval"):
        tools.call("grep", {"pattern": "alpha"})
    with pytest.raises(ToolError, match="^RuntimeError: no such directory: docs/nope"):
        tools.call("grep", {"pattern": "alpha", "glob": "docs/nope/*.md"})
    approved = Tools(sandbox, approve=lambda description: True)
    assert json.loads(approved.call("grep", {"pattern": "alpha"}))["total"] == 2


def test_grep_says_when_it_cut_the_results(tools):
    out = json.loads(call(tools, "grep", {"pattern": r"^hit \d+$", "glob": "many.txt"}))
    assert len(out["results"]) == 100 and out["total"] == 150 and out["truncated"] is True
    assert out["results"][-1] == {"path": "many.txt", "line": 100, "content": "hit 100"}
    few = json.loads(call(tools, "grep", {"pattern": r"^hit \d+$", "max_results": 3}))
    assert len(few["results"]) == 3 and few["total"] == 150 and few["truncated"] is True


def test_grep_cuts_a_huge_line_and_names_skipped_files(tools):
    out = json.loads(call(tools, "grep", {"pattern": "^hit w"}))
    (hit,) = out["results"]
    assert hit["content"].endswith("... [line cut: 5004 characters]") and len(hit["content"]) < 2100
    binary = json.loads(call(tools, "grep", {"pattern": "hit", "glob": "*.bin"}))
    assert binary["results"] == [] and binary["skipped_count"] == 1
    assert binary["skipped"][0]["path"] == "tool.bin" and "binary" in binary["skipped"][0]["reason"]


def test_the_seeds_errors_are_clear_tool_errors(tools):
    assert error(tools, "grep", {"pattern": "[unclosed"}).startswith("RuntimeError: invalid regex '[unclosed'")
    assert error(tools, "read", {"path": "billing/nope.md"}).startswith("RuntimeError: no such file: billing/nope.md")
    assert error(tools, "delete", {"path": "a"}) == \
        "UsageError: unknown tool: 'delete' (tools: run_fdsl, grep, read, ls, find)"
    assert error(tools, 42, {}).startswith("UsageError: unknown tool: 42")


def test_bad_parameters_name_the_parameter(tools):
    assert error(tools, "grep", {}) == "UsageError: grep: missing required parameter 'pattern'"
    assert error(tools, "grep", {"pattern": "x", "glob2": "*"}) == \
        "UsageError: grep: unknown parameter 'glob2' (parameters: pattern, glob, max_results, ignore_case)"
    assert error(tools, "read", {"path": "a", "limit": "10"}) == \
        "UsageError: read: parameter 'limit' must be an integer, not string"
    assert error(tools, "read", {"path": "a", "offset": 0}) == \
        "UsageError: read: parameter 'offset' must be 1 or more, not 0"
    assert error(tools, "grep", {"pattern": "x" * 5000}) == \
        "UsageError: grep: parameter 'pattern' is too long (5000 characters, at most 1000)"
    assert error(tools, "ls", ["/"]) == "UsageError: ls: the parameters must be an object, not array"
    assert "unknown parameter 'xxxxxxxx" in error(tools, "ls", {"x" * 10_000: 1})
    assert len(error(tools, "ls", {"x" * 10_000: 1})) < 200
    # None is "not given" (some clients send every optional field), 10.0 an integer
    assert json.loads(call(tools, "ls", {"path": None, "limit": 10.0}))["total"] == 6


def test_read_numbers_lines_and_pages_with_offset_and_limit(tools, root):
    assert call(tools, "read", {"path": "billing/refunds.md"}) == \
        "  1  # Refunds\n  2\n  3  A refund takes 5 days.\n  4  REFUND policy"
    assert call(tools, "read", {"path": "/billing/refunds.md", "offset": 3, "limit": 1}) == \
        "  3  A refund takes 5 days.\n[truncated: lines 3-3 of 4 shown; read on with offset=4]"
    assert call(tools, "read", {"path": "billing/refunds.md", "offset": 4, "limit": 50}) == "  4  REFUND policy"
    assert call(tools, "read", {"path": "billing/refunds.md", "offset": 5}) == ""
    (root / "long.txt").write_text("".join(f"l{i}\n" for i in range(1, 2502)))
    long = call(tools, "read", {"path": "long.txt"}).split("\n")
    assert long[0] == "   1  l1" and long[1999] == "2000  l2000"
    assert long[2000] == "[truncated: lines 1-2000 of 2501 shown; read on with offset=2001]" and len(long) == 2001


def test_read_stops_at_its_character_budget_and_says_where_to_go_on(tools, root):
    (root / "big.txt").write_text(("y" * 999 + "\n") * 1000)
    lines = call(tools, "read", {"path": "big.txt"}).split("\n")
    # 1006 characters a line with its newline: 198 lines fit in 200,000
    assert len(lines) == 199 and lines[-1] == "[truncated: lines 1-198 of 1000 shown; read on with offset=199]"


def test_read_of_one_line_over_the_budget_shows_its_start_and_says_it_was_cut(tools, root):
    (root / "minified.js").write_text("z" * 300_000 + "\nnext\n")
    first, trailer = call(tools, "read", {"path": "minified.js"}).split("\n")
    assert first == "  1  " + "z" * 199_995 + "... [line cut: 300000 characters]"
    assert trailer == "[truncated: lines 1-1 of 2 shown; read on with offset=2]"


def test_read_gives_a_pdfs_text(tmp_path):
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "first page text")
    doc.new_page().insert_text((72, 72), "second page text")
    doc.save(tmp_path / "m.pdf")
    tools = Tools(root=tmp_path)
    try:
        assert tools.call("read", {"path": "m.pdf"}) == "  1  first page text\n  2\n  3\n  4  second page text"
        assert json.loads(tools.call("grep", {"pattern": "SECOND"}))["results"] == \
            [{"path": "m.pdf", "line": 4, "content": "second page text"}]
    finally:
        tools.close()


def test_ls_and_find_page_and_say_when_cut(tools):
    everything = json.loads(call(tools, "ls", {}))
    assert [e["name"] for e in everything["entries"]] == \
        ["account.txt", "billing", "escape.md", "many.txt", "tool.bin", "wide.txt"]
    assert everything["total"] == 6 and everything["truncated"] is False
    page = json.loads(call(tools, "ls", {"path": "/", "offset": 1, "limit": 2}))
    assert [e["name"] for e in page["entries"]] == ["billing", "escape.md"]
    assert page["total"] == 6 and page["truncated"] is True
    found = json.loads(call(tools, "find", {"glob": "**/*.md", "max_results": 2}))
    assert [e["path"] for e in found["entries"]] == ["billing/refunds.md", "billing/sub/deep.md"]
    assert found["total"] == 3 and found["truncated"] is True
    sub = json.loads(call(tools, "find", {"glob": "*.md", "path": "billing/sub"}))
    assert [e["path"] for e in sub["entries"]] == ["billing/sub/deep.md"] and sub["truncated"] is False


def test_a_directory_over_the_entry_cap_is_an_error_that_fits_the_tool(tools):
    """ls and find count the entries before cutting a page: past FilesService's cap (200,000; 5
    here, the root holds 6) the error says what that tool can do (ls takes no glob, and offset or
    max_results cannot help), and find with a glob reaches part of them."""
    tools.max_entries = 5
    assert error(tools, "ls", {"offset": 5, "limit": 1}) == (
        "LimitError: ls: '/' has more than 5 entries, too many to list (offset and limit page within that many); "
        "use find with this path and a glob that picks part of them by name (\"a*\"), or ls a subdirectory")
    assert error(tools, "find", {"glob": "*", "max_results": 1}) == (
        "LimitError: find: more than 5 entries under '/' match '*', too many to list (max_results cuts what is shown, "
        "not what is found); narrow the glob or search a path deeper down")
    found = json.loads(call(tools, "find", {"glob": "*.txt"}))
    assert [e["name"] for e in found["entries"]] == ["account.txt", "many.txt", "wide.txt"]


@pytest.mark.parametrize("name,params", [
    ("read", {"path": "../canary.txt"}), ("read", {"path": "/../canary.txt"}), ("read", {"path": "escape.md"}),
    ("ls", {"path": ".."}), ("find", {"glob": "*", "path": "../.."}), ("grep", {"pattern": "CANARY", "glob": "../*"}),
])
def test_the_policy_refuses_what_is_outside_the_root_without_naming_the_host(tools, name, params):
    text = error(tools, name, params)  # (a glob with '..' could match nothing: refused as such)
    assert text.startswith(("SandboxError:", "RuntimeError:") if name != "grep" else "UsageError: glob '../*': '..'")


def test_an_unexpected_failure_is_named_by_its_type_only(tools, monkeypatch, root):
    def broken(*args, **kwargs):
        raise OSError(f"disk trouble at {root}/billing")

    monkeypatch.setattr(calls, "grep_backend", broken)
    assert error(tools, "grep", {"pattern": "x"}) == "InternalError: grep failed unexpectedly (OSError)"


def test_run_fdsl_returns_the_output_or_the_located_error(tools):
    script = 'hits = Directory("/").grep("refund", glob="billing/**/*.md")\nprint(len(hits), hits.total)\n'
    assert call(tools, "run_fdsl", {"script": script}) == "4 4\n"
    assert call(tools, "run_fdsl", {"script": "x = 1\n"}) == "(the script printed nothing)"
    failed = error(tools, "run_fdsl", {"script": 'print("before")\nprint(File("nope.md").read())\n'})
    assert failed.startswith("before\nRuntimeError: no such file: nope.md\n  at line 2, column 7\n")
    syntax = error(tools, "run_fdsl", {"script": "for x in [1]\n    print(x)\n"})
    assert syntax.startswith("SyntaxError:") and "at line 1, column" in syntax
    escape = error(tools, "run_fdsl", {"script": 'print(File("../canary.txt").read())'})
    assert escape.startswith("SandboxError:")


def test_run_fdsl_calls_share_one_session_whatever_their_timeout_but_never_a_worker(tools):
    assert call(tools, "run_fdsl", {"script": "print(0)"}) == "0\n"
    session = tools._run_session
    assert session is not None and session.limits.timeout == MAX_RUN_TIMEOUT_S
    taken, take = [], session.pool.take

    def recorded():
        taken.append(take())
        return taken[-1]

    session.pool.take = recorded
    assert [call(tools, "run_fdsl", {"script": f"print({n})", "timeout": t}) for n, t in ((1, 5), (2, 6), (3, 30))] \
        == ["1\n", "2\n", "3\n"]
    assert len({proc.pid for proc in taken}) == 3 and tools._run_session is session
    tools.close()
    assert session.closed and tools._run_session is None


LOOPS = "n = 0\nfor i in [1:1000]:\n    for j in [1:1000]:\n        for k in [1:1000]:\n            n = n + 1\n"


def test_run_fdsl_timeout_is_a_located_timeout_error(tools):
    text = error(tools, "run_fdsl", {"script": LOOPS, "timeout": 1})
    # the call's own timeout, not its session's (which allows the longest a call may ask for)
    assert text.startswith("TimeoutError: the script did not finish within 1 s") and "at line" in text


def test_run_fdsl_output_past_its_cap_says_it_was_cut(root):
    tools = Tools(root=root, max_output=1000)
    text = error(tools, "run_fdsl", {"script": 'for i in [1:500]:\n    print("line", i)\n'})
    assert text.startswith("line 1\nline 2\n") and len(text) < 1200
    assert text.endswith("\nLimitError: output limit exceeded: the script printed more than 1000 bytes")


def test_a_damaged_pdf_is_read_in_part_and_said_to_be(root, tools):
    import pymupdf

    doc = pymupdf.open()
    for i in range(3):
        doc.new_page().insert_text((72, 72), f"page {i} " * 5)
    data = doc.tobytes()
    (root / "half.pdf").write_bytes(data[: len(data) // 2])
    warning = "damaged PDF repaired on opening, whose text may be incomplete: half.pdf"
    text = call(tools, "read", {"path": "half.pdf"})
    assert "page 0 page 0" in text and text.endswith(f"[warning: {warning}]")
    out = json.loads(call(tools, "grep", {"pattern": "page 0", "glob": "*.pdf"}))
    assert out["total"] == 1 and out["warnings"] == [warning]
    out = json.loads(call(tools, "grep", {"pattern": "refund", "glob": "billing/**"}))
    assert "warnings" not in out  # each call says what it met, not what an earlier one did


def test_grep_never_reaches_through_a_symlink_out_of_the_root(tools):
    for params in ({"pattern": "CANARY"}, {"pattern": "CANARY", "glob": "*.md"}, {"pattern": ".", "glob": "escape.md"}):
        out = json.loads(call(tools, "grep", params))
        assert all(hit["path"] != "escape.md" for hit in out["results"]), out


def test_large_listings_and_huge_lines_cost_only_what_is_returned(tmp_path, monkeypatch):
    """A reply budget far smaller than the whole listing or the whole lines: the tools build and
    charge only what they return (the page, the cut lines)."""
    from runtime.services import files

    root = tmp_path / "big"
    (root / "d").mkdir(parents=True)
    for i in range(3000):
        (root / "d" / f"f{i:04}.txt").write_text("")
    for i in range(4):
        (root / f"wide{i}.txt").write_text("needle " + "x" * 1_000_000 + "\n")
    original = files.FilesService.__init__
    monkeypatch.setattr(files.FilesService, "__init__",
                        lambda self, *a, **k: original(self, *a, **{**k, "max_reply_bytes": 64 * 1024}))
    tools = Tools(root=root)
    try:
        out = json.loads(tools.call("ls", {"path": "d", "offset": 2990, "limit": 5}))
        assert [e["name"] for e in out["entries"]] == [f"f{i}.txt" for i in range(2990, 2995)]
        assert out["total"] == 3000 and out["truncated"] is True
        out = json.loads(tools.call("find", {"glob": "**/*.txt", "max_results": 2}))
        assert out["total"] == 3004 and len(out["entries"]) == 2 and out["truncated"] is True
        out = json.loads(tools.call("grep", {"pattern": "needle"}))
        assert out["total"] == 4
        assert all(hit["content"].endswith("... [line cut: 1000007 characters]") for hit in out["results"])
    finally:
        tools.close()


def test_a_grep_out_of_time_gives_what_it_found_and_says_it_is_incomplete(tmp_path, monkeypatch):
    from runtime.errors import DeadlineExceeded
    from runtime.services import files

    root = tmp_path / "slow"
    root.mkdir()
    for i in range(40):
        (root / f"f{i:02}.txt").write_text("hit\nhit again\n")
    checks = []

    def deadline_after_ten_files(self, doing="walking the directory"):
        if doing == "searching the files":
            checks.append(1)
            if len(checks) > 10:
                raise DeadlineExceeded("the run's time limit was reached while searching the files")

    monkeypatch.setattr(files.FilesService, "check_deadline", deadline_after_ten_files)
    tools = Tools(root=root)
    try:
        out = json.loads(tools.call("grep", {"pattern": "hit", "max_results": 5}))
    finally:
        tools.close()
    assert len(out["results"]) == 5 and out["total"] == 20  # ten files searched, two hits each
    assert out["truncated"] is True and out["complete"] is False


@pytest.mark.parametrize("glob", ["billing/**/*.md", "/billing/**/*.md", "./billing/**/*.md", "billing", "/billing/"])
def test_globs_as_a_model_writes_them(tools, glob):
    out = json.loads(call(tools, "grep", {"pattern": "refund", "glob": glob}))
    assert {hit["path"] for hit in out["results"]} == {"billing/refunds.md", "billing/sub/deep.md"}, glob


def test_braces_are_refused_not_silently_empty(tools):
    assert "braces ({a,b}) are not expanded here" in error(tools, "grep", {"pattern": "x", "glob": "**/*.{md,txt}"})
    assert "braces" in error(tools, "find", {"glob": "*.{md,txt}"})


def test_find_takes_a_leading_slash_and_a_directory_name(tools):
    names = {e["path"] for e in json.loads(call(tools, "find", {"glob": "/billing"}))["entries"]}
    assert {"billing/refunds.md", "billing/sub/deep.md"} <= names


def test_a_listing_says_what_it_left_out(root, tools):
    (root / "odd\x1bname.md").write_text("refund\n")
    out = json.loads(call(tools, "ls", {"path": "/"}))
    assert "odd\x1bname.md" not in [e["name"] for e in out["entries"]]
    assert out["warnings"] == ["1 entry was left out of listings and searches: their names hold control "
                               "characters or bytes that are not UTF-8, so no path can name them (odd\\x1bname.md)"]


def test_find_and_grep_search_through_a_directory_symlink_the_glob_names(tools, root):
    (root / "links").mkdir()
    (root / "links" / "bill").symlink_to("../billing")
    for params in ({"glob": "bill", "path": "links"}, {"glob": "links/bill"}, {"glob": "links/bill/*.md"}):
        found = json.loads(call(tools, "find", params))["entries"]
        assert [e["path"] for e in found if e["type"] == "file"] == ["links/bill/refunds.md"] + \
            (["links/bill/sub/deep.md"] if "*" not in params["glob"] else []), params
    hits = json.loads(call(tools, "grep", {"pattern": "refund here", "glob": "links/bill"}))["results"]
    assert [h["path"] for h in hits] == ["links/bill/sub/deep.md"]


@pytest.mark.parametrize("glob", ["billing//refunds.md", "billing/./refunds.md", "./billing/refunds.md",
                                  "/billing//./refunds.md"])
def test_a_glob_written_loosely_matches_what_it_names(tools, glob):
    assert [h["path"] for h in json.loads(call(tools, "grep", {"pattern": "5 days", "glob": glob}))["results"]] \
        == ["billing/refunds.md"]
    assert [e["path"] for e in json.loads(call(tools, "find", {"glob": glob}))["entries"]] == ["billing/refunds.md"]


def test_a_call_warns_only_of_the_names_it_left_out(tools, root):
    (root / "odd").mkdir()
    (root / "odd" / "new\nline.txt").write_text("x\n")
    assert "warnings" in json.loads(call(tools, "ls", {"path": "odd"}))
    assert "warnings" not in json.loads(call(tools, "ls", {"path": "billing"}))
    assert "warnings" not in json.loads(call(tools, "grep", {"pattern": "refund", "glob": "billing/**"}))
    assert "warnings" in json.loads(call(tools, "grep", {"pattern": "refund"}))  # this walk met it again
