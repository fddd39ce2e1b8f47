"""PromptScript values in the worker: type names, rendering, operators, comparisons, ranges."""

from __future__ import annotations

import json
import re

from sandbox_worker.values import Vocabulary

from .classes import PSClass, PSClient, PSInstance
from .errors import MAX_COMPARE_DEPTH, MAX_RANGE_ITEMS, MAX_REPEAT_ITEMS, NullOrdering, PSError

# ---- values --------------------------------------------------------------------------------

def _own_name(value) -> str | None:
    t = type(value)
    if t is PSInstance:
        return f"{value.ps_class.name} instance"
    if t is PSClass:
        return "class"
    if t is PSClient:
        return "LLMClient"
    return "function" if callable(value) else None


def _own_form(value) -> str | None:
    t = type(value)
    if t is PSInstance:
        return f"<{value.ps_class.name}>"
    if t is PSClass:
        return f"<class {value.name}>"
    if t is PSClient:
        return "<LLMClient>"
    return "<function>"


def _key(key: str) -> str:
    return key if key.isidentifier() else json.dumps(key, ensure_ascii=False)


# PromptScript's words for values (JSON's): strings quoted as JSON, object keys bare when
# they are names.
VALUES = Vocabulary(null="null", words={str: "string", bool: "boolean", int: "number", float: "number",
                                        list: "array", dict: "object"},
                    quote=lambda text: json.dumps(text, ensure_ascii=False), error=PSError,
                    own_name=_own_name, own_form=_own_form, key=_key)
type_name = VALUES.type_name
render = VALUES.render


# Python's type names as PromptScript says them (for errors Python itself raises).
PYTHON_TYPES = {
    "int": "number", "float": "number", "bool": "boolean", "str": "string", "list": "array",
    "dict": "object", "NoneType": "null", "function": "function", "method": "function",
    "builtin_function_or_method": "function", "BoundMethod": "function", "PSInstance": "instance",
    "PSClass": "class", "PSClient": "LLMClient", "range": "array", "tuple": "array",
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
        if name is None:  # a local read before it is assigned (UnboundLocalError) carries no name
            m = re.match(r"cannot access (?:local|free) variable '(\w+)'", text)
            name = m and m.group(1)
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


def is_number(value) -> bool:
    t = type(value)
    return t is int or t is float


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
    if is_number(a) and is_number(b):
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
    if is_number(a):
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
    if (is_number(a) and type(b) is str) or (type(a) is str and is_number(b)):
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
