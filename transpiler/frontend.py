"""What every language's parser shares: the pre-scan (prescan.py), lark, error mapping, depth.

Parsing is three steps, each failing with a located ``DSLError``:

1. ``prescan`` over the raw text refuses what must never reach lark or a recursive algorithm:
   oversized input, odd characters, unterminated strings, unbalanced or too deeply nested
   brackets, tabs in indentation, too deeply nested blocks. A language's ``Lexicon`` names its
   quotes and brackets;
2. lark (LALR) with a ``LimitedIndenter`` post-lexer that counts tokens and lets the language
   refuse a name as soon as it is lexed;
3. an iterative depth check of the parse tree, then the language's ``Transformer`` to its AST.

Steps 2 and 3 first run as one (transpiler/onepass.py): lark's lexer and parse table, with the
transformer's rules applied as each rule is reduced (no parse tree, no recursion) and each
expression's depth counted as it is built. Whenever that pass meets anything but a valid,
shallow enough script (a syntax error, a rule refusing its input, an expression too deep), the
script is parsed again the plain way, which makes the error: the same error, by construction.

Pure: no I/O beyond reading a grammar from its package, and no process-wide state. A built parser can be kept across processes in a
``ParserCache`` the caller passes in (the runtime keeps one in a private user directory).
The recursive phases need ``STACK_FRAMES`` of Python recursion limit for the deepest valid
script; below that a deep script is refused with a ``DSLError``, never a ``RecursionError``.
"""

from __future__ import annotations

import hashlib
import io
import re
import sys
import threading
from importlib import resources
from typing import Callable, Mapping, Protocol

import lark
from lark import Lark, Token, Transformer, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.indenter import DedentError

from .errors import DSLError
from .indenter import LimitedIndenter
from .limits import DEFAULT_LIMITS, MAX_INT_DIGITS, STACK_FRAMES, Limits
from .onepass import OnePassParser
from .prescan import Lexicon, char_error, prescan  # noqa: F401 (the frontend's API)

__all__ = ["Limits", "Lexicon", "LimitedIndenter", "Grammar", "ParserCache", "Frontend",
           "prescan", "char_error", "lark_error", "STACK_FRAMES", "MAX_INT_DIGITS"]

# ---- step 2: lark (with the post-lexer of transpiler/indenter.py) --------------------------------


class ParserCache(Protocol):
    """Where a caller keeps built parsers (bytes lark pickles) between processes."""

    def load(self, key: str) -> bytes | None: ...

    def store(self, key: str, data: bytes) -> None: ...


class Grammar:
    """A language's lark grammar (``grammar.lark`` in its package), built once per process."""

    def __init__(self, package: str, indenter: type[LimitedIndenter], **options) -> None:
        self.package = package
        self.indenter = indenter
        self.extra = options
        self.options = dict(parser="lalr", lexer="contextual", propagate_positions=True, **options)
        self._lark: Lark | None = None

    def text(self) -> str:
        return resources.files(self.package).joinpath("grammar.lark").read_text("utf-8")

    def build(self, cache: ParserCache | None = None) -> Lark:
        if self._lark is None:
            grammar = self.text()
            key = self._cache_key(grammar)
            data = cache.load(key) if cache is not None else None
            parser = self._from_cache(data) if data else None
            if parser is None:
                parser = Lark(grammar, postlex=self.indenter(), **self.options)
                if cache is not None:
                    buffer = io.BytesIO()
                    parser.save(buffer)
                    cache.store(key, buffer.getvalue())
            self._lark = parser
        return self._lark

    def _cache_key(self, grammar: str) -> str:
        ident = f"{lark.__version__}\0{sys.version_info[:2]}\0{sorted(self.options.items())}\0" \
                f"{self.indenter.__module__}.{self.indenter.__qualname__}\0{grammar}"
        return f"{self.package.rsplit('.', 1)[-1]}-{hashlib.sha256(ident.encode()).hexdigest()[:24]}"

    def _from_cache(self, data: bytes) -> Lark | None:
        try:
            parser = Lark.load(io.BytesIO(data))
        except Exception:  # a stale or damaged cache only costs a rebuild
            return None
        return parser if type(parser.options.postlex) is self.indenter else None


# ---- lark's errors as DSL errors -------------------------------------------------------------

def _after(tok: Token) -> tuple[int, int]:
    """Position just after a token (for INDENT/DEDENT: where the next line's code starts)."""
    return tok.end_line or tok.line or 1, tok.end_column or tok.column or 1


def _end_of_input(text: str, expected: set) -> DSLError:
    lines = text.split("\n")
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    line, col = len(lines), len(lines[-1]) + 1
    if "_INDENT" in expected:
        return DSLError("expected an indented block", line, col)
    return DSLError("unexpected end of input", line, col)


def _unexpected_token(e: UnexpectedToken, text: str) -> DSLError:
    tok = e.token
    expected = set(e.expected or ())
    if e.interactive_parser is not None:  # the parser's view, not the contextual lexer's
        try:
            expected = {k for k in e.interactive_parser.choices() if k.isupper()}
        except Exception:  # pragma: no cover - best effort for a nicer message
            pass
    if tok.type == "$END":
        return _end_of_input(text, expected)
    if tok.type in ("_INDENT", "_DEDENT"):
        line, col = _after(tok)
        if "_INDENT" in expected:
            return DSLError("expected an indented block", line, col)
        return DSLError("unexpected indent" if tok.type == "_INDENT" else "unexpected unindent", line, col)
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
    return DSLError(message, tok.line, tok.column)


