"""PromptScript's built-ins that talk to the broker or read its state: log, apply,
parallel, the runtime variables and guard. One ``ScriptBuiltins`` per run, bound to its Runtime."""

from __future__ import annotations

import re

from wire import protocol

from .blocks import validate_plan
from .errors import ACTIONS, NullOrdering, PSError
from .guards import to_json
from .runtime import Runtime
from .values import render, type_name


class ScriptBuiltins:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def log(self, *values):
        self.rt.output("[ps] " + " ".join(render(v) for v in values) + "\n")

    def apply(self, *args):
        action, action_args = self._plan(args)
        if action not in ACTIONS:
            raise PSError(f"unknown action '{action}' (actions: {', '.join(ACTIONS)})")
        reply = self.rt.action_call("ps.action", name=action, args=to_json(action_args, action))
        if type(reply) is not dict:
            return None
        changed = reply.get("files_changed")
        if type(changed) is int:
            self.rt.files_changed = changed
        if action == "SEARCH" and type(reply.get("search")) is dict:
            self.rt.last_search = reply["search"]
        self._print(reply)
        return reply.get("value")

    def _print(self, reply: dict) -> None:
        text = reply.get("print")
        if type(text) is str and text:
            self.rt.output(text)

    @staticmethod
    def _plan(args) -> tuple:
        """apply(plan) or apply(action, args) -> (action, args)."""
        if len(args) == 1:
            return validate_plan(args[0])
        if len(args) != 2:
            raise PSError(f"apply() takes a plan, or an action name and its args: 1 or 2 arguments "
                          f"({len(args)} given)")
        action, action_args = args
        if type(action) is not str:
            raise PSError(f"apply() needs an action name, not {type_name(action)}")
        if type(action_args) is not dict:
            raise PSError(f"apply({action!r}, args): args must be an object, not {type_name(action_args)}")
        return action, action_args

    def parallel(self, *args):
        if not 1 <= len(args) <= 2:
            raise PSError(f"parallel() takes an array of items and an optional options object "
                          f"({len(args)} arguments given)")
        items = args[0]
        try:
            items, most, fail_fast = protocol.check_parallel(items, args[1] if len(args) == 2 else None, type_name,
                                                             lambda value: render(value, top=False))
        except ValueError as exc:
            raise PSError(str(exc)) from None
        reply = self.rt.action_call("ps.parallel", items=to_json(items, "parallel"), max=most, fail_fast=fail_fast)
        if type(reply) is not dict:
            return None
        self._print(reply)
        return reply.get("results")

    def ps_var(self, name):
        policy = self.rt.policy()
        if name == "allowed_actions":
            return list(policy.get("allowActions", ACTIONS))
        if name == "allowed_commands":
            return list(policy.get("allowCommands", ()))
        if name == "files_changed":
            return self.rt.files_changed
        if name == "max_files_changed":
            return policy.get("maxFilesChanged")
        if name in ("max_llm_calls", "llm_calls", "max_cost", "cost"):
            return getattr(self.rt, name)
        if name == "last_search":
            return None if self.rt.last_search is None else dict(self.rt.last_search)
        raise PSError(f"unknown runtime variable '{name}'")

    def guard(self, test, text: str, line: int) -> None:
        try:
            value = test()
        except NullOrdering as exc:
            detail = exc.detail
            if re.search(r"\bmax_files_changed\b", text) and self.rt.policy().get("maxFilesChanged") is None:
                detail = ("max_files_changed is null: no limit on changed files is set "
                          "(--max-files-changed N, or a policy maxFilesChanged)")
            raise PSError(f"guard failed: {text} (line {line}; {detail})") from None
        if not value:
            raise PSError(f"guard failed: {text} (line {line})")
