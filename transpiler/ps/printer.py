"""PromptScript AST -> source text (the inverse of ``parse``, modulo positions and layout).

Used by the property tests (``parse(render(tree))`` means the same as ``tree``) and by tools
that rewrite scripts. Parentheses come from the grammar's precedence levels, never from the
source; blocks indent 4 spaces; object keys are always quoted; strings use ``"..."`` with the
language's escapes.
"""

from __future__ import annotations

from . import ast as A

__all__ = ["render", "render_expr"]

# Binding strength, loosest first, as in grammar.lark.
OR, AND, NOT, CMP, SUM, TERM, NEG, POSTFIX = range(1, 9)
_BINARY = {"+": SUM, "-": SUM, "*": TERM, "/": TERM, "%": TERM}
_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


def _string(value: str) -> str:
    return '"' + "".join(_ESC.get(c, c) for c in value) + '"'


def _const(value) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    return repr(value)  # int or finite float: both are literals the grammar reads back


def precedence(node: A.Node) -> int:
    if isinstance(node, A.BoolOp):
        return OR if node.op == "or" else AND
    if isinstance(node, A.UnaryOp):
        return NOT if node.op == "not" else NEG
    if isinstance(node, A.Compare):
        return CMP
    if isinstance(node, A.BinOp):
        return _BINARY[node.op]
    return POSTFIX


def render_expr(node: A.Node, min_prec: int = 0) -> str:
    text = _expr(node)
    return f"({text})" if precedence(node) < min_prec else text


def _expr(node: A.Node) -> str:
    if isinstance(node, A.Name):
        return node.id
    if isinstance(node, A.Const):
        return _const(node.value)
    if isinstance(node, A.Array):
        return "[" + ", ".join(render_expr(x) for x in node.items) + "]"
    if isinstance(node, A.Object):
        pairs = (f"{_string(k)}: {render_expr(v)}" for k, v in zip(node.keys, node.values))
        return "{" + ", ".join(pairs) + "}"
    if isinstance(node, A.BoolOp):
        p = precedence(node)
        return f"{render_expr(node.left, p)} {node.op} {render_expr(node.right, p + 1)}"
    if isinstance(node, A.UnaryOp):
        if node.op == "not":
            return f"not {render_expr(node.operand, NOT)}"
        return f"-{render_expr(node.operand, NEG)}"
    if isinstance(node, A.Compare):
        return f"{render_expr(node.left, SUM)} {node.op} {render_expr(node.right, SUM)}"
    if isinstance(node, A.BinOp):
        p = _BINARY[node.op]
        return f"{render_expr(node.left, p)} {node.op} {render_expr(node.right, p + 1)}"
    if isinstance(node, A.Call):
        return f"{render_expr(node.func, POSTFIX)}({', '.join(render_expr(a) for a in node.args)})"
    if isinstance(node, A.Attr):
        return f"{render_expr(node.obj, POSTFIX)}.{node.name}"
    if isinstance(node, A.Index):
        return f"{render_expr(node.obj, POSTFIX)}[{render_expr(node.index)}]"
    raise TypeError(f"cannot render {type(node).__name__}")


def _block(header: str, body, indent: str, out: list[str]) -> None:
    out.append(f"{indent}{header}:")
    _stmts(body, indent + "    ", out)


def _def(node: A.FunctionDef, indent: str, out: list[str]) -> None:
    _block(f"def {node.name}({', '.join(node.params)})", node.body, indent, out)


def _stmt(node: A.Node, indent: str, out: list[str]) -> None:
    simple = {A.Break: "break", A.Continue: "continue", A.Pass: "pass"}.get(type(node))
    if simple:
        out.append(indent + simple)
    elif isinstance(node, A.Assign):
        out.append(f"{indent}{render_expr(node.target, POSTFIX)} = {render_expr(node.value)}")
    elif isinstance(node, A.ExprStmt):
        out.append(indent + render_expr(node.value))
    elif isinstance(node, A.Return):
        out.append(indent + "return" + ("" if node.value is None else " " + render_expr(node.value)))
    elif isinstance(node, A.Guard):
        out.append(f"{indent}guard {render_expr(node.test)}")
    elif isinstance(node, A.FunctionDef):
        _def(node, indent, out)
    elif isinstance(node, A.ClassDef):
        out.append(f"{indent}class {node.name}:")
        for method in node.methods:
            _def(method, indent + "    ", out)
    elif isinstance(node, A.If):
        _block(f"if {render_expr(node.test)}", node.body, indent, out)
        for clause in node.elifs:
            _block(f"elif {render_expr(clause.test)}", clause.body, indent, out)
        if node.orelse:
            _block("else", node.orelse, indent, out)
    elif isinstance(node, A.While):
        _block(f"while {render_expr(node.test)}", node.body, indent, out)
    elif isinstance(node, A.For):
        _block(f"for {node.target} in {render_expr(node.iter)}", node.body, indent, out)
    elif isinstance(node, A.Policy):
        _block(f"with policy {render_expr(node.policy)}", node.body, indent, out)
    elif isinstance(node, A.Retry):
        backoff = "" if node.backoff is None else f" backoff {render_expr(node.backoff)}"
        _block(f"retry {render_expr(node.attempts)}{backoff}", node.body, indent, out)
    elif isinstance(node, A.Timeout):
        _block(f"timeout {render_expr(node.ms)}", node.body, indent, out)
    else:
        raise TypeError(f"cannot render {type(node).__name__}")


def _stmts(body, indent: str, out: list[str]) -> None:
    for node in body:
        _stmt(node, indent, out)


def render(module: A.Module) -> str:
    """PromptScript source for ``module`` (ends with a newline unless empty)."""
    out: list[str] = []
    _stmts(module.body, "", out)
    return "".join(line + "\n" for line in out)
