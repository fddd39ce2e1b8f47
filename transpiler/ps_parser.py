"""PromptScript text -> ``ps_ast.Module``.

The same three steps as FilesDSL (transpiler/parser.py), each failing with a located
``DSLError``: a pre-scan of the raw text, lark (grammar in ``promptscript.lark``) with an
Indenter post-lexer that refuses ``_``-names and Python keywords as soon as they are lexed,
then an iterative depth check and a ``Transformer`` whose ``__default__`` raises.
"""

from __future__ import annotations

import keyword
import re
import threading
from importlib import resources

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedInput, UnexpectedToken, VisitError
from lark.indenter import DedentError, Indenter

from . import ps_ast as A
from .errors import DSLError
from .parser import (
    MAX_BLOCKS,
    MAX_EXPR_DEPTH,
    MAX_INT_DIGITS,
    MAX_NESTING,
    MAX_SOURCE_BYTES,
    MAX_TOKENS,
    _char_error,
    _lark_error,
    _private_cache_file,
    deep_stack,
)

__all__ = ["parse", "prescan", "KEYWORDS", "PYTHON_ONLY_KEYWORDS", "RESERVED_NAMES"]

# PromptScript's own keywords: never a variable, function, class or parameter name.
KEYWORDS = frozenset({
    "def", "class", "if", "elif", "else", "while", "for", "in", "return", "break", "continue",
    "pass", "with", "policy", "retry", "backoff", "timeout", "guard", "true", "false", "null",
    "and", "or", "not",
})
# Python keywords PromptScript lacks: refused wherever they appear.
PYTHON_ONLY_KEYWORDS = frozenset(set(keyword.kwlist) - KEYWORDS)
_HINTS = {"True": "write 'true'", "False": "write 'false'", "None": "write 'null'",
          "import": "scripts cannot import modules", "lambda": "use def"}
# Names the generated code or RestrictedPython needs for itself.
RESERVED_NAMES = frozenset({"printed", "builtins", "breakpoint", "eval", "exec", "print", "self_"})
GENERATED_PREFIX = "ps_"

_INTERESTING = re.compile(r"""["`#()\[\]{}]|[^\t -~]""")
_BAD_IN_TEXT = re.compile(r"[\x00\ud800-\udfff]")
_OPENERS = {"(": ")", "[": "]", "{": "}"}


def _check_text(text: str, line: int, col: int) -> None:
    m = _BAD_IN_TEXT.search(text)
    if m:
        raise _char_error(m.group(), line, col + m.start())


