"""The one check of a PromptScript action's arguments, against the table both sides import
(``wire.protocol.PS_ACTION_ARGS``). It runs in the broker after the budgets and the policy, so
a call with bad arguments is counted, logged and refused like any other failed action."""

from __future__ import annotations

from runtime.errors import ScriptError
from wire import protocol

_TYPES = {"str": str, "int": int, "bool": bool, "strs": list, "list": list}


class ActionArgError(ScriptError):
    kind = "RuntimeError"


def check_action_args(action: str, args: dict) -> dict:
    """``args`` if every name is the action's, every required one is given and each value has
    its type; otherwise an ActionArgError naming the argument and what it must be."""
    spec = protocol.PS_ACTION_ARGS[action]
    for key in args:
        if key not in spec:
            raise ActionArgError(f"{action}: unknown argument '{str(key)[:40]}' (arguments: {', '.join(spec)})")
    for key, (kind, required, what) in spec.items():
        if key not in args:
            if required:
                raise ActionArgError(f"{action}: the '{key}' argument ({what}) is required")
            continue
        value = args[key]
        if type(value) is not _TYPES[kind] or (kind == "strs" and any(type(v) is not str for v in value)):
            raise ActionArgError(f"{action}: {key} must be {what}")
    return args
