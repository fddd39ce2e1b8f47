"""The trusted side: broker, sandbox policy, documents, supervisor, CLI and Python API.

`from runtime import run_script, RunResult` is the public Python API (runtime/api.py); it is
imported lazily so that importing a submodule does not load PyMuPDF.
"""

# public name -> the submodule defining it (imported on first use)
_EXPORTS = {
    "run_script": "api",
    "RunResult": "api",
    "MountSpec": "api",
    "Sandbox": "fs.sandbox",
    "SandboxConfig": "fs.config",
    "Mount": "fs.config",
    "load_config": "fs.config",
    "SandboxError": "errors",
    "PathNotInSandboxError": "errors",
    "PathNotWritableError": "errors",
    "SuffixNotAllowedError": "errors",
    "FileTooLargeError": "errors",
    "EditError": "errors",
    "ApprovalDeniedError": "errors",
    "SandboxConfigError": "errors",
    "FileSystemToolset": "services.toolset",
    "ReadResult": "services.toolset",
    "ApprovalResult": "services.toolset",
    "FileEntry": "services.listing",
    "DirectoryEntry": "services.listing",
    "SymbolicLinkEntry": "services.listing",
    "OtherEntry": "services.listing",
    "Tools": "tools.calls",
    "ToolError": "tools.calls",
    "tool_definitions": "tools.definitions",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is not None:
        import importlib

        return getattr(importlib.import_module(f"runtime.{module}"), name)
    raise AttributeError(f"module 'runtime' has no attribute {name!r}")
