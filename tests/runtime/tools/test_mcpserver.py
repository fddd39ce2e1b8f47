"""`fdsl mcp --root DIR` as a subprocess, driven by the official MCP SDK's client over stdio:
every tool listed with the schemas definitions.py renders and called, the policy enforced (a
path outside the root refused, no host path in any answer), the seed's errors and cut results
as tool results, and stdout carrying JSON-RPC only."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
import mcp.types as types  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from runtime.tools import tool_definitions  # noqa: E402
from tests.support import CANARY, REPO  # noqa: E402

HOST_MARK = "HOSTDIR-m4k"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / HOST_MARK
    root = base / "root"
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "intro.md").write_text("# Intro\n\nThe language model.\n")
    (root / "many.txt").write_text("".join(f"row {i}\n" for i in range(1, 131)))
    (base / "canary.txt").write_text(CANARY)
    (root / "leak.md").symlink_to(base / "canary.txt")
    return root


def session_run(root: Path, steps):
    """Start `fdsl mcp --root root`, initialize, run `await steps(session)`, return its result."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "runtime.cli", "mcp", "--root", str(root)],
                                   cwd=str(REPO))
    out = {}

    async def main() -> None:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    out["init"] = await session.initialize()
                    out["result"] = await steps(session)

    anyio.run(main)
    return out


