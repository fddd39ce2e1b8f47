"""Static checks on the DSL AST (security layer 1 and early, located errors).

Each rule, and its decision:
  * Attr: allow a name from ``surface.KNOWN_ATTRIBUTES``; deny any other ("unknown attribute").
  * Call: allow a bare built-in (``surface.BUILTINS``) or a method (``x.name(...)``); deny any
    other name ("unknown function") and any other callee.
  * Assign / AugAssign / For target: deny a built-in or runtime-helper name.
  * Name read: deny a name that is neither a built-in nor assigned (by ``=`` or ``for``)
    anywhere in the script ("undefined name", at its first use). Reading a name before its
    assignment at run time is a runtime error, not a static one.
  * break / continue: deny outside a ``for`` body.

``errors(module)`` returns every error in source order; ``check(module)`` raises the first.
Iterative (no recursion), so deep trees cannot exhaust the stack here.
"""

from __future__ import annotations

from ..errors import DSLError
from . import ast
from .surface import BUILTINS, KNOWN_ATTRIBUTES, RUNTIME_HELPERS

__all__ = ["check", "errors"]

_PROTECTED = BUILTINS | RUNTIME_HELPERS


def _assigned_names(module: ast.Module) -> set[str]:
    """Every name a statement assigns (``=`` or ``for``), anywhere in the script. Only
    statements assign, so only statements are visited (not their expressions)."""
    names = set()
    stack = list(module.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Assign, ast.For)):
            names.add(node.target)
        stack.extend(s for s, _ in _children(node, 0))
    return names


def _expr_errors(expr: ast.Node, assigned: set[str], reported_undefined: set[str], err) -> None:
    callees: set[int] = set()  # a called name is reported as "unknown function" only
    for node in ast.walk(expr):
        if isinstance(node, ast.Attr):
            if node.name not in KNOWN_ATTRIBUTES:
                err(f"unknown attribute '{node.name}'", node.name_line, node.name_col)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                callees.add(id(func))
                if func.id not in BUILTINS:
                    err(f"unknown function '{func.id}'", func.line, func.col)
            elif not isinstance(func, ast.Attr):
                err("only built-in functions and methods can be called", func.line, func.col)
        elif isinstance(node, ast.Name) and id(node) not in callees:
            if node.id not in BUILTINS and node.id not in assigned and node.id not in reported_undefined:
                reported_undefined.add(node.id)
                err(f"undefined name '{node.id}'", node.line, node.col)


def _children(stmt, loops: int) -> list[tuple[object, int]]:
    """The statements inside ``stmt``, in source order, with the loop depth they sit in."""
    if isinstance(stmt, ast.For):
        return [(s, loops + 1) for s in stmt.body]
    if isinstance(stmt, ast.If):
        children = [(s, loops) for s in stmt.body]
        for clause in stmt.elifs:
            children += [(s, loops) for s in clause.body]
        return children + [(s, loops) for s in stmt.orelse]
    return []


def errors(module: ast.Module) -> list[DSLError]:
    assigned = _assigned_names(module)
    found: list[DSLError] = []
    reported_undefined: set[str] = set()

    def err(message: str, line: int, col: int) -> None:
        found.append(DSLError(message, line, col))

    # Statements, with the loop depth they sit in (explicit stack, source order).
    stack: list[tuple[object, int]] = [(s, 0) for s in reversed(module.body)]
    while stack:
        stmt, loops = stack.pop()
        exprs: list[ast.Node] = []
        if isinstance(stmt, (ast.Assign, ast.AugAssign)):
            if stmt.target in _PROTECTED:
                err(f"cannot assign to built-in '{stmt.target}'", stmt.line, stmt.col)
            if isinstance(stmt, ast.AugAssign):
                exprs.append(ast.Name(stmt.target, line=stmt.line, col=stmt.col))
            exprs.append(stmt.value)
        elif isinstance(stmt, ast.ExprStmt):
            exprs.append(stmt.value)
        elif isinstance(stmt, ast.For):
            if stmt.target in _PROTECTED:
                err(f"cannot assign to built-in '{stmt.target}'", stmt.target_line,
                    stmt.target_col)
            exprs.append(stmt.iter)
        elif isinstance(stmt, ast.If):
            exprs.append(stmt.test)
            exprs.extend(e.test for e in stmt.elifs)
        elif isinstance(stmt, (ast.Break, ast.Continue)):
            if loops == 0:
                word = "break" if isinstance(stmt, ast.Break) else "continue"
                err(f"'{word}' outside a loop", stmt.line, stmt.col)
        else:  # fail closed on a statement this checker does not know
            err(f"unsupported statement {type(stmt).__name__}", stmt.line, stmt.col)

        for expr in exprs:
            _expr_errors(expr, assigned, reported_undefined, err)

        stack.extend(reversed(_children(stmt, loops)))

    found.sort(key=lambda e: (e.line or 0, e.col or 0))
    return found


def check(module: ast.Module) -> None:
    """Raise the first static error (in source order), if any."""
    found = errors(module)
    if found:
        raise found[0]
