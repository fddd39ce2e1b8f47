"""The agent-facing tools, each described once (ToolSpec) and rendered for each API:

    tool_definitions("openai")     # Chat Completions: [{"type": "function", "function": {...}}]
    tool_definitions("anthropic")  # Messages: [{"name", "description", "input_schema"}]
    tool_definitions("mcp")        # MCP tools/list: [{"name", "title", "description", "inputSchema", "annotations"}]

Decisions (docs/tools.md):
- One neutral spec per tool; the renderers only reshape it. Every input schema is
  `{"type": "object", "properties", "required", "additionalProperties": false}` with the
  keywords type, description, minimum, maximum and (not for OpenAI) maxLength: the subset
  OpenAI's strict mode, Anthropic and MCP all accept. Defaults are said in the descriptions,
  not with `default` (strict mode refuses it); `call` applies them.
- OpenAI's rendering leaves `maxLength` out (strict mode does not support it); `call` checks
  lengths for every format anyway. `strict=True` renders OpenAI's strict mode: every parameter
  required, the optional ones nullable (`call` takes null as "not given").
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.cheatsheet import FILESDSL_COMPACT

FORMATS = ("openai", "anthropic", "mcp")

MAX_GREP_RESULTS = 100  # the seed's cap: never flood the model's context
MAX_READ_LINES = 2000  # the seed's default read, as Claude Code's Read tool
MAX_LIST_RESULTS = 1000
DEFAULT_LIST_RESULTS = 200
MAX_PATTERN_CHARS = 1000
MAX_PATH_CHARS = 4096
MAX_SCRIPT_CHARS = 100_000
DEFAULT_RUN_TIMEOUT_S = 30
MAX_RUN_TIMEOUT_S = 120
MAX_LINE_CHARS = 2000  # a grep hit's line is cut past this (a minified file is one huge line)
MAX_READ_CHARS = 200_000  # one read's text; past it the read stops and says where to go on
MAX_DESCRIPTION_CHARS = 1024  # a tool description's room on the strictest API (OpenAI on some deployments)


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # "string" | "integer" | "boolean"
    description: str
    required: bool = False
    default: object = None
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    params: tuple[Param, ...]

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


_CUT = ('"total" counts them all and "truncated" is true when more exist than are shown: '
        "never take the shown ones for all of them.")

GREP = ToolSpec(
    name="grep",
    title="Search document lines",
    description=(
        "Search the lines of every document in the sandbox (text, markdown, and the text of PDFs). "
        "`pattern` is a regular expression (plain words match themselves), case-insensitive unless "
        "ignore_case is false. `glob` filters the paths first: 'guides/**/*.md' ('*.md' is the top "
        "level only, '**/*.md' any depth). Returns JSON {\"results\": [{\"path\", \"line\", \"content\"}], "
        "\"total\", \"truncated\"} ordered by path then line, at most max_results (default and at most "
        f"{MAX_GREP_RESULTS}); each matching line once, cut past {MAX_LINE_CHARS} characters. " + _CUT +
        " Narrow the pattern or the glob to see the rest. Files that could not be read are named in \"skipped\". Read a hit's context with the read tool."
    ),
    params=(
        Param("pattern", "string", "Regular expression or plain text to find.", required=True,
              max_length=MAX_PATTERN_CHARS),
        Param("glob", "string", "Only paths matching this glob are searched, e.g. 'billing/**/*.md'. Default: all.",
              max_length=MAX_PATTERN_CHARS),
        Param("max_results", "integer", f"Most hits returned (default {MAX_GREP_RESULTS}).",
              default=MAX_GREP_RESULTS, minimum=1, maximum=MAX_GREP_RESULTS),
        Param("ignore_case", "boolean", "Case-insensitive matching (default true).", default=True),
    ),
)

READ = ToolSpec(
    name="read",
    title="Read a document",
    description=(
        "Read a document of the sandbox with line numbers ('  1  # Title'), so you can cite lines and "
        "read on with offset/limit. A PDF reads as its text. `offset` is the first line (1-based, "
        f"default 1), `limit` the number of lines (default and at most {MAX_READ_LINES}). An offset past "
        "the end returns an empty string. When the document goes on past what is shown, the text ends "
        "with a line '[truncated: lines A-B of N shown; read on with offset=B+1]'."
    ),
    params=(
        Param("path", "string", "Path of the document, relative to the sandbox root, e.g. 'guides/intro.md'.",
              required=True, max_length=MAX_PATH_CHARS),
        Param("offset", "integer", "First line to return, 1-based (default 1).", default=1, minimum=1),
        Param("limit", "integer", f"Number of lines to return (default {MAX_READ_LINES}).", default=MAX_READ_LINES,
              minimum=1, maximum=MAX_READ_LINES),
    ),
)

LS = ToolSpec(
    name="ls",
    title="List a directory",
    description=(
        "List one directory of the sandbox ('/' is its root), sorted by name. Returns JSON "
        "{\"entries\": [{\"@type\", \"path\", \"name\", \"type\", \"size\", \"modified\", ...}], \"total\", "
        f"\"truncated\"}}, at most `limit` entries (default {DEFAULT_LIST_RESULTS}, at most {MAX_LIST_RESULTS}) "
        "from `offset`. " + _CUT + " Page on with offset."
    ),
    params=(
        Param("path", "string", "Directory to list (default '/').", default="/", max_length=MAX_PATH_CHARS),
        Param("offset", "integer", "Entries to skip (default 0).", default=0, minimum=0),
        Param("limit", "integer", f"Most entries returned (default {DEFAULT_LIST_RESULTS}).",
              default=DEFAULT_LIST_RESULTS, minimum=1, maximum=MAX_LIST_RESULTS),
    ),
)

FIND = ToolSpec(
    name="find",
    title="Find files by glob",
    description=(
        "Find the entries under a directory whose path relative to it matches a glob ('**/*.pdf' at any "
        "depth, '*.md' directly in it, 'reports/*'), sorted by path. Returns JSON {\"entries\": [...], "
        f"\"total\", \"truncated\"}}, at most max_results (default {DEFAULT_LIST_RESULTS}, at most "
        f"{MAX_LIST_RESULTS}). " + _CUT + " Narrow the glob or the path to see the rest."
    ),
    params=(
        Param("glob", "string", "Glob on the path relative to `path`, e.g. '**/*.md'.", required=True,
              max_length=MAX_PATTERN_CHARS),
        Param("path", "string", "Directory to search under (default '/').", default="/", max_length=MAX_PATH_CHARS),
        Param("max_results", "integer", f"Most entries returned (default {DEFAULT_LIST_RESULTS}).",
              default=DEFAULT_LIST_RESULTS, minimum=1, maximum=MAX_LIST_RESULTS),
    ),
)

RUN_FDSL = ToolSpec(
    name="run_fdsl",
    title="Run a FilesDSL script",
    description=(
        "Run a FilesDSL script over the documents in a jailed worker; returns what it printed, or the "
        "output so far and the error at its line and column. Many reads and searches in one call. "
        f"`timeout` seconds (default {DEFAULT_RUN_TIMEOUT_S}); output capped.\n" + FILESDSL_COMPACT
    ),
    params=(
        Param("script", "string", "The FilesDSL source.", required=True, max_length=MAX_SCRIPT_CHARS),
        Param("timeout", "integer", f"Wall-clock limit in seconds (default {DEFAULT_RUN_TIMEOUT_S}).",
              default=DEFAULT_RUN_TIMEOUT_S, minimum=1, maximum=MAX_RUN_TIMEOUT_S),
    ),
)

SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in (RUN_FDSL, GREP, READ, LS, FIND)}
TOOL_NAMES = tuple(SPECS)


def input_schema(spec: ToolSpec, fmt: str, strict: bool = False) -> dict:
    """The JSON Schema of a tool's parameters, in the keyword subset `fmt` accepts (`strict`:
    OpenAI's strict mode, where every parameter is required and an optional one may be null)."""
    properties = {}
    for p in spec.params:
        kind = [p.type, "null"] if strict and not p.required else p.type
        prop: dict = {"type": kind, "description": p.description}
        if p.minimum is not None:
            prop["minimum"] = p.minimum
        if p.maximum is not None:
            prop["maximum"] = p.maximum
        if p.max_length is not None and fmt != "openai":
            prop["maxLength"] = p.max_length
        properties[p.name] = prop
    return {"type": "object", "properties": properties,
            "required": [p.name for p in spec.params if p.required or strict], "additionalProperties": False}


