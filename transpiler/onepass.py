"""Steps 2 and 3 of the frontend (transpiler/frontend.py) in one pass, for a script that is valid:
lark's own lexer and parse table, with the language's transformer applied as each rule is
reduced (no parse tree, no recursion) and each expression's depth counted as it is built.

It mirrors lark's internals (one release: ``frontend.DIRECT_LARK_VERSIONS``), so the Frontend
takes it only under that release, and only for what it meets: anything but a valid, shallow
enough script raises ``_Stop`` and the Frontend parses it again the plain way, which makes the
error. tests/transpiler/test_direct_parse.py and the recorded compile corpus hold the two ways
equal.
"""

from __future__ import annotations

import sys
from typing import Callable

from lark import Lark, Token, Transformer
from lark.indenter import Indenter
from lark.lexer import BasicLexer, ContextualLexer, LexerThread
from lark.parse_tree_builder import maybe_create_child_filter
from lark.parsers.lalr_analysis import Shift
from lark.visitors import _vargs_meta

from .indenter import LimitedIndenter


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


class _Stop(Exception):
    """Not a valid, shallow enough script: parse it the plain way."""


_UNIT, _PASS, _SPLICE, _CALL = range(4)


class OnePassParser:
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
        end = lex_state.text.end
        # lark's LineCounter (line, column, char_pos) as three locals; Token._future_new inline
        char_pos, line, line_start = 0, 1, 0
        new_str = str.__new__
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
            while char_pos < end:
                pos = char_pos
                for mre in mres:
                    m = mre.match(text, pos, end)
                    if m:
                        break
                else:
                    raise _Stop
                value, kind = m.group(0), m.lastgroup
                start_line, start_column = line, pos - line_start + 1
                if kind in newline_types:
                    newlines = value.count("\n")
                    if newlines:
                        line += newlines
                        line_start = pos + value.rindex("\n") + 1
                char_pos = pos + len(value)
                ignored = kind in ignore_types
                if ignored and kind not in callbacks:
                    continue
                t = new_str(Token, value)
                t.type, t.start_pos, t.value, t.line, t.column = kind, pos, value, start_line, start_column
                t.end_line, t.end_column, t.end_pos = line, char_pos - line_start + 1, char_pos
                if kind in callbacks:
                    t = callbacks[kind](t)
                if not ignored:
                    if not isinstance(t, Token):
                        raise _Stop
                    token = t
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
