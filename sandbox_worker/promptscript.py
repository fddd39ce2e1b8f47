"""PromptScript in the worker: the restricted globals its generated code runs with.

Stdlib only (imported before the worker hardens). The names here are the hooks the emitter
(transpiler/ps_emitter.py) inserts: ``ps_step``, ``ps_add``, ``ps_eq``..., ``ps_guard``,
``ps_policy``, ``ps_retry``, ``ps_timeout``, ``ps_make_class``; plus the built-ins ``log``,
``len``, ``range``, ``apply``, ``parallel``.

Everything that changes the world is a request to the broker (ops ``ps.*`` in
sandbox_worker/protocol.py); the broker enforces policies and budgets. The worker keeps only
what must be local: the step counter, the deadline stack of ``timeout`` blocks (SIGALRM via
``setitimer(ITIMER_REAL)``, re-armed for the earliest pending deadline), the retry loops and
a mirror of the policy scope stack.

Fail closed: member access works on objects (dict keys) and class instances only; indexing
on arrays, strings, ranges and objects; iteration on arrays, strings, ranges and objects
(their keys). Everything else is refused with a script error.
"""

from __future__ import annotations

import json
import math
import signal
import time

from sandbox_worker.client import BrokerClient, ScriptFailure

ACTIONS = ("READ_FILE", "WRITE_FILE", "PATCH_FILE", "SEARCH", "RUN_CMD", "ASK_USER", "REPORT")
POLICY_KEYS = {
    "allowActions": "an array of action names",
    "allowCommands": "an array of command names",
    "maxFileBytes": "a non-negative integer",
    "allowRead": "an array of project paths",
    "allowWrite": "an array of project paths",
}
PLAN_KEYS = ("action", "args", "done", "confidence", "reason")
MAX_RETRY_ATTEMPTS = 1000
MAX_BLOCK_MS = 24 * 3600 * 1000
STEP_REPORT_EVERY = 1 << 14  # steps between two reports of the counter to the broker
MAX_RENDER_DEPTH = 50


class PSError(ScriptFailure):
    """A PromptScript runtime error a `retry` block may catch."""

    def __init__(self, message: str, kind: str = "RuntimeError") -> None:
        super().__init__(kind, message)


class BudgetExceeded(ScriptFailure):
    """A budget ran out: ends the script; never caught by `retry`."""

    def __init__(self, message: str) -> None:
        super().__init__("LimitError", message)


class TimeoutInterrupt(BaseException):
    """Raised by the SIGALRM handler inside the block whose deadline passed. BaseException so
    that no handler but the owning `timeout` block (which turns it into a PSError) stops it."""

    def __init__(self, entry) -> None:
        super().__init__("timeout")
        self.entry = entry


CATCHABLE_PYTHON = (TypeError, ValueError, ZeroDivisionError, KeyError, IndexError, NameError,
                    OverflowError, AttributeError)


def catchable(exc: BaseException) -> bool:
    """What `retry` may catch: script errors; never policy denials, budgets, limits, internal errors."""
    if isinstance(exc, ScriptFailure):
        return exc.kind == "RuntimeError"  # not a policy denial, a budget or a limit
    return isinstance(exc, CATCHABLE_PYTHON)


# ---- values --------------------------------------------------------------------------------

def type_name(value) -> str:
    if value is None:
        return "null"
    t = type(value)
    if t is bool:
        return "boolean"
    if t is int or t is float:
        return "number"
    if t is str:
        return "string"
    if t is list or t is range:
        return "array"
    if t is dict:
        return "object"
    if t is PSInstance:
        return f"{value.ps_class.name} instance"
    if t is PSClass:
        return "class"
    return "function" if callable(value) else t.__name__


def _is_number(value) -> bool:
    t = type(value)
    return t is int or t is float


def _key(key: str) -> str:
    return key if key.isidentifier() else json.dumps(key, ensure_ascii=False)


