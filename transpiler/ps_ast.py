"""The PromptScript abstract syntax tree.

Frozen dataclasses with 1-based ``line``/``col`` (and exclusive ``end_line``/``end_col``);
positions are excluded from equality. ``dump(node)`` prints the compact form the
table-driven tests compare against, e.g. ``(Assign target=x value=(BinOp op=+ ...))``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields


def _pos():
    return field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Node:
    line: int = _pos()
    col: int = _pos()
    end_line: int = _pos()
    end_col: int = _pos()


# ---- expressions -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Name(Node):
    id: str


@dataclass(frozen=True)
class Const(Node):
    value: object  # int, float, str, bool or None


@dataclass(frozen=True)
class Array(Node):
    items: tuple


@dataclass(frozen=True)
class Object(Node):
    keys: tuple  # str
    values: tuple


@dataclass(frozen=True)
class BinOp(Node):
    op: str  # + - * / %
    left: Node
    right: Node


@dataclass(frozen=True)
class UnaryOp(Node):
    op: str  # - not
    operand: Node


@dataclass(frozen=True)
class BoolOp(Node):
    op: str  # and or
    left: Node
    right: Node


@dataclass(frozen=True)
class Compare(Node):
    op: str  # == != < <= > >= in "not in"
    left: Node
    right: Node


@dataclass(frozen=True)
class Call(Node):
    func: Node
    args: tuple


@dataclass(frozen=True)
class Attr(Node):
    obj: Node
    name: str


@dataclass(frozen=True)
class Index(Node):
    obj: Node
    index: Node


# ---- statements ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Assign(Node):
    target: Node  # Name, Attr or Index
    value: Node


@dataclass(frozen=True)
class ExprStmt(Node):
    value: Node


@dataclass(frozen=True)
class Return(Node):
    value: Node | None


@dataclass(frozen=True)
class Guard(Node):
    test: Node
    text: str  # the expression as written


@dataclass(frozen=True)
class Break(Node):
    pass


@dataclass(frozen=True)
class Continue(Node):
    pass


@dataclass(frozen=True)
class Pass(Node):
    pass


@dataclass(frozen=True)
class FunctionDef(Node):
    name: str
    params: tuple
    body: tuple


@dataclass(frozen=True)
class ClassDef(Node):
    name: str
    methods: tuple  # FunctionDef; the constructor is named "__init__"


@dataclass(frozen=True)
class If(Node):
    test: Node
    body: tuple
    elifs: tuple = ()  # of If (no elifs of their own)
    orelse: tuple = ()
    else_line: int = _pos()


@dataclass(frozen=True)
class While(Node):
    test: Node
    body: tuple


@dataclass(frozen=True)
class For(Node):
    target: str
    iter: Node
    body: tuple


@dataclass(frozen=True)
class Policy(Node):
    policy: Node
    body: tuple


@dataclass(frozen=True)
class Retry(Node):
    attempts: Node
    backoff: Node | None
    body: tuple


@dataclass(frozen=True)
class Timeout(Node):
    ms: Node
    body: tuple


@dataclass(frozen=True)
class Module(Node):
    body: tuple


def dump(node) -> str:
    """The compact printed form of a node (names bare, strings JSON-quoted)."""
    if isinstance(node, tuple):
        return "(" + " ".join(dump(n) for n in node) + ")"
    if isinstance(node, Name):
        return node.id
    if isinstance(node, Const):
        v = node.value
        if isinstance(v, str):
            return json.dumps(v)
        return {True: "true", False: "false", None: "null"}.get(v, repr(v)) if not isinstance(v, (int, float)) or isinstance(v, bool) else repr(v)
    if not isinstance(node, Node):
        return json.dumps(node) if isinstance(node, str) and not node.isidentifier() else str(node)
    parts = [type(node).__name__]
    for f in fields(node):
        if not f.compare:
            continue
        value = getattr(node, f.name)
        if value is None or value == ():
            continue
        if f.name == "text":
            continue
        parts.append(f"{f.name}={dump(value)}")
    return "(" + " ".join(parts) + ")"


def walk(node):
    """Every node under ``node`` (itself included), iteratively, parents first."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, tuple):
            stack.extend(reversed(n))
            continue
        if not isinstance(n, Node):
            continue
        yield n
        for f in reversed(fields(n)):
            v = getattr(n, f.name)
            if isinstance(v, (Node, tuple)):
                stack.append(v)
