"""The PromptScript abstract syntax tree.

Frozen dataclasses with 1-based ``line``/``col`` (and exclusive ``end_line``/``end_col``);
positions are excluded from equality. ``dump(node)`` prints the compact form the
table-driven tests compare against, e.g. ``(Assign target=x value=(BinOp op=+ ...))``.
"""

from __future__ import annotations

import json

from ..tree import Node, hidden, node, position, walk
from ..tree import dump as _dump

__all__ = ["Node", "dump", "walk"]


# ---- expressions -----------------------------------------------------------------------------

@node
class Name(Node):
    id: str


@node
class Const(Node):
    value: object  # int, float, str, bool or None


@node
class Array(Node):
    items: tuple


@node
class Object(Node):
    keys: tuple  # str
    values: tuple


@node
class BinOp(Node):
    op: str  # + - * / %
    left: Node
    right: Node


@node
class UnaryOp(Node):
    op: str  # - not
    operand: Node


@node
class BoolOp(Node):
    op: str  # and or
    left: Node
    right: Node


@node
class Compare(Node):
    op: str  # == != < <= > >= in "not in"
    left: Node
    right: Node


@node
class Call(Node):
    func: Node
    args: tuple


@node
class Attr(Node):
    obj: Node
    name: str


@node
class Index(Node):
    obj: Node
    index: Node


# ---- statements ------------------------------------------------------------------------------

@node
class Assign(Node):
    target: Node  # Name, Attr or Index
    value: Node


@node
class ExprStmt(Node):
    value: Node


@node
class Return(Node):
    value: Node | None


@node
class Guard(Node):
    test: Node
    text: str = hidden()  # the expression as written (for messages)


@node
class Break(Node):
    pass


@node
class Continue(Node):
    pass


@node
class Pass(Node):
    pass


@node
class FunctionDef(Node):
    name: str
    params: tuple
    body: tuple


@node
class ClassDef(Node):
    name: str
    methods: tuple  # FunctionDef; the constructor is named "__init__"


@node
class If(Node):
    test: Node
    body: tuple
    elifs: tuple = ()  # of If (no elifs of their own)
    orelse: tuple = ()
    else_line: int = position()


@node
class While(Node):
    test: Node
    body: tuple


@node
class For(Node):
    target: str
    iter: Node
    body: tuple


@node
class Policy(Node):
    policy: Node
    body: tuple


@node
class Retry(Node):
    attempts: Node
    backoff: Node | None
    body: tuple


@node
class Timeout(Node):
    ms: Node
    body: tuple


@node
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