def text_of(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert HOST_MARK not in content.text and CANARY not in content.text and "Traceback" not in content.text
    return content.text


def test_a_client_lists_and_calls_every_tool(root):
    async def steps(session: ClientSession):
        listed = await session.list_tools()
        calls = {
            "grep": ("grep", {"pattern": "LANGUAGE"}),
            "read": ("read", {"path": "guides/intro.md", "offset": 3}),
            "ls": ("ls", {"path": "/guides"}),
            "find": ("find", {"glob": "**/*.md"}),
            "run_fdsl": ("run_fdsl", {"script": 'print(len(Directory("/").files()), "files")'}),
            "cut": ("grep", {"pattern": "row", "max_results": 5}),
        }
        return listed, {key: await session.call_tool(name, args) for key, (name, args) in calls.items()}

    out = session_run(root, steps)
    assert out["init"].server_info.name == "filesdsl" and "grep" in out["init"].instructions
    listed, results = out["result"]
    assert [t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools] == tool_definitions("mcp")
    assert not any(r.is_error for r in results.values())
    assert json.loads(text_of(results["grep"]))["results"] == \
        [{"path": "guides/intro.md", "line": 3, "content": "The language model."}]
    assert text_of(results["read"]) == "  3  The language model."
    assert [e["path"] for e in json.loads(text_of(results["ls"]))["entries"]] == ["guides/intro.md"]
    assert [e["path"] for e in json.loads(text_of(results["find"]))["entries"]] == ["guides/intro.md", "leak.md"]
    assert text_of(results["run_fdsl"]) == "2 files\n"  # the link leading outside is no file
    cut = json.loads(text_of(results["cut"]))
    assert len(cut["results"]) == 5 and cut["total"] == 130 and cut["truncated"] is True


def test_errors_and_refusals_are_tool_errors_without_host_paths(root):
    async def steps(session: ClientSession):
        calls = [
            ("read", {"path": "../canary.txt"}), ("read", {"path": "leak.md"}), ("ls", {"path": "/.."}),
            ("run_fdsl", {"script": 'print(File("../canary.txt").read())'}),
            ("read", {"path": "guides/nope.md"}), ("grep", {"pattern": "[unclosed"}), ("delete", {"path": "x"}),
            ("grep", {"pattern": "x", "max_results": 1000}), ("read", {}),
            ("run_fdsl", {"script": 'print("so far")\nprint(1 / 0)\n'}),
        ]
        return [await session.call_tool(name, args) for name, args in calls]

    results = session_run(root, steps)["result"]
    assert all(r.is_error for r in results)
    texts = [text_of(r) for r in results]
    assert texts[0].startswith("SandboxError: path '../canary.txt' climbs above the root")
    assert texts[1].startswith("SandboxError:") and "outside the sandbox" in texts[1]
    assert texts[2].startswith("SandboxError:")
    assert texts[3].startswith("SandboxError:") and "at line 1" in texts[3]
    assert texts[4].startswith("RuntimeError: no such file: guides/nope.md")
    assert texts[5].startswith("RuntimeError: invalid regex '[unclosed'")
    assert texts[6].startswith("UsageError: unknown tool: 'delete'")
    assert texts[7] == "UsageError: grep: parameter 'max_results' must be from 1 to 100, not 1000"
    assert texts[8] == "UsageError: read: missing required parameter 'path'"
    assert texts[9].startswith("so far\n") and "at line 2" in texts[9]


def test_stdout_carries_the_protocol_only(root):
    """Raw JSON-RPC over the pipe: every line the server writes is a JSON-RPC message, also while
    a script prints and a tool fails."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "run_fdsl", "arguments": {"script": 'for i in [1:50]:\n    print("noise", i)\n'}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "/nope"}}},
    ]
    proc = subprocess.Popen([sys.executable, "-m", "runtime.cli", "mcp", "--root", str(root)], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    replies = []
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                replies.append(json.loads(proc.stdout.readline()))
        rest, stderr = proc.communicate(timeout=30)  # closes stdin: the server ends
    finally:
        proc.kill()
    assert rest == "" and proc.returncode == 0, stderr
    assert [r["id"] for r in replies] == [1, 2, 3] and all(r["jsonrpc"] == "2.0" for r in replies)
    noise = replies[1]["result"]
    assert noise["isError"] is False and noise["content"][0]["text"].endswith("noise 50\n")
    assert replies[2]["result"]["isError"] is True


def test_a_bad_root_is_a_usage_error_before_serving(tmp_path: Path):
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "mcp", "--root", str(tmp_path / "nowhere")],
                          cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stdout == "" and "not a directory" in proc.stderr


def test_a_closed_stdin_is_a_usage_error(root):
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "mcp", "--root", str(root)], cwd=REPO,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    assert proc.returncode == 2 and proc.stdout == "" and "its requests come on stdin, which is closed" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, message", [
    ([], "name what to serve with --root DIR"),
    (["--root", "/"], "the machine's root directory would be open to the model"),
])
def test_the_server_serves_only_a_directory_it_is_given(tmp_path: Path, args, message):
    """An MCP client may start the server anywhere (even in /): it never serves where it starts."""
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "mcp", *args], cwd="/", capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and message in proc.stderr and proc.stdout == ""


def test_fdsl_run_never_loads_the_mcp_sdk(tmp_path: Path):
    (tmp_path / "s.fdsl").write_text("print(1)\n")
    code = ("import sys, runtime.cli\n"
            f"code = runtime.cli.main(['run', {str(tmp_path / 's.fdsl')!r}, '--root', {str(tmp_path)!r}])\n"
            "assert code == 0 and 'mcp' not in sys.modules and 'runtime.tools' not in sys.modules, sorted(sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1\n"


@pytest.mark.parametrize("yes", [False, True])
def test_a_configs_mounts_and_approvals_through_mcp(tmp_path: Path, yes: bool):
    """--config's policy holds through MCP: a suffix the mount does not allow is refused, and a
    mount with read approval is read only with --yes (nobody can be asked on a terminal)."""
    for name in ("docs", "cfg"):
        (tmp_path / name).mkdir()
    (tmp_path / "docs" / "a.md").write_text("alpha\n")
    (tmp_path / "docs" / "b.json").write_text("{}\n")
    (tmp_path / "cfg" / "s.txt").write_text("secret setting\n")
    (tmp_path / "sandbox.toml").write_text(
        '[[mounts]]\nhost_path = "docs"\nmount_point = "/docs"\nsuffixes = [".md"]\n\n'
        '[[mounts]]\nhost_path = "cfg"\nmount_point = "/cfg"\nread_approval = true\n')
    params = StdioServerParameters(command=sys.executable, cwd=str(REPO), args=[
        "-m", "runtime.cli", "mcp", "--config", str(tmp_path / "sandbox.toml"), *(["--yes"] if yes else [])])

    async def main():
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return [await session.call_tool("read", {"path": path})
                            for path in ("/docs/a.md", "/docs/b.json", "/cfg/s.txt")]

    a, b, s = anyio.run(main)
    assert not a.is_error and a.content[0].text == "  1  alpha"
    assert b.is_error and b.content[0].text.startswith("SandboxError:") and str(tmp_path) not in b.content[0].text
    if yes:
        assert not s.is_error and s.content[0].text == "  1  secret setting"
    else:
        assert s.is_error and "needs approval" in s.content[0].text


def raw_server(root: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "runtime.cli", "mcp", "--root", str(root)], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def reply_lines(proc: subprocess.Popen, count: int, timeout: float = 60) -> list[bytes]:
    """The next `count` lines the server writes, or a failure (not a hang) when they do not come."""
    deadline = time.monotonic() + timeout
    pending = getattr(proc, "pending", b"")
    lines: list[bytes] = []
    while len(lines) < count:
        if b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            lines.append(line)
            continue
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no reply within {timeout} s (got {len(lines)} of {count})"
        chunk = os.read(proc.stdout.fileno(), 1 << 16)
        assert chunk, f"the server ended after {len(lines)} of {count} replies"
        pending += chunk
    proc.pending = pending
    return lines


def replies(proc: subprocess.Popen, count: int) -> dict:
    """The next `count` replies by id (JSON-RPC answers need not come in order); id null: a list."""
    out: dict = {None: []}
    for line in reply_lines(proc, count):
        reply = json.loads(line)
        assert reply["jsonrpc"] == "2.0"
        if reply["id"] is None:
            out[None].append(reply)
        else:
            out[reply["id"]] = reply
    return out


def test_a_line_that_is_not_a_json_rpc_message_gets_its_error_reply(root):
    lines = [b"not json", b"", b"[" * 5_000, b'{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"x": NaN}}',
             b'{"id": 7, "hello": 1}', b'{"jsonrpc": "2.0", "id": true, "method": "ping"}',
             b'{"jsonrpc": "2.0", "id": [1], "method": "ping"}', b'{"jsonrpc": "2.0", "id": 1.0, "method": "ping"}',
             b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', b'{"jsonrpc": "2.0", "id": 8, "method": "ping"}']
    proc = raw_server(root)
    try:
        proc.stdin.write(b"\n".join(lines) + b"\n")
        proc.stdin.flush()
        got = replies(proc, 9)  # the blank line is skipped
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    finally:
        proc.kill()
    unnamed = [(r["error"]["code"], r["error"]["message"].split(":")[0]) for r in got[None]]
    assert sorted(unnamed) == [(-32700, "Parse error")] * 3 + [(-32600, "Invalid Request")] * 4  # ids it cannot echo
    assert any(r["error"]["message"] == "Parse error: NaN is not JSON" for r in got[None])
    assert any(r["error"]["message"] == "Parse error: nested too deeply" for r in got[None])
    assert sum("an id must be a string or an integer" in r["error"]["message"] for r in got[None]) == 4
    assert got[7]["error"]["code"] == -32600 and "not a JSON-RPC 2.0 message" in got[7]["error"]["message"]
    assert got[8]["result"] == {}


INITIALIZE = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"}]
SLOW_SCRIPT = "x = 0\nfor i in [1:300000]:\n    x += 1\nprint(x)\n"


def test_what_was_asked_before_the_input_ends_is_answered(root):
    """The SDK ends its session at the end of its input and drops the calls under way; the server
    answers them first: a call still running, and a last line without its newline."""
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "run_fdsl", "arguments": {"script": SLOW_SCRIPT}}}
    proc = raw_server(root)
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in [*INITIALIZE, call]))
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 6, "method": "ping"}')
        proc.stdin.close()
        got = replies(proc, 3)
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    finally:
        proc.kill()
    assert got[5]["result"]["content"][0]["text"] == "300000\n" and got[6]["result"] == {}


def test_a_client_that_stops_reading_ends_the_server_quietly(root):
    proc = raw_server(root)
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in INITIALIZE))
        proc.stdin.flush()
        reply_lines(proc, 1)
        proc.stdout.close()  # then a request whose answer nobody reads
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 6, "method": "ping"}\n')
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
        stderr = proc.stderr.read().decode()
    finally:
        proc.kill()
    assert "Traceback" not in stderr and "Error" not in stderr, stderr


def vm_hwm_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


def replies_and_growth(root: Path, opening: bytes, payload, count: int) -> tuple[dict, float]:
    """Start a server, send `opening` and read its one reply, then send the chunks of `payload`
    and read `count` replies: those replies by id, and how much the server's peak resident
    memory grew meanwhile (MiB). The server then ends cleanly at the end of its input."""
    proc = raw_server(root)
    try:
        proc.stdin.write(opening)
        proc.stdin.flush()
        replies(proc, 1)
        before = vm_hwm_kib(proc.pid)
        for chunk in payload:
            proc.stdin.write(chunk)
        proc.stdin.flush()
        got = replies(proc, count)
        grown_mib = (vm_hwm_kib(proc.pid) - before) / 1024
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    finally:
        proc.kill()
    return got, grown_mib


def test_an_over_long_line_is_dropped_and_answered_without_being_held(root):
    from runtime.tools.mcpserver import MAX_LINE_BYTES

    chunk = b"x" * (1 << 20)  # 64 MiB on one line, 8x the limit
    got, grown_mib = replies_and_growth(root, b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n',
                                        [chunk] * 64 + [b'\n{"jsonrpc": "2.0", "id": 2, "method": "ping"}\n'], 2)
    (error,) = got[None]
    assert error["error"]["code"] == -32600
    assert error["error"]["message"] == f"request line too long: over {MAX_LINE_BYTES} bytes ({64 << 20} bytes, dropped)"
    assert got[2]["result"] == {}
    # at most the limit's worth of the line was held at once (8.5 MiB measured; all 64 would be 128+)
    assert grown_mib < MAX_LINE_BYTES / 2**20 + 4, f"the server's peak memory grew {grown_mib:.1f} MiB for a dropped line"


def test_a_request_of_too_many_json_items_is_refused_before_it_is_parsed(root):
    from runtime.tools.mcpserver import MAX_JSON_ITEMS

    many = b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"x": [' + b"[]," * (2 << 20) + b"[]]}}"
    commas = "# " + "a, b: c, " * 4_000 + "\n"  # one string: its commas and colons are not items
    script = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "run_fdsl", "arguments": {"script": commas + 'print("ok")\n'}}}
    got, grown_mib = replies_and_growth(root, b"".join(json.dumps(m).encode() + b"\n" for m in INITIALIZE),
                                        [many + b"\n" + json.dumps(script).encode() + b"\n"], 2)
    (refused,) = got[None]
    assert refused["error"]["code"] == -32600
    assert refused["error"]["message"].startswith(f"request too large: over {MAX_JSON_ITEMS} JSON items")
    # a parse of it took 1.3 GiB (measured); the refusal costs a few copies of the line at most
    assert grown_mib < 64, f"the server's peak memory grew {grown_mib:.1f} MiB for a refused line"
    assert got[3]["result"]["isError"] is False and got[3]["result"]["content"][0]["text"] == "ok\n"


PING = b'{"jsonrpc": "2.0", "id": 2, "method": "ping"}'
NEVER_CLOSED = b'"\\' * (1 << 19)  # 1 MiB: each quote could open a string that runs to the line's end


def test_a_string_that_never_closes_costs_one_pass(root):
    """Counting a line's items took a scan per quote to the line's end (a 100 KB line: 66 s, the
    server stalled meanwhile); it is one pass: both 1 MiB lines are answered, then the ping."""
    from runtime.tools.mcpserver import MAX_JSON_ITEMS

    def write() -> None:  # from a thread: a stalled server stops reading, and the test must fail, not hang
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.write(b"[" * (MAX_JSON_ITEMS + 1) + NEVER_CLOSED + b"\n" + NEVER_CLOSED + b"\n" + PING + b"\n")
            proc.stdin.close()

    proc = raw_server(root)
    writer = threading.Thread(target=write, daemon=True)
    try:
        writer.start()
        got = replies(proc, 3)  # within reply_lines' 60 s; the quadratic scan took hours
        writer.join(timeout=30)
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    finally:
        proc.kill()
    too_large, unclosed = got[None]
    assert too_large["error"]["message"].startswith(f"request too large: over {MAX_JSON_ITEMS} JSON items")
    assert unclosed["error"] == {"code": -32700, "message": "Parse error: Unterminated string starting at: line 1 column 1 (char 0)"}
    assert got[2]["result"] == {}


def test_json_items_are_counted_outside_strings():
    from runtime.tools.mcpserver import json_items

    line = json.dumps({"a": ["x, y: [z]", 'q"uo\\te', 1, {"b": None}]})
    assert json_items(line, 100) == 12  # { : [ , , , { : and 4 strings; the strings' commas are theirs
    assert json_items('[1, "never, closed', 100) == 2  # what follows an unclosed string is no JSON
    assert json_items("[" * 500 + '"a"', 100) > 100


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def grep_line(ident, pattern) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                       "params": {"name": "grep", "arguments": {"pattern": pattern}}}).encode()


SURROGATE = grep_line(5, "\ud800")  # json.dumps writes it "\ud800": JSON's grammar allows it, Unicode has no such character
TOO_DEEP = grep_line(6, nested(250))  # Python's json reads ~1000 levels, the SDK's parser 200
LONG_INT = grep_line(7, 0).replace(b'"pattern": 0', b'"pattern": ' + b"9" * 5000)


@pytest.mark.parametrize("line, ident, message", [
    (SURROGATE, 5, "Invalid Request: a string holds half of a surrogate pair (\\ud800-\\udfff) alone, which is no character, "
                   "at line 1 column "),
    (TOO_DEEP, 6, "Invalid Request: nested too deeply (at most 200 levels), at line 1 column "),
    (LONG_INT, 7, "Invalid Request: an integer of more than 4300 digits, at line 1 column "),
    (b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000 + b', "method": "ping"}', None,
     "Invalid Request: an integer of more than 4300 digits"),
    (b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', None, "Invalid Request: a string holds half of a surrogate pair"),
])
def test_json_the_sdk_cannot_parse_is_refused_with_its_id(line, ident, message):
    """The SDK parses each line again with its own parser, stricter than Python's json, and drops
    what that refuses without an answer: each line is checked with that parser."""
    from runtime.tools.mcpserver import BoundedLines, Refusal

    refusal = BoundedLines._checked(line.decode())
    assert isinstance(refusal, Refusal) and refusal.code == -32600 and refusal.ident == ident
    assert refusal.message.startswith(message) and "sys." not in refusal.message


def test_what_the_sdk_can_parse_is_passed_on():
    from runtime.tools.mcpserver import BoundedLines

    for line in (grep_line(1, "\ud83d\ude00"), grep_line(2, nested(190)), grep_line(3, 0).replace(b": 0", b": " + b"9" * 4000)):
        message = BoundedLines._checked(line.decode())
        assert message == types.jsonrpc_message_adapter.validate_json(line, by_name=False)


def test_json_the_sdk_cannot_parse_is_answered_by_the_server(root):
    proc = raw_server(root)
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in INITIALIZE))
        proc.stdin.write(b"\n".join([SURROGATE, TOO_DEEP, LONG_INT, grep_line(8, "\ud83d\ude00")]) + b"\n")
        proc.stdin.flush()
        got = replies(proc, 5)  # the SDK answered 5 and 6 with nothing: the client waited forever
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    finally:
        proc.kill()
    assert [got[i]["error"]["code"] for i in (5, 6, 7)] == [-32600] * 3
    assert "surrogate" in got[5]["error"]["message"] and "nested too deeply" in got[6]["error"]["message"]
    assert "4300 digits" in got[7]["error"]["message"] and "sys." not in got[7]["error"]["message"]
    assert got[8]["result"]["isError"] is False


SLEEPER = "for i in [1:1000000]:\n    for j in [1:1000000]:\n        x = j\n"  # runs until its call's timeout


def run_line(ident, timeout: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                       "params": {"name": "run_fdsl", "arguments": {"script": SLEEPER, "timeout": timeout}}}).encode()


def cancel_line(ident) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": ident}}).encode()


def test_a_cancelled_request_does_not_hold_up_the_end(root):
    """The SDK sends no answer for a request it cancels: at the input's end the server waited
    for one, 130 s. It ends once the cancelled call's thread does (a 3 s script here)."""
    proc = raw_server(root)
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in INITIALIZE))
        proc.stdin.write(run_line(5, 3) + b"\n" + PING + b"\n")
        proc.stdin.flush()
        assert set(replies(proc, 2)) == {None, 0, 2}  # the call is under way
        proc.stdin.write(cancel_line(5) + b"\n")
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
        rest = getattr(proc, "pending", b"") + proc.stdout.read()
    finally:
        proc.kill()
    assert rest == b""  # a cancelled request is never answered


