"""`fdsl mcp --root DIR`: the tools as a stdio MCP server, on the official `mcp` SDK's low-level
Server (its tools/list answers exactly the schemas definitions.py renders for "mcp").

Decisions (docs/tools.md):
- Every failing call, an unknown tool's included, is a tool result with isError and the
  message a model can act on (never a traceback, never a host path); protocol errors are
  left to the SDK (a malformed request).
- Calls run one at a time in a worker thread (Tools holds one lock), so the event loop keeps
  answering pings while a script runs.
- stdout carries the protocol only: the SDK points fd 1 at stderr while it serves, so nothing
  a worker or a library prints can reach the wire; this module prints nothing.
- `mcp` is imported here only, when the command runs: `fdsl run` never loads it.
"""

from __future__ import annotations

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


def serve_stdio(tools: Tools) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(tools)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        tools.close()
