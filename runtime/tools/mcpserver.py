"""`fdsl mcp --root DIR`: the tools as a stdio MCP server, on the official `mcp` SDK's low-level
Server (its tools/list answers exactly the schemas definitions.py renders for "mcp").

Decisions (docs/tools.md):
- Every failing call, an unknown tool's included, is a tool result with isError and the
  message a model can act on (never a traceback, never a host path); protocol errors are
  the SDK's (an unknown method, bad parameters), except what it drops without a word: a
  line that is not JSON gets a Parse error, JSON that is not a JSON-RPC message an Invalid
  Request (with its id when it has one), both as JSON-RPC asks.
- A request line is read up to MAX_LINE_BYTES and no further: a longer one is read to its end
  and dropped, and answered with an Invalid Request naming the limit, so no client can make
  the server hold more than that of one line (the SDK's reader keeps any line whole). One of
  more than MAX_JSON_ITEMS items is refused before anything parses it (a parse holds each
  value as an object).
- The end of the input is not the end of the calls: the requests passed on are answered first
  (the SDK would drop the calls under way). A client that stops reading ends the server quietly.
- Calls run one at a time in a worker thread (Tools holds one lock), so the event loop keeps
  answering pings while a script runs.
- stdout carries the protocol only: the SDK points fd 1 at stderr while it serves, so nothing
  a worker or a library prints can reach the wire; this module prints nothing.
- `mcp` is imported here only, when the command runs: `fdsl run` never loads it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import stat
from typing import NamedTuple

from runtime.tools.calls import ToolError, Tools
from runtime.tools.definitions import MAX_RUN_TIMEOUT_S, tool_definitions

INSTRUCTIONS = (
    "Read-only tools over a collection of text, markdown and PDF documents (paths are relative to the "
    "collection's root, '/'). grep finds lines (its JSON says \"total\" and \"truncated\": more may exist than "
    "are shown), read reads a document with line numbers, ls and find browse, run_fdsl runs a FilesDSL script "
    "that combines many searches and reads in one call."
)


def server_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("filesdsl")
    except PackageNotFoundError:
        return "0"


def build_server(tools: Tools):
    """The low-level MCP Server answering tools/list and tools/call with `tools`."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    listed = [types.Tool.model_validate(d) for d in tool_definitions("mcp")]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx, params) -> types.CallToolResult:
        try:
            text = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments or {})
        except ToolError as exc:
            return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=False)

    return Server("filesdsl", version=server_version(), instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


MAX_LINE_BYTES = 8 << 20  # a run_fdsl script is at most 1 MiB; JSON may spell a byte in 6
# A parse holds each value of a request as an object (pydantic's take about 480 bytes each: an
# 8 MiB line of "[]," took 1.3 GiB), so their number is bounded, not only the line's size: as
# the line's JSON items (strings, and brackets, braces, commas and colons outside them), about
# one or two per value. A request has tens; a script is one string, however long.
MAX_JSON_ITEMS = 20_000
READ_BYTES = 1 << 16
EOF_GRACE_S = MAX_RUN_TIMEOUT_S + 10  # at the wire's end, how long calls under way may take to be answered
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string, escapes included (no backtracking)
_STRUCTURAL = "[{,:"


def _not_json(name: str):
    raise ValueError(f"{name} is not JSON")  # Python's json takes NaN and Infinity; JSON does not


class Refusal(NamedTuple):
    """A line's JSON-RPC error: the code's name in mcp.types, the message, the id (None: null)."""

    code: str
    message: str
    ident: object = None


class BoundedLines:
    """The request lines of a byte stream, for the SDK's reader (``async for line in stdin``):
    each at most ``max_line`` bytes and MAX_JSON_ITEMS items; what is not a JSON-RPC message
    is answered here, through ``reply`` (set once the SDK's write stream exists), and not
    passed on. At the stream's end it waits, EOF_GRACE_S at most, until each request passed on
    has been answered (``answered`` sees the server's replies): the SDK ends a session at its
    input's end and drops the calls still under way, though a client that closed its side may
    still read the answers (``printf ... | fdsl mcp``)."""

    def __init__(self, read, max_line: int = MAX_LINE_BYTES) -> None:
        import anyio

        self.read = read  # async (n) -> bytes, b"" at the end
        self.max_line = max_line
        self.buffer = bytearray()
        self.start = 0  # where the next line begins in the buffer
        self.ended = False
        self.reply = None
        self.ready = anyio.Event()
        self.outstanding: set = set()  # ids of the requests passed on and not answered yet
        self.all_answered = anyio.Event()
        self.all_answered.set()

    def reply_to(self, write_stream) -> "AnsweredStream":
        """Errors go to `write_stream`; the server's own messages go through what this returns."""
        self.reply = write_stream.send
        self.ready.set()
        return AnsweredStream(write_stream, self)

    def answered(self, message) -> None:
        ident = getattr(message, "id", None)
        if ident in self.outstanding and not hasattr(message, "method"):
            self.outstanding.discard(ident)
            if not self.outstanding:
                self.all_answered.set()

    def __aiter__(self) -> "BoundedLines":
        return self

    async def __anext__(self) -> str:
        import anyio

        while True:
            line = await self._line()
            if line is None:
                with anyio.move_on_after(EOF_GRACE_S):
                    await self.all_answered.wait()
                raise StopAsyncIteration
            if isinstance(line, int):
                await self._error("INVALID_REQUEST", f"request line too long: over {self.max_line} bytes "
                                  f"({line} bytes, dropped)")
                continue
            text = line.decode("utf-8", errors="replace")
            if not text.strip():
                continue
            checked = self._checked(text)
            if isinstance(checked, Refusal):
                await self._error(*checked)
                continue
            if isinstance(checked, dict) and "method" in checked and "id" in checked:  # a request
                if not self.outstanding:
                    self.all_answered = anyio.Event()
                self.outstanding.add(checked["id"])
            return text

    async def _line(self) -> bytes | int | None:
        """The next line (without its end), the length of a dropped over-long one, or None."""
        buffer, dropped = self.buffer, 0
        scan = self.start
        while True:
            end = buffer.find(b"\n", scan)
            if end >= 0:
                start, self.start = self.start, end + 1
                if dropped or end - start > self.max_line:  # its length only: no copy
                    return dropped + end - start
                with memoryview(buffer) as view:
                    return bytes(view[start:end])
            scan = len(buffer)
            if scan - self.start > self.max_line:  # read on to the line's end, keeping none of it
                dropped += scan - self.start
                buffer.clear()
                self.start = scan = 0
            if self.ended:
                start, self.start = self.start, 0
                rest = len(buffer) - start
                line = b"" if dropped else bytes(buffer[start:])
                buffer.clear()
                if dropped:
                    return dropped + rest
                return line if line else None
            chunk = await self.read(READ_BYTES)
            if not chunk:
                self.ended = True
            if self.start:  # what was handed out goes before the buffer grows
                del buffer[:self.start]
                scan -= self.start
                self.start = 0
            buffer += chunk

    @staticmethod
    def _checked(text: str):
        """The line's message (parsed), or the Refusal JSON-RPC asks for."""
        import mcp.types as types

        items = sum(map(text.count, _STRUCTURAL)) + text.count('"') // 2
        if items > MAX_JSON_ITEMS:  # a count that strings' own commas and quotes may swell: the exact one
            stripped, strings = _STRING.subn("", text)
            items = sum(map(stripped.count, _STRUCTURAL)) + strings
            if items > MAX_JSON_ITEMS:
                return Refusal("INVALID_REQUEST", f"request too large: over {MAX_JSON_ITEMS} JSON items "
                               "(strings, brackets, braces, commas and colons)")
        try:
            message = json.loads(text, parse_constant=_not_json)
        except RecursionError:
            return Refusal("PARSE_ERROR", "Parse error: nested too deeply")
        except ValueError as exc:
            return Refusal("PARSE_ERROR", f"Parse error: {exc}")
        ident = message.get("id") if isinstance(message, dict) else None
        valid_id = isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))
        if isinstance(message, dict) and "id" in message and not valid_id:
            return Refusal("INVALID_REQUEST", "Invalid Request: an id must be a string or an integer")
        try:
            types.jsonrpc_message_adapter.validate_python(message, by_name=False)
        except (ValueError, RecursionError):  # pydantic's ValidationError is a ValueError
            return Refusal("INVALID_REQUEST", "Invalid Request: not a JSON-RPC 2.0 message", ident if valid_id else None)
        return message

    async def _error(self, code: str, message: str, ident=None) -> None:
        import mcp.types as types
        from mcp.shared.message import SessionMessage

        await self.ready.wait()
        error = types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=getattr(types, code), message=message))
        await self.reply(SessionMessage(error))