def prescan(source: str, *, max_bytes: int = MAX_SOURCE_BYTES, max_nesting: int = MAX_NESTING,
            max_blocks: int = MAX_BLOCKS) -> str:
    """Check the raw text; return it normalised for lark (no BOM, ``\\n`` ends, final newline)."""
    size = len(source) if len(source) > max_bytes else len(source.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise DSLError(f"script is too large ({size} bytes; limit {max_bytes})", 1, 1)
    if source.startswith("\ufeff"):
        source = source[1:]
    text = source.replace("\r\n", "\n")
    brackets: list[tuple[str, int, int]] = []
    indents = [0]
    seen_code = False
    raw_open: tuple[int, int] | None = None  # where an unfinished `...` string started
    for lineno, line in enumerate(text.split("\n"), 1):
        pos = 0
        n = len(line)
        if raw_open is not None:
            end = line.find("`")
            _check_text(line if end < 0 else line[:end], lineno, 1)
            if end < 0:
                continue
            raw_open = None
            pos = end + 1
        elif not brackets:
            stripped = line.lstrip(" \t")
            if stripped and not stripped.startswith("#"):
                lead = line[: n - len(stripped)]
                tab = lead.find("\t")
                if tab >= 0:
                    raise DSLError("tab character in indentation (indent with spaces only)",
                                   lineno, tab + 1)
                width = len(lead)
                if not seen_code and width:
                    raise DSLError("unexpected indent", lineno, width + 1)
                seen_code = True
                if width > indents[-1]:
                    indents.append(width)
                    if len(indents) - 1 > max_blocks:
                        raise DSLError(f"blocks nested too deep (limit {max_blocks})", lineno, width + 1)
                else:
                    while width < indents[-1]:
                        indents.pop()
                    if width != indents[-1]:
                        raise DSLError("unindent does not match any outer indentation level",
                                       lineno, width + 1)
        while True:
            m = _INTERESTING.search(line, pos)
            if not m:
                break
            ch, i = m.group(), m.start()
            if ch == "#":
                _check_text(line[i + 1:], lineno, i + 2)
                break
            if ch == '"':
                j = i + 1
                while j < n and line[j] != '"':
                    j += 2 if line[j] == "\\" else 1
                if j >= n:
                    raise DSLError("unterminated string", lineno, i + 1)
                _check_text(line[i + 1:j], lineno, i + 2)
                pos = j + 1
                continue
            if ch == "`":
                j = line.find("`", i + 1)
                if j < 0:
                    _check_text(line[i + 1:], lineno, i + 2)
                    raw_open = (lineno, i + 1)
                    break
                _check_text(line[i + 1:j], lineno, i + 2)
                pos = j + 1
                continue
            if ch in _OPENERS:
                brackets.append((ch, lineno, i + 1))
                if len(brackets) > max_nesting:
                    raise DSLError(f"nesting too deep (limit {max_nesting})", lineno, i + 1)
            elif ch in ")]}":
                if not brackets or _OPENERS[brackets[-1][0]] != ch:
                    raise DSLError(f"unexpected '{ch}'", lineno, i + 1)
                brackets.pop()
            else:
                raise _char_error(ch, lineno, i + 1)
            pos = i + 1
    if raw_open is not None:
        raise DSLError("unterminated backtick string", *raw_open)
    if brackets:
        ch, line_, col = brackets[-1]
        raise DSLError(f"'{ch}' was never closed", line_, col)
    if not text.endswith("\n"):
        text += "\n"
    return text


class _PsIndenter(Indenter):
    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8  # never used: the pre-scan refuses tabs in indentation
    max_tokens = MAX_TOKENS

    def process(self, stream):
        return super().process(self._check_tokens(stream, self.max_tokens))

    @staticmethod
    def _check_tokens(stream, limit):
        count = 0
        for tok in stream:
            count += 1
            if count > limit:
                raise DSLError(f"script is too long (more than {limit} tokens)", tok.line, tok.column)
            if tok.type == "NAME":
                value = str(tok)
                if value in ("elif", "else"):  # lexed as a name only where no clause can start
                    raise _orphan_clause(value, tok)
                if value.startswith("_"):
                    raise DSLError(f"names cannot start with '_' ('{value}')", tok.line, tok.column)
                if value in PYTHON_ONLY_KEYWORDS:
                    hint = _HINTS.get(value)
                    message = f"'{value}' is not PromptScript" + (f"; {hint}" if hint else "")
                    raise DSLError(message, tok.line, tok.column)
            yield tok


def _orphan_clause(word: str, tok: Token) -> DSLError:
    return DSLError(f"'{word}' without a matching 'if' (it must line up with its 'if'"
                    + (", and only 'if' has an 'else'" if word == "else" else "") + ")",
                    tok.line, tok.column)


_lark: Lark | None = None
_lock = threading.Lock()


def _get_lark() -> Lark:
    global _lark
    if _lark is None:
        grammar = resources.files(__package__).joinpath("promptscript.lark").read_text("utf-8")
        options = dict(parser="lalr", lexer="contextual", propagate_positions=True,
                       maybe_placeholders=True)
        cache = _private_cache_file(grammar, "ps" + repr(sorted(options.items())))
        _lark = Lark(grammar, postlex=_PsIndenter(), cache=cache or False, **options)
    return _lark


_EXPR_RULES = frozenset({"or_op", "and_op", "not_op", "compare", "add", "sub", "mul", "div",
                         "mod", "neg", "call", "attr", "index", "array", "object"})


def _check_depth(tree: Tree, limit: int) -> None:
    stack: list[tuple[Tree, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        depth = depth + 1 if node.data in _EXPR_RULES else 0
        if depth > limit:
            raise DSLError(f"expression too deep (limit {limit})",
                           getattr(node.meta, "line", 1), getattr(node.meta, "column", 1))
        for child in node.children:
            if isinstance(child, Tree):
                stack.append((child, depth))


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}
_ESCAPE_RE = re.compile(r"\\(.)", re.S)


def unescape(body: str) -> str:
    return _ESCAPE_RE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), body)


def _pos(meta) -> dict:
    return {"line": meta.line, "col": meta.column, "end_line": meta.end_line, "end_col": meta.end_column}


def _tpos(tok: Token) -> dict:
    return {"line": tok.line, "col": tok.column, "end_line": tok.end_line, "end_col": tok.end_column}


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


_TRANSFORMER = _ToAst()


def parse(source: str, filename: str = "<script>", *, max_bytes: int = MAX_SOURCE_BYTES,
          max_nesting: int = MAX_NESTING, max_blocks: int = MAX_BLOCKS,
          max_expr_depth: int = MAX_EXPR_DEPTH, max_tokens: int = MAX_TOKENS) -> A.Module:
    """Parse PromptScript source into a ``ps_ast.Module``; raise ``DSLError``."""
    text = prescan(source, max_bytes=max_bytes, max_nesting=max_nesting, max_blocks=max_blocks)
    try:
        with _lock:
            parser = _get_lark()
            parser.options.postlex.max_tokens = max_tokens
            tree = parser.parse(text)
            _check_depth(tree, max_expr_depth)
            _TRANSFORMER.text = text
            with deep_stack():
                return _TRANSFORMER.transform(tree)
    except DSLError:
        raise
    except VisitError as e:
        if isinstance(e.orig_exc, DSLError):
            raise e.orig_exc from None
        if isinstance(e.orig_exc, RecursionError):
            raise DSLError("expression too deep", 1, 1) from None
        raise
    except DedentError:
        raise DSLError("unindent does not match any outer indentation level", 1, 1) from None
    except UnexpectedInput as e:
        if isinstance(e, UnexpectedToken) and e.token.type in ("ELIF", "ELSE"):
            raise _orphan_clause(str(e.token), e.token) from None
        raise _lark_error(e, text) from None
    except RecursionError:
        raise DSLError("expression too deep", 1, 1) from None
