"""PromptScript in the worker: the restricted globals its generated code runs with.

The package: errors, values (type names, rendering, operators), classes, guards (the
RestrictedPython hooks), runtime (steps, deadlines, the scope mirror) and blocks.

Stdlib only (imported before the worker hardens). The names here are the hooks the emitter
(transpiler/ps/emit.py) inserts: ``ps_main``, ``ps_step``, ``ps_add``/``ps_sub``/...,
``ps_eq``..., ``ps_in``, ``ps_guard``, ``ps_policy``, ``ps_retry``, ``ps_timeout``,
``ps_make_class``, ``ps_var``, ``ps_range_iter``; plus the built-ins ``log``, ``len``,
``range``, ``apply``, ``parallel`` and the LLM built-ins (llm.py: ``LLMClient``, ``plan``,
``do``, ``run_agent``, ``decide``, ``judge``, ``summarize``, proxies of the broker's ``ps.llm``).

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
(``ps_step``, which every statement starts with), or in a loop or a function to the next run
of statements (whose counting sees ``ps_at`` 0 and takes the per-statement path: see
runtime.py); while the worker talks to the broker (a
critical section), likewise, once the reply is in. So a scope is always entered and left in
full, on both sides of the pipe, and a block's timeout always reaches the block that owns it.

Fail closed: member access works on objects (dict keys) and class instances only; indexing
on arrays, strings and objects; iteration on arrays, strings and objects (their keys).
Everything else is refused with a script error.
"""

from __future__ import annotations

__all__ = ["restricted_globals", "python_message"]

from sandbox_worker.client import BrokerClient

from .blocks import MainBlock, PolicyScope, RetryBlock, TimeoutBlock
from .builtins import ScriptBuiltins
from .classes import ps_make_class
from .guards import guarded_getattr, guarded_getitem, guarded_iter, guarded_write
from .llm import LLMBuiltins
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
    python_message,
)


def restricted_globals(client: BrokerClient) -> dict:
    config = client.call("ps.start")
    rt = Runtime(client, config if type(config) is dict else {})
    b = ScriptBuiltins(rt)
    m = LLMBuiltins(rt, b.apply)
    namespace = rt.globals  # ps_n, ps_at: the step counter the generated code keeps
    namespace.update({
        "__builtins__": {
            "log": b.log, "len": length, "range": ps_range, "apply": b.apply, "parallel": b.parallel,
            "ps_main": lambda: MainBlock(rt), "ps_step": rt.step_hook(), "ps_check": rt.check_hook(),
            "ps_run": rt.run_hook(), "ps_type": type, "ps_int": int,
            "ps_add": ps_add, "ps_sub": ps_sub, "ps_mul": ps_mul, "ps_div": ps_div, "ps_mod": ps_mod,
            "ps_neg": ps_neg, "ps_eq": ps_eq, "ps_ne": ps_ne, "ps_lt": ps_lt, "ps_le": ps_le,
            "ps_gt": ps_gt, "ps_ge": ps_ge, "ps_in": ps_in, "ps_not_in": ps_not_in,
            "ps_guard": b.guard, "ps_make_class": ps_make_class, "ps_var": b.ps_var,
            "ps_range_iter": ps_range_iter,
            "ps_policy": lambda policy, line: PolicyScope(rt, policy, line),
            "ps_retry": lambda n, ms, line: RetryBlock(rt, n, ms, line),
            "ps_timeout": lambda ms, line: TimeoutBlock(rt, ms, line),
            "LLMClient": m.LLMClient, "plan": m.plan, "do": m.do, "run_agent": m.run_agent,
            "decide": m.decide, "judge": m.judge, "summarize": m.summarize,
            "None": None, "True": True, "False": False,
        },
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": guarded_iter,
        "_write_": guarded_write,
    })
    return namespace
