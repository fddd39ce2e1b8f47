"""PromptScript in the worker: the restricted globals its generated code runs with.

The package: errors, values (type names, rendering, operators), classes, guards (the
RestrictedPython hooks), runtime (steps, deadlines, the scope mirror) and blocks.

Stdlib only (imported before the worker hardens). The names here are the hooks the emitter
(transpiler/ps/emit.py) inserts: ``ps_main``, ``ps_step``, ``ps_add``/``ps_sub``/...,
``ps_eq``..., ``ps_in``, ``ps_guard``, ``ps_policy``, ``ps_retry``, ``ps_timeout``,
``ps_make_class``, ``ps_var``, ``ps_range_iter``; plus the built-ins ``log``, ``len``,
``range``, ``apply``, ``parallel``.

Everything that changes the world is a request to the broker (ops ``ps.*`` in
wire/protocol.py); the broker enforces policies and budgets. The worker keeps only
what must be local: the step counter, the deadline stack of ``timeout`` blocks (SIGALRM via
``setitimer(ITIMER_REAL)``, re-armed for the earliest pending deadline), the retry loops and
a mirror of the policy scope stack (for the runtime variables ``allowed_actions``...).

Interrupts only at safe points. Python may run the SIGALRM handler between any two bytecode
instructions, including the gaps a ``with`` statement leaves between a block's body and its
``__exit__``, so the handler raises a block's timeout (or the --max-time budget) at once only
inside the worker's own helper code called by the script (a built-in, an operator, a retry's
backoff sleep): the error then surfaces at the script's call site, inside every enclosing
block. Everywhere else it is deferred to the next safe point: in the script's own code or in
block machinery (a block's ``__enter__``/``__exit__``, ``MACHINERY``), to the next statement
(``ps_step``, which every statement starts with); while the worker talks to the broker (a
critical section), likewise, once the reply is in. So a scope is always entered and left in
full, on both sides of the pipe, and a block's timeout always reaches the block that owns it.

Fail closed: member access works on objects (dict keys) and class instances only; indexing
on arrays, strings and objects; iteration on arrays, strings and objects (their keys).
Everything else is refused with a script error.
"""

from __future__ import annotations

import re

from sandbox_worker.client import BrokerClient
from wire import protocol

from .blocks import MainBlock, PolicyScope, RetryBlock, TimeoutBlock, validate_plan
from .classes import ps_make_class
from .errors import ACTIONS, NullOrdering, PSError
from .guards import guarded_getattr, guarded_getitem, guarded_iter, guarded_write, to_json
from .runtime import Runtime
from .values import (
    length,
    ps_add,
    ps_div,
    ps_eq,
    ps_ge,
    ps_gt,
    ps_in,
    ps_le,
    ps_lt,
    ps_mod,
    ps_mul,
    ps_ne,
    ps_neg,
    ps_not_in,
    ps_range,
    ps_range_iter,
    ps_sub,
    render,
    type_name,
)

PARALLEL_ACTIONS = protocol.PS_PARALLEL_ACTIONS