def render(value, depth: int = 0, top: bool = True) -> str:
    """A value as PromptScript writes it (strings bare at the top level, quoted inside)."""
    t = type(value)
    if t is str:
        return value if top else json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    if t is bool:
        return "true" if value else "false"
    if t is int:
        return str(value)
    if t is float:
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return repr(value)
    if depth >= MAX_RENDER_DEPTH:
        return "..."
    if t is list or t is range:
        return "[" + ", ".join(render(v, depth + 1, False) for v in value) + "]"
    if t is dict:
        return "{" + ", ".join(f"{_key(str(k))}: {render(v, depth + 1, False)}" for k, v in value.items()) + "}"
    if t is PSInstance:
        return f"<{value.ps_class.name}>"
    if t is PSClass:
        return f"<class {value.name}>"
    return "<function>"


def ps_add(a, b):
    ta, tb = type(a), type(b)
    if ta is str and tb is str:
        return a + b
    if (ta is int or ta is float) and (tb is int or tb is float):
        return a + b
    if ta is str:
        return a + render(b, top=True)
    if tb is str:
        return render(a, top=True) + b
    if ta is list and tb is list:
        return a + b
    raise PSError(f"cannot add {type_name(b)} to {type_name(a)}")


def _compare_check(a, b, op: str) -> None:
    if (_is_number(a) and type(b) is str) or (type(a) is str and _is_number(b)):
        raise PSError(f"cannot compare {type_name(a)} with {type_name(b)} "
                      f"({render(a, top=False)} {op} {render(b, top=False)})")


def ps_eq(a, b):
    _compare_check(a, b, "==")
    return a == b


def ps_ne(a, b):
    _compare_check(a, b, "!=")
    return a != b


def _ordering(op: str, fn):
    def compare(a, b):
        _compare_check(a, b, op)
        try:
            return fn(a, b)
        except TypeError:
            raise PSError(f"cannot compare {type_name(a)} {op} {type_name(b)}") from None
    return compare


ps_lt = _ordering("<", lambda a, b: a < b)
ps_le = _ordering("<=", lambda a, b: a <= b)
ps_gt = _ordering(">", lambda a, b: a > b)
ps_ge = _ordering(">=", lambda a, b: a >= b)


def length(value):
    if type(value) in (str, list, dict, range):
        return len(value)
    raise PSError(f"len() needs an array, a string or an object, not {type_name(value)}")


def ps_range(*args):
    if not 1 <= len(args) <= 3:
        raise PSError(f"range() takes 1, 2 or 3 arguments ({len(args)} given)")
    for a in args:
        if type(a) is not int:
            raise PSError(f"range() arguments must be integers, not {type_name(a)}")
    if len(args) == 3 and args[2] == 0:
        raise PSError("range() step cannot be zero")
    return range(*args)


# ---- classes -------------------------------------------------------------------------------

def _arity_error(what: str, fn, given: int) -> PSError:
    expected = fn.__code__.co_argcount - 1
    return PSError(f"{what}() takes {expected} argument{'s' if expected != 1 else ''} but {given} "
                   f"{'was' if given == 1 else 'were'} given")


class PSClass:
    """A PromptScript class: a name and a table of methods (plain functions taking self)."""

    __slots__ = ("name", "methods")

    def __init__(self, name: str, methods: dict) -> None:
        self.name = name
        self.methods = methods

    def __call__(self, *args):
        instance = PSInstance(self)
        init = self.methods.get("__init__")
        if init is None:
            if args:
                raise PSError(f"{self.name}() takes no arguments (it has no __init__)")
        else:
            if len(args) != init.__code__.co_argcount - 1:
                raise _arity_error(self.name, init, len(args))
            init(instance, *args)
        return instance


class PSInstance:
    __slots__ = ("ps_class", "fields")

    def __init__(self, ps_class: PSClass) -> None:
        self.ps_class = ps_class
        self.fields = {}


class BoundMethod:
    __slots__ = ("instance", "name", "fn")

    def __init__(self, instance, name, fn) -> None:
        self.instance, self.name, self.fn = instance, name, fn

    def __call__(self, *args):
        if len(args) != self.fn.__code__.co_argcount - 1:
            raise _arity_error(f"{self.instance.ps_class.name}.{self.name}", self.fn, len(args))
        return self.fn(self.instance, *args)