def test_requests_in_flight_are_bounded(root):
    """While a script runs, the requests after it wait: past MAX_PENDING_REQUESTS in flight,
    one is answered at once with SERVER_BUSY. A cancelled one leaves the count (and never runs)."""
    from runtime.tools.mcpserver import MAX_PENDING_REQUESTS, SERVER_BUSY

    waiting = [grep_line(100 + i, "model") for i in range(MAX_PENDING_REQUESTS + 2)]  # 31 fit beside the script
    proc = raw_server(root)
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in INITIALIZE))
        proc.stdin.write(b"\n".join([run_line(1, 3), *waiting, cancel_line(100), grep_line(200, "model")]) + b"\n")
        proc.stdin.flush()
        busy = replies(proc, 4)  # before the script's answer
        later = replies(proc, 1 + 30 + 1)
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
        rest = proc.pending + proc.stdout.read()
    finally:
        proc.kill()
    assert set(busy) == {None, 0, 100 + MAX_PENDING_REQUESTS - 1, 100 + MAX_PENDING_REQUESTS, 100 + MAX_PENDING_REQUESTS + 1}
    for ident in range(100 + MAX_PENDING_REQUESTS - 1, 100 + MAX_PENDING_REQUESTS + 2):
        assert busy[ident]["error"]["code"] == SERVER_BUSY
        assert busy[ident]["error"]["message"].startswith(f"server busy: {MAX_PENDING_REQUESTS} requests are in flight")
    assert later[1]["result"]["content"][0]["text"].startswith("TimeoutError:")
    assert set(later) == {None, 1, 200, *range(101, 100 + MAX_PENDING_REQUESTS - 1)}  # 100 was cancelled
    assert all(later[i]["result"]["isError"] is False for i in [200, *range(101, 100 + MAX_PENDING_REQUESTS - 1)])
    assert rest == b""


