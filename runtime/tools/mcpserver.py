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
  value as an object), counted in one pass over the line.
- A line is checked as the SDK will parse it (its own validate_json): JSON the SDK's parser
  refuses (a lone surrogate escape, nesting past 200 levels, an integer of over 4300 digits)
  would be dropped by it, so it is answered here, with the request's id.
- Requests in flight (passed on, neither answered nor cancelled) are bounded in number and in
  bytes; one over either bound is answered at once with SERVER_BUSY.
- The end of the input is not the end of the calls: the requests passed on are answered first
  (the SDK would drop the calls under way). A client that stops reading ends the server quietly.
- Calls run one at a time in a worker thread (Tools holds one lock), so the event loop keeps
  answering pings while a script runs; the calls waiting their turn wait on the event loop,
  where a cancellation frees them at once.
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

    # a call waits for its turn here, not in a thread blocked on Tools' lock: a cancelled call
    # that has not started ends at once (a thread cannot be interrupted) and frees its request
    turn = anyio.Lock()

    async def call_tool(ctx, params) -> types.CallToolResult:
        try:
            async with turn:
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
# Requests in flight each hold their parse until answered (or cancelled), and a client may send
# many while a script runs: their number and their lines' bytes are bounded. Any one line fits
# when nothing else is in flight.
MAX_PENDING_REQUESTS = 32
MAX_PENDING_BYTES = 16 << 20
MAX_INT_DIGITS = 4300  # the SDK's parser refuses longer integers (and Python's int() by default)
READ_BYTES = 1 << 16
EOF_GRACE_S = MAX_RUN_TIMEOUT_S + 10  # at the wire's end, how long calls under way may take to be answered
PARSE_ERROR, INVALID_REQUEST = -32700, -32600
SERVER_BUSY = -32050  # in JSON-RPC's range for implementation-defined server errors; none of the MCP SDK's codes
# A JSON string from its opening quote, escapes included; possessive, so it never backtracks: a
# match costs the string's length, and a string that never closes one scan to the line's end.
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_STRUCTURAL = "[{,:"
_HUGE = object()  # an integer of over MAX_INT_DIGITS digits, as the check's parse sees it
# what the SDK's parser (jiter) says of JSON it refuses, in the client's terms
_UNREADABLE = (("recursion limit", "nested too deeply (at most 200 levels)"),
               ("surrogate", "a string holds half of a surrogate pair (\\ud800-\\udfff) alone, which is no character"),
               ("hex escape", "a string holds half of a surrogate pair (\\ud800-\\udfff) alone, which is no character"),
               ("number out of range", f"an integer of more than {MAX_INT_DIGITS} digits"))


def _not_json(name: str):
    raise ValueError(f"{name} is not JSON")  # Python's json takes NaN and Infinity; JSON does not


def _json_int(digits: str):
    # int() refuses over 4300 digits with advice about sys.set_int_max_str_digits(): the SDK's
    # parse refuses such a line too, and says so in its own terms
    return int(digits) if len(digits.lstrip("-")) <= MAX_INT_DIGITS else _HUGE


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def json_items(text: str, limit: int) -> int:
    """The line's JSON items (its strings, and the brackets, braces, commas and colons outside
    them), counted until past `limit`. One pass: each string is matched once from its opening
    quote, and one that never closes ends the count (the line is no JSON: its parse fails there)."""
    items = pos = 0
    while items <= limit:
        quote = text.find('"', pos)
        stop = len(text) if quote < 0 else quote
        items += sum(text.count(c, pos, stop) for c in _STRUCTURAL)
        string = _STRING.match(text, quote) if quote >= 0 else None
        if string is None:
            break
        items += 1
        pos = string.end()
    return items


class Refusal(NamedTuple):
    """A line's JSON-RPC error: its code, the message, the id (None: null)."""

    code: int
    message: str
    ident: object = None


