"""runtime.services.pydantic_ai_toolset: the file toolset as a PydanticAI toolset, driven offline by
FunctionModel/TestModel. Listing and reading, deferred approvals granted and denied, policy
refusals reaching the model as retries (naming what is allowed, never a host path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied  # noqa: E402
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402

from runtime.errors import ScriptError  # noqa: E402
from runtime.fs.config import Mount, SandboxConfig  # noqa: E402
from runtime.fs.sandbox import Sandbox  # noqa: E402
from runtime.services.pydantic_ai_toolset import (  # noqa: E402
    ApprovableFileSystemToolset,
    ApprovalResult,
    PydanticAIFileSystemToolset,
)
from tests.support import (
    CANARY,  # noqa: E402
    REPO,
)

SEED_TOOLS = ["read_file", "write_file", "edit_file", "delete_file", "move_file", "copy_file", "list_files"]


def scripted(*steps: list[tuple[str, dict]]):
    """A FunctionModel that makes the given tool calls, one step per model request, then answers
    with the JSON of every tool result it was shown (keyed by tool name, in order)."""

    def fn(messages, info: AgentInfo) -> ModelResponse:
        n = sum(isinstance(m, ModelResponse) for m in messages)
        if n < len(steps):
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"c{n}_{i}")
                                        for i, (name, args) in enumerate(steps[n])])
        return ModelResponse(parts=[TextPart(json.dumps(results(messages)))])

    return FunctionModel(fn)


def results(messages) -> list[list]:
    """[tool_name, text the model was shown] for every tool result/retry in the history."""
    out = []
    for m in messages:
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if getattr(p, "tool_call_id", None) and hasattr(p, "tool_name"):
                    content = p.content
                    out.append([p.tool_name, content if isinstance(content, str) else json.dumps(content, default=str)])
    return out


def agent_for(toolset, *steps) -> Agent:
    return Agent(scripted(*steps), toolsets=[toolset], output_type=[str, DeferredToolRequests])


def shown(result) -> str:
    return "\n".join(text for _, text in results(result.all_messages()))


# ---------------------------------------------------------------------------- the toolset itself


def test_tools_names_and_approval_protocol(world):
    sb, _ = world
    ts = PydanticAIFileSystemToolset(sb, id="files", max_retries=2)
    assert ApprovableFileSystemToolset is PydanticAIFileSystemToolset
    assert ts.id == "files" and ts.sandbox is sb
    assert list(ts.tools) == SEED_TOOLS
    assert all(t.max_retries == 2 for t in ts.tools.values())
    assert ts.needs_approval("write_file", {"path": "/out/a.md", "content": "x"}, None) == ApprovalResult.pre_approved()
    assert ts.needs_approval("write_file", {"path": "/cfg/a.json", "content": "x"}, None).status == "needs_approval"
    assert ts.needs_approval("read_file", {"path": "/cfg/settings.json"}, None).status == "needs_approval"
    blocked = ts.needs_approval("write_file", {"path": "/docs/a.md", "content": "x"}, None)
    assert blocked.status == "blocked" and "Writable: /out, /cfg" in blocked.block_reason
    assert ts.get_approval_description("write_file", {"path": "/cfg/a.json", "content": "x" * 150}, None) == \
        "Write 150 chars to /cfg/a.json"
    assert ts.read("/docs/a.md").content == "# A\nalpha\n"  # the seed's methods are there too


def test_tool_schemas_are_what_the_model_sees(world):
    sb, _ = world
    seen = {}

    def fn(messages, info: AgentInfo) -> ModelResponse:
        seen.update({t.name: t for t in info.function_tools})
        return ModelResponse(parts=[TextPart("ok")])

    Agent(FunctionModel(fn), toolsets=[PydanticAIFileSystemToolset(sb)]).run_sync("hi")
    assert sorted(seen) == sorted(SEED_TOOLS)
    write = seen["write_file"]
    assert set(write.parameters_json_schema["required"]) == {"path", "content"}
    assert "Writable: /out, /cfg" in write.description
    assert set(seen["list_files"].parameters_json_schema["properties"]) == {"path", "pattern"}


def test_import_runtime_never_needs_pydantic_ai():
    code = (
        "import sys; sys.modules['pydantic_ai'] = None\n"  # any import of it now fails
        "import runtime, runtime.services.toolset, runtime.services.pydantic_ai_toolset as m\n"
        "assert 'pydantic_ai' not in [k for k, v in sys.modules.items() if v is not None]\n"
        "try:\n    m.PydanticAIFileSystemToolset\nexcept ImportError as e:\n    print('IMPORT-ERROR', e)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "IMPORT-ERROR" in proc.stdout and "pip install" in proc.stdout


# ---------------------------------------------------------------------------- through an agent


def test_agent_lists_and_reads_files(world):
    sb, _ = world
    agent = agent_for(PydanticAIFileSystemToolset(sb),
                      [("list_files", {"path": "/docs", "pattern": "**/*.md"})],
                      [("read_file", {"path": "/docs/a.md"}), ("read_file", {"path": "/docs/sub/b.txt", "offset": 1})])
    result = agent.run_sync("summarise the docs")
    out = json.loads(result.output)
    assert out[0] == ["list_files", json.dumps(["/docs/a.md", "/docs/public/p.md", "/docs/secret.md"])]
    read_a, read_b = json.loads(out[1][1]), json.loads(out[2][1])
    assert read_a["content"] == "# A\nalpha\n" and read_a["truncated"] is False
    assert read_b["content"] == "eta\n" and read_b["offset"] == 1


def test_test_model_calls_the_tools(tmp_path: Path):
    (tmp_path / "n.md").write_text("n")
    sb = Sandbox(SandboxConfig(mounts=[Mount(host_path=tmp_path, mount_point="/")]))
    agent = Agent(TestModel(call_tools=["list_files"]), toolsets=[PydanticAIFileSystemToolset(sb)])
    result = agent.run_sync("list")
    assert json.loads(result.output) == {"list_files": ["/n.md"]}


def test_write_needing_approval_is_deferred_then_granted(world):
    sb, tmp = world
    agent = agent_for(PydanticAIFileSystemToolset(sb),
                      [("write_file", {"path": "/cfg/new.json", "content": '{"a": 1}'}),
                       ("write_file", {"path": "/out/free.md", "content": "free"})])
    first = agent.run_sync("write")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    assert [c.tool_name for c in requests.approvals] == ["write_file"]
    call_id = requests.approvals[0].tool_call_id
    assert requests.metadata[call_id] == {"tool": "write_file", "description": "Write 8 chars to /cfg/new.json"}
    assert not (tmp / "cfg" / "new.json").exists()
    assert (tmp / "out" / "free.md").read_text() == "free"  # pre-approved: ran at once

    second = agent.run_sync(message_history=first.all_messages(),
                            deferred_tool_results=DeferredToolResults(approvals={call_id: True}))
    assert isinstance(second.output, str)
    assert (tmp / "cfg" / "new.json").read_text() == '{"a": 1}'
    assert "Wrote 8 chars to /cfg/new.json" in second.output


def test_denied_write_leaves_the_file_untouched(world):
    sb, tmp = world
    agent = agent_for(PydanticAIFileSystemToolset(sb),
                      [("write_file", {"path": "/cfg/settings.json", "content": "PWNED"}),
                       ("delete_file", {"path": "/cfg/settings.json"})])
    first = agent.run_sync("overwrite")
    ids = {c.tool_name: c.tool_call_id for c in first.output.approvals}
    assert first.output.metadata[ids["delete_file"]]["description"] == "Delete /cfg/settings.json"
    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={
            ids["write_file"]: False,
            ids["delete_file"]: ToolDenied("the user keeps settings.json"),
        }),
    )
    assert (tmp / "cfg" / "settings.json").read_text() == "{}\n"
    assert "the user keeps settings.json" in second.output
    assert "Wrote" not in second.output and "Deleted" not in second.output


def test_read_approval_mount_defers_reads(world):
    sb, _ = world
    agent = agent_for(PydanticAIFileSystemToolset(sb), [("read_file", {"path": "/cfg/settings.json"})])
    first = agent.run_sync("read")
    (call,) = first.output.approvals
    assert first.output.metadata[call.tool_call_id]["description"] == "Read from /cfg/settings.json"
    second = agent.run_sync(message_history=first.all_messages(),
                            deferred_tool_results=first.output.build_results(approve_all=True))
    assert json.loads(json.loads(second.output)[0][1])["content"] == "{}\n"


def test_outside_the_sandbox_the_model_gets_the_denial_naming_what_is_allowed(world):
    sb, tmp = world
    agent = agent_for(PydanticAIFileSystemToolset(sb, max_retries=3),
                      [("read_file", {"path": "/etc/passwd"}),
                       ("write_file", {"path": "/docs/../../canary.txt", "content": "x"}),
                       ("list_files", {"path": "/etc"})],
                      [("write_file", {"path": "/docs/a.md", "content": "x"}),
                       ("read_file", {"path": "/docs/../../outside/canary.txt"})])
    result = agent.run_sync("escape")
    assert isinstance(result.output, str)  # blocked calls are refused, never deferred to a human
    text = shown(result)
    assert "path '/etc/passwd' is outside every mount. Readable: /docs, /out, /cfg. Writable: /out, /cfg." in text
    assert "cannot write '/docs/a.md': it is read-only here. Writable: /out, /cfg." in text
    assert "path '/etc' is outside every mount. Readable: /docs, /out, /cfg." in text
    dumped = json.dumps([m for m in result.all_messages()], default=str)
    assert "path '/docs/../../outside/canary.txt' climbs above the root. Readable: /docs" in text
    assert str(tmp) not in dumped and str(tmp.resolve()) not in dumped
    assert CANARY not in dumped
    assert (tmp / "canary.txt").read_text() == CANARY
    assert (tmp / "docs" / "a.md").read_text() == "# A\nalpha\n"


def test_operation_errors_are_retries_with_the_message(world):
    sb, tmp = world
    (tmp / "out" / "e.md").write_text("one one")
    agent = agent_for(PydanticAIFileSystemToolset(sb),
                      [("edit_file", {"path": "/out/e.md", "old_text": "one", "new_text": "two"}),
                       ("read_file", {"path": "/out/missing.md"}),
                       ("copy_file", {"source": "/docs/a.md", "destination": "/out/e.md"})],
                      # PydanticAI runs the calls of one step concurrently: the move, which
                      # depends on the edit, gets a step of its own.
                      [("edit_file", {"path": "/out/e.md", "old_text": "one one", "new_text": "two"})],
                      [("move_file", {"source": "/out/e.md", "destination": "/out/sub/f.md"})])
    result = agent.run_sync("edit")
    text = shown(result)
    assert "old_text appears 2 times in /out/e.md" in text
    assert "no such file: /out/missing.md" in text
    assert "/out/e.md already exists" in text
    assert "Edited /out/e.md" in text and "Moved /out/e.md to /out/sub/f.md" in text
    assert (tmp / "out" / "sub" / "f.md").read_text() == "two"


def test_approved_override_args_are_checked_again(world):
    sb, tmp = world
    agent = agent_for(PydanticAIFileSystemToolset(sb), [("write_file", {"path": "/cfg/n.json", "content": "{}"})])
    first = agent.run_sync("write")
    (call,) = first.output.approvals
    override = ToolApproved(override_args={"path": "/docs/a.md", "content": "x"})
    second = agent.run_sync(message_history=first.all_messages(),
                            deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: override}))
    assert "Writable: /out, /cfg" in second.output
    assert (tmp / "docs" / "a.md").read_text() == "# A\nalpha\n" and not (tmp / "cfg" / "n.json").exists()


def test_inline_approver_instead_of_deferral(world):
    sb, tmp = world
    asked = []

    def approve(description: str) -> bool:
        asked.append(description)
        return "yes" in description

    agent = agent_for(PydanticAIFileSystemToolset(sb, approve=approve),
                      [("write_file", {"path": "/cfg/yes.json", "content": "1"}),
                       ("write_file", {"path": "/cfg/no.json", "content": "2"})])
    result = agent.run_sync("write")
    assert isinstance(result.output, str)
    assert sorted(asked) == ["Write 1 chars to /cfg/no.json", "Write 1 chars to /cfg/yes.json"]
    assert (tmp / "cfg" / "yes.json").read_text() == "1" and not (tmp / "cfg" / "no.json").exists()
    assert "Write 1 chars to /cfg/no.json: not approved" in result.output


def test_prefixed_toolset_keeps_the_approval_table(world):
    sb, tmp = world
    agent = agent_for(PydanticAIFileSystemToolset(sb).prefixed("fs"),
                      [("fs_write_file", {"path": "/cfg/p.json", "content": "p"}),
                       ("fs_write_file", {"path": "/out/p.md", "content": "p"})])
    first = agent.run_sync("write")
    (call,) = first.output.approvals
    assert call.tool_name == "fs_write_file" and (tmp / "out" / "p.md").exists()
    agent.run_sync(message_history=first.all_messages(),
                   deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}))
    assert (tmp / "cfg" / "p.json").read_text() == "p"


def test_create_default(tmp_path: Path):
    (tmp_path / "f.txt").write_text("x")
    ts = PydanticAIFileSystemToolset.create_default(tmp_path)
    result = agent_for(ts, [("write_file", {"path": "/data/g.txt", "content": "y"}),
                            ("list_files", {"path": "/data"})]).run_sync("go")
    assert isinstance(result.output, str) and (tmp_path / "g.txt").read_text() == "y"
    assert "/data/f.txt" in result.output


# ---------------------------------------------------------------------------- the seed's wrapper


def wrapped(sb, decide, config=None):
    """The seed's set-up: pydantic-ai-blocking-approval's ApprovalToolset around our toolset."""
    from pydantic_ai_blocking_approval import ApprovalDecision, ApprovalToolset

    asked: list[str] = []

    def callback(request):
        asked.append(request.description)
        return ApprovalDecision(approved=decide(request.description))

    inner = ApprovableFileSystemToolset(sb)
    return ApprovalToolset(inner=inner, approval_callback=callback, config=config), asked


def test_the_seeds_approval_wrapper_asks_once_and_runs_the_approved_call(world):
    sb, tmp = world
    toolset, asked = wrapped(sb, lambda d: True)
    result = agent_for(toolset, [("write_file", {"path": "/cfg/new.json", "content": "{}"})]).run_sync("go")
    assert result.output == json.dumps([["write_file", "Wrote 2 chars to /cfg/new.json"]])
    assert asked == ["Write 2 chars to /cfg/new.json"]
    assert (tmp / "cfg" / "new.json").read_text() == "{}"


def test_the_seeds_approval_wrapper_denial_leaves_the_file_untouched(world):
    from pydantic_ai_blocking_approval import ApprovalDenied

    sb, tmp = world
    toolset, asked = wrapped(sb, lambda d: False)
    with pytest.raises(ApprovalDenied, match="write_file"):
        agent_for(toolset, [("write_file", {"path": "/cfg/new.json", "content": "{}"})]).run_sync("go")
    assert asked == ["Write 2 chars to /cfg/new.json"]
    assert not (tmp / "cfg" / "new.json").exists()
    # A denial is not remembered as a decision: the same call is asked again, and refused again.
    with pytest.raises(ApprovalDenied):
        agent_for(toolset, [("write_file", {"path": "/cfg/new.json", "content": "{}"})]).run_sync("go")
    assert len(asked) == 2 and not (tmp / "cfg" / "new.json").exists()


def test_the_seeds_approval_wrapper_blocks_what_the_policy_refuses(world):
    from pydantic_ai_blocking_approval import ApprovalBlocked

    sb, tmp = world
    # Its config may pre-approve a tool, never unblock a path the policy refuses.
    toolset, asked = wrapped(sb, lambda d: True, config={"write_file": {"pre_approved": True}})
    with pytest.raises(ApprovalBlocked, match="read-only here. Writable: /out, /cfg") as exc:
        agent_for(toolset, [("write_file", {"path": "/docs/x.md", "content": "no"})]).run_sync("go")
    assert str(tmp) not in str(exc.value)
    assert asked == [] and not (tmp / "docs" / "x.md").exists()
    result = agent_for(toolset, [("write_file", {"path": "/cfg/pre.json", "content": "1"})]).run_sync("go")
    assert asked == [] and (tmp / "cfg" / "pre.json").read_text() == "1", result.output


def test_the_seeds_approval_wrapper_gets_its_own_result_class(world):
    from pydantic_ai_blocking_approval import ApprovalResult as WrapperResult

    sb, _ = world
    ts = ApprovableFileSystemToolset(sb)
    decision = ts.needs_approval("read_file", {"path": "/elsewhere"}, None, {})
    assert isinstance(decision, WrapperResult) and decision.is_blocked
    assert "Readable: /docs, /out, /cfg" in decision.block_reason
    assert ts.needs_approval("read_file", {"path": "/cfg/settings.json"}, None, {}).is_needs_approval


def test_a_call_the_wrapper_denied_leaves_no_pass_for_another_caller(world):
    """needs_approval(config) told the wrapper to ask; it denied, so it never called the tool.
    The same toolset used directly afterwards must still defer that call to a human."""
    from pydantic_ai_blocking_approval import ApprovalDenied

    sb, tmp = world
    toolset, asked = wrapped(sb, lambda d: False)
    call = ("write_file", {"path": "/cfg/evil.json", "content": "{}"})
    with pytest.raises(ApprovalDenied):
        agent_for(toolset, [call]).run_sync("go")
    inner = toolset._inner
    result = agent_for(inner, [call]).run_sync("go")
    assert isinstance(result.output, DeferredToolRequests)
    assert not (tmp / "cfg" / "evil.json").exists()


def test_a_read_only_sandbox_offers_only_the_reading_tools_and_reads_pdfs_as_text(tmp_path: Path):
    """Issue 14, item 11: no write tool to be refused only when called; a PDF's text, not its bytes."""
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "the first page")
    doc.new_page().insert_text((72, 72), "the second page")
    doc.save(tmp_path / "manual.pdf")
    (tmp_path / "tool.bin").write_bytes(b"\x7fELF\x00\x00")
    sb = Sandbox(SandboxConfig(mounts=[Mount(host_path=tmp_path, mount_point="/docs", mode="ro")]))
    ts = PydanticAIFileSystemToolset(sb)
    try:
        assert list(ts.tools) == ["read_file", "list_files"]
        assert ts.read("/docs/manual.pdf").content == "the first page\n\n\nthe second page\n"
        with pytest.raises(ScriptError, match=r"^/docs/tool.bin is a binary file"):
            ts.read("/docs/tool.bin")
    finally:
        ts.close()
    rw = Sandbox(SandboxConfig(mounts=[Mount(host_path=tmp_path, mount_point="/docs", mode="rw", write_approval=False)]))
    assert list(PydanticAIFileSystemToolset(rw).tools) == SEED_TOOLS