def ps_make_class(name, methods):
    return PSClass(name, dict(methods))


# ---- guards (RestrictedPython hooks) ---------------------------------------------------------

def guarded_getattr(obj, name):
    """Allow object keys and instance fields/methods; deny everything else."""
    if type(name) is not str or name.startswith("_"):
        raise PSError("member names cannot start with '_'")
    t = type(obj)
    if t is dict:
        if name in obj:
            return obj[name]
        raise PSError(f"object has no key '{name}'")
    if t is PSInstance:
        if name in obj.fields:
            return obj.fields[name]
        fn = obj.ps_class.methods.get(name)
        if fn is not None and name != "__init__":
            return BoundMethod(obj, name, fn)
        raise PSError(f"{obj.ps_class.name} instance has no field or method '{name}'")
    raise PSError(f"{type_name(obj)} has no member '{name}'")


def guarded_getitem(obj, index):
    t = type(obj)
    if t is dict:
        if type(index) is not str:
            raise PSError(f"an object key must be a string, not {type_name(index)}")
        if index in obj:
            return obj[index]
        raise PSError(f"object has no key {json.dumps(index)}")
    if t in (list, str, range):
        if type(index) is not int:
            raise PSError(f"an index must be an integer, not {type_name(index)}")
        try:
            return obj[index]
        except IndexError:
            raise PSError(f"index {index} is out of range ({type_name(obj)} of length {len(obj)})") from None
    raise PSError(f"{type_name(obj)} cannot be indexed")


class Writer:
    """What ``_write_(obj)`` returns: the only way generated code assigns a member or an item."""

    __slots__ = ("target",)

    def __init__(self, target) -> None:
        object.__setattr__(self, "target", target)

    def __setattr__(self, name, value):
        target = object.__getattribute__(self, "target")
        if type(name) is not str or name.startswith("_"):
            raise PSError("member names cannot start with '_'")
        if type(target) is dict:
            target[name] = value
        elif type(target) is PSInstance:
            target.fields[name] = value
        else:
            raise PSError(f"cannot set member '{name}' of {type_name(target)}")

    def __setitem__(self, index, value):
        target = object.__getattribute__(self, "target")
        if type(target) is dict:
            if type(index) is not str:
                raise PSError(f"an object key must be a string, not {type_name(index)}")
            target[index] = value
        elif type(target) is list:
            if type(index) is not int:
                raise PSError(f"an index must be an integer, not {type_name(index)}")
            try:
                target[index] = value
            except IndexError:
                raise PSError(f"index {index} is out of range (array of length {len(target)})") from None
        else:
            raise PSError(f"{type_name(target)} items cannot be assigned")


def guarded_write(obj):
    if type(obj) in (dict, list, PSInstance):
        return Writer(obj)
    raise PSError(f"{type_name(obj)} cannot be modified")


def guarded_iter(obj):
    t = type(obj)
    if t in (list, str, range):
        return iter(obj)
    if t is dict:
        return iter(list(obj))
    if t is RetryLoop:
        return obj
    raise PSError(f"cannot iterate over {type_name(obj)}")


# ---- JSON values for the broker -------------------------------------------------------------

def to_json(value, what: str, depth: int = 0):
    t = type(value)
    if value is None or t in (bool, int, str):
        return value
    if t is float:
        if math.isnan(value) or math.isinf(value):
            raise PSError(f"{what}: {value} cannot be sent to an action")
        return value
    if depth > 50:
        raise PSError(f"{what}: value nested too deep")
    if t is list or t is range:
        return [to_json(v, what, depth + 1) for v in value]
    if t is dict:
        return {str(k): to_json(v, what, depth + 1) for k, v in value.items()}
    raise PSError(f"{what}: a {type_name(value)} cannot be sent to an action")


# ---- the run-time state: steps, deadlines, scopes ------------------------------------------

class Deadline:
    __slots__ = ("at", "ms", "line", "fired", "budget")

    def __init__(self, at: float, ms, line: int, budget: bool = False) -> None:
        self.at, self.ms, self.line, self.fired, self.budget = at, ms, line, False, budget


