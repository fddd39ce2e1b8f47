"""DSL AST -> FilesDSL source text (the inverse of ``parser.parse``, modulo positions).

Used by the property tests (``parse(render(tree))`` must equal ``tree``) and handy for tools
that rewrite scripts. Parentheses come from the precedence table; blocks indent 4 spaces.
"""

from __future__ import annotations

from . import ast

__all__ = ["render", "render_expr"]

_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _string(value: str) -> str:
    if "\x00" in value:
        raise ValueError("a FilesDSL string cannot contain NUL")
    return '"' + "".join(_ESC.get(c, c) for c in value) + '"'


def render_expr(node: ast.Node, min_prec: int = 0) -> str:
    text = _expr(node)
    return f"({text})" if ast.precedence(node) < min_prec else text


def _expr(node: ast.Node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Int):
        return str(node.value)
    if isinstance(node, ast.Bool):
        return "true" if node.value else "false"
    if isinstance(node, ast.Str):
        return _string(node.value)
    if isinstance(node, ast.ListExpr):
        items = []
        for item in node.items:
            if isinstance(item, ast.Range):
                items.append(f"{render_expr(item.start)}:{render_expr(item.stop)}")
            else:
                items.append(render_expr(item))
        return "[" + ", ".join(items) + "]"
    if isinstance(node, ast.BinOp):
        p = ast.BINARY_PRECEDENCE[node.op]
        return f"{render_expr(node.left, p)} {node.op} {render_expr(node.right, p + 1)}"
    if isinstance(node, ast.BoolOp):
        p = ast.precedence(node)
        return f"{render_expr(node.left, p)} {node.op} {render_expr(node.right, p + 1)}"
    if isinstance(node, ast.UnaryOp):
        if node.op == "not":
            return f"not {render_expr(node.operand, ast.NOT)}"
        return f"-{render_expr(node.operand, ast.NEG)}"
    if isinstance(node, ast.Compare):
        parts = [render_expr(node.left, ast.CMP + 1)]
        for op, right in zip(node.ops, node.comparators):
            parts.append(f"{op} {render_expr(right, ast.CMP + 1)}")
        return " ".join(parts)
    if isinstance(node, ast.Call):
        args = [render_expr(a) for a in node.args]
        args += [f"{k.name}={render_expr(k.value)}" for k in node.kwargs]
        return f"{render_expr(node.func, ast.ATOM)}({', '.join(args)})"
    if isinstance(node, ast.Attr):
        return f"{render_expr(node.obj, ast.ATOM)}.{node.name}"
    if isinstance(node, ast.Index):
        return f"{render_expr(node.obj, ast.ATOM)}[{render_expr(node.index)}]"
    if isinstance(node, ast.Slice):
        lower = "" if node.lower is None else render_expr(node.lower)
        upper = "" if node.upper is None else render_expr(node.upper)
        return f"{render_expr(node.obj, ast.ATOM)}[{lower}:{upper}]"
    raise TypeError(f"cannot render {type(node).__name__}")


def _stmts(body, indent: str, out: list[str]) -> None:
    for node in body:
        if isinstance(node, ast.Assign):
            out.append(f"{indent}{node.target} = {render_expr(node.value)}")
        elif isinstance(node, ast.AugAssign):
            out.append(f"{indent}{node.target} {node.op}= {render_expr(node.value)}")
        elif isinstance(node, ast.ExprStmt):
            out.append(indent + render_expr(node.value))
        elif isinstance(node, ast.Break):
            out.append(indent + "break")
        elif isinstance(node, ast.Continue):
            out.append(indent + "continue")
        elif isinstance(node, ast.For):
            out.append(f"{indent}for {node.target} in {render_expr(node.iter)}:")
            _stmts(node.body, indent + "    ", out)
        elif isinstance(node, ast.If):
            out.append(f"{indent}if {render_expr(node.test)}:")
            _stmts(node.body, indent + "    ", out)
            for clause in node.elifs:
                out.append(f"{indent}elif {render_expr(clause.test)}:")
                _stmts(clause.body, indent + "    ", out)
            if node.orelse:
                out.append(f"{indent}else:")
                _stmts(node.orelse, indent + "    ", out)
        else:
            raise TypeError(f"cannot render {type(node).__name__}")


def render(module: ast.Module) -> str:
    """FilesDSL source for ``module`` (ends with a newline unless empty)."""
    out: list[str] = []
    _stmts(module.body, "", out)
    return "".join(line + "\n" for line in out)