class BoundedLines:
    """The request lines of a byte stream, for the SDK's reader (``async for line in stdin``):
    each at most ``max_line`` bytes and MAX_JSON_ITEMS items, and one the SDK's parse takes;
    what is not is answered here, through ``reply`` (set once the SDK's write stream exists),
    and not passed on; so is a request over the bounds of what may be in flight. At the
    stream's end it waits, EOF_GRACE_S at most, until each request passed on has been answered
    (``answered`` sees the server's replies) or cancelled: the SDK ends a session at its input's
    end and drops the calls still under way, though a client that closed its side may still read
    the answers (``printf ... | fdsl mcp``)."""

    def __init__(self, read, max_line: int = MAX_LINE_BYTES) -> None:
        import anyio

        self.read = read  # async (n) -> bytes, b"" at the end
        self.max_line = max_line
        self.buffer = bytearray()
        self.start = 0  # where the next line begins in the buffer
        self.ended = False
        self.reply = None
        self.ready = anyio.Event()
        # the requests passed on and neither answered nor cancelled: their lines' sizes by id (in
        # the SDK's correlation, "7" is 7), several for an id sent again before its answer
        self.outstanding: dict[object, list[int]] = {}
        self.pending = self.pending_bytes = 0
        self.all_answered = anyio.Event()
        self.all_answered.set()

    def reply_to(self, write_stream) -> "AnsweredStream":
        """Errors go to `write_stream`; the server's own messages go through what this returns."""
        self.reply = write_stream.send
        self.ready.set()
        return AnsweredStream(write_stream, self)

    def answered(self, message) -> None:
        if not hasattr(message, "method"):
            self._settle(getattr(message, "id", None))

    def _settle(self, ident, latest: bool = False) -> None:
        """One request of id `ident` is no longer in flight (the earliest, or the `latest`)."""
        from mcp.shared.dispatcher import as_request_id, coerce_request_id

        ident = as_request_id(ident)
        key = coerce_request_id(ident) if ident is not None else None
        sizes = self.outstanding.get(key)
        if not sizes:
            return
        self.pending_bytes -= sizes.pop(-1 if latest else 0)
        self.pending -= 1
        if not sizes:
            del self.outstanding[key]
        if not self.pending:
            self.all_answered.set()

    def _busy(self, size: int) -> str | None:
        """Why a request of `size` bytes cannot be taken now, or None."""
        if self.pending >= MAX_PENDING_REQUESTS:
            return (f"server busy: {self.pending} requests are in flight, the most it takes "
                    f"({MAX_PENDING_REQUESTS}); send this one again once some are answered")
        if self.pending and self.pending_bytes + size > MAX_PENDING_BYTES:
            return (f"server busy: the requests in flight hold {self.pending_bytes} bytes and this one is "
                    f"{size}, over the {MAX_PENDING_BYTES} they may hold together; send it again once some are answered")
        return None

    def __aiter__(self) -> "BoundedLines":
        return self

    async def __anext__(self) -> str:
        import anyio
        import mcp.types as types
        from mcp.shared.dispatcher import coerce_request_id

        while True:
            line = await self._line()
            if line is None:
                with anyio.move_on_after(EOF_GRACE_S):
                    await self.all_answered.wait()
                raise StopAsyncIteration
            if isinstance(line, int):
                await self._error(INVALID_REQUEST, f"request line too long: over {self.max_line} bytes "
                                  f"({line} bytes, dropped)")
                continue
            text = line.decode("utf-8", errors="replace")
            if not text.strip():
                continue
            checked = self._checked(text)
            if isinstance(checked, Refusal):
                await self._error(*checked)
                continue
            if isinstance(checked, types.JSONRPCRequest):
                busy = self._busy(len(line))
                if busy:
                    await self._error(SERVER_BUSY, busy, checked.id)
                    continue
                if not self.pending:
                    self.all_answered = anyio.Event()
                self.outstanding.setdefault(coerce_request_id(checked.id), []).append(len(line))
                self.pending += 1
                self.pending_bytes += len(line)
            elif isinstance(checked, types.JSONRPCNotification) and checked.method == "notifications/cancelled":
                # the SDK never answers a request it cancels: no waiting for that answer at the end
                params = checked.params if isinstance(checked.params, dict) else {}
                self._settle(params.get("requestId"), latest=True)
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
        """The line's message as the SDK parses it, or the Refusal JSON-RPC asks for."""
        import mcp.types as types

        rough = sum(map(text.count, _STRUCTURAL)) + text.count('"') // 2  # strings' own commas and quotes swell it
        if rough > MAX_JSON_ITEMS and json_items(text, MAX_JSON_ITEMS) > MAX_JSON_ITEMS:
            return Refusal(INVALID_REQUEST, f"request too large: over {MAX_JSON_ITEMS} JSON items "
                           "(strings, brackets, braces, commas and colons)")
        try:  # JSON's own rules, and the id, which the SDK's parse may drop or refuse
            message = json.loads(text, parse_constant=_not_json, parse_int=_json_int)
        except RecursionError:
            return Refusal(PARSE_ERROR, "Parse error: nested too deeply")
        except ValueError as exc:
            return Refusal(PARSE_ERROR, f"Parse error: {exc}")
        has_id = isinstance(message, dict) and "id" in message
        ident = message.get("id") if has_id else None
        del message  # the SDK's parse below makes its own
        valid_id = isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))
        if has_id and not valid_id and ident is not _HUGE:  # the SDK would take it for a notification
            return Refusal(INVALID_REQUEST, "Invalid Request: an id must be a string or an integer")
        if not valid_id or (isinstance(ident, str) and not _utf8(ident)):  # no id to echo: JSON cannot carry a surrogate
            ident = None
        try:  # the SDK parses the line again with this, and drops without a word what fails it
            return types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            unreadable = [e["msg"].removeprefix("Invalid JSON: ") for e in exc.errors() if e["type"] == "json_invalid"]
        if unreadable:
            reason = next((plain for key, plain in _UNREADABLE if key in unreadable[0]), unreadable[0])
            where = unreadable[0].rpartition(" at ")[2] if " at line" in unreadable[0] else ""
            return Refusal(INVALID_REQUEST, f"Invalid Request: {reason}" + (f", at {where}" if where else ""), ident)
        return Refusal(INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message", ident)

    async def _error(self, code: int, message: str, ident=None) -> None:
        import mcp.types as types
        from mcp.shared.message import SessionMessage

        await self.ready.wait()
        error = types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message))
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
