"""The file toolset as a PydanticAI toolset (optional extra: `pip install filesdsl[pydantic-ai]`).

An agent written for the public package `pydantic_ai_filesystem_sandbox` switches by changing
its import:

    from runtime.services.pydantic_ai_toolset import ApprovableFileSystemToolset, Sandbox, SandboxConfig, Mount
    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults

    toolset = ApprovableFileSystemToolset(sandbox)                 # = PydanticAIFileSystemToolset
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    result = agent.run_sync("...")
    if isinstance(result.output, DeferredToolRequests):           # writes waiting for a human
        for call in result.output.approvals:
            print(result.output.metadata[call.tool_call_id]["description"])  # "Write 4 chars to /out/a.md"
        results = DeferredToolResults(approvals={call.tool_call_id: True for call in result.output.approvals})
        result = agent.run_sync(message_history=result.all_messages(), deferred_tool_results=results)

Tools: read_file, write_file, edit_file, delete_file, move_file, copy_file, list_files, each run
by runtime.services.toolset.FileSystemToolset (same policy, same safe opening, same messages).

Every call is checked with `needs_approval(name, tool_args, ctx)` (the seed's table) before it
runs:
- blocked (outside the sandbox, read-only, ...): ModelRetry with the LLM-friendly message, which
  names what is allowed and never a host path;
- needs_approval: PydanticAI's native deferral, ApprovalRequired(metadata={"tool", "description"})
  unless the call was approved (`ctx.tool_call_approved`, from DeferredToolResults); the run ends
  with DeferredToolRequests, and resuming with True/ToolApproved runs the call (the policy is
  checked again, on override_args too) while False/ToolDenied leaves the files untouched and the
  model gets the denial message. With `approve=callable` the question is asked inline instead
  (blocking, run in a worker thread) and a refusal is a ModelRetry "...: not approved".
- pre_approved: runs.
Errors from the operation itself (no such file, EditError, size, suffix) are ModelRetry too.

The seed's own wrapper works unchanged: pydantic-ai-blocking-approval's
`ApprovalToolset(inner=toolset, approval_callback=...)` calls
`needs_approval(name, tool_args, ctx, config)` (its `config` may pre-approve a tool, never
unblock one), asks its callback, and only then calls the tool. When that package is installed,
`needs_approval` returns its ApprovalResult class (the wrapper checks the type). A
needs_approval answer given to a caller passing `config` is a one-time pass for that exact
call (the same RunContext object and arguments): the wrapper owns the question, and the call
it then makes is not asked again; a call it denied leaves nothing another caller could use.

pydantic_ai is imported only when one of the toolset classes is first used (the class lives in
runtime/services/pydantic_ai_adapter.py, which imports it), so importing this module (and
`import runtime`) never needs it.
"""

from __future__ import annotations

from runtime.errors import (  # noqa: F401  (re-exported for drop-in imports)
    ApprovalDeniedError,
    EditError,
    FileTooLargeError,
    PathNotInSandboxError,
    PathNotWritableError,
    SandboxError,
    ScriptError,
    SuffixNotAllowedError,
)
from runtime.fs.approvals import result_class
from runtime.fs.config import Mount, SandboxConfig  # noqa: F401
from runtime.fs.sandbox import Sandbox  # noqa: F401
from runtime.services.toolset import TOOLS, ReadResult  # noqa: F401

__all__ = [
    "PydanticAIFileSystemToolset",
    "ApprovableFileSystemToolset",
    "FileSystemToolset",
    "ApprovalResult",
    "ReadResult",
    "Sandbox",
    "SandboxConfig",
    "Mount",
    "SandboxError",
    "PathNotInSandboxError",
    "PathNotWritableError",
    "SuffixNotAllowedError",
    "FileTooLargeError",
    "EditError",
    "ApprovalDeniedError",
]

_LAZY = ("PydanticAIFileSystemToolset", "ApprovableFileSystemToolset", "FileSystemToolset")


def __getattr__(name: str):
    if name == "ApprovalResult":  # the class needs_approval returns
        return result_class()
    if name in _LAZY:
        from runtime.services.pydantic_ai_adapter import PydanticAIFileSystemToolset as cls

        cls.__module__ = __name__
        for alias in _LAZY:
            globals()[alias] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
