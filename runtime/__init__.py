"""The trusted side: broker, sandbox policy, documents, supervisor, CLI and Python API.

`from runtime import run_script, RunResult` is the public Python API (runtime/api.py); it is
imported lazily so that importing a submodule does not load PyMuPDF.
"""

__all__ = ["run_script", "RunResult", "MountSpec"]


def __getattr__(name: str):
    if name in __all__:
        from runtime import api

        return getattr(api, name)
    raise AttributeError(f"module 'runtime' has no attribute {name!r}")