def lark_error(e: UnexpectedInput, text: str) -> DSLError:
    if isinstance(e, UnexpectedCharacters):
        if e.char == "\\":
            return DSLError("unexpected '\\' (a backslash is only allowed inside strings)", e.line, e.column)
        return DSLError(f"unexpected character '{e.char}'", e.line, e.column)
    if isinstance(e, UnexpectedToken):
        return _unexpected_token(e, text)
    line = getattr(e, "line", None)
    col = getattr(e, "column", None)
    return DSLError("invalid syntax", line if isinstance(line, int) and line > 0 else 1,
                    col if isinstance(col, int) and col > 0 else 1)


# ---- step 3: depth check, then the language's transformer ------------------------------------


def check_depth(tree: Tree, expr_rules: frozenset[str], limit: int) -> None:
    """Refuse expressions nested deeper than ``limit`` operators, iteratively, before any
    recursive code (transformer, emitter, libcst, RestrictedPython) walks the tree."""
    stack: list[tuple[Tree, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        depth = depth + 1 if node.data in expr_rules else 0
        if depth > limit:
            raise DSLError(f"expression too deep (limit {limit})",
                           getattr(node.meta, "line", 1), getattr(node.meta, "column", 1))
        for child in node.children:
            if isinstance(child, Tree):
                stack.append((child, depth))


# The lark releases whose parser internals OnePassParser mirrors (tests/transpiler/test_direct_parse.py
# and the recorded corpus hold it equal to lark's own parse); with any other, every script is
# parsed the plain way.
DIRECT_LARK_VERSIONS = frozenset({"1.3.1"})


class Frontend:
    """One language's parser: its lexicon, grammar, expression rules and transformer.

    ``unexpected(error, text)`` may turn a lark error into a better, language-specific
    ``DSLError`` (``text`` is the normalised source, for what came before the token).
    The transformer gets the normalised text as ``.text`` before it runs."""

    def __init__(self, *, lexicon: Lexicon, grammar: Grammar, expr_rules: frozenset[str],
                 transformer: Transformer,
                 unexpected: Callable[[UnexpectedInput, str], DSLError | None] | None = None) -> None:
        self.lexicon = lexicon
        self.grammar = grammar
        self.expr_rules = expr_rules
        self.transformer = transformer
        self.unexpected = unexpected
        self._lock = threading.Lock()  # the post-lexer and the transformer keep per-parse state
        self._direct: tuple | None = None  # (parser, its one-pass parse or None)

    def _direct_for(self, parser: Lark):
        """The one-pass parse (transpiler/onepass.py) of this grammar, or None: the plain way."""
        if self._direct is None or self._direct[0] is not parser:
            direct = None
            if lark.__version__ in DIRECT_LARK_VERSIONS:  # another lark's internals may differ: the plain way
                try:
                    direct = OnePassParser(parser, self.transformer, self.expr_rules)
                except Exception:  # noqa: BLE001 - a grammar or transformer it does not mirror: the plain way
                    direct = None
            self._direct = (parser, direct)
        return self._direct[1]

    def parse(self, source: str, limits: Limits = DEFAULT_LIMITS, cache: ParserCache | None = None):
        text = prescan(source, self.lexicon, limits)
        try:
            with self._lock:
                parser = self.grammar.build(cache)
                parser.options.postlex.max_tokens = limits.max_tokens
                self.transformer.text = text
                direct = self._direct_for(parser)
                if direct is not None:
                    try:
                        return direct.parse(text, limits.max_expr_depth)
                    except Exception:  # noqa: BLE001 - the plain way below makes the error
                        pass
                tree = parser.parse(text)
                check_depth(tree, self.expr_rules, limits.max_expr_depth)
                self.transformer.text = text
                return self.transformer.transform(tree)
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
            better = self.unexpected(e, text) if self.unexpected else None
            raise (better or lark_error(e, text)) from None
        except RecursionError:
            raise DSLError("expression too deep", 1, 1) from None


# ---- helpers for the transformers ------------------------------------------------------------

_ESCAPE_RE = re.compile(r"\\(.)", re.S)


def unescaper(escapes: Mapping[str, str]) -> Callable[[str], str]:
    """A string-body decoder for a language's escapes; an unknown escape keeps its backslash."""
    def unescape(body: str) -> str:
        return _ESCAPE_RE.sub(lambda m: escapes.get(m.group(1), m.group(0)), body)
    return unescape


def span(meta) -> dict:
    """A rule's position fields, for a node's constructor."""
    return {"line": meta.line, "col": meta.column, "end_line": meta.end_line, "end_col": meta.end_column}


def token_span(tok: Token) -> dict:
    """A token's position fields, for a node's constructor."""
    return {"line": tok.line, "col": tok.column, "end_line": tok.end_line, "end_col": tok.end_column}
