"""PromptScript in the worker: the restricted globals its generated code runs with.

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

import json
import math
import re
import signal
import time

from sandbox_worker.client import BrokerClient, ScriptFailure
from wire import protocol

ACTIONS = protocol.PS_ACTIONS
POLICY_KEYS = {
    "allowActions": "an array of action names",
    "allowCommands": "an array of command names",
    "maxFileBytes": "a non-negative integer",
    "maxFilesChanged": "a non-negative integer",
    "allowRead": "an array of project paths",
    "allowWrite": "an array of project paths",
}
PLAN_KEYS = ("action", "args", "done", "confidence", "reason")
MAX_RETRY_ATTEMPTS = 1000
MAX_BLOCK_MS = 24 * 3600 * 1000
STEP_REPORT_EVERY = 1 << 14  # steps between two reports of the counter to the broker
MAX_RENDER_DEPTH = 50
MAX_COMPARE_DEPTH = 100
MAX_RANGE_ITEMS = 1_000_000  # range(...) as an array value (a `for` over range builds none)
MAX_REPEAT_ITEMS = 10_000_000  # "ab" * n, [x] * n
SCRIPT_FILENAME = "<script>"


class PSError(ScriptFailure):
    """A PromptScript runtime error a `retry` block may catch."""

    def __init__(self, message: str, kind: str = "RuntimeError") -> None:
        super().__init__(kind, message)


class NullOrdering(PSError):
    """An ordering comparison (< <= > >=) with null: an error, and inside a guard a failed guard."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


class BudgetExceeded(ScriptFailure):
    """A budget ran out: ends the script; never caught by `retry`."""

    def __init__(self, message: str) -> None:
        super().__init__("LimitError", message)


class TimeoutInterrupt(BaseException):
    """Raised (at a safe point) inside the block whose deadline passed. BaseException so that
    no handler but the owning `timeout` block (which turns it into a PSError) stops it."""

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
    if t is list:
        return "array"
    if t is dict:
        return "object"
    if t is PSInstance:
        return f"{value.ps_class.name} instance"
    if t is PSClass:
        return "class"
    return "function" if callable(value) else "value"


# Python's type names as PromptScript says them (for errors Python itself raises).
PYTHON_TYPES = {
    "int": "number", "float": "number", "bool": "boolean", "str": "string", "list": "array",
    "dict": "object", "NoneType": "null", "function": "function", "method": "function",
    "builtin_function_or_method": "function", "BoundMethod": "function", "PSInstance": "instance",
    "PSClass": "class", "range": "array", "tuple": "array",
}


def _ps_type(python_name: str) -> str:
    return PYTHON_TYPES.get(python_name, "value")


def _plural(n: str, word: str) -> str:
    return f"{n} {word}" + ("" if n == "1" else "s")


def python_message(exc: BaseException) -> str:
    """The message of an error Python raised inside script code, in PromptScript's words."""
    text = str(exc)
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    if isinstance(exc, OverflowError):
        return "number too large"
    if isinstance(exc, NameError):
        name = getattr(exc, "name", None)
        return f"variable '{name}' is not defined at this point" if name else "a variable is not defined"
    if isinstance(exc, ValueError) and "integer string conversion" in text:
        return "a number of more than 4300 digits cannot be turned into text"
    m = re.fullmatch(r"'(\w+)' object is not callable", text)
    if m:
        kind = _ps_type(m.group(1))
        return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} is not a function and cannot be called"
    m = re.fullmatch(r"([\w.<>]+)\(\) takes (\d+) positional arguments? but (\d+) (?:was|were) given", text)
    if m:
        name = m.group(1).rsplit(".", 1)[-1]
        given = m.group(3)
        return (f"{name}() takes {_plural(m.group(2), 'argument')} but {given} "
                f"{'was' if given == '1' else 'were'} given")
    m = re.fullmatch(r"([\w.<>]+)\(\) missing (\d+) required positional arguments?: (.*)", text)
    if m:
        name = m.group(1).rsplit(".", 1)[-1]
        return f"{name}() is missing {_plural(m.group(2), 'argument')}: {m.group(3).replace(chr(39), '')}"
    return re.sub(r"'(\w+)'", lambda k: f"'{PYTHON_TYPES.get(k.group(1), k.group(1))}'", text)


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
        try:
            return str(value)
        except ValueError:
            raise PSError("a number of more than 4300 digits cannot be turned into text") from None
    if t is float:
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return repr(value)
    if depth >= MAX_RENDER_DEPTH:
        return "..."
    if t is list:
        return "[" + ", ".join(render(v, depth + 1, False) for v in value) + "]"
    if t is dict:
        return "{" + ", ".join(f"{_key(str(k))}: {render(v, depth + 1, False)}" for k, v in value.items()) + "}"
    if t is PSInstance:
        return f"<{value.ps_class.name}>"
    if t is PSClass:
        return f"<class {value.name}>"
    return "<function>"