class Sent:
    """A write stream keeping what BoundedLines answers itself."""

    def __init__(self) -> None:
        self.messages: list = []

    async def send(self, item) -> None:
        self.messages.append(item.message)


def serve_lines(lines: list[bytes], steps):
    """`await steps(bounded, sent)` over a BoundedLines reading `lines`, within 10 s."""
    from runtime.tools.mcpserver import BoundedLines

    data = memoryview(b"".join(line + b"\n" for line in lines))
    offset = 0

    async def read(n: int) -> bytes:
        nonlocal offset
        chunk = bytes(data[offset: offset + n])
        offset += len(chunk)
        return chunk

    async def main():
        bounded, sent = BoundedLines(read), Sent()
        bounded.reply_to(sent)
        with anyio.fail_after(10):
            return await steps(bounded, sent)

    return anyio.run(main)


def answer(ident) -> types.JSONRPCResponse:
    return types.JSONRPCResponse(jsonrpc="2.0", id=ident, result={})


def test_the_bytes_of_requests_in_flight_are_bounded():
    from runtime.tools.mcpserver import MAX_PENDING_BYTES, SERVER_BUSY

    big = [grep_line(i, "x" * (7 << 20)) for i in range(1, 4)]  # 2 fit in MAX_PENDING_BYTES, not 3

    async def steps(bounded, sent):
        passed = [json.loads(await bounded.__anext__())["id"] for _ in range(3)]
        for ident in passed:
            bounded.answered(answer(ident))
        with pytest.raises(StopAsyncIteration):  # everything answered: no wait at the end
            await bounded.__anext__()
        return passed, sent.messages

    passed, refused = serve_lines([*big, b'{"jsonrpc": "2.0", "id": 9, "method": "ping"}'], steps)
    assert passed == [1, 2, 9]  # a small request still fits
    (busy,) = refused
    assert busy.id == 3 and busy.error.code == SERVER_BUSY
    assert busy.error.message == (f"server busy: the requests in flight hold {2 * len(big[0])} bytes and this one is "
                                  f"{len(big[0])}, over the {MAX_PENDING_BYTES} they may hold together; send it again "
                                  "once some are answered")


def test_a_cancelled_request_is_not_waited_for():
    async def steps(bounded, sent):
        for _ in range(4):
            await bounded.__anext__()
        with pytest.raises(StopAsyncIteration):  # 130 s before, then a fail_after
            await bounded.__anext__()
        return bounded.pending, bounded.outstanding, sent.messages

    lines = [grep_line("7", "a"), grep_line(8, "b"), cancel_line(7), cancel_line(8)]  # the SDK takes "7" for 7
    assert serve_lines(lines, steps) == (0, {}, [])
