"""FileSystemToolset: each operation end to end through the broker (plain Python in a real
worker sending fs.* requests), approvals denied and granted, and the CLI approver."""

from __future__ import annotations

import ast
import io
import time

import pytest

from runtime.broker import Broker
from runtime.errors import ApprovalDeniedError, EditError, PathNotWritableError, SandboxError
from runtime.services.toolset import FileSystemToolset, toolset_handlers
from runtime.supervisor import Limits, run_worker
from runtime.terminal import TerminalApprover
from tests.support import CANARY


def run_fs(toolset, code: str):
    handlers = toolset_handlers(toolset)
    handlers["ping"] = lambda: None
    out: list[str] = []
    deadline = time.monotonic() + 20
    result = run_worker(code, Broker(handlers), Limits(timeout=20, memory_mb=256, max_output=100_000), deadline,
                        out.append, mode="os")
    return result, "".join(out)


SCRIPT = r'''
def call(op, **a):
    try:
        return broker.call(op, **a)
    except Exception as exc:
        return "ERR " + getattr(exc, "kind", "?") + ": " + str(exc)
r = []
r.append(call("fs.write", path="/out/notes/a.md", content="hello world"))
r.append(call("fs.read", path="/out/notes/a.md", max_chars=5, offset=0))
r.append(call("fs.edit", path="/out/notes/a.md", old_text="world", new_text="there"))
r.append(call("fs.edit", path="/out/notes/a.md", old_text="nope", new_text="x"))
r.append(call("fs.copy", source="/docs/a.md", destination="/out/copy.md"))
r.append(call("fs.move", source="/out/copy.md", destination="/out/moved.md"))
r.append(call("fs.list_files", path="/out", pattern="**/*.md"))
r.append(call("fs.list_directory", path="/out"))
r.append(call("fs.find_files", path="/docs", recursive=True, glob="**/*.txt"))
r.append(call("fs.delete", path="/out/moved.md"))
r.append(call("fs.write", path="/docs/x.md", content="no"))
r.append(call("fs.read", path="/docs/../canary.txt", max_chars=100, offset=0))
r.append(call("fs.write", path="/cfg/x.json", content="{}"))
r.append(call("dir.list", path="/"))
broker.output(repr(r))  # a worker imports no more than it needs: json may not be loaded
'''


def test_every_operation_through_the_broker(world):
    sb, tmp = world
    result, output = run_fs(FileSystemToolset(sb), SCRIPT)
    assert result.status == "ok", result.error
    r = ast.literal_eval(output)
    assert r[0] == "Wrote 11 chars to /out/notes/a.md"
    assert r[1] == {"content": "hello", "truncated": True, "total_chars": 11, "offset": 0, "chars_read": 5}
    assert r[2] == "Edited /out/notes/a.md: replaced 5 chars with 5 chars"
    assert r[3].startswith("ERR RuntimeError: old_text was not found in /out/notes/a.md")
    assert r[4] == "Copied /docs/a.md to /out/copy.md"
    assert r[5] == "Moved /out/copy.md to /out/moved.md"
    assert r[6] == ["/out/moved.md", "/out/notes/a.md"]
    assert [(e["@type"], e["path"]) for e in r[7]] == [("FileEntry", "/out/moved.md"), ("DirectoryEntry", "/out/notes")]
    assert [e["path"] for e in r[8]] == ["/docs/sub/b.txt"]
    assert r[9] == "Deleted /out/moved.md"
    assert r[10] == "ERR SandboxError: cannot write '/docs/x.md': it is read-only here. Writable: /out, /cfg."
    assert r[11].startswith("ERR SandboxError: path '/docs/../canary.txt'") or "climbs" in r[11] or "outside" in r[11]
    assert r[12] == ("ERR SandboxError: Write 2 chars to /cfg/x.json: needs approval and no one can approve it here. "
                     "Writable without approval: /out.")
    assert r[13].startswith("ERR SandboxError: request denied")  # FilesDSL ops are not in this table
    assert (tmp / "out" / "notes" / "a.md").read_text() == "hello there"
    assert not (tmp / "cfg" / "x.json").exists()
    assert str(tmp) not in output and CANARY not in output


def test_filesdsl_runs_never_get_the_toolset_ops(run_worker_code):
    code = "try:\n    broker.call('fs.write', path='x', content='y')\nexcept Exception as e:\n    broker.output(str(e))"
    result, output = run_worker_code(code, mode="os")
    assert result.status == "ok"
    assert "request denied" in output and "not allowed in this run" in output