class Runtime:
    def __init__(self, client: BrokerClient, config: dict) -> None:
        self.client = client
        self.max_steps = int(config.get("max_steps") or 0)
        self.max_time_ms = int(config.get("max_time_ms") or 0)
        self.started = time.monotonic()
        self.steps = 0
        self.deadlines: list[Deadline] = []
        self.scopes: list[dict] = []
        self.critical = 0
        self.pending = False
        if self.max_time_ms:
            self.deadlines.append(Deadline(self.started + self.max_time_ms / 1000, self.max_time_ms, 0, budget=True))
        signal.signal(signal.SIGALRM, self.on_alarm)
        self.rearm()

    # -- critical sections: no interrupt while talking to the broker or changing state --

    def enter_critical(self) -> None:
        self.critical += 1

    def leave_critical(self, defer: bool = False) -> None:
        """Leave; a deadline that passed meanwhile fires now, or (``defer``: we are in an
        ``__enter__``, whose failure would skip ``__exit__``) a few microseconds later."""
        self.critical -= 1
        if self.critical == 0 and self.pending:
            self.pending = False
            if defer:
                self.rearm()
            else:
                self.fire()

    def call(self, op: str, **args):
        self.enter_critical()
        try:
            return self.client.call(op, **args)
        finally:
            self.leave_critical()

    def output(self, text: str) -> None:
        self.enter_critical()
        try:
            self.client.output(text)
        finally:
            self.leave_critical()

    # -- deadlines --

    def on_alarm(self, signum, frame) -> None:
        if self.critical:
            self.pending = True
            return
        self.fire()

    def fire(self) -> None:
        now = time.monotonic()
        for entry in self.deadlines:  # outermost first: it wins
            if not entry.fired and entry.at <= now:
                entry.fired = True
                if entry.budget:
                    raise BudgetExceeded(f"budget exceeded: --max-time {self.max_time_ms} ms "
                                         f"(the script ran for {int((now - self.started) * 1000)} ms)")
                raise TimeoutInterrupt(entry)
        self.rearm()

    def rearm(self) -> None:
        pending = [e.at for e in self.deadlines if not e.fired]
        if not pending:
            signal.setitimer(signal.ITIMER_REAL, 0)
            return
        signal.setitimer(signal.ITIMER_REAL, max(min(pending) - time.monotonic(), 1e-5))

    # -- steps --

    def step_hook(self):
        limit = self.max_steps
        every = STEP_REPORT_EVERY
        runtime = self

        def ps_step():
            runtime.steps += 1
            n = runtime.steps
            if n % every == 0 or n > limit:
                runtime.slow_step(n)

        if not limit:
            limit = 1 << 62
        return ps_step

    def slow_step(self, n: int) -> None:
        if self.max_steps and n > self.max_steps:
            self.steps -= 1
            raise BudgetExceeded(f"budget exceeded: --max-steps {self.max_steps} "
                                 f"(the script executed {self.max_steps} statements)")
        self.call("ps.steps", count=n)

    def event(self, kind: str, line: int, **data) -> None:
        self.call("ps.event", kind=kind, line=line, data=json.dumps(data))


# ---- control blocks ----------------------------------------------------------------------------

def _number(value, what: str, line: int, low: float, high: float):
    if not _is_number(value) or not (low <= value <= high):
        raise PSError(f"{what} must be a number from {low:g} to {high:g}, not {render(value, top=False)} (line {line})")
    return value


class TimeoutBlock:
    def __init__(self, runtime: Runtime, ms, line: int) -> None:
        _number(ms, "timeout", line, 1, MAX_BLOCK_MS)
        self.runtime, self.ms, self.line = runtime, ms, line

    def __enter__(self):
        rt = self.runtime
        rt.enter_critical()
        try:
            self.entry = Deadline(time.monotonic() + self.ms / 1000, self.ms, self.line)
            rt.deadlines.append(self.entry)
            rt.rearm()
        finally:
            rt.leave_critical(defer=True)
        return None

    def __exit__(self, exc_type, exc, tb):
        rt = self.runtime
        rt.enter_critical()
        try:
            if self.entry in rt.deadlines:
                rt.deadlines.remove(self.entry)
            rt.rearm()
            mine = isinstance(exc, TimeoutInterrupt) and exc.entry is self.entry
            if mine:
                rt.event("timeout", self.line, ms=self.ms)
        finally:
            rt.leave_critical()
        if mine:
            raise PSError(f"timeout: the block at line {self.line} did not finish within {self.ms:g} ms") from None
        return False


