"""FilesDSL text -> ``ast.Module``.

Three steps, each failing with a located ``DSLError``:

1. a pre-scan (``prescan``) over the raw text that refuses what must never reach lark or a
   recursive algorithm: oversized input, odd characters, unterminated strings, unbalanced or
   too deeply nested brackets, tabs in indentation, too deeply nested blocks;
2. lark (LALR, grammar in ``fdsl.lark``) with an ``Indenter`` post-lexer that also refuses
   ``_``-names and Python keywords as soon as they are lexed;
3. an iterative depth check of the parse tree, then a ``Transformer`` to the DSL AST whose
   ``__default__`` raises (a rule without a method is a bug, never a silent pass-through).

Lone carriage returns: ``\\r\\n`` is a line end; a ``\\r`` not followed by ``\\n`` is a syntax
error ("unexpected character U+000D").
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import unicodedata
from importlib import resources

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.indenter import DedentError, Indenter

from . import ast
from .errors import DSLError
from .surface import RESERVED_WORDS

__all__ = ["parse", "prescan", "deep_stack", "MAX_SOURCE_BYTES", "MAX_NESTING", "MAX_BLOCKS",
           "MAX_EXPR_DEPTH", "MAX_TOKENS"]

MAX_SOURCE_BYTES = 1 << 20  # 1 MiB
MAX_NESTING = 100  # brackets nested inside each other
# Blocks nested inside each other. Python itself refuses 100 indentation levels ("too many
# levels of indentation"), and every level costs stack in libcst and RestrictedPython, so
# FilesDSL allows 50 (agent scripts rarely nest more than 5).
MAX_BLOCKS = 50
MAX_EXPR_DEPTH = 100  # operators nested inside one expression (e.g. a 1+1+...+1 chain)
# Tokens in a script. Parsing and libcst code generation cost ~0.1 ms per token, so this
# bounds the work a hostile script can cause before it runs (a 5000-line script fits).
MAX_TOKENS = 50_000
MAX_INT_DIGITS = 4000  # Python refuses to convert longer decimal strings

# The recursive phases (lark's Transformer, libcst's code generation and metadata) need about
# 15 frames per block level and 4-6 per expression level; with the limits above the deepest
# valid script needs ~1100 frames. ``deep_stack`` raises the interpreter's recursion limit
# for the duration of a compilation (and puts it back when the last one finishes).
_STACK_HEADROOM = 3000
_stack_lock = threading.Lock()
_stack_users = 0
_stack_saved = 0


@contextlib.contextmanager
def deep_stack():
    global _stack_users, _stack_saved
    with _stack_lock:
        if _stack_users == 0:
            _stack_saved = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_stack_saved, _STACK_HEADROOM + 1000))
        _stack_users += 1
    try:
        yield
    finally:
        with _stack_lock:
            _stack_users -= 1
            if _stack_users == 0:
                sys.setrecursionlimit(_stack_saved)


# ---- step 1: pre-scan ------------------------------------------------------------------------

_INTERESTING = re.compile(r"""["'#()\[\]]|[^\t -~]""")
_BAD_IN_TEXT = re.compile(r"[\x00\ud800-\udfff]")  # refused even inside strings and comments
_OPENERS = {"(": ")", "[": "]"}


def _char_error(ch: str, line: int, col: int) -> DSLError:
    code = f"U+{ord(ch):04X}"
    try:
        name = unicodedata.name(ch)
    except ValueError:
        name = ""
    message = f"unexpected character {code}" + (f" ({name})" if name else "")
    if ch == "\r":
        message += ": a carriage return must be followed by a newline"
    return DSLError(message, line, col)


def _check_text(text: str, line: int, start_col: int) -> None:
    """Refuse NUL and lone surrogates inside a string body or a comment."""
    m = _BAD_IN_TEXT.search(text)
    if m:
        raise _char_error(m.group(), line, start_col + m.start())