def test_approvals_denied_and_granted(world):
    sb, tmp = world
    asked = []
    ts = FileSystemToolset(sb, approve=lambda d: asked.append(d) or False)
    with pytest.raises(ApprovalDeniedError, match=r"^Write 2 chars to /cfg/x.json: not approved. Writable without approval: /out.$"):
        ts.write("/cfg/x.json", "{}")
    with pytest.raises(ApprovalDeniedError, match=r"^Read from /cfg/settings.json: not approved. Readable without approval: /docs, /out.$"):
        ts.read("/cfg/settings.json")
    ts.write("/out/free.md", "no approval needed")  # write_approval=False: not asked
    assert asked == ["Write 2 chars to /cfg/x.json", "Read from /cfg/settings.json"]
    ts = FileSystemToolset(sb, approve=lambda d: asked.append(d) or True)
    assert ts.write("/cfg/x.json", "{}") == "Wrote 2 chars to /cfg/x.json"
    assert ts.read("/cfg/settings.json").content == "{}\n"
    result, output = run_fs(FileSystemToolset(sb, approve=lambda d: True),
                            "broker.output(broker.call('fs.write', path='/cfg/y.json', content='1'))")
    assert output == "Wrote 1 chars to /cfg/y.json" and (tmp / "cfg" / "y.json").read_text() == "1"


def test_an_approval_covers_only_the_call_that_was_shown(world):
    """The description of a write shows its length, not its content: approving it once must
    not let different content of the same length through unasked."""
    sb, tmp = world
    asked = []
    ts = FileSystemToolset(sb, approve=lambda d: asked.append(d) or len(asked) == 1)
    assert ts.write("/cfg/run.sh", "echo hi") == "Wrote 7 chars to /cfg/run.sh"
    with pytest.raises(ApprovalDeniedError, match="not approved"):
        ts.write("/cfg/run.sh", "rm -rf ")
    assert asked == ["Write 7 chars to /cfg/run.sh"] * 2
    assert (tmp / "cfg" / "run.sh").read_text() == "echo hi"
    ts.write("/cfg/run.sh", "echo hi")  # the very call approved before: not asked again
    assert len(asked) == 2


def test_descriptions_show_invisible_characters_escaped(world):
    sb, _ = world
    ts = FileSystemToolset(sb)
    # U+202E (right-to-left override) would make "/cfg/\u202egnp.sh" read as "/cfg/hs.png".
    assert ts.get_approval_description("delete_file", {"path": "/cfg/\u202egnp.sh"}) == "Delete /cfg/\\u202egnp.sh"
    assert ts.get_approval_description("read_file", {"path": "/cfg/a\u200bb"}) == "Read from /cfg/a\\u200bb"
    assert ts.get_approval_description("read_file", {"path": "/cfg/caf\u00e9 b.txt"}) == "Read from /cfg/caf\u00e9 b.txt"
    out = io.StringIO()

    class FakeTTY(io.StringIO):
        def isatty(self):
            return True

    TerminalApprover(tty_in=FakeTTY("n\n"), tty_out=out)("Delete /cfg/\u202egnp.sh")
    assert "\u202e" not in out.getvalue() and "\\u202e" in out.getvalue()


def test_approval_table_and_descriptions(world):
    sb, _ = world
    ts = FileSystemToolset(sb)
    cases = [
        ("read_file", {"path": "/docs/a.md"}, "pre_approved", "Read from /docs/a.md"),
        ("read_file", {"path": "/cfg/settings.json"}, "needs_approval", "Read from /cfg/settings.json"),
        ("write_file", {"path": "/out/f.txt", "content": "x" * 150}, "pre_approved", "Write 150 chars to /out/f.txt"),
        ("write_file", {"path": "/cfg/f.txt", "content": "x"}, "needs_approval", "Write 1 chars to /cfg/f.txt"),
        ("write_file", {"path": "/docs/f.txt", "content": "x"}, "blocked", None),
        ("edit_file", {"path": "/cfg/d.md", "old_text": "x" * 50, "new_text": "y" * 75}, "needs_approval",
         "Edit /cfg/d.md: replace 50 chars with 75 chars"),
        ("delete_file", {"path": "/cfg/t.txt"}, "needs_approval", "Delete /cfg/t.txt"),
        ("move_file", {"source": "/out/a", "destination": "/cfg/b"}, "needs_approval", "Move /out/a to /cfg/b"),
        ("move_file", {"source": "/out/a", "destination": "/out/b"}, "pre_approved", "Move /out/a to /out/b"),
        # Beyond the seed's table: copying reads the source, so a read_approval source asks too.
        ("copy_file", {"source": "/cfg/s", "destination": "/out/d"}, "needs_approval", "Copy /cfg/s to /out/d"),
        ("copy_file", {"source": "/docs/a.md", "destination": "/out/d"}, "pre_approved", "Copy /docs/a.md to /out/d"),
        ("move_file", {"source": "/cfg/s", "destination": "/out/d"}, "needs_approval", "Move /cfg/s to /out/d"),
        ("copy_file", {"source": "/docs/a.md", "destination": "/cfg/d"}, "needs_approval", "Copy /docs/a.md to /cfg/d"),
        ("list_files", {"path": "/cfg"}, "needs_approval", "List files in /cfg"),
        ("list_files", {"path": "/docs"}, "pre_approved", "List files in /docs"),
        ("read_file", {"path": "/elsewhere"}, "blocked", None),
    ]
    for name, args, status, description in cases:
        assert ts.needs_approval(name, args).status == status, (name, args)
        if description:
            assert ts.get_approval_description(name, args) == description


