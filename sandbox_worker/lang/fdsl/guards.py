"""The restricted globals a transpiled script runs with: RestrictedPython's hooks, filled in.

Fail closed: an attribute is reachable only if it is listed for the exact type of the object;
only lists, strings and directories can be iterated; only lists and strings indexed.
"""

from __future__ import annotations

from sandbox_worker.client import BrokerClient

from . import builtins as dsl
from .api import DirectoryObject, FileObject, Record, ResultList, fail, type_name

# The script-facing API, per type. transpiler/fdsl/surface.py mirrors the union of these names
# (layer 1); tests/test_surface.py keeps the two equal.
ALLOWED_ATTRIBUTES: dict[type, frozenset[str]] = {
    DirectoryObject: frozenset({"files", "search", "list", "find", "grep", "path", "name", "recursive"}),
    FileObject: frozenset(
        {"read", "search", "contains", "head", "tail", "snippets", "table", "lines",
         "name", "path", "suffix", "size", "modified", "page_count"}
    ),
    str: frozenset(
        {"lower", "upper", "strip", "lstrip", "rstrip", "split", "splitlines", "startswith",
         "endswith", "replace", "find", "count", "join"}
    ),
    list: frozenset({"append", "count", "index"}),
    ResultList: frozenset({"append", "count", "index", "total", "truncated", "skipped"}),
}
RECORD_FIELDS = frozenset({"type", "name", "path", "size", "modified", "lastModified", "target", "line", "content",
                           "reason"})
LISTS = (list, ResultList)


def guarded_getattr(obj, name):
    """Allow only the listed attributes of the listed types; deny everything else."""
    if not isinstance(name, str) or name.startswith("_"):
        raise fail("attribute names cannot start with '_'")
    if type(obj) is Record:
        if name in RECORD_FIELDS:
            return obj.field(name)
    elif name in ALLOWED_ATTRIBUTES.get(type(obj), ()):
        return getattr(obj, name)
    raise fail(f"{type_name(obj)} has no attribute '{name}'")


def guarded_getitem(obj, index):
    if type(obj) not in (*LISTS, str):
        raise fail(f"{type_name(obj)} cannot be indexed")
    if type(index) is slice:  # xs[a:b]: bounds are ints (or left out), as in Python
        for bound in (index.start, index.stop):
            if bound is not None and type(bound) is not int:
                raise fail(f"a slice bound must be an int, not {type_name(bound)}")
        if index.step is not None:
            raise fail("a slice has no step in FilesDSL (xs[a:b])")
        return obj[index]
    if type(index) is not int:
        raise fail(f"an index must be an int, not {type_name(index)}")
    try:
        return obj[index]
    except IndexError:
        raise fail(f"index {index} is out of range ({type_name(obj)} of length {len(obj)})") from None


def guarded_iter(obj):
    if type(obj) in (*LISTS, str):
        return iter(obj)
    if type(obj) is DirectoryObject:
        return obj.stream()
    raise fail(f"cannot iterate over {type_name(obj)}")


def deny_write(obj):
    """FilesDSL has no attribute or item assignment; generated code never reaches this."""
    raise fail(f"{type_name(obj)} cannot be modified")


class PrintHook:
    """RestrictedPython turns print(...) into `_print_(_getattr_)._call_print(...)`."""

    def __init__(self, builtins: dsl.Builtins) -> None:
        self.builtins = builtins

    def __call__(self, getattr_hook):
        return self

    def _call_print(self, *values, **options):
        unknown = set(options) - {"sep", "end"}
        if unknown:
            raise fail(f"print() has no argument '{sorted(unknown)[0]}' (it takes: sep, end)")
        self.builtins.print(*values, **options)


def restricted_globals(client: BrokerClient) -> dict:
    bound = dsl.Builtins(client)
    safe_builtins = {
        "print": bound.print,
        "len": dsl.length,
        "str": dsl.to_string,
        "int": dsl.to_int,
        "sorted": dsl.sort,
        "min": dsl.extreme(min, "min"),
        "max": dsl.extreme(max, "max"),
        "sum": dsl.total,
        "abs": dsl.absolute,
        "Directory": bound.Directory,
        "File": bound.File,
        "inclusive_range": dsl.inclusive_range,
        "modulo": dsl.modulo,
    }
    return {
        "__builtins__": safe_builtins,
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": guarded_iter,
        "_write_": deny_write,
        "_print_": PrintHook(bound),
    }
