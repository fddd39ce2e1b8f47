"""PromptScript text -> ``ast.Module``: the shared frontend (``transpiler/frontend.py``) with
PromptScript's lexicon (``"`` strings, multi-line backtick strings, three kinds of brackets),
its names rule (``_``-names and Python keywords refused as soon as they are lexed) and its
transformer. The grammar is ``grammar.lark`` beside this file.
"""

from __future__ import annotations

import keyword

from lark import Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, UnexpectedToken

from ..errors import DSLError
from ..frontend import MAX_INT_DIGITS, Frontend, Grammar, Lexicon, LimitedIndenter, Limits, ParserCache, unescaper
from ..frontend import span as _pos
from ..frontend import token_span as _tpos
from . import ast as A

__all__ = ["parse", "LEXICON", "KEYWORDS", "PYTHON_ONLY_KEYWORDS", "RESERVED_NAMES"]

# PromptScript's own keywords: never a variable, function, class or parameter name.
KEYWORDS = frozenset({
    "def", "class", "if", "elif", "else", "while", "for", "in", "return", "break", "continue",
    "pass", "with", "policy", "retry", "backoff", "timeout", "guard", "true", "false", "null",
    "and", "or", "not",
})
# Python keywords PromptScript lacks: refused wherever they appear.
PYTHON_ONLY_KEYWORDS = frozenset(set(keyword.kwlist) - KEYWORDS)
_HINTS = {"None": "write 'null'",
          "import": "scripts cannot import modules", "lambda": "use def"}
# Names the generated code or RestrictedPython needs for itself.
RESERVED_NAMES = frozenset({"printed", "builtins", "breakpoint", "eval", "exec", "print", "self_"})
GENERATED_PREFIX = "ps_"
LEXICON = Lexicon(quotes='"', raw_quote="`", raw_name="backtick", brackets={"(": ")", "[": "]", "{": "}"})


class _PsIndenter(LimitedIndenter):
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]

    def check_name(self, tok: Token) -> None:
        value = str(tok)
        if value in ("elif", "else"):  # lexed as a name only where no clause can start
            raise _orphan_clause(value, tok)
        if value.startswith("_"):
            raise DSLError(f"names cannot start with '_' ('{value}')", tok.line, tok.column)
        if value in PYTHON_ONLY_KEYWORDS:
            hint = _HINTS.get(value)
            message = f"'{value}' is not PromptScript" + (f"; {hint}" if hint else "")
            raise DSLError(message, tok.line, tok.column)


def _orphan_clause(word: str, tok: Token) -> DSLError:
    return DSLError(f"'{word}' without a matching 'if' (it must line up with its 'if'"
                    + (", and only 'if' has an 'else'" if word == "else" else "") + ")",
                    tok.line, tok.column)


_EXPR_RULES = frozenset({"or_op", "and_op", "not_op", "compare", "add", "sub", "mul", "div",
                         "mod", "neg", "call", "attr", "index", "array", "object"})


unescape = unescaper({"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"})


def check_variable(tok: Token, what: str = "a variable") -> str:
    """Deny a PromptScript keyword, a reserved or generated name as a variable/def/param."""
    value = str(tok)
    if value in KEYWORDS:
        raise DSLError(f"'{value}' is a keyword and cannot be used as {what}", tok.line, tok.column)
    if value in RESERVED_NAMES:
        hint = "; use log(...)" if value == "print" else ""
        raise DSLError(f"'{value}' is a reserved name{hint}", tok.line, tok.column)
    if value.startswith(GENERATED_PREFIX):
        raise DSLError(f"names starting with '{GENERATED_PREFIX}' are reserved ('{value}')",
                       tok.line, tok.column)
    return value


def _check_member(tok: Token, what: str) -> str:
    value = str(tok)
    if keyword.iskeyword(value):
        quoted = f'{{"{value}": ...}}' if what == "a bare key" else f'obj["{value}"]'
        raise DSLError(f"'{value}' cannot be {what} (write it as a quoted key: {quoted})",
                       tok.line, tok.column)
    return value