def restricted_globals(client: BrokerClient) -> dict:
    config = client.call("ps.start")
    rt = Runtime(client, config if type(config) is dict else {})

    def log(*values):
        rt.output("[ps] " + " ".join(render(v) for v in values) + "\n")

    def apply(*args):
        if len(args) == 1:
            action, action_args = validate_plan(args[0])
        elif len(args) == 2:
            action, action_args = args
            if type(action) is not str:
                raise PSError(f"apply() needs an action name, not {type_name(action)}")
            if type(action_args) is not dict:
                raise PSError(f"apply({action!r}, args): args must be an object, not {type_name(action_args)}")
        else:
            raise PSError(f"apply() takes a plan, or an action name and its args: 1 or 2 arguments "
                          f"({len(args)} given)")
        if action not in ACTIONS:
            raise PSError(f"unknown action '{action}' (actions: {', '.join(ACTIONS)})")
        reply = rt.action_call("ps.action", name=action, args=to_json(action_args, action))
        if type(reply) is dict:
            changed = reply.get("files_changed")
            if type(changed) is int:
                rt.files_changed = changed
            text = reply.get("print")
            if type(text) is str and text:
                rt.output(text)
            return reply.get("value")
        return None

    def parallel(*args):
        if not 1 <= len(args) <= 2:
            raise PSError(f"parallel() takes an array of items and an optional options object "
                          f"({len(args)} arguments given)")
        items, opts = args[0], (args[1] if len(args) == 2 else None)
        if type(items) is not list:
            raise PSError(f"parallel() needs an array of {{action, args}} items, not {type_name(items)}")
        for i, item in enumerate(items, 1):
            if type(item) is not dict or set(item) != {"action", "args"}:
                raise PSError(f"parallel item {i} must be an object {{action, args}}")
            if item["action"] not in PARALLEL_ACTIONS:
                raise PSError(f"parallel item {i}: parallel() runs only the read-only actions "
                              f"{', '.join(PARALLEL_ACTIONS)}, not {render(item['action'], top=False)}")
            if type(item["args"]) is not dict:
                raise PSError(f"parallel item {i}: args must be an object, not {type_name(item['args'])}")
        opts = {} if opts is None else opts
        if type(opts) is not dict:
            raise PSError(f"parallel() options must be an object {{max, fail_fast}}, not {type_name(opts)}")
        unknown = [k for k in opts if k not in ("max", "fail_fast")]
        if unknown:
            raise PSError(f"parallel(): unknown option '{unknown[0]}' (options: max, fail_fast)")
        most = opts.get("max", 4)
        fail_fast = opts.get("fail_fast", True)
        if type(most) is not int or not 1 <= most <= 16:
            raise PSError("parallel(): max must be a whole number from 1 to 16")
        if type(fail_fast) is not bool:
            raise PSError("parallel(): fail_fast must be true or false")
        return rt.action_call("ps.parallel", items=to_json(items, "parallel"), max=most, fail_fast=fail_fast)

    def ps_var(name):
        policy = rt.policy()
        if name == "allowed_actions":
            return list(policy.get("allowActions", ACTIONS))
        if name == "allowed_commands":
            return list(policy.get("allowCommands", ()))
        if name == "files_changed":
            return rt.files_changed
        if name == "max_files_changed":
            return policy.get("maxFilesChanged")
        raise PSError(f"unknown runtime variable '{name}'")

    def guard(test, text: str, line: int) -> None:
        try:
            value = test()
        except NullOrdering as exc:
            detail = exc.detail
            if re.search(r"\bmax_files_changed\b", text) and rt.policy().get("maxFilesChanged") is None:
                detail = ("max_files_changed is null: no limit on changed files is set "
                          "(--max-files-changed N, or a policy maxFilesChanged)")
            raise PSError(f"guard failed: {text} (line {line}; {detail})") from None
        if not value:
            raise PSError(f"guard failed: {text} (line {line})")

    return {
        "__builtins__": {
            "log": log, "len": length, "range": ps_range, "apply": apply, "parallel": parallel,
            "ps_main": lambda: MainBlock(rt), "ps_step": rt.step_hook(),
            "ps_add": ps_add, "ps_sub": ps_sub, "ps_mul": ps_mul, "ps_div": ps_div, "ps_mod": ps_mod,
            "ps_neg": ps_neg, "ps_eq": ps_eq, "ps_ne": ps_ne, "ps_lt": ps_lt, "ps_le": ps_le,
            "ps_gt": ps_gt, "ps_ge": ps_ge, "ps_in": ps_in, "ps_not_in": ps_not_in,
            "ps_guard": guard, "ps_make_class": ps_make_class, "ps_var": ps_var,
            "ps_range_iter": ps_range_iter,
            "ps_policy": lambda policy, line: PolicyScope(rt, policy, line),
            "ps_retry": lambda n, ms, line: RetryBlock(rt, n, ms, line),
            "ps_timeout": lambda ms, line: TimeoutBlock(rt, ms, line),
            "None": None, "True": True, "False": False,
        },
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": guarded_iter,
        "_write_": guarded_write,
    }
