"""PydanticAIFileSystemToolset: the file toolset as a PydanticAI FunctionToolset. Imported only
through runtime/services/pydantic_ai_toolset.py (see its docstring), when first used: this
module imports pydantic_ai."""

from __future__ import annotations

import weakref
from typing import Any, Callable

try:
    import anyio
    from pydantic_ai import ApprovalRequired, ModelRetry, RunContext, Tool
    from pydantic_ai.toolsets import FunctionToolset
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "runtime.services.pydantic_ai_toolset needs pydantic-ai: pip install 'filesdsl[pydantic-ai]' "
        f"(or pydantic-ai-slim>=1.0): {exc}"
    ) from exc

from runtime.errors import ScriptError
from runtime.fs.approvals import ApprovalResult as _CoreResult
from runtime.fs.approvals import approval_key, result_class
from runtime.fs.sandbox import Sandbox
from runtime.services.toolset import TOOLS, ReadResult
from runtime.services.toolset import FileSystemToolset as _CoreToolset
from runtime.tools.calls import ToolError, Tools
from runtime.tools.definitions import SPECS, input_schema

try:  # pydantic-ai 2: a failure the model sees without spending the tool's retries
    from pydantic_ai import ToolFailed
except ImportError:  # pragma: no cover - pydantic-ai 1
    ToolFailed = ModelRetry

AGENT_TOOLS = ("run_fdsl", "grep", "read")  # runtime/tools: offered with agent_tools=True


def seed_tools(fs: _CoreToolset) -> list[Callable]:
    """The seed's tools over a core toolset, as plain functions PydanticAI can describe, in the
    seed's order: only those the sandbox can serve (no write tools where nothing is writable)."""
    writing = _writing_tools(fs) if fs.sandbox.writable_roots else []
    tools = {func.__name__: func for func in _reading_tools(fs) + writing}
    return [tools[name] for name in TOOLS if name in tools]


def _reading_tools(fs: _CoreToolset) -> list[Callable]:
    def read_file(path: str, max_chars: int = 20_000, offset: int = 0) -> dict[str, Any]:
        """Read a UTF-8 text file from the sandbox.

        Args:
            path: Virtual path of the file, e.g. /docs/guide.md.
            max_chars: At most this many characters are returned.
            offset: Character offset to start from (for reading a long file in parts).
        """
        return fs.read(path, max_chars, offset).model_dump()

    def list_files(path: str = "/", pattern: str = "**/*") -> list[str]:
        """List the files under a directory whose path relative to it matches a glob.

        Args:
            path: Virtual directory to list, e.g. /docs.
            pattern: Glob relative to path, e.g. **/*.md.
        """
        return fs.list_files(path, pattern)

    return [read_file, list_files]


def _writing_tools(fs: _CoreToolset) -> list[Callable]:
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

    return [write_file, edit_file, delete_file, move_file, copy_file]


def agent_tools(tools: Tools) -> list[Tool]:
    """run_fdsl, grep and read as PydanticAI tools: the specs of runtime/tools/definitions.py (the
    schema in the narrowest keyword subset, OpenAI's) answered by `tools.call`. A bad parameter
    is a ModelRetry (correct the call); any other failure (a script error, a missing document,
    a refusal) a ToolFailed: the model sees it and adapts, without spending its retries."""

    def tool(name: str) -> Tool:
        def run(**params: Any) -> str:
            try:
                return tools.call(name, params)
            except ToolError as exc:
                raise (ModelRetry if exc.kind == "UsageError" else ToolFailed)(str(exc)) from None

        spec = SPECS[name]
        return Tool.from_schema(run, name=name, description=spec.description, json_schema=input_schema(spec, "openai"))

    return [tool(name) for name in AGENT_TOOLS]


class PydanticAIFileSystemToolset(FunctionToolset[Any]):
    """read_file, write_file, edit_file, delete_file, move_file, copy_file and list_files
    over a Sandbox, with the approval protocol (needs_approval / get_approval_description)
    wired to PydanticAI's deferred approvals. With `agent_tools=True` also run_fdsl, grep and
    read (runtime/tools), which only read: they need no approval protocol, and a mount's read
    approvals are answered by `approve` (refused without it). They are opt-in so the default
    toolset stays the seed's, tool for tool."""

    def __init__(
        self,
        sandbox: Sandbox,
        id: str | None = None,
        max_retries: int = 1,
        *,
        approve: Callable[[str], bool] | None = None,
        agent_tools: bool = False,
    ) -> None:
        super().__init__(max_retries=max_retries, id=id)
        self._tools = Tools(sandbox, approve=approve) if agent_tools else None
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
                       approve: Callable[[str], bool] | None = None,
                       agent_tools: bool = False) -> "PydanticAIFileSystemToolset":
        """One mount, `root` at "/data" (no write approval), as in the seed."""
        return cls(_CoreToolset.create_default(root, mode=mode).sandbox, id=id, approve=approve,
                   agent_tools=agent_tools)

    @property
    def sandbox(self) -> Sandbox:
        return self._fs.sandbox

    def close(self) -> None:
        """End the PDF extractors the read tools started, if any."""
        self._fs.close()
        if self._tools is not None:
            self._tools.close()

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
        return result_class()(decision.status, decision.block_reason)

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
        sb = self._fs.sandbox
        where = (f"Readable: {', '.join(sb.readable_roots) or 'nothing'}. "
                 f"Writable: {', '.join(sb.writable_roots) or 'nothing'}.")
        for func in seed_tools(self._fs):
            # the summary line tells the model what it may touch (docstring: works on every version)
            func.__doc__ = func.__doc__.replace("\n\n", f" {where}\n\n", 1)
            self.add_function(func, takes_ctx=False)
        for tool in agent_tools(self._tools) if self._tools is not None else ():
            self.add_tool(tool)

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: Any) -> Any:
        seed_name = getattr(tool, "original_name", None) or name
        if seed_name not in TOOLS:
            seed_name = name
        if self._tools is not None and seed_name in AGENT_TOOLS:  # reading tools: the sandbox's policy decides
            if not isinstance(tool_args, dict):  # valid JSON, but not the object of parameters
                raise ModelRetry(f"{seed_name}: the parameters must be a JSON object")
            return await super().call_tool(name, tool_args, ctx, tool)
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

