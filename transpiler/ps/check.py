"""Static checks of a parsed PromptScript module.

``errors(module)`` returns every error in source order; ``check(module)`` raises the first.

Each rule says its decision:
  * Deny a name that is read but never defined (not a built-in, never assigned, def'd,
    class'd, a loop variable or a parameter anywhere in the script).
  * Deny assigning, def'ing or class'ing a built-in's name (but the LLM built-ins', REBINDABLE).
  * Deny binding a runtime variable (allowed_actions, files_changed, ...) in any way
    (assignment, def, class, loop variable, parameter), or modifying one through a member
    or an index: they are read-only.
  * Deny break/continue outside a loop, or leaving a retry block or a def.
  * Deny return outside a def.
  * Deny a method without a first parameter (self).
"""

from __future__ import annotations

from ..errors import DSLError
from . import ast as A
from .surface import BUILTINS, REBINDABLE, RUNTIME_VARS


def _defined(module: A.Module) -> set[str]:
    names: set[str] = set()
    for node in A.walk(module):
        if isinstance(node, A.Assign) and isinstance(node.target, A.Name):
            names.add(node.target.id)
        elif isinstance(node, A.FunctionDef):
            names.add(node.name)
            names.update(node.params)
        elif isinstance(node, A.ClassDef):
            names.add(node.name)
        elif isinstance(node, A.For):
            names.add(node.target)
    return names


class _Checker:
    def __init__(self, defined: set[str]) -> None:
        self.defined = defined
        self.found: list[DSLError] = []

    def err(self, message: str, line: int, col: int) -> None:
        self.found.append(DSLError(message, line, col))

    def _check_binding(self, name: str, node: A.Node) -> None:
        if name in RUNTIME_VARS:
            self.err(f"'{name}' is a runtime variable (read-only) and cannot be assigned", node.line, node.col)
        elif name in BUILTINS and name not in REBINDABLE:
            self.err(f"'{name}' is a built-in and cannot be redefined", node.line, node.col)

    def stmts(self, body, loop: bool, func: bool) -> None:
        for s in body:
            self.stmt(s, loop, func)

    def stmt(self, s: A.Node, loop: bool, func: bool) -> None:
        if isinstance(s, A.Assign):
            if isinstance(s.target, A.Name):
                self._check_binding(s.target.id, s.target)
            else:
                root = s.target
                while isinstance(root, (A.Attr, A.Index)):
                    root = root.obj
                if isinstance(root, A.Name) and root.id in RUNTIME_VARS:
                    self.err(f"'{root.id}' is a runtime variable (read-only) and cannot be modified",
                             root.line, root.col)
                self.expr(s.target)
            self.expr(s.value)
        elif isinstance(s, A.ExprStmt):
            self.expr(s.value)
        elif isinstance(s, A.Return):
            if not func:
                self.err("'return' outside a function", s.line, s.col)
            if s.value is not None:
                self.expr(s.value)
        elif isinstance(s, A.Guard):
            self.expr(s.test)
        elif isinstance(s, (A.Break, A.Continue)):
            word = "break" if isinstance(s, A.Break) else "continue"
            if loop is None:
                self.err(f"'{word}' cannot leave a retry block", s.line, s.col)
            elif not loop:
                self.err(f"'{word}' outside a loop", s.line, s.col)
        elif isinstance(s, A.Pass):
            pass
        else:
            self.compound(s, loop, func)

    def compound(self, s: A.Node, loop: bool, func: bool) -> None:
        if isinstance(s, A.FunctionDef):
            self._check_binding(s.name, s)
            self._params(s)
            self.stmts(s.body, False, True)
        elif isinstance(s, A.ClassDef):
            self._check_binding(s.name, s)
            for m in s.methods:
                if not m.params:
                    self.err(f"method '{m.name}' needs a first parameter (self)", m.line, m.col)
                    continue
                self._params(m)
                self.stmts(m.body, False, True)
        elif isinstance(s, A.If):
            for clause in (s, *s.elifs):
                self.expr(clause.test)
                self.stmts(clause.body, loop, func)
            self.stmts(s.orelse, loop, func)
        elif isinstance(s, A.While):
            self.expr(s.test)
            self.stmts(s.body, True, func)
        elif isinstance(s, A.For):
            self._check_binding(s.target, s)
            self.expr(s.iter)
            self.stmts(s.body, True, func)
        elif isinstance(s, A.Policy):
            self.expr(s.policy)
            self.stmts(s.body, loop, func)
        elif isinstance(s, A.Timeout):
            self.expr(s.ms)
            self.stmts(s.body, loop, func)
        elif isinstance(s, A.Retry):
            self.expr(s.attempts)
            if s.backoff is not None:
                self.expr(s.backoff)
            self.stmts(s.body, None if loop else False, func)
        else:
            self.err(f"internal error: cannot check {type(s).__name__}", s.line or 1, s.col or 1)

    def _params(self, f: A.FunctionDef) -> None:
        for p in f.params:
            if p in RUNTIME_VARS:
                self.err(f"'{p}' is a runtime variable (read-only) and cannot be a parameter",
                         f.line, f.col)

    def expr(self, e: A.Node) -> None:
        for node in A.walk(e):
            if isinstance(node, A.Name) and node.id in RUNTIME_VARS:
                continue
            if isinstance(node, A.Name) and node.id not in BUILTINS and node.id not in self.defined:
                self.err(f"'{node.id}' is not defined", node.line, node.col)


def errors(module: A.Module) -> list[DSLError]:
    checker = _Checker(_defined(module))
    checker.stmts(module.body, False, False)
    return sorted(checker.found, key=lambda e: (e.line or 0, e.col or 0))


def check(module: A.Module) -> None:
    """Raise the first static error (in source order), if any."""
    found = errors(module)
    if found:
        raise found[0]