class RetryLoop:
    """``for ps_attempt in ps_retry(N, MS, line): with ps_attempt: <body>``."""

    def __init__(self, runtime: Runtime, attempts, backoff, line: int) -> None:
        if type(attempts) is not int or not 1 <= attempts <= MAX_RETRY_ATTEMPTS:
            raise PSError(f"retry needs a whole number of attempts from 1 to {MAX_RETRY_ATTEMPTS}, "
                          f"not {render(attempts, top=False)} (line {line})")
        _number(backoff, "backoff", line, 0, MAX_BLOCK_MS)
        self.runtime, self.attempts, self.backoff, self.line = runtime, attempts, backoff, line
        self.attempt = 0
        self.done = False

    def __iter__(self):
        return self

    def __next__(self):
        if self.done or self.attempt >= self.attempts:
            raise StopIteration
        if self.attempt and self.backoff:
            time.sleep(self.backoff / 1000)  # a `timeout` around the retry interrupts it
        self.attempt += 1
        return self

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            self.done = True
            return False
        if not catchable(exc) or self.attempt >= self.attempts:
            self.done = True
            return False  # the last error propagates as it is
        message = exc.message if isinstance(exc, ScriptFailure) else str(exc)
        self.runtime.event("retry", self.line, attempt=self.attempt, of=self.attempts, error=message[:500])
        return True


class PolicyScope:
    def __init__(self, runtime: Runtime, policy, line: int) -> None:
        self.runtime, self.line = runtime, line
        self.policy = validate_policy(policy, line)

    def __enter__(self):
        rt = self.runtime
        rt.enter_critical()
        try:
            effective = rt.client.call("ps.scope", change="enter", policy=json.dumps(self.policy), line=self.line)
            rt.scopes.append(effective)
        finally:
            rt.leave_critical(defer=True)
        return None

    def __exit__(self, exc_type, exc, tb):
        rt = self.runtime
        rt.enter_critical()
        try:
            if rt.scopes:
                rt.scopes.pop()
            rt.client.call("ps.scope", change="exit", policy="", line=self.line)
        finally:
            rt.leave_critical()
        return False


def _string_list(value, key: str, line: int) -> list:
    if type(value) is not list or any(type(v) is not str for v in value):
        raise PSError(f"policy {key} must be {POLICY_KEYS[key]} (line {line})")
    return list(value)


def validate_policy(policy, line: int) -> dict:
    if type(policy) is not dict:
        raise PSError(f"a policy must be an object, not {type_name(policy)} (line {line})")
    out = {}
    for key, value in policy.items():
        if key not in POLICY_KEYS:
            raise PSError(f"unknown policy key '{key}' (known: {', '.join(POLICY_KEYS)}) (line {line})")
        if key == "maxFileBytes":
            if type(value) is not int or value < 0:
                raise PSError(f"policy maxFileBytes must be {POLICY_KEYS[key]} (line {line})")
            out[key] = value
            continue
        items = _string_list(value, key, line)
        if key == "allowActions":
            for name in items:
                if name not in ACTIONS:
                    raise PSError(f"policy allowActions: unknown action '{name}' (actions: {', '.join(ACTIONS)}) (line {line})")
        out[key] = items
    return out


