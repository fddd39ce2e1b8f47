"""Errors the broker reports to a script. Each carries the protocol error kind it travels as.

Messages never contain a host path: they name virtual paths only.
"""

from __future__ import annotations


class ScriptError(Exception):
    """A failure caused by what the script asked for (bad argument, missing file, bad regex...)."""

    kind = "RuntimeError"


class SandboxError(ScriptError):
    """Base class of every policy refusal."""

    kind = "SandboxError"


class PathNotInSandboxError(SandboxError):
    """The path is outside every mount (or climbs above '/')."""


class LimitError(ScriptError):
    """A resource limit was reached (output, memory, sizes, result counts)."""

    kind = "LimitError"


class DeadlineExceeded(ScriptError):
    """The run's wall-clock deadline passed while the broker was working for the script."""

    kind = "TimeoutError"