# -- arithmetic: numbers only (booleans are not numbers); + also joins strings and arrays --

def ps_add(a, b):
    ta, tb = type(a), type(b)
    if ta is str and tb is str:
        return a + b
    if (ta is int or ta is float) and (tb is int or tb is float):
        try:
            return a + b
        except OverflowError:
            raise PSError("number too large") from None
    if ta is str:
        return a + render(b, top=True)
    if tb is str:
        return render(a, top=True) + b
    if ta is list and tb is list:
        return a + b
    raise PSError(f"cannot add {type_name(b)} to {type_name(a)}")


def _arith(a, b, fn, message: str):
    if _is_number(a) and _is_number(b):
        try:
            return fn(a, b)
        except ZeroDivisionError:
            raise PSError("division by zero") from None
        except OverflowError:
            raise PSError("number too large") from None
    raise PSError(message.format(a=type_name(a), b=type_name(b)))


def ps_sub(a, b):
    return _arith(a, b, lambda x, y: x - y, "cannot subtract {b} from {a}")


def ps_mul(a, b):
    ta, tb = type(a), type(b)
    if (ta is str or ta is list) and tb is int or (tb is str or tb is list) and ta is int:
        seq, n = (a, b) if ta is not int else (b, a)
        if n > 0 and len(seq) * n > MAX_REPEAT_ITEMS:
            raise PSError(f"{type_name(seq)} * {n} would hold {len(seq) * n} items (limit {MAX_REPEAT_ITEMS})")
        return seq * n
    return _arith(a, b, lambda x, y: x * y, "cannot multiply {a} by {b}")


def ps_div(a, b):
    return _arith(a, b, lambda x, y: x / y, "cannot divide {a} by {b}")


def ps_mod(a, b):
    return _arith(a, b, lambda x, y: x % y, "cannot take {a} modulo {b} (% needs two numbers)")


def ps_neg(a):
    if _is_number(a):
        return -a
    raise PSError(f"cannot negate {type_name(a)} (unary - needs a number)")


# -- equality: a boolean is not a number; arrays and objects compare item by item --

def same(a, b, depth: int = 0) -> bool:
    ta, tb = type(a), type(b)
    if ta is not tb:
        return (ta is int or ta is float) and (tb is int or tb is float) and a == b
    if ta is list:
        if len(a) != len(b):
            return False
        if depth >= MAX_COMPARE_DEPTH:
            raise PSError("values nested too deep to compare")
        return all(same(x, y, depth + 1) for x, y in zip(a, b))
    if ta is dict:
        if a.keys() != b.keys():
            return False
        if depth >= MAX_COMPARE_DEPTH:
            raise PSError("values nested too deep to compare")
        return all(same(a[k], b[k], depth + 1) for k in a)
    return a == b if ta in (int, float, str, bool) else a is b


def _compare_check(a, b, op: str) -> None:
    if (_is_number(a) and type(b) is str) or (type(a) is str and _is_number(b)):
        raise PSError(f"cannot compare {type_name(a)} with {type_name(b)} "
                      f"({render(a, top=False)} {op} {render(b, top=False)})")