def validate_plan(plan) -> tuple[str, dict]:
    if type(plan) is not dict:
        raise PSError(f"apply(plan) needs a plan object, not {type_name(plan)}")
    unknown = [k for k in plan if k not in PLAN_KEYS]
    if unknown:
        raise PSError(f"plan has an unknown field '{unknown[0]}' (fields: {', '.join(PLAN_KEYS)})")
    for key in ("action", "args", "done"):
        if key not in plan:
            raise PSError(f"plan is missing its '{key}' field")
    if type(plan["action"]) is not str:
        raise PSError(f"plan.action must be a string, not {type_name(plan['action'])}")
    if type(plan["args"]) is not dict:
        raise PSError(f"plan.args must be an object, not {type_name(plan['args'])}")
    if type(plan["done"]) is not bool:
        raise PSError(f"plan.done must be true or false, not {type_name(plan['done'])}")
    if "confidence" in plan:
        c = plan["confidence"]
        if not _is_number(c) or not 0 <= c <= 1:
            raise PSError(f"plan.confidence must be a number from 0 to 1, not {render(c, top=False)}")
    if "reason" in plan and type(plan["reason"]) is not str:
        raise PSError(f"plan.reason must be a string, not {type_name(plan['reason'])}")
    return plan["action"], plan["args"]


# ---- globals ---------------------------------------------------------------------------------

def restricted_globals(client: BrokerClient) -> dict:
    config = client.call("ps.start")
    rt = Runtime(client, config if type(config) is dict else {})

    def log(*values):
        rt.output("[ps] " + " ".join(render(v) for v in values) + "\n")

    missing = object()

    def apply(action_or_plan, args=missing):
        if args is missing:
            action, action_args = validate_plan(action_or_plan)
        else:
            action, action_args = action_or_plan, args
            if type(action) is not str:
                raise PSError(f"apply() needs an action name, not {type_name(action)}")
            if type(action_args) is not dict:
                raise PSError(f"apply({action!r}, args): args must be an object, not {type_name(action_args)}")
        if action not in ACTIONS:
            raise PSError(f"unknown action '{action}' (actions: {', '.join(ACTIONS)})")
        if action == "RUN_CMD":
            action_args = _cap_command_timeout(rt, action_args)
        payload = json.dumps(to_json(action_args, action), ensure_ascii=False)
        reply = rt.call("ps.action", name=action, args=payload)
        if type(reply) is dict:
            text = reply.get("print")
            if type(text) is str and text:
                rt.output(text)
            return reply.get("value")
        return None

    def parallel(items, opts=None):
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
        payload = json.dumps(to_json(items, "parallel"), ensure_ascii=False)
        return rt.call("ps.parallel", items=payload, max=most, fail_fast=fail_fast)

    return {
        "__builtins__": {
            "log": log, "len": length, "range": ps_range, "apply": apply, "parallel": parallel,
            "ps_step": rt.step_hook(), "ps_add": ps_add, "ps_eq": ps_eq, "ps_ne": ps_ne,
            "ps_lt": ps_lt, "ps_le": ps_le, "ps_gt": ps_gt, "ps_ge": ps_ge,
            "ps_guard": guard, "ps_make_class": ps_make_class,
            "ps_policy": lambda policy, line: PolicyScope(rt, policy, line),
            "ps_retry": lambda n, ms, line: RetryLoop(rt, n, ms, line),
            "ps_timeout": lambda ms, line: TimeoutBlock(rt, ms, line),
            "None": None, "True": True, "False": False,
        },
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": guarded_iter,
        "_write_": guarded_write,
    }


PARALLEL_ACTIONS = ("READ_FILE", "SEARCH")


def _cap_command_timeout(rt: Runtime, args: dict) -> dict:
    """A `timeout` block cannot cut a broker call short, so RUN_CMD's own timeoutMs is lowered
    to the time left in the innermost pending block (the broker kills the command then)."""
    pending = [e.at for e in rt.deadlines if not e.fired]
    if not pending:
        return args
    left_ms = int((min(pending) - time.monotonic()) * 1000)
    asked = args.get("timeoutMs", 60_000)
    if type(asked) is int and left_ms < asked:
        args = dict(args)
        args["timeoutMs"] = max(1, left_ms)
    return args


def guard(value, text: str, line: int) -> None:
    if not value:
        raise PSError(f"guard failed: {text} (line {line})")
