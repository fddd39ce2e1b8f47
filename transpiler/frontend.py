"""What every language's parser shares: the pre-scan (prescan.py), lark, error mapping, depth.

Parsing is three steps, each failing with a located ``DSLError``:

1. ``prescan`` over the raw text refuses what must never reach lark or a recursive algorithm:
   oversized input, odd characters, unterminated strings, unbalanced or too deeply nested
   brackets, tabs in indentation, too deeply nested blocks. A language's ``Lexicon`` names its
   quotes and brackets;
2. lark (LALR) with a ``LimitedIndenter`` post-lexer that counts tokens and lets the language
   refuse a name as soon as it is lexed;
3. an iterative depth check of the parse tree, then the language's ``Transformer`` to its AST.

Steps 2 and 3 first run as one (``_Direct``): lark's lexer and parse table, with the
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
from lark.indenter import DedentError, Indenter
from lark.lexer import BasicLexer, ContextualLexer, LexerThread
from lark.parse_tree_builder import maybe_create_child_filter
from lark.parsers.lalr_analysis import Shift
from lark.visitors import _vargs_meta

from .errors import DSLError
from .limits import DEFAULT_LIMITS, MAX_INT_DIGITS, STACK_FRAMES, Limits
from .prescan import Lexicon, char_error, prescan  # noqa: F401 (the frontend's API)

__all__ = ["Limits", "Lexicon", "LimitedIndenter", "Grammar", "ParserCache", "Frontend",
           "prescan", "char_error", "lark_error", "STACK_FRAMES", "MAX_INT_DIGITS"]

# ---- step 2: lark ----------------------------------------------------------------------------


class LimitedIndenter(Indenter):
    """lark's Indenter, counting tokens and handing each NAME to ``check_name`` as it is lexed."""

    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ["LPAR", "LSQB"]
    CLOSE_PAREN_types = ["RPAR", "RSQB"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8  # never used: the pre-scan refuses tabs in indentation
    max_tokens = DEFAULT_LIMITS.max_tokens  # set per parse, under the frontend's lock

    def process(self, stream):
        return super().process(self._check_tokens(stream, self.max_tokens))

    def _check_tokens(self, stream, limit):
        for count, tok in enumerate(stream, 1):
            if count > limit:
                raise DSLError(f"script is too long (more than {limit} tokens)", tok.line, tok.column)
            if tok.type == "NAME":
                self.check_name(tok)
            yield tok

    def check_name(self, tok: Token) -> None:
        """Raise a ``DSLError`` for a name the language refuses."""


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


# ---- steps 2 and 3 in one pass, for a script that is valid ----------------------------------


class _Splice:
    """A ``_rule``'s children, spliced into its parent's (lark inlines such a subtree)."""

    __slots__ = ("children",)

    def __init__(self, children: list) -> None:
        self.children = children


class _Meta:
    """The positions lark's ``propagate_positions`` gives a rule (what the transformer reads)."""

    __slots__ = ("line", "column", "start_pos", "end_line", "end_column", "end_pos", "empty")

    def __init__(self, span: tuple) -> None:
        self.line, self.column, self.start_pos, self.end_line, self.end_column, self.end_pos = span
        self.empty = False


# The lark releases whose parser internals _Direct mirrors (tests/transpiler/test_direct_parse.py
# and the recorded corpus hold it equal to lark's own parse); with any other, every script is
# parsed the plain way.
DIRECT_LARK_VERSIONS = frozenset({"1.3.1"})


class _Stop(Exception):
    """Not a valid, shallow enough script: parse it the plain way."""


_UNIT, _PASS, _SPLICE, _CALL = range(4)


class _Direct:
    """One grammar's parse table and lexer, driven with the transformer's rules applied at each
    reduction. It mirrors what lark's tree builder does for ``parser="lalr"`` with
    ``propagate_positions``: the same child filtering (``_rule`` splices, placeholders), the
    same single-child inlining of ``?rule``, the same spans (a node covers its first and last
    positioned child's container, a parenthesised ``?rule`` widens its child's container) and
    the same depth that ``check_depth`` measures (operators of ``expr_rules`` directly inside
    one another). ``parse`` returns the AST or raises ``_Stop``.
    """

    def __init__(self, parser: Lark, transformer: Transformer, expr_rules: frozenset[str]) -> None:
        table = parser.parser.parser.parser.parse_table
        self.start_state = table.start_states["start"]
        self.end_state = table.end_states["start"]
        self.lexer = parser.parser.lexer
        placeholders = parser.options.maybe_placeholders
        rules = {}
        for rule in parser.rules:
            options = rule.options
            made = maybe_create_child_filter(rule.expansion, options.keep_all_tokens, False,
                                             options.empty_indices if placeholders else None)
            if made is None:
                include, append_none = None, 0
            elif len(made.args) == 2:  # with placeholders: (to_include, nones at the end)
                include, append_none = made.args
            else:
                include, append_none = [(i, expand, 0) for i, expand in made.args[0]], 0
            name = rule.alias or options.template_source or rule.origin.name
            expand1 = options.expand1 and not rule.alias
            method = getattr(transformer, name, None)
            if method is not None and getattr(method, "visit_wrapper", None) is not _vargs_meta:
                raise ValueError(f"rule {name}: only @v_args(meta=True) transformers")
            fn = None if method is None else method.base_func
            if expand1 and rule.origin.name.startswith("_"):
                raise ValueError(f"rule {name}: an inlined ?_rule")
            if expand1 and len(rule.expansion) == 1 and include is None:
                kind = _UNIT
            elif expand1:
                kind = _PASS
            elif rule.origin.name.startswith("_"):
                kind = _SPLICE
            else:
                kind = _CALL
            if include is not None and not append_none and not any(expand or nones for _, expand, nones in include):
                include = [i for i, _, _ in include]  # a plain selection (a list; the general form is a tuple)
            elif include is not None:
                include = tuple(include)
            rules[rule] = (kind, len(rule.expansion), sys.intern(str(rule.origin.name)), include, append_none, fn,
                           name in expr_rules)
        # The table with each action as one value: a state to shift (or go) to, or a rule to reduce;
        # symbols as plain strings (lark keeps some rule names as Tokens, slow to compare).
        self.table = {state: {sys.intern(str(symbol)): arg if action is Shift else rules[arg] for symbol, (action, arg) in row.items()}
                      for state, row in table.states.items()}
        for row in self.table.values():
            if not all(type(v) is int or type(v) is tuple for v in row.values()):
                raise ValueError("unexpected parse table")
        for terminal in parser.terminals:  # the transformer must not rewrite tokens
            if hasattr(transformer, terminal.name):
                raise ValueError(f"token {terminal.name} has a transformer method")
        # The contextual lexer and the post-lexer are run inline (the same calls, without three
        # generators per token) when they are the ones this class mirrors.
        contextual, post = getattr(self.lexer, "lexer", None), getattr(self.lexer, "postlexer", None)
        post_type = type(post)
        self.inline = (type(contextual) is ContextualLexer and isinstance(post, LimitedIndenter)
                       and post_type.process is LimitedIndenter.process
                       and post_type._check_tokens is LimitedIndenter._check_tokens
                       and post_type._process is Indenter._process and post_type.handle_NL is Indenter.handle_NL)
        if self.inline:
            self.post = post
            self.basic_lexers = contextual.lexers
            self.inline = all(type(basic) is BasicLexer for basic in contextual.lexers.values())
        self.lexers: dict = {}  # a state -> its lexer's parts, made when first used (lark builds them lazily)

    def _lexer(self, state) -> tuple:
        """What BasicLexer.next_token uses for ``state``: its patterns, ignored, multi-line and
        re-typed terminals (lark's keyword-from-NAME callbacks)."""
        basic = self.basic_lexers[state]
        parts = self.lexers[state] = (basic.scanner._mres, basic.ignore_types, basic.newline_types, basic.callback)
        return parts

    def parse(self, text: str, max_depth: int):
        table, end_state = self.table, self.end_state
        state = _Position([self.start_state])
        stack = state.stack
        values: list = []
        spans: list = []
        depth: dict[int, int] = {}  # id(node) -> its depth, for nodes of expr_rules

        def reduce(rule):
            kind, size, origin, include, append_none, fn, is_expr = rule
            if size:
                children = values[-size:]
                child_spans = spans[-size:]
                del values[-size:], spans[-size:], stack[-size:]
            else:
                children, child_spans = [], []
            first = last = None
            for sp in child_spans:
                if sp is not None:
                    first = sp
                    break
            for sp in reversed(child_spans):
                if sp is not None:
                    last = sp
                    break
            span = None if first is None else first if first is last else first[:3] + last[3:]
            if include is None:
                kept = children
            elif include.__class__ is list:  # only dropping tokens: the kept positions
                kept = [children[i] for i in include]
            else:
                kept = []
                for i, expand, nones in include:
                    if nones:
                        kept += [None] * nones
                    if expand:
                        if kept:
                            kept += children[i].children
                        else:  # a left-recursive list: take it over (as lark does), no copy
                            kept = children[i].children
                    else:
                        kept.append(children[i])
                if append_none:
                    kept += [None] * append_none
            if kind == _PASS and len(kept) == 1:
                value = kept[0]
                if value is None:
                    span = None
                elif isinstance(value, Token):
                    span = (value.line, value.column, value.start_pos, value.end_line, value.end_column,
                            value.end_pos)
            elif kind == _SPLICE:
                value = _Splice(kept)
            else:
                if fn is None or span is None:
                    raise _Stop
                value = fn(_Meta(span), kept)
                if is_expr:
                    d = 1
                    for child in kept:
                        dc = depth.get(id(child), 0)
                        if dc >= d:
                            d = dc + 1
                    if d > max_depth:
                        raise _Stop
                    depth[id(value)] = d
            stack.append(table[stack[-1]][origin])
            values.append(value)
            spans.append(span)

        def feed(token):
            kind = token.type
            while True:
                act = table[stack[-1]].get(kind)
                if type(act) is int:
                    stack.append(act)
                    values.append(token)
                    spans.append((token.line, token.column, token.start_pos, token.end_line, token.end_column,
                                  token.end_pos))
                    return
                if act is None:
                    raise _Stop
                if act[0] == _UNIT:  # `?a: b` with one child: the child, unchanged
                    stack[-1] = table[stack[-2]][act[2]]
                else:
                    reduce(act)

        if self.inline:
            token = self._lex_inline(text, state, feed)
        else:
            token = None
            for token in LexerThread.from_text(self.lexer, text).lex(state):
                feed(token)
        while True:
            act = table[stack[-1]].get("$END")
            if type(act) is not tuple:
                raise _Stop
            if act[0] == _UNIT:
                stack[-1] = table[stack[-2]][act[2]]
            else:
                reduce(act)
            if stack[-1] == end_state:
                return values[-1]

    def _lex_inline(self, text: str, state: "_Position", feed: Callable[[Token], None]) -> Token | None:
        """``ContextualLexer.lex`` through ``LimitedIndenter.process`` (lark's ``Indenter``), as
        one loop feeding the parser; returns the last token. Any error: ``_Stop``."""
        lexers, stack, post = self.lexers, state.stack, self.post
        lex_state = LexerThread.from_text(self.lexer, text).state
        line_ctr, end = lex_state.line_ctr, lex_state.text.end
        limit, check_name, tab_len = post.max_tokens, post.check_name, post.tab_len
        newline, indent_type, dedent_type = post.NL_type, post.INDENT_type, post.DEDENT_type
        opening, closing = post.OPEN_PAREN_types, post.CLOSE_PAREN_types
        paren_level, indent_level = 0, [0]
        count = 0
        last = None
        while True:
            # BasicLexer.next_token, for the lexer of the parser's state
            mres, ignore_types, newline_types, callbacks = lexers.get(stack[-1]) or self._lexer(stack[-1])
            token = None
            while line_ctr.char_pos < end:
                pos = line_ctr.char_pos
                for mre in mres:
                    m = mre.match(text, pos, end)
                    if m:
                        break
                else:
                    raise _Stop
                value, kind = m.group(0), m.lastgroup
                ignored = kind in ignore_types
                if ignored and kind not in callbacks:
                    line_ctr.feed(value, kind in newline_types)
                    continue
                line, column = line_ctr.line, line_ctr.column
                line_ctr.feed(value, kind in newline_types)
                t = Token(kind, value, pos, line, column, line_ctr.line, line_ctr.column, line_ctr.char_pos)
                if kind in callbacks:
                    t = callbacks[kind](t)
                if not ignored:
                    if not isinstance(t, Token):
                        raise _Stop
                    lex_state.last_token = token = t
                    break
            if token is None:
                break
            last = token
            count += 1
            kind = token.type
            if count > limit:
                raise _Stop
            if kind == "NAME":
                check_name(token)
            if kind == newline:
                if paren_level == 0:
                    feed(token)
                    indent_str = token.rsplit("\n", 1)[1]
                    indent = indent_str.count(" ") + indent_str.count("\t") * tab_len
                    if indent > indent_level[-1]:
                        indent_level.append(indent)
                        feed(Token.new_borrow_pos(indent_type, indent_str, token))
                    else:
                        while indent < indent_level[-1]:
                            indent_level.pop()
                            feed(Token.new_borrow_pos(dedent_type, indent_str, token))
                        if indent != indent_level[-1]:
                            raise _Stop
            else:
                feed(token)
            if kind in opening:
                paren_level += 1
            elif kind in closing:
                paren_level -= 1
                if paren_level < 0:
                    raise _Stop
        token = last
        while len(indent_level) > 1:
            indent_level.pop()
            feed(Token.new_borrow_pos(dedent_type, "", token) if token else Token(dedent_type, "", 0, 0, 0, 0, 0, 0))
        return token


class _Position:
    """The parser state the contextual lexer reads (``position``: the state on top)."""

    __slots__ = ("stack",)

    def __init__(self, stack: list) -> None:
        self.stack = stack

    @property
    def position(self):
        return self.stack[-1]


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
        self._direct: tuple[Lark, _Direct | None] | None = None

    def _direct_for(self, parser: Lark) -> _Direct | None:
        if self._direct is None or self._direct[0] is not parser:
            direct = None
            if lark.__version__ in DIRECT_LARK_VERSIONS:  # another lark's internals may differ: the plain way
                try:
                    direct = _Direct(parser, self.transformer, self.expr_rules)
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
