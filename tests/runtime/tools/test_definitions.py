"""runtime/tools/definitions.py: one spec per tool, rendered for OpenAI, Anthropic and MCP, each
checked with the provider's own SDK types and its published rules (name pattern, an object
schema at the root, only keywords the provider supports), and the schemas agreeing with what
`call` accepts."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from pydantic import TypeAdapter

from runtime.cheatsheet import FILESDSL_COMPACT
from runtime.tools import FORMATS, TOOL_NAMES, tool_definitions
from runtime.tools.calls import ToolError, check_params
from runtime.tools.definitions import MAX_DESCRIPTION_CHARS, SPECS, input_schema

# Published name rules: OpenAI "a-z, A-Z, 0-9, underscores and dashes, at most 64"; Anthropic
# the same pattern; MCP (2025-11-25) 1 to 128 of letters, digits, _ - and .
NAME_RULES = {"openai": r"^[a-zA-Z0-9_-]{1,64}$", "anthropic": r"^[a-zA-Z0-9_-]{1,64}$",
              "mcp": r"^[A-Za-z0-9_.-]{1,128}$"}
# JSON Schema keywords each accepts in a tool's parameters: OpenAI's strict-mode subset (the
# narrowest: "Supported schemas" of Structured Outputs, no default, no maxLength); Anthropic
# and MCP take JSON Schema 2020-12.
COMMON = {"type", "description", "properties", "required", "additionalProperties", "enum", "minimum", "maximum"}
KEYWORDS = {"openai": COMMON, "anthropic": COMMON | {"maxLength", "minLength"}, "mcp": COMMON | {"maxLength", "minLength"}}


def schema_of(definition: dict, fmt: str) -> dict:
    return {"openai": lambda d: d["function"]["parameters"], "anthropic": lambda d: d["input_schema"],
            "mcp": lambda d: d["inputSchema"]}[fmt](definition)


def name_of(definition: dict, fmt: str) -> str:
    return definition["function"]["name"] if fmt == "openai" else definition["name"]


def keywords(schema: dict) -> set[str]:
    found = set(schema)
    for prop in schema.get("properties", {}).values():
        found |= keywords(prop)
    return found


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_follows_its_published_rules(fmt):
    definitions = tool_definitions(fmt)
    assert [name_of(d, fmt) for d in definitions] == list(TOOL_NAMES) == ["run_fdsl", "grep", "read", "ls", "find"]
    json.dumps(definitions)  # JSON-serializable as given
    for d in definitions:
        assert re.fullmatch(NAME_RULES[fmt], name_of(d, fmt))
        schema = schema_of(d, fmt)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        assert keywords(schema) <= KEYWORDS[fmt], name_of(d, fmt)
        for prop in schema["properties"].values():
            assert prop["type"] in ("string", "integer", "boolean") and prop["description"]


def test_openai_definitions_are_chat_completion_tools():
    from openai.types.chat import ChatCompletionToolParam
    from openai.types.shared_params import FunctionDefinition

    adapter = TypeAdapter(ChatCompletionToolParam)
    for d in tool_definitions("openai"):
        assert adapter.validate_python(d) == d  # a TypedDict drops unknown keys: equality proves there are none
        assert TypeAdapter(FunctionDefinition).validate_python(d["function"]) == d["function"]
        assert d["type"] == "function" and "strict" not in d["function"]


def test_anthropic_definitions_are_tool_params():
    from anthropic.types import ToolParam

    adapter = TypeAdapter(ToolParam)
    for d in tool_definitions("anthropic"):
        assert adapter.validate_python(d) == d
        assert set(d) == {"name", "description", "input_schema"}


def test_mcp_definitions_are_mcp_tools():
    from mcp.types import Tool

    for d in tool_definitions("mcp"):
        tool = Tool.model_validate(d)
        assert tool.model_dump(by_alias=True, exclude_none=True) == d
        assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False


def test_one_spec_three_renderings_differ_only_where_a_format_must():
    for name in TOOL_NAMES:
        openai = input_schema(SPECS[name], "openai")
        anthropic = input_schema(SPECS[name], "anthropic")
        assert anthropic == input_schema(SPECS[name], "mcp")
        stripped = {**anthropic, "properties": {k: {kk: vv for kk, vv in v.items() if kk != "maxLength"}
                                                for k, v in anthropic["properties"].items()}}
        assert stripped == openai
    descriptions = {fmt: [d.get("description") or d["function"]["description"] for d in tool_definitions(fmt)]
                    for fmt in FORMATS}
    assert descriptions["openai"] == descriptions["anthropic"] == descriptions["mcp"]


def test_descriptions_carry_the_cheat_sheet_limits_and_truncation_fields():
    by_name = {d["name"]: d["description"] for d in tool_definitions("anthropic")}
    assert FILESDSL_COMPACT in by_name["run_fdsl"]
    # OpenAI refuses longer descriptions on some deployments (string_above_max_length)
    assert all(len(text) <= MAX_DESCRIPTION_CHARS for text in by_name.values()), {n: len(t) for n, t in by_name.items()}
    for name in ("grep", "ls", "find"):
        assert '"total"' in by_name[name] and '"truncated"' in by_name[name]
    assert "100" in by_name["grep"] and "2000" in by_name["read"]


def test_a_bad_format_or_tool_name_is_a_clear_error():
    with pytest.raises(ValueError, match="format must be one of 'openai', 'anthropic', 'mcp', not 'gemini'"):
        tool_definitions("gemini")
    with pytest.raises(ValueError, match="unknown tool"):
        tool_definitions("mcp", names=("grep", "delete"))
    assert [d["name"] for d in tool_definitions("mcp", names=("read",))] == ["read"]


# Parameters a model might send: the schema (as the provider would check it) and check_params agree.
SAMPLES = [
    ("grep", {"pattern": "x"}), ("grep", {}), ("grep", {"pattern": "x", "max_results": 0}),
    ("grep", {"pattern": "x", "max_results": 101}), ("grep", {"pattern": "x", "max_results": 100}),
    ("grep", {"pattern": "x", "ignore_case": "yes"}), ("grep", {"pattern": "x", "max_results": True}),
    ("grep", {"pattern": "x" * 1001}), ("grep", {"pattern": "x", "extra": 1}), ("grep", {"pattern": 5}),
    ("read", {"path": "a.md", "offset": 0}), ("read", {"path": "a.md", "offset": 3, "limit": 2000}),
    ("read", {"path": "a.md", "limit": 2001}), ("ls", {}), ("ls", {"offset": -1}), ("find", {"path": "/"}),
    ("find", {"glob": "**/*.md", "max_results": 1000}), ("run_fdsl", {"script": "print(1)", "timeout": 121}),
    ("run_fdsl", {"script": "x" * 100_001}), ("run_fdsl", {"script": "print(1)", "timeout": 1}),
]


@pytest.mark.parametrize("name,params", SAMPLES)
def test_the_schema_and_the_call_check_agree(name, params):
    schema = input_schema(SPECS[name], "mcp")
    schema_ok = jsonschema.Draft202012Validator(schema).is_valid(params)
    try:
        check_params(SPECS[name], params)
        call_ok = True
    except ToolError as exc:
        call_ok = False
        assert str(exc).startswith(f"UsageError: {name}: ")
    assert schema_ok == call_ok


def test_openais_strict_mode_rendering():
    """Strict mode (Structured Outputs): additionalProperties false, every property required, an
    optional one nullable; call() takes null as "not given" and applies the default."""
    from openai.types.chat import ChatCompletionToolParam

    adapter = TypeAdapter(ChatCompletionToolParam)
    for d in tool_definitions("openai", strict=True):
        assert adapter.validate_python(d) == d and d["function"]["strict"] is True
        schema = d["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["required"] == list(schema["properties"]) and schema["additionalProperties"] is False
        assert keywords(schema) <= KEYWORDS["openai"]
        spec = SPECS[d["function"]["name"]]
        for p in spec.params:
            assert schema["properties"][p.name]["type"] == (p.type if p.required else [p.type, "null"])
        every_null = {p.name: ("x" if p.required else None) for p in spec.params}
        assert jsonschema.Draft202012Validator(schema).is_valid(every_null)
        assert check_params(spec, every_null) == {p.name: ("x" if p.required else p.default) for p in spec.params}
    with pytest.raises(ValueError, match="strict is OpenAI's strict mode"):
        tool_definitions("anthropic", strict=True)
