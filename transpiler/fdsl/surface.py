"""The script-facing API of FilesDSL, as data.

This is the union of every name a script may call or read as an attribute. It is security
layer 1: the grammar plus the checker refuse any attribute or function not listed here, so a
script cannot even express ``x.__class__`` or ``open(...)``. The worker's guards (layer 2)
mirror these tables with per-type allowlists; a test keeps the two equal, so a name added here
must be added there (and the other way round).
"""

from __future__ import annotations

# Functions a script may call by bare name. The worker supplies each as a global.
BUILTINS: frozenset[str] = frozenset(
    {"print", "len", "Directory", "File", "str", "int", "sorted", "min", "max", "sum", "abs"}
)

# Names the generated code uses that the worker supplies, but that a script may not name.
RUNTIME_HELPERS: frozenset[str] = frozenset({"inclusive_range", "modulo"})

# Attribute names, per receiver type (documentation; the checker uses the union).
DIRECTORY_ATTRS = frozenset({"files", "search", "list", "find", "grep", "path", "name", "recursive"})
FILE_ATTRS = frozenset(
    {
        "read", "search", "contains", "head", "tail", "snippets", "table", "lines",
        "name", "path", "suffix", "size", "modified", "page_count",
    }
)
RECORD_ATTRS = frozenset({"type", "name", "path", "size", "modified", "lastModified", "target", "line", "content",
                          "reason"})
STRING_METHODS = frozenset(
    {
        "lower", "upper", "strip", "lstrip", "rstrip", "split", "splitlines",
        "startswith", "endswith", "replace", "find", "count", "join",
    }
)
LIST_METHODS = frozenset({"append", "count", "index"})
RESULT_ATTRS = LIST_METHODS | {"total", "truncated", "skipped"}  # what search() and grep() return

ATTRIBUTES_BY_TYPE: dict[str, frozenset[str]] = {
    "Directory": DIRECTORY_ATTRS,
    "File": FILE_ATTRS,
    "record": RECORD_ATTRS,
    "str": STRING_METHODS,
    "list": LIST_METHODS,
    "results": RESULT_ATTRS,
}

# Every attribute name a script may write after a dot.
KNOWN_ATTRIBUTES: frozenset[str] = frozenset().union(*ATTRIBUTES_BY_TYPE.values())

# Python words that are not FilesDSL: refused wherever they appear as a name.
RESERVED_WORDS: frozenset[str] = frozenset(
    {
        "class", "def", "lambda", "None", "import", "pass", "while", "with", "yield", "global",
        "del", "try", "raise", "return", "assert", "async", "await", "from", "as", "is",
        "nonlocal", "except", "finally",
    }
)  # True and False are accepted as true and false
