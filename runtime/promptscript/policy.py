"""PromptScript's policy scopes: what a `with policy` object may say, and the scope in force
inside it, which is never more than the scope around it allows (the broker's own check; the
worker's is only for early messages)."""

from __future__ import annotations

from runtime.errors import LimitError, ScriptError
from runtime.fs.paths import relative
from wire import protocol

ACTIONS = protocol.PS_ACTIONS
DEFAULT_MAX_FILE_BYTES = 500_000


class ActionError(ScriptError):
    kind = "RuntimeError"


def norm_path(text: str) -> str:
    """A policy path as the project-relative form the scope stack compares ("src/a", ".")."""
    parts = [x for x in text.strip().split("/") if x not in ("", ".")]
    if ".." in parts:
        raise ActionError(f"policy path {text!r} climbs out of the project")
    return relative(parts)


def under(path: str, base: str) -> bool:
    return base == "." or path == base or path.startswith(base + "/")


def intersect_paths(outer: list, inner: list) -> list:
    kept = {p for p in inner if any(under(p, q) for q in outer)}
    kept |= {q for q in outer if any(under(q, p) for p in inner)}
    return sorted(kept)


def validate_policy(policy) -> dict:
    """The broker's check of a policy object (wire.protocol.check_policy, the one the worker
    also runs), with its paths in the project-relative form the scope stack compares."""
    try:
        out = protocol.check_policy(policy)
    except ValueError as exc:
        raise ActionError(str(exc)) from None
    for key in ("allowRead", "allowWrite"):
        if key in out:
            out[key] = [norm_path(v) for v in out[key]]
    return out


def intersect(outer: dict, inner: dict) -> dict:
    """The scope in force inside ``inner``: never more than ``outer`` allows."""
    result = dict(outer)
    for key in ("allowActions", "allowCommands"):
        if key in inner:
            result[key] = [v for v in outer[key] if v in set(inner[key])]
    if "maxFileBytes" in inner:
        result["maxFileBytes"] = min(outer["maxFileBytes"], inner["maxFileBytes"])
    if "maxFilesChanged" in inner:  # None: no limit
        limits = [v for v in (outer.get("maxFilesChanged"), inner["maxFilesChanged"]) if v is not None]
        result["maxFilesChanged"] = min(limits)
    for key in ("allowRead", "allowWrite"):
        if key in inner:
            result[key] = intersect_paths(outer[key], inner[key])
    return result


class PolicyStack:
    """The run's scopes, one stack: each `with policy` pushes its intersection with the scope
    around it and, in a run with a project, the Sandbox derived for it (``attach``), so the
    policy in force and the files it may touch are never two stacks to keep in step."""

    def __init__(self, allow_commands=(), max_files_changed: int | None = None,
                 max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        base = {
            "allowActions": list(ACTIONS),
            "allowCommands": list(allow_commands),
            "maxFileBytes": max_file_bytes,
            "maxFilesChanged": max_files_changed,
            "allowRead": ["."],
            "allowWrite": ["."],
        }
        self.scopes: list[tuple[dict, object]] = [(base, None)]
        self.derive = None  # derive(parent Sandbox, effective policy) -> the scope's Sandbox

    def attach(self, root, derive) -> None:
        """Give the bottom scope its Sandbox, and every scope entered later one derived from it."""
        self.scopes[0] = (self.scopes[0][0], root)
        self.derive = derive

    @property
    def current(self) -> dict:
        return self.scopes[-1][0]

    @property
    def sandbox(self):
        return self.scopes[-1][1]

    def enter(self, policy: dict) -> dict:
        if len(self.scopes) > 1000:
            raise LimitError("policy scopes nested too deep")
        effective = intersect(self.current, validate_policy(policy))
        sandbox = self.derive(self.sandbox, effective) if self.derive is not None else None
        self.scopes.append((effective, sandbox))  # only once both are made: a refusal pushes nothing
        return effective

    def exit(self) -> dict:
        if len(self.scopes) == 1:
            raise ActionError("no policy scope to leave")
        self.scopes.pop()
        return self.current