class AnsweredStream:
    """The server's write stream, telling ``lines`` of each message it sends (the WriteStream
    protocol of mcp.shared._stream_protocols)."""

    def __init__(self, stream, lines: BoundedLines) -> None:
        self.stream, self.lines = stream, lines

    async def send(self, item) -> None:
        await self.stream.send(item)
        self.lines.answered(item.message)

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> "AnsweredStream":
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc) -> bool | None:
        return await self.stream.__aexit__(*exc)


def serve_stdio(tools: Tools) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin (and the calls under way are
    answered), or stops reading stdout. The wire is read from a private
    duplicate of fd 0, which meanwhile reads the null device (as the SDK does for the stdin it
    claims: nothing the server starts can read the client's requests)."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(tools)
    wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    # Waited for on the event loop, then read: no thread blocks in a read (one would keep the
    # process from exiting while the client, gone from stdout, keeps stdin open).
    pollable = not stat.S_ISREG(os.fstat(wire).st_mode)

    async def read(n: int) -> bytes:
        nonlocal pollable
        if pollable:
            try:
                await anyio.wait_readable(wire)
            except OSError:  # a descriptor epoll refuses (/dev/null): its reads do not block
                pollable = False
        try:
            return os.read(wire, n)
        except OSError:  # a wire that fails ends the session as its end would
            return b""

    async def main() -> None:
        lines = BoundedLines(read)
        async with stdio_server(stdin=lines) as (read_stream, write_stream):
            answered = lines.reply_to(write_stream)
            await server.run(read_stream, answered, server.create_initialization_options())

    try:
        anyio.run(main)
    except* (BrokenPipeError, ConnectionResetError):
        pass  # the client stopped reading: nobody is left to answer
    finally:
        os.dup2(wire, 0)
        os.close(wire)
        tools.close()