def render(spec: ToolSpec, fmt: str, strict: bool = False) -> dict:
    """One tool's definition as the API `fmt` takes it."""
    schema = input_schema(spec, fmt, strict)
    if fmt == "openai":
        function = {"name": spec.name, "description": spec.description, "parameters": schema}
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}
    if fmt == "anthropic":
        return {"name": spec.name, "description": spec.description, "input_schema": schema}
    if fmt == "mcp":
        # every tool only reads: the MCP client may call them without asking its user
        annotations = {"title": spec.title, "readOnlyHint": True, "destructiveHint": False,
                       "idempotentHint": True, "openWorldHint": False}
        return {"name": spec.name, "title": spec.title, "description": spec.description, "inputSchema": schema,
                "annotations": annotations}
    raise ValueError(f"format must be one of {', '.join(map(repr, FORMATS))}, not {fmt!r}")


def tool_definitions(format: str = "openai", names: tuple[str, ...] | None = None, *, strict: bool = False) -> list[dict]:
    """The tools (all, or `names`) as JSON-serializable definitions for the API `format`;
    `strict=True` (OpenAI only) asks for its strict mode."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(map(repr, FORMATS))}, not {format!r}")
    if strict and format != "openai":
        raise ValueError(f"strict is OpenAI's strict mode; {format!r} has none here")
    chosen = TOOL_NAMES if names is None else names
    unknown = [n for n in chosen if n not in SPECS]
    if unknown:
        raise ValueError(f"unknown tool(s) {', '.join(unknown)}; tools: {', '.join(TOOL_NAMES)}")
    return [render(SPECS[name], format, strict) for name in chosen]
