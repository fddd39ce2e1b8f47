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
  the server hold more than that of one line (the SDK's reader keeps any line whole).
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

from runtime.tools.calls import ToolError, Tools
from runtime.tools.definitions import tool_definitions

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
READ_BYTES = 1 << 16


class BoundedLines:
    """The request lines of a byte stream, for the SDK's reader (``async for line in stdin``):
    each at most ``max_line`` bytes; what is not a JSON-RPC message is answered here, through
    ``reply`` (set once the SDK's write stream exists), and not passed on."""

    def __init__(self, read, max_line: int = MAX_LINE_BYTES) -> None:
        import anyio

        self.read = read  # async (n) -> bytes, b"" at the end
        self.max_line = max_line
        self.buffer = bytearray()
        self.start = 0  # where the next line begins in the buffer
        self.ended = False
        self.reply = None
        self.ready = anyio.Event()

    def reply_to(self, write_stream) -> None:
        self.reply = write_stream.send
        self.ready.set()

    def __aiter__(self) -> "BoundedLines":
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._line()
            if line is None:
                raise StopAsyncIteration
            if isinstance(line, int):
                await self._error("INVALID_REQUEST", f"request line too long: over {self.max_line} bytes "
                                  f"({line} bytes, dropped)")
                continue
            text = line.decode("utf-8", errors="replace")
            if not text.strip():
                continue
            problem = self._problem(text)
            if problem is None:
                return text
            await self._error(*problem)

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
    def _problem(text: str) -> tuple | None:
        """What JSON-RPC calls the line's problem (code, message, id), or None: a message."""
        import mcp.types as types

        try:
            types.jsonrpc_message_adapter.validate_json(text, by_name=False)  # as the SDK's reader will
            return None
        except ValueError as exc:  # pydantic's ValidationError
            errors = exc.errors() if hasattr(exc, "errors") else []
        if errors and all(e.get("type") == "json_invalid" for e in errors):
            return "PARSE_ERROR", f"Parse error: {errors[0].get('msg', 'not JSON')}", None
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            message = None
        ident = message.get("id") if isinstance(message, dict) else None
        valid_id = isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))
        return "INVALID_REQUEST", "Invalid Request: not a JSON-RPC 2.0 message", ident if valid_id else None

    async def _error(self, code: str, message: str, ident=None) -> None:
        import mcp.types as types
        from mcp.shared.message import SessionMessage

        await self.ready.wait()
        error = types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=getattr(types, code), message=message))
        await self.reply(SessionMessage(error))


def serve_stdio(tools: Tools) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin. The wire is read from a private
    duplicate of fd 0, which meanwhile reads the null device (as the SDK does for the stdin it
    claims: nothing the server starts can read the client's requests)."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(tools)
    wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    def read_wire(n: int) -> bytes:
        try:
            return os.read(wire, n)
        except OSError:  # a wire that fails ends the session as its end would
            return b""

    async def read(n: int) -> bytes:
        return await anyio.to_thread.run_sync(read_wire, n, abandon_on_cancel=True)

    async def main() -> None:
        lines = BoundedLines(read)
        async with stdio_server(stdin=lines) as (read_stream, write_stream):
            lines.reply_to(write_stream)
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        os.dup2(wire, 0)  # the wire stays open: a reading thread may still block on it
        tools.close()