def ps_eq(a, b):
    ta = type(a)
    if ta is type(b) and (ta is int or ta is str or ta is float):
        return a == b
    _compare_check(a, b, "==")
    return same(a, b)


def ps_ne(a, b):
    return not ps_eq(a, b)


def _ordering(op: str, fn):
    def compare(a, b):
        ta, tb = type(a), type(b)
        if ((ta is int or ta is float) and (tb is int or tb is float)) or (ta is str and tb is str):
            return fn(a, b)
        _compare_check(a, b, op)
        message = f"cannot compare {type_name(a)} {op} {type_name(b)} (only two numbers or two strings)"
        if a is None or b is None:
            raise NullOrdering(message, f"{type_name(a)} {op} {type_name(b)}")
        raise PSError(message)
    return compare


ps_lt = _ordering("<", lambda a, b: a < b)
ps_le = _ordering("<=", lambda a, b: a <= b)
ps_gt = _ordering(">", lambda a, b: a > b)
ps_ge = _ordering(">=", lambda a, b: a >= b)


def ps_in(item, container) -> bool:
    t = type(container)
    if t is list:
        ti = type(item)
        if ti is str or item is None:
            return item in container  # exact: a string only equals a string
        return any(same(item, x) for x in container)
    if t is dict:
        return type(item) is str and item in container  # object keys are strings
    if t is str:
        if type(item) is not str:
            raise PSError(f"'in' a string needs a string on the left, not {type_name(item)}")
        return item in container
    raise PSError(f"'in' needs an array, a string or an object on the right, not {type_name(container)}")


def ps_not_in(item, container) -> bool:
    return not ps_in(item, container)


# -- built-ins --

def length(*args):
    if len(args) != 1:
        raise PSError(f"len() takes 1 argument ({len(args)} given)")
    value = args[0]
    if type(value) in (str, list, dict):
        return len(value)
    raise PSError(f"len() needs an array, a string or an object, not {type_name(value)}")


def _range_args(args) -> range:
    if not 1 <= len(args) <= 3:
        raise PSError(f"range() takes 1, 2 or 3 arguments ({len(args)} given)")
    for a in args:
        if type(a) is not int:
            raise PSError(f"range() arguments must be integers, not {type_name(a)}")
    if len(args) == 3 and args[2] == 0:
        raise PSError("range() step cannot be zero")
    return range(*args)


def ps_range(*args) -> list:
    """range(...) as a value: a real array (``for i in range(...)`` never builds one)."""
    r = _range_args(args)
    try:
        n = len(r)
    except OverflowError:
        n = MAX_RANGE_ITEMS + 1
    if n > MAX_RANGE_ITEMS:
        raise PSError(f"range() as an array would hold {n} items (limit {MAX_RANGE_ITEMS}); "
                      "to count, loop over it directly: for i in range(...)")
    return list(r)


def ps_range_iter(*args) -> range:
    return _range_args(args)


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
    if t is list or t is str:
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
    if t is list or t is str or t is range:  # a range only ever comes from ps_range_iter
        return iter(obj)
    if t is dict:
        return iter(list(obj))
    if t is RetryBlock:
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
    if t is list:
        return [to_json(v, what, depth + 1) for v in value]
    if t is dict:
        return {str(k): to_json(v, what, depth + 1) for k, v in value.items()}
    raise PSError(f"{what}: a {type_name(value)} cannot be sent to an action")


def dumps(value, what: str) -> str:
    try:
        return json.dumps(to_json(value, what), ensure_ascii=False)
    except ValueError:  # an integer of more than 4300 digits
        raise PSError(f"{what}: a number of more than 4300 digits cannot be sent to an action") from None


# ---- the run-time state: steps, deadlines, scopes ------------------------------------------

class Deadline:
    __slots__ = ("at", "ms", "line", "fired", "budget")

    def __init__(self, at: float, ms, line: int, budget: bool = False) -> None:
        self.at, self.ms, self.line, self.fired, self.budget = at, ms, line, False, budget


