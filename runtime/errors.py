"""Errors the broker reports to a script. Each carries the protocol error kind it travels as.

Messages never contain a host path: they name virtual paths only.
"""

from __future__ import annotations


class ScriptError(Exception):
    """A failure caused by what the script asked for (bad argument, missing file, bad regex...)."""

    kind = "RuntimeError"


class SandboxError(ScriptError):
    """Base class of every policy refusal. `reason` is what was refused, without the list of
    what is allowed that the message goes on with (callers that restate it use `reason`)."""

    kind = "SandboxError"

    def __init__(self, message: str = "", reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason if reason is not None else message


class PathNotInSandboxError(SandboxError):
    """The path is outside every mount (or climbs above '/')."""


class LimitError(ScriptError):
    """A resource limit was reached (output, memory, sizes, result counts)."""

    kind = "LimitError"


class UnreadableFile(ScriptError):
    """One file cannot be read as a document: binary, damaged, over a per-document limit.
    Reading that file is this error; a search over many files skips it and names it in its
    `skipped` list instead of failing as a whole."""


class DocumentLimit(LimitError, UnreadableFile):
    """A document over one of the broker's per-document limits (bytes, PDF memory or time)."""


class DeadlineExceeded(ScriptError):
    """The run's wall-clock deadline passed while the broker was working for the script."""

    kind = "TimeoutError"


# --------------------------------------------------------------------------- the Sandbox's errors
# (seed: filesystem-sandbox-api). Every message names virtual paths only and says what IS allowed.


class InvalidPathError(SandboxError):
    """A path string that cannot name a file: NUL or control characters, lone surrogates,
    too long. Not PathNotInSandboxError: nothing was refused by the policy."""

    kind = "RuntimeError"


class PathNotWritableError(SandboxError):
    """A write (write, edit, delete, move, copy destination) to a path that is read-only."""


class SuffixNotAllowedError(SandboxError):
    """The file's extension is not in its mount's `suffixes` list."""


class FileTooLargeError(SandboxError):
    """The file (or the content to write) exceeds its mount's `max_file_bytes`."""


class ApprovalDeniedError(SandboxError):
    """An operation that needs approval was refused, or nobody could be asked."""


class EditError(SandboxError):
    """edit(): the old text was not found, or found more than once. A script mistake, not a
    policy refusal, so it travels as a RuntimeError."""

    kind = "RuntimeError"


class SandboxConfigError(ValueError):
    """A bad sandbox configuration: one line naming the field (`mounts[1].mount_point: ...`)."""


class RunSetupError(Exception):
    """A run cannot be set up: a problem of its options or of the machine, not of the script.
    run_script returns it as a result with exit code 2 (a usage error), never raises it."""
