"""The FilesDSL abstract syntax tree.

Every node is a frozen dataclass with the 1-based ``line``/``col`` where its construct starts
(and ``end_line``/``end_col``, exclusive, where it ends). Positions are excluded from equality,
so two trees compare equal when they mean the same program wherever they were written.

``dump(node)`` prints the compact form used by the table-driven tests, e.g.::

    (Assign target=y value=(Call func=(Attr obj=d name=search) args=("x")))

Names, ints and booleans print bare (``d``, ``1``, ``true``), strings JSON-quoted, tuples in
parentheses; empty tuples and ``None`` fields are left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Union

from ..tree import Node, position, walk
from ..tree import dump as _dump

__all__ = [
    "Node", "Expr", "Stmt", "Module",
    "Name", "Int", "Bool", "Str", "ListExpr", "Range", "BinOp", "UnaryOp", "BoolOp",
    "Compare", "Call", "Keyword", "Attr", "Index", "Slice",
    "Assign", "AugAssign", "ExprStmt", "For", "If", "Elif", "Break", "Continue",
    "dump", "walk",
]


# ---- expressions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Name(Node):
    id: str


@dataclass(frozen=True)
class Int(Node):
    value: int


@dataclass(frozen=True)
class Bool(Node):
    value: bool


@dataclass(frozen=True)
class Str(Node):
    value: str  # escapes already applied


@dataclass(frozen=True)
class Range(Node):
    """``start:stop`` inside a list literal: inclusive, descending when start > stop."""

    start: "Expr"
    stop: "Expr"


@dataclass(frozen=True)
class ListExpr(Node):
    items: tuple["Expr | Range", ...]


@dataclass(frozen=True)
class BinOp(Node):
    op: str  # + - * / %
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class UnaryOp(Node):
    op: str  # - not
    operand: "Expr"


@dataclass(frozen=True)
class BoolOp(Node):
    op: str  # and or
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class Compare(Node):
    """A (possibly chained) comparison: ``left ops[0] comparators[0] ops[1] ...``."""

    left: "Expr"
    ops: tuple[str, ...]  # == != < <= > >= in "not in"
    comparators: tuple["Expr", ...]


@dataclass(frozen=True)
class Keyword(Node):
    name: str
    value: "Expr"


@dataclass(frozen=True)
class Call(Node):
    func: "Expr"
    args: tuple["Expr", ...] = ()
    kwargs: tuple[Keyword, ...] = ()


@dataclass(frozen=True)
class Attr(Node):
    obj: "Expr"
    name: str
    name_line: int = position()  # where the attribute name itself is written
    name_col: int = position()


@dataclass(frozen=True)
class Index(Node):
    obj: "Expr"
    index: "Expr"


@dataclass(frozen=True)
class Slice(Node):
    obj: "Expr"
    lower: "Expr | None"  # None: from the start
    upper: "Expr | None"  # None: to the end


Expr = Union[Name, Int, Bool, Str, ListExpr, BinOp, UnaryOp, BoolOp, Compare, Call, Attr, Index, Slice]

# ---- statements ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Assign(Node):
    target: str
    value: Expr


@dataclass(frozen=True)
class AugAssign(Node):
    target: str
    op: str  # + - * / %
    value: Expr


@dataclass(frozen=True)
class ExprStmt(Node):
    value: Expr


@dataclass(frozen=True)
class For(Node):
    target: str
    iter: Expr
    body: tuple["Stmt", ...]
    target_line: int = position()
    target_col: int = position()


@dataclass(frozen=True)
class Elif(Node):
    test: Expr
    body: tuple["Stmt", ...]


@dataclass(frozen=True)
class If(Node):
    test: Expr
    body: tuple["Stmt", ...]
    elifs: tuple[Elif, ...] = ()
    orelse: tuple["Stmt", ...] = ()
    else_line: int = position()  # where ``else`` is written, when there is one
    else_col: int = position()


@dataclass(frozen=True)
class Break(Node):
    pass


@dataclass(frozen=True)
class Continue(Node):
    pass


Stmt = Union[Assign, AugAssign, ExprStmt, For, If, Break, Continue]


@dataclass(frozen=True)
class Module(Node):
    body: tuple[Stmt, ...] = ()


# ---- helpers ---------------------------------------------------------------------------------

def _leaf(node: object) -> str | None:
    if isinstance(node, Name):
        return node.id
    if isinstance(node, Bool):
        return "true" if node.value else "false"
    if isinstance(node, Int):
        return str(node.value)
    if isinstance(node, Str):
        return json.dumps(node.value)
    return None


def dump(node: object) -> str:
    """The compact printed form of a node (positions left out)."""
    return _dump(node, _leaf)


# Binding strength of expressions, Python's (higher binds tighter). One table serves the
# emitter (parentheses in the generated code) and the printer (parentheses in DSL text).
OR, AND, NOT, CMP, ADD, MUL, NEG, ATOM = 1, 2, 3, 4, 6, 7, 8, 9
BINARY_PRECEDENCE = {"+": ADD, "-": ADD, "*": MUL, "/": MUL, "%": MUL}


def precedence(node: Node) -> int:
    if isinstance(node, BoolOp):
        return OR if node.op == "or" else AND
    if isinstance(node, UnaryOp):
        return NOT if node.op == "not" else NEG
    if isinstance(node, Compare):
        return CMP
    if isinstance(node, BinOp):
        return BINARY_PRECEDENCE[node.op]
    return ATOM