def test_edit_must_be_unique_and_writable(world):
    sb, tmp = world
    ts = FileSystemToolset(sb, approve=lambda d: True)
    ts.write("/out/e.md", "x x")
    with pytest.raises(EditError, match="appears 2 times"):
        ts.edit("/out/e.md", "x", "y")
    with pytest.raises(PathNotWritableError):
        ts.edit("/docs/a.md", "alpha", "beta")


def test_move_and_copy_refuse_existing_destination_and_mount_points(world):
    sb, _ = world
    ts = FileSystemToolset(sb, approve=lambda d: True)
    ts.write("/out/a.md", "a")
    ts.write("/out/b.md", "b")
    with pytest.raises(SandboxError.__mro__[1], match="already exists"):
        ts.move("/out/a.md", "/out/b.md")
    with pytest.raises(SandboxError.__mro__[1], match="already exists"):
        ts.copy("/docs/a.md", "/out/a.md")
    with pytest.raises(SandboxError.__mro__[1], match="mount point"):
        ts.delete("/out")


def test_suffix_and_size_limits_apply_to_the_toolset(tmp_path):
    from runtime.errors import FileTooLargeError, SuffixNotAllowedError
    from runtime.fs.config import Mount, SandboxConfig
    from runtime.fs.sandbox import Sandbox

    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "big.md").write_text("x" * 100)
    sb = Sandbox(SandboxConfig(mounts=[Mount(host_path=tmp_path / "w", mount_point="/w", mode="rw",
                                             suffixes=[".md"], max_file_bytes=10, write_approval=False)]))
    ts = FileSystemToolset(sb)
    with pytest.raises(SuffixNotAllowedError, match=r"Allowed suffixes there: \.md"):
        ts.write("/w/x.exe", "x")
    with pytest.raises(FileTooLargeError, match="^cannot write 11 bytes to '/w/y.md': files in /w are limited to 10 bytes. Write less"):
        ts.write("/w/y.md", "x" * 11)
    with pytest.raises(FileTooLargeError):
        ts.read("/w/big.md")


def test_terminal_approver():
    with pytest.raises(ApprovalDeniedError, match="no terminal is attached to ask; run with --yes to pre-approve"):
        TerminalApprover(tty_in=io.StringIO("y\n"), tty_out=io.StringIO())("Delete /out/x")
    assert TerminalApprover(assume_yes=True)("Delete /out/x") is True

    class FakeTTY(io.StringIO):
        def isatty(self):
            return True

    out = FakeTTY()
    assert TerminalApprover(tty_in=FakeTTY("y\n"), tty_out=out)("Delete /out/x") is True
    assert out.getvalue() == "Approve: Delete /out/x? [y/N] "
    assert TerminalApprover(tty_in=FakeTTY("\n"), tty_out=FakeTTY())("Delete /out/x") is False


def test_move_creates_the_destinations_parents(world):
    sb, tmp = world
    ts = FileSystemToolset(sb)
    ts.write("/out/a.txt", "a")
    assert ts.move("/out/a.txt", "/out/x/y/z.txt") == "Moved /out/a.txt to /out/x/y/z.txt"
    assert (tmp / "out" / "x" / "y" / "z.txt").read_text() == "a" and not (tmp / "out" / "a.txt").exists()
