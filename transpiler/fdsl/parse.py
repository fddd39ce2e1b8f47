"""FilesDSL text -> ``ast.Module``: the shared frontend (``transpiler/frontend.py``) with
FilesDSL's lexicon (``"`` and ``'`` strings, round and square brackets), its names rule and
its transformer. The grammar is ``grammar.lark`` beside this file.
"""

from __future__ import annotations

import re

from lark import Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, UnexpectedToken

from ..errors import DSLError
from ..frontend import (
    MAX_INT_DIGITS,
    Frontend,
    Grammar,
    Lexicon,
    LimitedIndenter,
    Limits,
    ParserCache,
    unescaper,
)
from ..frontend import span as _pos
from ..frontend import token_span as _tpos
from . import ast
from .surface import RESERVED_WORDS

__all__ = ["parse", "LEXICON", "unescape", "DSL_KEYWORDS", "RP_RESERVED"]

LEXICON = Lexicon(quotes="\"'", brackets={"(": ")", "[": "]"})


_KEYWORD_HINTS = {
    "None": "FilesDSL has no None: use a value of the type you mean (\"\", 0, false or [])",
    "while": "FilesDSL has no while: loop over a list or a range, e.g. for i in [1:10]:",
    "def": "FilesDSL has no functions of your own: write the steps in place (a for loop repeats them)",
}


# FilesDSL's own keywords. The contextual lexer lexes a keyword as NAME in a state where the
# keyword cannot appear (`x = else`); such a NAME is refused here, never used as a variable.
DSL_KEYWORDS = frozenset(
    {"for", "in", "if", "elif", "else", "break", "continue", "and", "or", "not", "true", "false", "True", "False"}
)
# Names RestrictedPython reserves for itself (its print collector and guards).
RP_RESERVED = frozenset({"printed", "builtins", "breakpoint"})


def _check_name(tok: Token) -> None:
    """Deny names starting with '_' (blocks dunders), Python keywords that FilesDSL lacks,
    FilesDSL keywords in a non-keyword position and RestrictedPython's reserved names."""
    value = str(tok)
    if value in DSL_KEYWORDS:
        raise DSLError(f"unexpected '{value}'", tok.line, tok.column)
    if value in RP_RESERVED or value.endswith("__roles__"):
        raise DSLError(f"'{value}' is a reserved name", tok.line, tok.column)
    if value.startswith("_"):
        raise DSLError(f"names cannot start with '_' ('{value}')", tok.line, tok.column)
    if value in RESERVED_WORDS:
        message = _KEYWORD_HINTS.get(value, f"'{value}' is not supported in FilesDSL")
        raise DSLError(message, tok.line, tok.column)


class _FdslIndenter(LimitedIndenter):
    def check_name(self, tok: Token) -> None:
        _check_name(tok)


unescape = unescaper({"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"})