def prescan(
    source: str,
    *,
    max_bytes: int = MAX_SOURCE_BYTES,
    max_nesting: int = MAX_NESTING,
    max_blocks: int = MAX_BLOCKS,
) -> str:
    """Check the raw text; return it normalised for lark (no BOM, ``\\n`` line ends, final
    newline). Raises ``DSLError`` on the first problem found, scanning in source order."""
    size = len(source) if len(source) > max_bytes else len(source.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise DSLError(f"script is too large ({size} bytes; limit {max_bytes})", 1, 1)
    if source.startswith("\ufeff"):
        source = source[1:]
    text = source.replace("\r\n", "\n")
    lines = text.split("\n")
    brackets: list[tuple[str, int, int]] = []
    indents = [0]
    seen_code = False
    for lineno, line in enumerate(lines, 1):
        if not brackets:
            stripped = line.lstrip(" \t")
            if stripped and not stripped.startswith("#"):
                lead = line[: len(line) - len(stripped)]
                tab = lead.find("\t")
                if tab >= 0:
                    raise DSLError(
                        "tab character in indentation (indent with spaces only)", lineno, tab + 1
                    )
                width = len(lead)
                if not seen_code and width:
                    raise DSLError("unexpected indent", lineno, width + 1)
                seen_code = True
                if width > indents[-1]:
                    indents.append(width)
                    if len(indents) - 1 > max_blocks:
                        raise DSLError(
                            f"blocks nested too deep (limit {max_blocks})", lineno, width + 1
                        )
                else:
                    while width < indents[-1]:
                        indents.pop()
                    if width != indents[-1]:
                        raise DSLError(
                            "unindent does not match any outer indentation level", lineno, width + 1
                        )
        pos = 0
        n = len(line)
        while True:
            m = _INTERESTING.search(line, pos)
            if not m:
                break
            ch = m.group()
            i = m.start()
            if ch == "#":
                _check_text(line[i + 1 :], lineno, i + 2)
                break
            if ch in "\"'":
                j = i + 1
                while j < n:
                    c = line[j]
                    if c == "\\":
                        j += 2
                        continue
                    if c == ch:
                        break
                    j += 1
                if j >= n:
                    raise DSLError("unterminated string", lineno, i + 1)
                _check_text(line[i + 1 : j], lineno, i + 2)
                pos = j + 1
                continue
            if ch in _OPENERS:
                brackets.append((ch, lineno, i + 1))
                if len(brackets) > max_nesting:
                    raise DSLError(f"nesting too deep (limit {max_nesting})", lineno, i + 1)
            elif ch in ")]":
                if not brackets or _OPENERS[brackets[-1][0]] != ch:
                    raise DSLError(f"unexpected '{ch}'", lineno, i + 1)
                brackets.pop()
            else:
                raise _char_error(ch, lineno, i + 1)
            pos = i + 1
    if brackets:
        ch, line_, col = brackets[-1]
        raise DSLError(f"'{ch}' was never closed", line_, col)
    if not text.endswith("\n"):
        text += "\n"
    return text


# ---- step 2: lark ----------------------------------------------------------------------------


class _FdslIndenter(Indenter):
    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ["LPAR", "LSQB"]
    CLOSE_PAREN_types = ["RPAR", "RSQB"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8  # never used: the pre-scan refuses tabs in indentation

    max_tokens = MAX_TOKENS  # set per parse, under the parser lock

    def process(self, stream):
        return super().process(self._check_tokens(stream, self.max_tokens))

    @staticmethod
    def _check_tokens(stream, limit):
        count = 0
        for tok in stream:
            count += 1
            if count > limit:
                raise DSLError(f"script is too long (more than {limit} tokens)",
                               tok.line, tok.column)
            if tok.type == "NAME":
                _check_name(tok)
            yield tok


_KEYWORD_HINTS = {
    "True": "'True' is not FilesDSL; write 'true'",
    "False": "'False' is not FilesDSL; write 'false'",
}


# FilesDSL's own keywords. The contextual lexer lexes a keyword as NAME in a state where the
# keyword cannot appear (`x = else`); such a NAME is refused here, never used as a variable.
DSL_KEYWORDS = frozenset(
    {"for", "in", "if", "elif", "else", "break", "continue", "and", "or", "not", "true", "false"}
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


_lark: Lark | None = None
_lark_lock = threading.Lock()


def _get_lark() -> Lark:
    global _lark
    if _lark is None:
        grammar = resources.files(__package__).joinpath("fdsl.lark").read_text("utf-8")
        options = dict(parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False)
        cache = _private_cache_file(grammar, repr(sorted(options.items())))
        _lark = Lark(grammar, postlex=_FdslIndenter(), cache=cache or False, **options)
    return _lark


def _private_cache_file(grammar: str, options: str) -> str | None:
    """Where to keep the built parser (lark pickles it): a directory only this user can write.

    Never the shared temp directory: another local user could plant a pickle there. Any
    doubt about the directory means no cache, which only costs start-up time.
    """
    import hashlib
    import stat

    import lark

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "filesdsl")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.stat(folder, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        return None
    digest = hashlib.sha256(f"{lark.__version__}\0{options}\0{grammar}".encode()).hexdigest()[:24]
    return os.path.join(folder, f"fdsl-parser-{digest}.lark-cache")


_TOKEN_WORDS = {"_NEWLINE": "end of line", "$END": "end of input"}


def _after(tok: Token) -> tuple[int, int]:
    """Position just after a token (for INDENT/DEDENT: where the next line's code starts)."""
    return tok.end_line or tok.line or 1, tok.end_column or tok.column or 1


def _lark_error(e: UnexpectedInput, text: str) -> DSLError:
    if isinstance(e, UnexpectedCharacters):
        ch = e.char
        if ch == "\\":
            return DSLError("unexpected '\\' (a backslash is only allowed inside strings)",
                            e.line, e.column)
        return DSLError(f"unexpected character '{ch}'", e.line, e.column)
    if isinstance(e, UnexpectedToken):
        tok = e.token
        expected = set(e.expected or ())
        if e.interactive_parser is not None:  # the parser's view, not the contextual lexer's
            try:
                expected = {k for k in e.interactive_parser.choices() if k.isupper()}
            except Exception:  # pragma: no cover - best effort for a nicer message
                pass
        if tok.type == "$END":
            lines = text.split("\n")
            while len(lines) > 1 and not lines[-1].strip():
                lines.pop()
            line, col = len(lines), len(lines[-1]) + 1
            if "_INDENT" in expected:
                return DSLError("expected an indented block", line, col)
            return DSLError("unexpected end of input", line, col)
        if tok.type in ("_INDENT", "_DEDENT"):
            line, col = _after(tok)
            if "_INDENT" in expected:
                return DSLError("expected an indented block", line, col)
            if tok.type == "_INDENT":
                return DSLError("unexpected indent", line, col)
            return DSLError("unexpected unindent", line, col)
        if "_INDENT" in expected and expected <= {"_INDENT"}:
            return DSLError("expected an indented block", tok.line, tok.column)
        if tok.type == "_NEWLINE":
            if expected == {"COLON"}:
                return DSLError("expected ':'", tok.line, tok.column)
            return DSLError("unexpected end of line", tok.line, tok.column)
        value = str(tok)
        if len(value) > 40:
            value = value[:37] + "..."
        message = f"unexpected '{value}'" if tok.type != "STRING" else f"unexpected string {value}"
        if tok.type == "EQUAL" and re.match(r"\s*(el)?if\b", text.split("\n")[tok.line - 1]):
            message += " (use '==' to compare)"
        elif tok.type == "_NEWLINE":
            message = "unexpected end of line"
        return DSLError(message, tok.line, tok.column)
    line = getattr(e, "line", None)
    col = getattr(e, "column", None)
    return DSLError("invalid syntax", line if isinstance(line, int) and line > 0 else 1,
                    col if isinstance(col, int) and col > 0 else 1)


# ---- step 3: depth check and transformer -----------------------------------------------------

_EXPR_RULES = frozenset(
    {"or_op", "and_op", "not_op", "compare", "add", "sub", "mul", "div", "mod", "neg", "call",
     "attr", "index", "list"}
)


def _check_depth(tree: Tree, limit: int) -> None:
    """Refuse expressions nested deeper than ``limit`` operators, iteratively, before any
    recursive code (transformer, emitter, libcst, RestrictedPython) walks the tree."""
    stack: list[tuple[Tree, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if node.data in _EXPR_RULES:
            depth += 1
            if depth > limit:
                meta = node.meta
                raise DSLError(
                    f"expression too deep (limit {limit})",
                    getattr(meta, "line", 1), getattr(meta, "column", 1)
                )
        else:
            depth = 0
        for child in node.children:
            if isinstance(child, Tree):
                stack.append((child, depth))


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}
_ESCAPE_RE = re.compile(r"\\(.)", re.S)


def unescape(body: str) -> str:
    """Apply FilesDSL string escapes; an unknown escape keeps its backslash ("\\d" -> \\d)."""
    return _ESCAPE_RE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), body)


def _pos(meta) -> dict:
    return {"line": meta.line, "col": meta.column, "end_line": meta.end_line,
            "end_col": meta.end_column}


def _tpos(tok: Token) -> dict:
    return {"line": tok.line, "col": tok.column, "end_line": tok.end_line,
            "end_col": tok.end_column}


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


_TRANSFORMER = _ToAst()


def parse(
    source: str,
    filename: str = "<script>",
    *,
    max_bytes: int = MAX_SOURCE_BYTES,
    max_nesting: int = MAX_NESTING,
    max_blocks: int = MAX_BLOCKS,
    max_expr_depth: int = MAX_EXPR_DEPTH,
    max_tokens: int = MAX_TOKENS,
) -> ast.Module:
    """Parse FilesDSL source into an ``ast.Module``; raise ``DSLError`` (kind SyntaxError)."""
    text = prescan(source, max_bytes=max_bytes, max_nesting=max_nesting, max_blocks=max_blocks)
    try:
        with _lark_lock:  # the Indenter post-lexer keeps per-parse state
            parser = _get_lark()
            parser.options.postlex.max_tokens = max_tokens
            tree = parser.parse(text)
        _check_depth(tree, max_expr_depth)
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
    except DedentError:  # the pre-scan should have caught it
        raise DSLError("unindent does not match any outer indentation level", 1, 1) from None
    except UnexpectedInput as e:
        raise _lark_error(e, text) from None
    except RecursionError:
        raise DSLError("expression too deep", 1, 1) from None
