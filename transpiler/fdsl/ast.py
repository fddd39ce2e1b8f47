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
from typing import Union

from ..tree import Node, node, position, walk
from ..tree import dump as _dump

__all__ = [
    "Node", "Expr", "Stmt", "Module",
    "Name", "Int", "Bool", "Str", "ListExpr", "Range", "BinOp", "UnaryOp", "BoolOp",
    "Compare", "Call", "Keyword", "Attr", "Index", "Slice",
    "Assign", "AugAssign", "ExprStmt", "For", "If", "Elif", "Break", "Continue",
    "dump", "walk",
]


# ---- expressions -----------------------------------------------------------------------------


@node
class Name(Node):
    id: str


@node
class Int(Node):
    value: int


@node
class Bool(Node):
    value: bool


@node
class Str(Node):
    value: str  # escapes already applied


@node
class Range(Node):
    """``start:stop`` inside a list literal: inclusive, descending when start > stop."""

    start: "Expr"
    stop: "Expr"


@node
class ListExpr(Node):
    items: tuple["Expr | Range", ...]


@node
class BinOp(Node):
    op: str  # + - * / %
    left: "Expr"
    right: "Expr"


@node
class UnaryOp(Node):
    op: str  # - not
    operand: "Expr"


@node
class BoolOp(Node):
    op: str  # and or
    left: "Expr"
    right: "Expr"


@node
class Compare(Node):
    """A (possibly chained) comparison: ``left ops[0] comparators[0] ops[1] ...``."""

    left: "Expr"
    ops: tuple[str, ...]  # == != < <= > >= in "not in"
    comparators: tuple["Expr", ...]


@node
class Keyword(Node):
    name: str
    value: "Expr"


@node
class Call(Node):
    func: "Expr"
    args: tuple["Expr", ...] = ()
    kwargs: tuple[Keyword, ...] = ()


@node
class Attr(Node):
    obj: "Expr"
    name: str
    name_line: int = position()  # where the attribute name itself is written
    name_col: int = position()


@node
class Index(Node):
    obj: "Expr"
    index: "Expr"


@node
class Slice(Node):
    obj: "Expr"
    lower: "Expr | None"  # None: from the start
    upper: "Expr | None"  # None: to the end


Expr = Union[Name, Int, Bool, Str, ListExpr, BinOp, UnaryOp, BoolOp, Compare, Call, Attr, Index, Slice]

# ---- statements ------------------------------------------------------------------------------


@node
class Assign(Node):
    target: str
    value: Expr


@node
class AugAssign(Node):
    target: str
    op: str  # + - * / %
    value: Expr


@node
class ExprStmt(Node):
    value: Expr


@node
class For(Node):
    target: str
    iter: Expr
    body: tuple["Stmt", ...]
    target_line: int = position()
    target_col: int = position()


@node
class Elif(Node):
    test: Expr
    body: tuple["Stmt", ...]


@node
class If(Node):
    test: Expr
    body: tuple["Stmt", ...]
    elifs: tuple[Elif, ...] = ()
    orelse: tuple["Stmt", ...] = ()
    else_line: int = position()  # where ``else`` is written, when there is one
    else_col: int = position()


@node
class Break(Node):
    pass


@node
class Continue(Node):
    pass


Stmt = Union[Assign, AugAssign, ExprStmt, For, If, Break, Continue]


@node
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