def _interruptible(frame) -> bool:
    """True when an interrupt may be raised right here: the innermost frame is the worker's
    helper code, called (directly or not) by the script, and no block machinery is running."""
    if frame is None or frame.f_code.co_filename == SCRIPT_FILENAME:
        return False  # the script's own code: wait for its next statement
    script = False
    while frame is not None:
        code = frame.f_code
        if code in MACHINERY:
            return False
        if code.co_filename == SCRIPT_FILENAME:
            script = True
        frame = frame.f_back
    return script


class Runtime:
    def __init__(self, client: BrokerClient, config: dict) -> None:
        self.client = client
        self.max_steps = int(config.get("max_steps") or 0)
        self.max_time_ms = int(config.get("max_time_ms") or 0)
        base = config.get("policy")
        self.base_policy = base if type(base) is dict else {}
        changed = config.get("files_changed")
        self.files_changed = changed if type(changed) is int else 0
        self.started = time.monotonic()
        self.steps = 0
        self.deadlines: list[Deadline] = []
        self.scopes: list[dict] = []
        self.critical = 0
        self.due = False  # an interrupt waits for the next safe point
        self.ended = False
        self.check_at = 0  # ps_step's next slow path: a report, the step budget or `due`
        self.plan_check(0)
        if self.max_time_ms:
            self.deadlines.append(Deadline(self.started + self.max_time_ms / 1000, self.max_time_ms, 0, budget=True))
        signal.signal(signal.SIGALRM, self.on_alarm)
        self.rearm()

    def policy(self) -> dict:
        return self.scopes[-1] if self.scopes else self.base_policy

    # -- critical sections: no interrupt while talking to the broker --

    def enter_critical(self) -> None:
        self.critical += 1

    def leave_critical(self) -> None:
        self.critical -= 1

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

    def action_call(self, op: str, **args):
        """ps.action / ps.parallel, with the time left in the earliest pending `timeout` block:
        the broker stops its work there and answers TimeoutError, which becomes that block's
        timeout here."""
        entry = None
        for e in self.deadlines:
            if not e.budget and not e.fired and (entry is None or e.at < entry.at):
                entry = e
        left_ms = 0 if entry is None else max(1, math.ceil((entry.at - time.monotonic()) * 1000))
        try:
            return self.call(op, deadline_ms=left_ms, **args)
        except ScriptFailure as exc:
            if exc.kind != "TimeoutError":
                raise
            if entry is None or entry not in self.deadlines:
                raise PSError(exc.message) from None
            self.fire(force=entry)
            raise

    # -- deadlines --

    def on_alarm(self, signum, frame) -> None:
        if self.ended:
            return
        if self.critical or not _interruptible(frame):
            self.defer()
            return
        self.fire()

    def defer(self) -> None:
        """The next statement (or a retry's next backoff) takes the interrupt."""
        self.due = True
        self.check_at = 0

    def safe_point(self) -> None:
        if self.due and not self.critical:
            self.due = False
            self.plan_check(self.steps)
            self.fire()

    def fire(self, force: Deadline | None = None) -> None:
        now = time.monotonic()
        for entry in self.deadlines:  # outermost first: it wins
            if not entry.fired and (entry.at <= now or entry is force):
                entry.fired = True
                if entry.budget:
                    self.budget_spent(f"budget exceeded: --max-time {self.max_time_ms} ms "
                                      f"(the script ran for {int((now - self.started) * 1000)} ms)")
                raise TimeoutInterrupt(entry)
        self.rearm()

    def budget_spent(self, message: str):
        """The run's log gets its `budget` event (the broker marks the budget spent), then stop."""
        try:
            self.call("ps.event", kind="budget", line=0, data=json.dumps({"message": message}))
        except ScriptFailure:
            pass
        raise BudgetExceeded(message)

    def rearm(self) -> None:
        pending = [e.at for e in self.deadlines if not e.fired]
        if not pending or self.ended:
            signal.setitimer(signal.ITIMER_REAL, 0)
            return
        signal.setitimer(signal.ITIMER_REAL, max(min(pending) - time.monotonic(), 1e-5))

    # -- steps --

    def step_hook(self):
        runtime = self

        def ps_step():
            n = runtime.steps + 1
            runtime.steps = n
            if n >= runtime.check_at:
                runtime.slow_step(n)

        return ps_step

    def plan_check(self, n: int) -> None:
        """ps_step's next slow path: the next report of the counter, or the step past the budget."""
        if self.due:
            self.check_at = 0
            return
        self.check_at = (n // STEP_REPORT_EVERY + 1) * STEP_REPORT_EVERY
        if self.max_steps:
            self.check_at = min(self.check_at, self.max_steps + 1)

    def slow_step(self, n: int) -> None:
        self.safe_point()
        if self.max_steps and n > self.max_steps:
            self.steps -= 1
            self.call("ps.steps", count=n)  # the broker logs the budget and refuses (LimitError)
            raise BudgetExceeded(f"budget exceeded: --max-steps {self.max_steps} "
                                 f"(the script executed {self.max_steps} statements)")
        if n % STEP_REPORT_EVERY == 0:
            self.call("ps.steps", count=n)
        self.plan_check(n)

    def event(self, kind: str, line: int, **data) -> None:
        self.call("ps.event", kind=kind, line=line, data=json.dumps(data))


# ---- control blocks ----------------------------------------------------------------------------
# Their __enter__/__exit__ are MACHINERY: no interrupt is ever raised inside them.

def _number(value, what: str, line: int, low: float, high: float):
    if not _is_number(value) or not (low <= value <= high):
        raise PSError(f"{what} must be a number from {low:g} to {high:g}, not {render(value, top=False)} (line {line})")
    return value


def _outcome(exc) -> dict:
    if exc is None:
        return {"outcome": "ok"}
    if isinstance(exc, TimeoutInterrupt):
        return {"outcome": "interrupted", "by_line": exc.entry.line}
    if isinstance(exc, ScriptFailure):
        return {"outcome": "error", "error_kind": exc.kind, "error": exc.message[:500]}
    return {"outcome": "error", "error": python_message(exc)[:500]}


class MainBlock:
    """``with ps_main():`` around the whole script: reports the final step count and words a
    Python error the PromptScript way (its traceback kept, so the error keeps its line)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        rt = self.runtime
        budget = next((e for e in rt.deadlines if e.budget and not e.fired), None)
        # One step: the script is over (no interrupt any more), and it was over budget or not.
        rt.ended, over = True, exc is None and budget is not None and budget.at <= time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, 0)
        try:
            rt.event("end", 0, steps=rt.steps)
        except ScriptFailure:
            pass
        if over:  # --max-time passed while the last statement ran: the run is over budget
            rt.budget_spent(f"budget exceeded: --max-time {rt.max_time_ms} ms (the script ran for "
                            f"{int((time.monotonic() - rt.started) * 1000)} ms)")
        if exc is None or isinstance(exc, (ScriptFailure, MemoryError, RecursionError)):
            return False
        if isinstance(exc, TimeoutInterrupt):  # cannot happen: each block owns its interrupt
            message = f"timeout: the block at line {exc.entry.line} did not finish within {exc.entry.ms:g} ms"
        elif isinstance(exc, Exception):
            message = python_message(exc)
        else:
            return False
        raise PSError(message).with_traceback(tb) from None


class TimeoutBlock:
    def __init__(self, runtime: Runtime, ms, line: int) -> None:
        _number(ms, "timeout", line, 1, MAX_BLOCK_MS)
        self.runtime, self.ms, self.line = runtime, ms, line

    def __enter__(self):
        rt = self.runtime
        rt.event("block_start", self.line, block="timeout", ms=self.ms)
        self.started = time.monotonic()
        self.entry = Deadline(self.started + self.ms / 1000, self.ms, self.line)
        rt.deadlines.append(self.entry)
        rt.rearm()
        return None

    def __exit__(self, exc_type, exc, tb):
        rt = self.runtime
        if self.entry in rt.deadlines:
            rt.deadlines.remove(self.entry)
        rt.rearm()
        mine = isinstance(exc, TimeoutInterrupt) and exc.entry is self.entry
        elapsed = round((time.monotonic() - self.started) * 1000, 3)
        if mine:
            rt.event("timeout", self.line, ms=self.ms)
            rt.event("block_end", self.line, block="timeout", outcome="timeout", elapsed_ms=elapsed)
            raise PSError(f"timeout: the block at line {self.line} did not finish within {self.ms:g} ms") from None
        rt.event("block_end", self.line, block="timeout", elapsed_ms=elapsed, **_outcome(exc))
        return False


class RetryBlock:
    """``with ps_retry(N, MS, line) as ps_attempts: for ps_attempt in ps_attempts:
    with ps_attempt: <body>``: the with logs the block's start and end; the loop yields one
    Attempt per try (sleeping the backoff before each but the first, interruptibly)."""

    def __init__(self, runtime: Runtime, attempts, backoff, line: int) -> None:
        if type(attempts) is not int or not 1 <= attempts <= MAX_RETRY_ATTEMPTS:
            raise PSError(f"retry needs a whole number of attempts from 1 to {MAX_RETRY_ATTEMPTS}, "
                          f"not {render(attempts, top=False)} (line {line})")
        _number(backoff, "backoff", line, 0, MAX_BLOCK_MS)
        self.runtime, self.attempts, self.backoff, self.line = runtime, attempts, backoff, line
        self.attempt = 0
        self.done = False
        self.try_ = Attempt(self)

    def __enter__(self):
        self.started = time.monotonic()
        self.runtime.event("block_start", self.line, block="retry", attempts=self.attempts, backoff_ms=self.backoff)
        return self

    def __exit__(self, exc_type, exc, tb):
        elapsed = round((time.monotonic() - self.started) * 1000, 3)
        self.runtime.event("block_end", self.line, block="retry", attempts_made=self.attempt,
                           elapsed_ms=elapsed, **_outcome(exc))
        return False

    def __iter__(self):
        return self

    def __next__(self):
        if self.done or self.attempt >= self.attempts:
            raise StopIteration
        if self.attempt and self.backoff:
            self.runtime.safe_point()
            time.sleep(self.backoff / 1000)  # a `timeout` around the retry interrupts it
        self.attempt += 1
        return self.try_


class Attempt:
    __slots__ = ("block",)

    def __init__(self, block: RetryBlock) -> None:
        self.block = block

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        block = self.block
        if exc is None:
            block.done = True
            return False
        if not catchable(exc) or block.attempt >= block.attempts:
            block.done = True
            return False  # the last error propagates as it is
        message = exc.message if isinstance(exc, ScriptFailure) else python_message(exc)
        block.runtime.event("retry", block.line, attempt=block.attempt, of=block.attempts, error=message[:500])
        return True


class PolicyScope:
    def __init__(self, runtime: Runtime, policy, line: int) -> None:
        self.runtime, self.line = runtime, line
        self.policy = validate_policy(policy, line)

    def __enter__(self):
        rt = self.runtime
        effective = rt.call("ps.scope", change="enter", policy=json.dumps(self.policy), line=self.line)
        rt.scopes.append(effective if type(effective) is dict else {})
        return None

    def __exit__(self, exc_type, exc, tb):
        rt = self.runtime
        if rt.scopes:
            rt.scopes.pop()
        rt.call("ps.scope", change="exit", policy="", line=self.line)
        return False


MACHINERY = frozenset(f.__code__ for f in (
    MainBlock.__exit__, TimeoutBlock.__enter__, TimeoutBlock.__exit__, RetryBlock.__enter__,
    RetryBlock.__exit__, Attempt.__exit__, PolicyScope.__enter__, PolicyScope.__exit__,
))


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
        if key in ("maxFileBytes", "maxFilesChanged"):
            if type(value) is not int or value < 0:
                raise PSError(f"policy {key} must be {POLICY_KEYS[key]} (line {line})")
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
        reply = rt.action_call("ps.action", name=action, args=dumps(action_args, action))
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
        return rt.action_call("ps.parallel", items=dumps(items, "parallel"), max=most, fail_fast=fail_fast)

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
