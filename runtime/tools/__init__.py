"""The agent-facing tools (issue 12): grep, read, ls, find and run_fdsl, described once
(definitions.py) for OpenAI, Anthropic and MCP, and answered over a Sandbox (calls.py). The
MCP server is mcpserver.py (`fdsl mcp`). See docs/tools.md."""

from runtime.tools.calls import ToolError, Tools
from runtime.tools.definitions import FORMATS, TOOL_NAMES, tool_definitions

__all__ = ["Tools", "ToolError", "tool_definitions", "FORMATS", "TOOL_NAMES"]