@v_args(meta=True)
class _ToAst(Transformer):
    """Lark parse tree -> DSL AST. Each method: "Rewrite <rule> to <node>"."""

    def __default__(self, data, children, meta):
        raise DSLError(f"internal error: no AST rule for '{data}'", meta.line, meta.column)

    # statements
    def start(self, meta, children):
        return ast.Module(tuple(children), line=1, col=1)

    def assign(self, meta, c):
        return ast.Assign(str(c[0]), c[1], **_pos(meta))

    def aug_assign(self, meta, c):
        return ast.AugAssign(str(c[0]), str(c[1])[0], c[2], **_pos(meta))

    def expr_stmt(self, meta, c):
        return ast.ExprStmt(c[0], **_pos(meta))

    def break_stmt(self, meta, c):
        return ast.Break(**_pos(meta))

    def continue_stmt(self, meta, c):
        return ast.Continue(**_pos(meta))

    def for_stmt(self, meta, c):
        _, name, iterable, body = c
        return ast.For(str(name), iterable, body, target_line=name.line, target_col=name.column,
                       **_pos(meta))

    def if_stmt(self, meta, c):
        test, body = c[1], c[2]
        elifs = tuple(x for x in c[3:] if isinstance(x, ast.Elif))
        orelse: tuple = ()
        else_pos = {}
        for x in c[3:]:
            if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], Token):
                else_pos = {"else_line": x[0].line, "else_col": x[0].column}
                orelse = x[1]
        return ast.If(test, body, elifs, orelse, **else_pos, **_pos(meta))

    def elif_clause(self, meta, c):
        return ast.Elif(c[1], c[2], **_pos(meta))

    def else_clause(self, meta, c):
        return (c[0], c[1])

    def suite(self, meta, c):
        return tuple(c)

    # expressions
    def name(self, meta, c):
        return ast.Name(str(c[0]), **_tpos(c[0]))

    def int(self, meta, c):
        digits = str(c[0])
        if len(digits) > MAX_INT_DIGITS:
            raise DSLError(f"integer literal too long (limit {MAX_INT_DIGITS} digits)",
                           c[0].line, c[0].column)
        return ast.Int(int(digits), **_tpos(c[0]))

    def string(self, meta, c):
        return ast.Str(unescape(str(c[0])[1:-1]), **_tpos(c[0]))

    def true(self, meta, c):
        return ast.Bool(True, **_pos(meta))

    def false(self, meta, c):
        return ast.Bool(False, **_pos(meta))

    def list(self, meta, c):
        return ast.ListExpr(tuple(c), **_pos(meta))

    def range(self, meta, c):
        return ast.Range(c[0], c[1], **_pos(meta))

    def _bin(op):
        def method(self, meta, c):
            return ast.BinOp(op, c[0], c[1], **_pos(meta))
        method.__name__ = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}[op]
        return method

    add, sub, mul, div, mod = _bin("+"), _bin("-"), _bin("*"), _bin("/"), _bin("%")
    del _bin

    def neg(self, meta, c):
        return ast.UnaryOp("-", c[1], **_pos(meta))

    def not_op(self, meta, c):
        return ast.UnaryOp("not", c[1], **_pos(meta))

    def and_op(self, meta, c):
        return ast.BoolOp("and", c[0], c[1], **_pos(meta))

    def or_op(self, meta, c):
        return ast.BoolOp("or", c[0], c[1], **_pos(meta))

    def comp_op(self, meta, c):
        return " ".join(str(t) for t in c)

    def compare(self, meta, c):
        return ast.Compare(c[0], tuple(c[1::2]), tuple(c[2::2]), **_pos(meta))

    def call(self, meta, c):
        func = c[0]
        args: list = []
        kwargs: list = []
        if len(c) > 1:
            for item in c[1]:
                if isinstance(item, ast.Keyword):
                    if any(k.name == item.name for k in kwargs):
                        raise DSLError(f"duplicate keyword argument '{item.name}'",
                                       item.line, item.col)
                    kwargs.append(item)
                elif kwargs:
                    raise DSLError("positional argument follows keyword argument",
                                   item.line, item.col)
                else:
                    args.append(item)
        return ast.Call(func, tuple(args), tuple(kwargs), **_pos(meta))

    def arguments(self, meta, c):
        return c

    def kwarg(self, meta, c):
        return ast.Keyword(str(c[0]), c[1], **_pos(meta))

    def attr(self, meta, c):
        tok = c[1]
        return ast.Attr(c[0], str(tok), name_line=tok.line, name_col=tok.column, **_pos(meta))

    def index(self, meta, c):
        return ast.Index(c[0], c[1], **_pos(meta))

    def slice(self, meta, c):
        return ast.Slice(c[0], c[1], c[2], **_pos(meta))

    def slice_from(self, meta, c):
        return ast.Slice(c[0], c[1], None, **_pos(meta))

    def slice_to(self, meta, c):
        return ast.Slice(c[0], None, c[1], **_pos(meta))


_EXPR_RULES = frozenset(
    {"or_op", "and_op", "not_op", "compare", "add", "sub", "mul", "div", "mod", "neg", "call",
     "attr", "index", "slice", "slice_from", "slice_to", "list"}
)

def _unexpected(e: UnexpectedInput, text: str) -> DSLError | None:
    """What a script written in Python's habits meets first, named with the FilesDSL way."""
    if not isinstance(e, UnexpectedToken) or e.token.type == "$END" or not isinstance(e.token.line, int):
        return None
    tok = e.token
    before = text.split("\n")[tok.line - 1][: tok.column - 1]
    if str(tok) == "=" and before.rstrip().endswith("]"):
        return DSLError("FilesDSL has no item assignment (x[i] = v) and no dictionaries: build a list with "
                        "append() or +, e.g. xs = xs + [v]", tok.line, tok.column)
    number = re.search(r"(\d+)\.$", before)
    if tok.type == "INT" and number:
        return DSLError("FilesDSL has no floats: numbers are whole, and / divides them (7 / 2 is 3)",
                        tok.line, number.start(1) + 1)
    return None


FRONTEND = Frontend(
    lexicon=LEXICON,
    grammar=Grammar(__package__, _FdslIndenter, maybe_placeholders=False),
    expr_rules=_EXPR_RULES,
    transformer=_ToAst(),
    unexpected=_unexpected,
)


def parse(source: str, filename: str = "<script>", limits: Limits = Limits(),
          cache: ParserCache | None = None) -> ast.Module:
    """Parse FilesDSL source into an ``ast.Module``; raise ``DSLError`` (kind SyntaxError)."""
    return FRONTEND.parse(source, limits, cache)
