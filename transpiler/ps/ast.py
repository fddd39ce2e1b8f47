"""The PromptScript abstract syntax tree.

Frozen dataclasses with 1-based ``line``/``col`` (and exclusive ``end_line``/``end_col``);
positions are excluded from equality. ``dump(node)`` prints the compact form the
table-driven tests compare against, e.g. ``(Assign target=x value=(BinOp op=+ ...))``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..tree import Node, hidden, position, walk
from ..tree import dump as _dump

__all__ = ["Node", "dump", "walk"]


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
    text: str = hidden()  # the expression as written (for messages)


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
    else_line: int = position()


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


def _leaf(node: object) -> str | None:
    if isinstance(node, Name):
        return node.id
    if isinstance(node, Const):
        v = node.value
        if isinstance(v, str):
            return json.dumps(v)
        return {True: "true", False: "false", None: "null"}[v] if v is None or isinstance(v, bool) else repr(v)
    return None


def _word(value: str) -> str:
    return value if value.isidentifier() else json.dumps(value)


def dump(node) -> str:
    """The compact printed form of a node (names bare, strings JSON-quoted)."""
    return _dump(node, _leaf, _word)
