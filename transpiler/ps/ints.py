"""Which variables of a PromptScript module can only ever hold a Python ``int`` (never a bool).

``known_ints(module)`` is a conservative whole-script analysis by variable NAME, over every scope
at once (the script's body, functions, methods, retry/timeout/policy bodies): a name is known
int when every binding of it anywhere is an assignment ``name = <int-typed expression>``.
Int-typed (``int_typed``): an int literal (not a bool), unary minus of an int literal, ``+ - *``
of int-typed operands, or ``%`` of an int-typed operand by a non-zero int literal. For two ints
the worker's helpers (ps_add, ps_sub, ps_mul, ps_mod) return exactly Python's ``a OP b`` (they
set no bound on an int's size), so each of these gives an int.

Every other binding disqualifies the name: a parameter, a function, method or class name, a
for-loop target, an assignment of anything else. So does being a built-in (an LLM built-in the
script rebinds starts as the built-in function) or a runtime variable. An unknown node type
disqualifies every name (it might bind any): the analysis fails closed.

Why the greatest fixed point is sound: start from every candidate and drop each name with an
assignment whose value is not int-typed under the current set, until nothing changes (done by
a worklist, in linear time). In the final set every assignment of every name is int-typed with
only names of the set as operands.
By induction over the run, every value ever stored in such a variable is an int: the first store
evaluates an expression whose names all hold ints (stored earlier by the same argument) or
were never assigned; reading a name before any assignment raises the same NameError whether or
not the emitted code checks its type first (the variable is read either way, in the same order).
Nothing else writes a variable: the sandbox gives a script no access to frames or ``locals()``.
"""

from __future__ import annotations

from . import ast as A
from .surface import BUILTINS, RUNTIME_VARS

__all__ = ["known_ints", "int_typed", "int_literal"]

# Node types that bind no script name (expressions, and statements whose only bindings are the
# generated ps_* names of their emitted form: retry's ps_attempts/ps_attempt).
_NO_BINDING = (A.Name, A.Const, A.Array, A.Object, A.BinOp, A.UnaryOp, A.BoolOp, A.Compare, A.Call, A.Attr,
               A.Index, A.ExprStmt, A.Return, A.Guard, A.Break, A.Continue, A.Pass, A.If, A.While, A.Policy,
               A.Retry, A.Timeout, A.Module)


def int_literal(node: A.Node) -> bool:
    """An int literal (not a bool) or the unary minus of one."""
    if isinstance(node, A.UnaryOp) and node.op == "-":
        node = node.operand
    return isinstance(node, A.Const) and type(node.value) is int


def _nonzero_int_literal(node: A.Node) -> bool:
    if not int_literal(node):
        return False
    return (node.operand if isinstance(node, A.UnaryOp) else node).value != 0


def _int_shaped(node: A.Node, names: list[str]) -> bool:
    """Is ``node`` int-typed once every name it reads (appended to ``names``) holds an int?"""
    if isinstance(node, A.Name):
        names.append(node.id)
        return True
    if isinstance(node, A.BinOp):
        if node.op in ("+", "-", "*"):
            return _int_shaped(node.left, names) and _int_shaped(node.right, names)
        if node.op == "%":
            return _int_shaped(node.left, names) and _nonzero_int_literal(node.right)
        return False
    return int_literal(node)


def int_typed(node: A.Node, ints) -> bool:
    """Does ``node`` always evaluate to an int (or raise), given that the names in ``ints``
    only ever hold ints?"""
    read: list[str] = []
    return _int_shaped(node, read) and all(name in ints for name in read)


def known_ints(module: A.Module) -> frozenset[str]:
    """The names that can only ever hold an int (see the module's docstring)."""
    assigned: dict[str, list[A.Node]] = {}
    excluded: set[str] = set(BUILTINS) | set(RUNTIME_VARS)
    for node in A.walk(module):
        if isinstance(node, A.Assign):
            if isinstance(node.target, A.Name):
                assigned.setdefault(node.target.id, []).append(node.value)
            elif not isinstance(node.target, (A.Attr, A.Index)):
                return frozenset()  # a target form this analysis does not know
        elif isinstance(node, A.FunctionDef):
            if not all(type(n) is str for n in (node.name, *node.params)):
                return frozenset()
            excluded.add(node.name)
            excluded.update(node.params)
        elif isinstance(node, A.ClassDef):
            if type(node.name) is not str:
                return frozenset()
            excluded.add(node.name)
        elif isinstance(node, A.For):
            if type(node.target) is not str:
                return frozenset()  # a target form this analysis does not know
            excluded.add(node.target)
        elif not isinstance(node, _NO_BINDING):
            return frozenset()  # an unknown node type: it might bind any name
    # The greatest fixed point by a worklist, in time linear in the script: each assigned value
    # is looked at once; a name found not int drops the names whose values read it. (Dropping
    # names pass after pass took quadratic time: 34 s for a chain of 8,000 assignments.)
    ints = {name for name in assigned if name not in excluded}
    readers: dict[str, list[str]] = {}  # name -> the names one of whose values reads it
    dropped = []
    for name in ints:
        for value in assigned[name]:
            read: list[str] = []
            if not _int_shaped(value, read) or any(r not in ints for r in read):
                dropped.append(name)
                break
            for r in read:
                readers.setdefault(r, []).append(name)
    ints.difference_update(dropped)
    while dropped:
        for reader in readers.get(dropped.pop(), ()):
            if reader in ints:
                ints.discard(reader)
                dropped.append(reader)
    return frozenset(ints)
