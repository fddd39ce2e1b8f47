"""FilesDSL's built-in functions: Directory, File and print bound to the broker connection,
and the pure ones (len, str, int, sorted, min, max, sum, abs) plus the generated code's
helpers (inclusive_range, modulo), each checking its arguments the DSL's way."""

from __future__ import annotations

from sandbox_worker.client import BrokerClient, ScriptFailure

from .api import DirectoryObject, FileObject, checked, expect, fail, quote, render, type_name

MAX_RANGE_ITEMS = 1_000_000


class Builtins:
    """The DSL's built-in functions, bound to one broker connection."""

    def __init__(self, client: BrokerClient) -> None:
        self.client = client

    @checked
    def Directory(self, path, recursive=True):
        expect("Directory", "path", path, str)
        expect("Directory", "recursive", recursive, bool)
        return DirectoryObject(self.client, self.client.call("dir.open", path=path), recursive)

    @checked
    def File(self, path):
        expect("File", "path", path, str)
        return FileObject(self.client, self.client.call("file.open", path=path))

    def print(self, *values, sep=" ", end="\n"):
        expect("print", "sep", sep, str)
        expect("print", "end", end, str)
        self.client.output(sep.join(render(value) for value in values) + end)


def length(value) -> int:
    if isinstance(value, (str, list)):
        return len(value)
    raise fail(f"len() of {type_name(value)} is not defined")


def to_string(value="") -> str:
    return render(value)


def to_int(value) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise fail(f"int(): {quote(value[:50])} is not a number") from None
    raise fail(f"int() of {type_name(value)} is not defined")


def check_list(function: str, values) -> list:
    if not isinstance(values, list):
        raise fail(f"{function}() takes a list, not {type_name(values)}")
    return values


def sort(values, reverse=False) -> list:
    expect("sorted", "reverse", reverse, bool)
    try:
        return sorted(check_list("sorted", values), reverse=reverse)
    except TypeError:
        kinds = sorted({type_name(v) for v in values})
        raise fail(f"sorted(): cannot order a list of {' and '.join(kinds)} values") from None


def extreme(function, name):
    def pick(*values):
        items = values[0] if len(values) == 1 else list(values)
        items = check_list(name, items)
        if not items:
            raise fail(f"{name}() of an empty list")
        try:
            return function(items)
        except TypeError:
            raise fail(f"{name}(): values of different types cannot be compared") from None

    pick.__name__ = name
    return pick


def total(values) -> int:
    values = check_list("sum", values)
    for value in values:
        expect("sum", "each item", value, int)
    return sum(values)


def absolute(value) -> int:
    return abs(expect("abs", "value", value, int))


def modulo(left, right) -> int:
    """The DSL's `%`: the remainder of two integers (never string formatting)."""
    if type(left) is not int or type(right) is not int:
        raise fail(f"% works on two integers, not {type_name(left)} and {type_name(right)}")
    if right == 0:
        raise fail("division by zero")
    return left % right


def inclusive_range(start, stop) -> list:
    """The list literal range `[a:b]`: inclusive at both ends, descending when a > b."""
    expect("range", "start", start, int)
    expect("range", "end", stop, int)
    count = abs(stop - start) + 1
    if count > MAX_RANGE_ITEMS:
        raise ScriptFailure("LimitError", f"range {start}:{stop} has {count} items (limit {MAX_RANGE_ITEMS})")
    step = 1 if stop >= start else -1
    return list(range(start, stop + step, step))