# ---------------------------------------------------------------------------- run_fdsl, grep, read (runtime/tools)

AGENT_TOOLS = ["run_fdsl", "grep", "read"]


def test_agent_tools_are_offered_with_the_one_spec(world):
    from runtime.tools.definitions import SPECS, input_schema

    sb, _ = world
    seen = {}

    def fn(messages, info: AgentInfo) -> ModelResponse:
        seen.update({t.name: t for t in info.function_tools})
        return ModelResponse(parts=[TextPart("ok")])

    ts = PydanticAIFileSystemToolset(sb, agent_tools=True)
    assert list(ts.tools) == SEED_TOOLS + AGENT_TOOLS
    Agent(FunctionModel(fn), toolsets=[ts]).run_sync("hi")
    for name in AGENT_TOOLS:
        assert seen[name].description == SPECS[name].description
        assert seen[name].parameters_json_schema == input_schema(SPECS[name], "openai")
    assert "Directory(path)" in seen["run_fdsl"].description  # the cheat sheet
    ro = Sandbox(SandboxConfig(mounts=[Mount(host_path=sb.mounts[0].host, mount_point="/docs", mode="ro")]))
    assert list(PydanticAIFileSystemToolset(ro, agent_tools=True).tools) == ["read_file", "list_files"] + AGENT_TOOLS


