"""PromptScript's policy scopes: what a `with policy` object may say, and the scope in force
inside it, which is never more than the scope around it allows (the broker's own check; the
worker's is only for early messages)."""

from __future__ import annotations

from runtime.errors import LimitError, ScriptError
from runtime.fs.paths import relative
from wire import protocol

ACTIONS = protocol.PS_ACTIONS
POLICY_LIST_KEYS = ("allowActions", "allowCommands", "allowRead", "allowWrite")
POLICY_INT_KEYS = ("maxFileBytes", "maxFilesChanged")
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
    """The broker's own check of a policy object (the worker's is only for early messages)."""
    if type(policy) is not dict:
        raise ActionError("a policy must be an object")
    out: dict = {}
    for key, value in policy.items():
        if key in POLICY_INT_KEYS:
            if type(value) is not int or value < 0:
                raise ActionError(f"policy {key} must be a non-negative integer")
            out[key] = value
        elif key in POLICY_LIST_KEYS:
            if type(value) is not list or any(type(v) is not str for v in value) or len(value) > 1000:
                raise ActionError(f"policy {key} must be an array of strings")
            if key == "allowActions":
                bad = [v for v in value if v not in ACTIONS]
                if bad:
                    raise ActionError(f"policy allowActions: unknown action '{bad[0]}'")
            out[key] = [norm_path(v) for v in value] if key in ("allowRead", "allowWrite") else list(value)
        else:
            raise ActionError(f"unknown policy key '{str(key)[:40]}'")
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
    def __init__(self, allow_commands=(), max_files_changed: int | None = None) -> None:
        self.stack = [{
            "allowActions": list(ACTIONS),
            "allowCommands": list(allow_commands),
            "maxFileBytes": DEFAULT_MAX_FILE_BYTES,
            "maxFilesChanged": max_files_changed,
            "allowRead": ["."],
            "allowWrite": ["."],
        }]

    @property
    def current(self) -> dict:
        return self.stack[-1]

    def enter(self, policy: dict) -> dict:
        if len(self.stack) > 1000:
            raise LimitError("policy scopes nested too deep")
        self.stack.append(intersect(self.current, validate_policy(policy)))
        return self.current

    def exit(self) -> dict:
        if len(self.stack) == 1:
            raise ActionError("no policy scope to leave")
        self.stack.pop()
        return self.current