@v_args(meta=True)
class _ToAst(Transformer):
    """Lark parse tree -> PromptScript AST. Each method: "Rewrite <rule> to <node>"."""

    text = ""  # the normalised source, set per parse under the lock (guard texts)

    def __default__(self, data, children, meta):
        raise DSLError(f"internal error: no AST rule for '{data}'", getattr(meta, "line", 1),
                       getattr(meta, "column", 1))

    def start(self, meta, c):
        return A.Module(tuple(c), line=1, col=1)

    def suite(self, meta, c):
        return tuple(c)

    def assign(self, meta, c):
        return A.Assign(c[0], c[1], **_pos(meta))

    def expr_stmt(self, meta, c):
        return A.ExprStmt(c[0], **_pos(meta))

    def return_stmt(self, meta, c):
        return A.Return(c[1] if len(c) > 1 else None, **_pos(meta))

    def guard_stmt(self, meta, c):
        source = self.text[c[0].end_pos:meta.end_pos].strip()
        return A.Guard(c[1], " ".join(source.split()), **_pos(meta))

    def break_stmt(self, meta, c):
        return A.Break(**_pos(meta))

    def continue_stmt(self, meta, c):
        return A.Continue(**_pos(meta))

    def pass_stmt(self, meta, c):
        return A.Pass(**_pos(meta))

    def params(self, meta, c):
        names = []
        for tok in c:
            if tok is None:
                continue
            name = check_variable(tok, "a parameter")
            if name in names:
                raise DSLError(f"duplicate parameter '{name}'", tok.line, tok.column)
            names.append(name)
        return tuple(names)

    def def_stmt(self, meta, c):
        _, name, params, body = c
        return A.FunctionDef(check_variable(name, "a function name"), params or (), body, **_pos(meta))

    def method(self, meta, c):
        _, name, params, body = c
        value = str(name) if name.type == "INIT" else check_variable(name, "a method name")
        return A.FunctionDef(value, params or (), body, **_pos(meta))

    def class_stmt(self, meta, c):
        name = check_variable(c[1], "a class name")
        methods = tuple(c[2:])
        seen = set()
        for m in methods:
            if m.name in seen:
                raise DSLError(f"method '{m.name}' is defined twice in class '{name}'", m.line, m.col)
            seen.add(m.name)
        return A.ClassDef(name, methods, **_pos(meta))

    def if_stmt(self, meta, c):
        test, body = c[1], c[2]
        elifs = tuple(x for x in c[3:] if isinstance(x, A.If))
        orelse, else_line = (), 0
        for x in c[3:]:
            if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], Token):
                else_line, orelse = x[0].line, x[1]
        return A.If(test, body, elifs, orelse, else_line=else_line, **_pos(meta))

    def elif_clause(self, meta, c):
        return A.If(c[1], c[2], **_pos(meta))

    def else_clause(self, meta, c):
        return (c[0], c[1])

    def while_stmt(self, meta, c):
        return A.While(c[1], c[2], **_pos(meta))

    def for_stmt(self, meta, c):
        return A.For(check_variable(c[1], "a loop variable"), c[3], c[4], **_pos(meta))

    def policy_stmt(self, meta, c):
        return A.Policy(c[2], c[3], **_pos(meta))

    def retry_stmt(self, meta, c):
        return A.Retry(c[1], c[3], c[4], **_pos(meta))

    def timeout_stmt(self, meta, c):
        return A.Timeout(c[1], c[2], **_pos(meta))

    # expressions
    def name(self, meta, c):
        tok = c[0]
        return A.Name(check_variable(tok), **_tpos(tok))

    def int(self, meta, c):
        digits = str(c[0])
        if len(digits) > 1 and digits[0] == "0" and digits.strip("0"):
            raise DSLError(f"leading zeros are not allowed in a number ('{digits}'; write "
                           f"{digits.lstrip('0')})", c[0].line, c[0].column)
        if len(digits) > MAX_INT_DIGITS:
            raise DSLError(f"integer literal too long (limit {MAX_INT_DIGITS} digits)", c[0].line, c[0].column)
        return A.Const(int(digits), **_tpos(c[0]))

    def float(self, meta, c):
        value = float(str(c[0]))
        if value in (float("inf"), float("-inf")):
            raise DSLError("number literal too large", c[0].line, c[0].column)
        return A.Const(value, **_tpos(c[0]))

    def string(self, meta, c):
        return A.Const(unescape(str(c[0])[1:-1]), **_tpos(c[0]))

    def raw_string(self, meta, c):
        return A.Const(str(c[0])[1:-1], **_tpos(c[0]))

    def true(self, meta, c):
        return A.Const(True, **_tpos(c[0]))

    def false(self, meta, c):
        return A.Const(False, **_tpos(c[0]))

    def null(self, meta, c):
        return A.Const(None, **_tpos(c[0]))

    def array(self, meta, c):
        return A.Array(tuple(x for x in c if x is not None), **_pos(meta))

    def object(self, meta, c):
        keys, values = [], []
        for pair in c:
            if pair is None:
                continue
            key, value, tok = pair
            if key in keys:
                raise DSLError(f"duplicate key '{key}' in object", tok.line, tok.column)
            keys.append(key)
            values.append(value)
        return A.Object(tuple(keys), tuple(values), **_pos(meta))

    def pair(self, meta, c):
        tok = c[0]
        if tok.type == "STRING":
            key = unescape(str(tok)[1:-1])
        else:
            key = _check_member(tok, "a bare key")
        return (key, c[1], tok)

    def _bin(op, name):
        def method(self, meta, c):
            return A.BinOp(op, c[0], c[1], **_pos(meta))
        method.__name__ = name
        return method

    add, sub, mul, div, mod = (_bin("+", "add"), _bin("-", "sub"), _bin("*", "mul"),
                               _bin("/", "div"), _bin("%", "mod"))
    del _bin

    def neg(self, meta, c):
        return A.UnaryOp("-", c[0], **_pos(meta))

    def not_op(self, meta, c):
        return A.UnaryOp("not", c[1], **_pos(meta))

    def and_op(self, meta, c):
        return A.BoolOp("and", c[0], c[2], **_pos(meta))

    def or_op(self, meta, c):
        return A.BoolOp("or", c[0], c[2], **_pos(meta))

    def comp_op(self, meta, c):
        return " ".join(str(t) for t in c)

    def compare(self, meta, c):
        if len(c) > 3:
            right = c[2]
            raise DSLError(f"comparisons cannot be chained; write 'a {c[1]} b and b {c[3]} c'",
                           right.end_line or meta.line, (right.end_col or meta.column) + 1)
        return A.Compare(c[1], c[0], c[2], **_pos(meta))

    def arguments(self, meta, c):
        return tuple(x for x in c if x is not None)

    def call(self, meta, c):
        return A.Call(c[0], c[1] or (), **_pos(meta))

    def attr(self, meta, c):
        if isinstance(c[0], Token):  # a NAME target can't reach here; defensive
            raise DSLError("invalid member access", meta.line, meta.column)
        return A.Attr(c[0], _check_member(c[1], "a member name"), **_pos(meta))

    def index(self, meta, c):
        return A.Index(c[0], c[1], **_pos(meta))


def _unexpected(e: UnexpectedInput, text: str) -> DSLError | None:
    if isinstance(e, UnexpectedToken) and e.token.type in ("ELIF", "ELSE"):
        return _orphan_clause(str(e.token), e.token)
    return None


FRONTEND = Frontend(
    lexicon=LEXICON,
    grammar=Grammar(__package__, _PsIndenter, maybe_placeholders=True),
    expr_rules=_EXPR_RULES,
    transformer=_ToAst(),
    unexpected=_unexpected,
)


def parse(source: str, filename: str = "<script>", limits: Limits = Limits(),
          cache: ParserCache | None = None) -> A.Module:
    """Parse PromptScript source into a ``ps.ast.Module``; raise ``DSLError``."""
    return FRONTEND.parse(source, limits, cache)
