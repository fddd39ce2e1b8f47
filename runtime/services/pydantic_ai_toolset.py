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

pydantic_ai is imported only when one of the toolset classes is first used, so importing this
module (and `import runtime`) never needs it.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

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
from runtime.fs.approvals import approval_key
from runtime.fs.config import Mount, SandboxConfig  # noqa: F401
from runtime.fs.sandbox import Sandbox  # noqa: F401
from runtime.services.toolset import TOOLS, ReadResult  # noqa: F401
from runtime.services.toolset import ApprovalResult as _CoreResult
from runtime.services.toolset import FileSystemToolset as _CoreToolset

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

def _result_class() -> type:
    """pydantic-ai-blocking-approval's ApprovalResult when installed (its wrapper checks the
    class), else ours, which has the same fields and properties."""
    try:
        from pydantic_ai_blocking_approval import ApprovalResult as WrapperResult
    except ImportError:
        return _CoreResult
    return WrapperResult


_LAZY = ("PydanticAIFileSystemToolset", "ApprovableFileSystemToolset", "FileSystemToolset")
_built: dict[str, type] = {}


def _build() -> type:
    try:
        import anyio
        from pydantic_ai import ApprovalRequired, ModelRetry, RunContext
        from pydantic_ai.toolsets import FunctionToolset
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "runtime.services.pydantic_ai_toolset needs pydantic-ai: pip install 'filesdsl[pydantic-ai]' "
            f"(or pydantic-ai-slim>=1.0): {exc}"
        ) from exc

    class PydanticAIFileSystemToolset(FunctionToolset[Any]):
        """read_file, write_file, edit_file, delete_file, move_file, copy_file and list_files
        over a Sandbox, with the approval protocol (needs_approval / get_approval_description)
        wired to PydanticAI's deferred approvals."""

        def __init__(
            self,
            sandbox: Sandbox,
            id: str | None = None,
            max_retries: int = 1,
            *,
            approve: Callable[[str], bool] | None = None,
        ) -> None:
            super().__init__(max_retries=max_retries, id=id)
            # Every call reaching the core toolset has passed call_tool's gate below, so the core
            # is told yes; nobody else holds a reference to it.
            self._fs = _CoreToolset(sandbox, id=id, max_retries=max_retries, approve=lambda description: True)
            self.approve = approve
            # id(ctx) -> (weakref to that RunContext, approval_key): calls an outer wrapper took
            # charge of. A pass is valid only for the very context object the wrapper gave
            # needs_approval and then call_tool; a denied call's pass dies with its context.
            self._outer_passes: dict[int, tuple[weakref.ref, str]] = {}
            self._register()

        @classmethod
        def create_default(cls, root, mode: str = "rw", id: str | None = None, *,
                           approve: Callable[[str], bool] | None = None) -> "PydanticAIFileSystemToolset":
            """One mount, `root` at "/data" (no write approval), as in the seed."""
            return cls(_CoreToolset.create_default(root, mode=mode).sandbox, id=id, approve=approve)

        @property
        def sandbox(self) -> Sandbox:
            return self._fs.sandbox

        # ------------------------------------------------------------ approval protocol (seed)

        def needs_approval(self, name: str, tool_args: dict[str, Any], ctx: Any = None,
                           config: Any = None) -> Any:
            """The seed's decision; `config` is an outer approval wrapper's per-tool settings."""
            decision = self._fs.needs_approval(name, tool_args, ctx)
            if config is not None and decision.is_needs_approval and ctx is not None:
                # The wrapper decides now (its config, or its callback); the call it then makes
                # with this context and these exact arguments is not asked again.
                self._outer_passes = {k: v for k, v in self._outer_passes.items() if v[0]() is not None}
                self._outer_passes[id(ctx)] = (weakref.ref(ctx), approval_key(name, tool_args))
                if (config.get(name) or {}).get("pre_approved"):
                    decision = _CoreResult.pre_approved()
            return _result_class()(decision.status, decision.block_reason)

        def get_approval_description(self, name: str, tool_args: dict[str, Any], ctx: Any = None) -> str:
            return self._fs.get_approval_description(name, tool_args, ctx)

        # ------------------------------------------------------------ the seed's methods

        def read(self, path: str, max_chars: int = 20_000, offset: int = 0) -> ReadResult:
            return self._fs.read(path, max_chars, offset)

        def write(self, path: str, content: str) -> str:
            return self._fs.write(path, content)

        def edit(self, path: str, old_text: str, new_text: str) -> str:
            return self._fs.edit(path, old_text, new_text)

        def delete(self, path: str) -> str:
            return self._fs.delete(path)

        def move(self, source: str, destination: str) -> str:
            return self._fs.move(source, destination)

        def copy(self, source: str, destination: str) -> str:
            return self._fs.copy(source, destination)

        def list_files(self, path: str = "/", pattern: str = "**/*") -> list[str]:
            return self._fs.list_files(path, pattern)

        # ------------------------------------------------------------ tools

        def _register(self) -> None:
            fs = self._fs
            roots = fs.sandbox.readable_roots
            writable = fs.sandbox.writable_roots
            where = f"Readable: {', '.join(roots) or 'nothing'}. Writable: {', '.join(writable) or 'nothing'}."

            def read_file(path: str, max_chars: int = 20_000, offset: int = 0) -> dict[str, Any]:
                """Read a UTF-8 text file from the sandbox.

                Args:
                    path: Virtual path of the file, e.g. /docs/guide.md.
                    max_chars: At most this many characters are returned.
                    offset: Character offset to start from (for reading a long file in parts).
                """
                return fs.read(path, max_chars, offset).model_dump()

            def write_file(path: str, content: str) -> str:
                """Write a text file (replacing it if it exists); parent directories are created.

                Args:
                    path: Virtual path of the file.
                    content: The whole new content.
                """
                return fs.write(path, content)

            def edit_file(path: str, old_text: str, new_text: str) -> str:
                """Replace exact text in a file: old_text must appear exactly once.

                Args:
                    path: Virtual path of the file.
                    old_text: The exact text to replace (copy it from read_file).
                    new_text: The replacement.
                """
                return fs.edit(path, old_text, new_text)

            def delete_file(path: str) -> str:
                """Delete a file (not a directory).

                Args:
                    path: Virtual path of the file.
                """
                return fs.delete(path)

            def move_file(source: str, destination: str) -> str:
                """Move or rename a file; the destination must not exist.

                Args:
                    source: Virtual path of the file to move.
                    destination: Its new virtual path.
                """
                return fs.move(source, destination)

            def copy_file(source: str, destination: str) -> str:
                """Copy a file; the source may be read-only, the destination must be writable and not exist.

                Args:
                    source: Virtual path of the file to copy.
                    destination: Virtual path of the copy.
                """
                return fs.copy(source, destination)

            def list_files(path: str = "/", pattern: str = "**/*") -> list[str]:
                """List the files under a directory whose path relative to it matches a glob.

                Args:
                    path: Virtual directory to list, e.g. /docs.
                    pattern: Glob relative to path, e.g. **/*.md.
                """
                return fs.list_files(path, pattern)

            for func in (read_file, write_file, edit_file, delete_file, move_file, copy_file, list_files):
                # the summary line tells the model what it may touch (docstring: works on every version)
                func.__doc__ = func.__doc__.replace("\n\n", f" {where}\n\n", 1)
                self.add_function(func, takes_ctx=False)

        async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: Any) -> Any:
            seed_name = getattr(tool, "original_name", None) or name
            if seed_name not in TOOLS:
                seed_name = name
            decision = self._fs.needs_approval(seed_name, tool_args, ctx)
            if decision.is_blocked:
                raise ModelRetry(decision.block_reason or "refused by the sandbox policy")
            passed = self._outer_passes.pop(id(ctx), None)
            if passed is not None and passed[0]() is ctx and passed[1] == approval_key(seed_name, tool_args):
                pass  # the outer wrapper asked and was told yes
            elif decision.is_needs_approval and not ctx.tool_call_approved:
                description = self.get_approval_description(seed_name, tool_args, ctx)
                if self.approve is None:
                    raise ApprovalRequired(metadata={"tool": seed_name, "description": description})
                if not await anyio.to_thread.run_sync(self.approve, description):
                    raise ModelRetry(f"{description}: not approved")
            try:
                return await super().call_tool(name, tool_args, ctx, tool)
            except ScriptError as exc:  # SandboxError, EditError, missing files...
                raise ModelRetry(str(exc)) from None

    PydanticAIFileSystemToolset.__module__ = __name__
    return PydanticAIFileSystemToolset


def __getattr__(name: str):
    if name == "ApprovalResult":  # the class needs_approval returns
        return _result_class()
    if name in _LAZY:
        cls = _built.get("cls")
        if cls is None:
            cls = _built["cls"] = _build()
        for alias in _LAZY:
            globals()[alias] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