def test_an_agent_greps_reads_and_runs_a_script(world):
    sb, _ = world
    ts = PydanticAIFileSystemToolset(sb, agent_tools=True)
    agent = agent_for(ts,
                      [("grep", {"pattern": "ALPHA", "glob": "docs/**"})],
                      [("read", {"path": "/docs/a.md", "offset": 2}),
                       ("run_fdsl", {"script": 'print(len(Directory("/docs").files()))'})])
    out = json.loads(agent.run_sync("find alpha").output)
    assert out[0][0] == "grep" and json.loads(out[0][1]) == {
        "results": [{"path": "docs/a.md", "line": 2, "content": "alpha"}], "total": 1, "truncated": False}
    assert out[1] == ["read", "  2  alpha"]
    assert out[2] == ["run_fdsl", "4\n"]


def test_agent_tool_failures_reach_the_model_without_host_paths(world):
    sb, tmp_path = world
    ts = PydanticAIFileSystemToolset(sb, agent_tools=True)  # max_retries=1: failures must not spend it
    agent = agent_for(ts,
                      [("run_fdsl", {"script": 'print("so far")\nprint(File("/docs/nope.md").read())\n'})],
                      [("read", {"path": "/docs/../../outside/canary.txt"})],
                      [("read", {"path": "/cfg/settings.json"})],
                      [("grep", {"pattern": "[unclosed", "glob": "docs/*"})],
                      [("grep", {"pattern": "x", "max_results": 5000})])
    result = agent.run_sync("go")
    text = shown(result)
    assert str(tmp_path) not in text and CANARY not in text
    out = json.loads(result.output)
    assert out[0][1].startswith("so far\nRuntimeError: no such file: docs/nope.md\n  at line 2, column 7")
    assert "SandboxError" in out[1][1]
    assert "Read from /cfg/settings.json: needs approval" in out[2][1]
    assert "invalid regex '[unclosed'" in out[3][1]
    assert "grep: parameter 'max_results' must be from 1 to 100, not 5000" in out[4][1]


def test_agent_tool_arguments_that_are_not_an_object_are_sent_back(world):
    sb, _ = world
    ts = PydanticAIFileSystemToolset(sb, agent_tools=True)
    result = agent_for(ts, [("grep", "[1, 2]")], [("read", '"hello"')]).run_sync("go")
    out = json.loads(result.output)
    assert [name for name, _ in out] == ["grep", "read"]
    assert all("must be a JSON object" in text for _, text in out), out


def test_agent_tools_read_an_approval_mount_when_the_approver_says_yes(world):
    sb, _ = world
    asked = []
    ts = PydanticAIFileSystemToolset(sb, agent_tools=True, approve=lambda d: asked.append(d) or True)
    out = json.loads(agent_for(ts, [("read", {"path": "/cfg/settings.json"})]).run_sync("go").output)
    assert out == [["read", "  1  {}"]] and asked == ["Read from /cfg/settings.json"]
