"""libcst's codegen, for the nodes the emitters build, as one function per node class.

libcst renders a node through ``_codegen`` (two hooks), ``_codegen_impl`` and, for most
expressions, a generator-based context manager: a third of the transpile of a 20-line
script (bench/transpile.py). The functions here write the same tokens and record the same spans (libcst's
``before``/``after_codegen`` range, or the narrower one its ``record_syntactic_position``
gives) into the same ``SpanState``. A class without a function here, or any libcst release
but those in ``FAST_LIBCST``, is rendered by libcst itself on that state, so the two mix
freely. tests/transpiler/test_codegen.py holds the text and source map equal to libcst's for
every script of the compile corpus and for generated ones.

Whitespace, comments and newlines get no span: an emitter never marks one.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._nodes.op import _BaseOneTokenOp

__all__ = ["SpanState", "render", "FAST_LIBCST"]

FAST_LIBCST = ("1.9.",)  # the releases whose _codegen_impl the functions below mirror

_NEWLINE_RE = re.compile(r"\r\n?|\n")  # libcst's, for its line count


class SpanState(CodegenState):
    """libcst's ``PositionProvidingCodegenState``, recording the same ranges for less: a
    position is the number of tokens written so far (turned into libcst's line and column
    once, at the end, for the positions asked for), and a node's range is kept under
    ``id(node)`` (a libcst node hashes by identity). Like libcst's: ``before``/``after_codegen``
    give a node the range of all its tokens unless ``record_syntactic_position`` (which may
    borrow the start of ``start_node`` and the end of ``end_node``) already gave it one."""

    def __init__(self, default_indent: str, default_newline: str) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.starts: list[int] = []
        self.spans: dict[int, tuple[int, int]] = {}
        self.popped = False  # the module's trailing newline, dropped from the text only

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.starts.append(len(self.tokens))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.starts.pop()
        key = id(node)
        if key not in self.spans:
            self.spans[key] = (start, len(self.tokens))

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> "_Syntactic":
        return _Syntactic(self, node, start_node, end_node)

    def pop_trailing_newline(self) -> None:
        # libcst's state pops the token but keeps its line and column: so do positions here
        if self.tokens and not self.popped:
            self.popped = True

    def text(self) -> str:
        tokens = self.tokens[:-1] if self.popped else self.tokens
        return "".join(tokens)

    def line_cols(self, wanted: set[int]) -> dict[int, tuple[int, int]]:
        """libcst's (line, column) after the first ``i`` tokens, for each ``i`` in ``wanted``."""
        whole = "".join(self.tokens)
        if "\r" in whole:  # libcst counts newlines token by token (\r then \n are two)
            return self._line_cols_by_token(wanted)
        ends = self.ends()
        at = offset_line_cols(whole, {ends[i] for i in wanted})
        return {i: at[ends[i]] for i in wanted}

    def ends(self) -> list[int]:
        """The length of the text after the first ``i`` tokens, for every ``i``."""
        return [0, *accumulate(map(len, self.tokens))]

    def tail(self) -> str:
        """The token ``text()`` leaves out (the module's trailing newline), or ""."""
        return self.tokens[-1] if self.popped and self.tokens else ""

    def _line_cols_by_token(self, wanted: set[int]) -> dict[int, tuple[int, int]]:
        out, line, column = {}, 1, 0
        for i, token in enumerate(self.tokens):
            if i in wanted:
                out[i] = (line, column)
            segments = _NEWLINE_RE.split(token)
            if len(segments) == 1:
                column += len(token)
            else:
                line += len(segments) - 1
                column = len(segments[-1])
        if len(self.tokens) in wanted:
            out[len(self.tokens)] = (line, column)
        return out


def offset_line_cols(whole: str, offsets: set[int]) -> dict[int, tuple[int, int]]:
    """libcst's (line, column) at each character offset of ``whole``, a text without "\\r"."""
    breaks = [m.end() for m in _NEWLINE_RE.finditer(whole)]
    out = {}
    for offset in offsets:
        n = bisect_right(breaks, offset)
        out[offset] = (n + 1, offset - (breaks[n - 1] if n else 0))
    return out


class _Syntactic:
    """The context ``record_syntactic_position`` returns (a class: cheaper than a generator)."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: SpanState, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = len(self.state.tokens)

    def __exit__(self, *exc) -> None:
        spans = self.state.spans
        start = self.start if self.start_node is None else spans[id(self.start_node)][0]
        end = len(self.state.tokens) if self.end_node is None else spans[id(self.end_node)][1]
        spans[id(self.node)] = (start, end)


def render(module: cst.Module, state: SpanState) -> None:
    """Write ``module``'s tokens and spans into ``state``, as ``module._codegen(state)`` does."""
    if _FAST_OK:
        gen(state, module)
    else:
        module._codegen(state)


def _libcst_version() -> str:
    try:
        from libcst._version import __version__

        return __version__
    except ImportError:  # a release that keeps it elsewhere: libcst renders everything
        return ""


_FAST_OK = _libcst_version().startswith(FAST_LIBCST)
_DEFAULT = cst.MaybeSentinel.DEFAULT


# ---- dispatch -----------------------------------------------------------------------------------

def gen(s: SpanState, node) -> None:
    """Render ``node`` (a class without a function: libcst's own codegen, on ``s``)."""
    f = _FAST.get(node.__class__)
    if f is None:
        node._codegen(s)
        return
    start = len(s.tokens)
    f(s, node)
    spans = s.spans
    if id(node) not in spans:
        spans[id(node)] = (start, len(s.tokens))


def _gen_flag(s: SpanState, node, table: dict, flag: bool, **fallback) -> None:
    """Render a node whose codegen takes a flag (a comma or semicolon by default, ``elif``)."""
    f = table.get(node.__class__)
    if f is None:
        node._codegen(s, **fallback)
        return
    start = len(s.tokens)
    f(s, node, flag)
    spans = s.spans
    if id(node) not in spans:
        spans[id(node)] = (start, len(s.tokens))


def _items(s: SpanState, items, table: dict | None = None, **fallback) -> None:
    """Children separated by commas (arguments, subscripts, with-items, names, elements):
    libcst gives every one but the last a comma by default."""
    last = len(items) - 1
    for i, item in enumerate(items):
        _gen_flag(s, item, _COMMA_ITEM if table is None else table, i != last, default_comma=i != last, **fallback)


def _ws(s: SpanState, node) -> None:
    """Whitespace, a comment or a newline (no span: never marked)."""
    cls = node.__class__
    if cls is cst.SimpleWhitespace or cls is cst.Comment:
        s.tokens.append(node.value)
    elif cls is cst.Newline:
        s.tokens.append(s.default_newline if node.value is None else node.value)
    else:
        gen(s, node)


def _lpar(s: SpanState, node) -> int:
    """``_parenthesize``'s opening half: the left parentheses; returns the syntactic start."""
    for p in node.lpar:
        gen(s, p)
    return len(s.tokens)


def _rpar(s: SpanState, node, start: int) -> None:
    s.spans[id(node)] = (start, len(s.tokens))
    for p in node.rpar:
        gen(s, p)


def _comma(s: SpanState, node, default: bool, default_text: str = ", ") -> None:
    comma = node.comma
    if comma is _DEFAULT:
        if default:
            s.tokens.append(default_text)
    elif comma.__class__ is cst.Comma:
        gen(s, comma)


def _semicolon(s: SpanState, node, default: bool) -> None:
    semicolon = node.semicolon
    if semicolon is _DEFAULT:
        if default:
            s.tokens.append("; ")
    elif semicolon.__class__ is cst.Semicolon:
        gen(s, semicolon)


# ---- module, lines and blocks -------------------------------------------------------------------

def _module(s: SpanState, node: cst.Module) -> None:
    for h in node.header:
        gen(s, h)
    for stmt in node.body:
        gen(s, stmt)
    for f in node.footer:
        gen(s, f)
    if node.has_trailing_newline:
        if not s.tokens:
            s.tokens.append(s.default_newline)
    else:
        s.pop_trailing_newline()


def _empty_line(s: SpanState, node: cst.EmptyLine) -> None:
    if node.indent:
        s.tokens.extend(s.indent_tokens)
    _ws(s, node.whitespace)
    if node.comment is not None:
        _ws(s, node.comment)
    _ws(s, node.newline)


def _trailing(s: SpanState, node: cst.TrailingWhitespace) -> None:
    _ws(s, node.whitespace)
    if node.comment is not None:
        _ws(s, node.comment)
    _ws(s, node.newline)


def _simple_body(s: SpanState, node) -> None:
    body = node.body
    tokens = s.tokens
    start = len(tokens)
    if body:
        last = len(body) - 1
        for i, small in enumerate(body):
            _gen_flag(s, small, _SMALL, i != last, default_semicolon=i != last)
        s.spans[id(node)] = (start, s.spans[id(body[last])][1])
    else:
        tokens.append("pass")
        s.spans[id(node)] = (start, len(tokens))
    gen(s, node.trailing_whitespace)


def _simple_line(s: SpanState, node: cst.SimpleStatementLine) -> None:
    for line in node.leading_lines:
        gen(s, line)
    s.tokens.extend(s.indent_tokens)
    _simple_body(s, node)


def _simple_suite(s: SpanState, node: cst.SimpleStatementSuite) -> None:
    _ws(s, node.leading_whitespace)
    _simple_body(s, node)


def _indented_block(s: SpanState, node: cst.IndentedBlock) -> None:
    gen(s, node.header)
    s.indent_tokens.append(s.default_indent if node.indent is None else node.indent)
    body = node.body
    if body:
        for stmt in body:
            gen(s, stmt)
        spans = s.spans
        spans[id(node)] = (spans[id(body[0])][0], spans[id(body[-1])][1])
    else:
        tokens = s.tokens
        tokens.extend(s.indent_tokens)
        tokens.append("pass")
        s.spans[id(node)] = (len(tokens) - 1, len(tokens))
        tokens.append(s.default_newline)
    for f in node.footer:
        gen(s, f)
    s.indent_tokens.pop()


def _leading(s: SpanState, node) -> int:
    """A compound statement's leading lines and indent; returns its syntactic start."""
    for line in node.leading_lines:
        gen(s, line)
    s.tokens.extend(s.indent_tokens)
    return len(s.tokens)


def _if(s: SpanState, node: cst.If, is_elif: bool = False) -> None:
    start = _leading(s, node)
    tokens = s.tokens
    tokens.append("elif" if is_elif else "if")
    _ws(s, node.whitespace_before_test)
    gen(s, node.test)
    _ws(s, node.whitespace_after_test)
    tokens.append(":")
    gen(s, node.body)
    orelse = node.orelse
    if orelse is not None:
        if isinstance(orelse, cst.If):
            _gen_flag(s, orelse, _ELIF, True, is_elif=True)
        else:
            gen(s, orelse)
    s.spans[id(node)] = (start, s.spans[id(node.body if orelse is None else orelse)][1])


def _else(s: SpanState, node: cst.Else) -> None:
    start = _leading(s, node)
    s.tokens.append("else")
    _ws(s, node.whitespace_before_colon)
    s.tokens.append(":")
    gen(s, node.body)
    s.spans[id(node)] = (start, s.spans[id(node.body)][1])


def _for(s: SpanState, node: cst.For) -> None:
    start = _leading(s, node)
    tokens = s.tokens
    if node.asynchronous is not None:
        gen(s, node.asynchronous)
    tokens.append("for")
    _ws(s, node.whitespace_after_for)
    gen(s, node.target)
    _ws(s, node.whitespace_before_in)
    tokens.append("in")
    _ws(s, node.whitespace_after_in)
    gen(s, node.iter)
    _ws(s, node.whitespace_before_colon)
    tokens.append(":")
    gen(s, node.body)
    if node.orelse is not None:
        gen(s, node.orelse)
    s.spans[id(node)] = (start, s.spans[id(node.body if node.orelse is None else node.orelse)][1])


def _while(s: SpanState, node: cst.While) -> None:
    start = _leading(s, node)
    tokens = s.tokens
    tokens.append("while")
    _ws(s, node.whitespace_after_while)
    gen(s, node.test)
    _ws(s, node.whitespace_before_colon)
    tokens.append(":")
    gen(s, node.body)
    if node.orelse is not None:
        gen(s, node.orelse)
    s.spans[id(node)] = (start, s.spans[id(node.body if node.orelse is None else node.orelse)][1])


def _with(s: SpanState, node: cst.With) -> None:
    start = _leading(s, node)
    needs_paren = any(isinstance(item.comma, cst.Comma) and isinstance(
        item.comma.whitespace_after, (cst.EmptyLine, cst.TrailingWhitespace, cst.ParenthesizedWhitespace))
        for item in node.items)
    tokens = s.tokens
    if node.asynchronous is not None:
        gen(s, node.asynchronous)
    tokens.append("with")
    _ws(s, node.whitespace_after_with)
    if isinstance(node.lpar, cst.LeftParen):
        gen(s, node.lpar)
    elif needs_paren:
        tokens.append("(")
    _items(s, node.items)
    if isinstance(node.rpar, cst.RightParen):
        gen(s, node.rpar)
    elif needs_paren:
        tokens.append(")")
    _ws(s, node.whitespace_before_colon)
    tokens.append(":")
    gen(s, node.body)
    s.spans[id(node)] = (start, s.spans[id(node.body)][1])


def _function_def(s: SpanState, node: cst.FunctionDef) -> None:
    for line in node.leading_lines:
        gen(s, line)
    for decorator in node.decorators:
        gen(s, decorator)
    for line in node.lines_after_decorators:
        gen(s, line)
    tokens = s.tokens
    tokens.extend(s.indent_tokens)
    start = len(tokens)
    if node.asynchronous is not None:
        gen(s, node.asynchronous)
    tokens.append("def")
    _ws(s, node.whitespace_after_def)
    gen(s, node.name)
    _ws(s, node.whitespace_after_name)
    if node.type_parameters is not None:
        gen(s, node.type_parameters)
    _ws(s, node.whitespace_after_type_parameters)
    tokens.append("(")
    _ws(s, node.whitespace_before_params)
    gen(s, node.params)
    tokens.append(")")
    if node.returns is not None:
        node.returns._codegen(s, default_indicator="->")
    _ws(s, node.whitespace_before_colon)
    tokens.append(":")
    gen(s, node.body)
    s.spans[id(node)] = (start, s.spans[id(node.body)][1])


def _comma_item(field: str):
    """An item of a comma-separated list that is one child, ``field`` (its span), and its comma."""
    def render_item(s: SpanState, node, default_comma: bool) -> None:
        start = len(s.tokens)
        gen(s, getattr(node, field))
        s.spans[id(node)] = (start, len(s.tokens))
        _comma(s, node, default_comma)
    return render_item


def _with_item(s: SpanState, node: cst.WithItem, default_comma: bool) -> None:
    start = len(s.tokens)
    gen(s, node.item)
    if node.asname is not None:
        gen(s, node.asname)
    s.spans[id(node)] = (start, len(s.tokens))
    _comma(s, node, default_comma)


# ---- small statements -----------------------------------------------------------------------------

def _expr_stmt(s: SpanState, node: cst.Expr, default_semicolon: bool) -> None:
    start = len(s.tokens)
    gen(s, node.value)
    s.spans[id(node)] = (start, len(s.tokens))
    _semicolon(s, node, default_semicolon)


def _assign(s: SpanState, node: cst.Assign, default_semicolon: bool) -> None:
    start = len(s.tokens)
    for target in node.targets:
        gen(s, target)
    gen(s, node.value)
    s.spans[id(node)] = (start, len(s.tokens))
    _semicolon(s, node, default_semicolon)


def _assign_target(s: SpanState, node: cst.AssignTarget) -> None:
    start = len(s.tokens)
    gen(s, node.target)
    s.spans[id(node)] = (start, len(s.tokens))
    _ws(s, node.whitespace_before_equal)
    s.tokens.append("=")
    _ws(s, node.whitespace_after_equal)


def _keyword_stmt(word: str):
    def render_keyword(s: SpanState, node, default_semicolon: bool) -> None:
        tokens = s.tokens
        tokens.append(word)
        s.spans[id(node)] = (len(tokens) - 1, len(tokens))
        _semicolon(s, node, default_semicolon)
    return render_keyword


def _return(s: SpanState, node: cst.Return, default_semicolon: bool) -> None:
    tokens = s.tokens
    start = len(tokens)
    tokens.append("return")
    after, value = node.whitespace_after_return, node.value
    if after is _DEFAULT:
        if value is not None:
            tokens.append(" ")
    else:
        _ws(s, after)
    if value is not None:
        gen(s, value)
    s.spans[id(node)] = (start, len(tokens))
    _semicolon(s, node, default_semicolon)


def _global(s: SpanState, node: cst.Global, default_semicolon: bool) -> None:
    tokens = s.tokens
    start = len(tokens)
    tokens.append("global")
    _ws(s, node.whitespace_after_global)
    _items(s, node.names)
    s.spans[id(node)] = (start, len(tokens))
    _semicolon(s, node, default_semicolon)


# ---- expressions ----------------------------------------------------------------------------------

def _atom(s: SpanState, node) -> None:  # Name, Integer, Float, SimpleString
    if node.lpar:
        for p in node.lpar:
            gen(s, p)
    tokens = s.tokens
    tokens.append(node.value)
    s.spans[id(node)] = (len(tokens) - 1, len(tokens))
    for p in node.rpar:
        gen(s, p)


def _parenthesized(*fields: str):
    """An expression whose children are the node's ``fields``, in order, inside its parentheses."""
    def render_parenthesized(s: SpanState, node) -> None:
        start = _lpar(s, node)
        for field in fields:
            gen(s, getattr(node, field))
        _rpar(s, node, start)
    return render_parenthesized


def _comparison(s: SpanState, node: cst.Comparison) -> None:
    start = _lpar(s, node)
    gen(s, node.left)
    for target in node.comparisons:
        gen(s, target)
    _rpar(s, node, start)


def _comparison_target(s: SpanState, node: cst.ComparisonTarget) -> None:
    gen(s, node.operator)
    gen(s, node.comparator)


def _call(s: SpanState, node: cst.Call) -> None:
    start = _lpar(s, node)
    gen(s, node.func)
    _ws(s, node.whitespace_after_func)
    s.tokens.append("(")
    _ws(s, node.whitespace_before_args)
    _items(s, node.args)
    s.tokens.append(")")
    _rpar(s, node, start)


def _arg(s: SpanState, node: cst.Arg, default_comma: bool) -> None:
    tokens = s.tokens
    start = len(tokens)
    tokens.append(node.star)
    _ws(s, node.whitespace_after_star)
    keyword = node.keyword
    if keyword is not None:
        gen(s, keyword)
    equal = node.equal
    if equal is _DEFAULT and keyword is not None:
        tokens.append(" = ")
    elif equal.__class__ is cst.AssignEqual:
        gen(s, equal)
    gen(s, node.value)
    s.spans[id(node)] = (start, len(tokens))
    _comma(s, node, default_comma)
    _ws(s, node.whitespace_after_arg)


def _subscript(s: SpanState, node: cst.Subscript) -> None:
    start = _lpar(s, node)
    gen(s, node.value)
    _ws(s, node.whitespace_after_value)
    gen(s, node.lbracket)
    _items(s, node.slice)
    gen(s, node.rbracket)
    _rpar(s, node, start)


def _index(s: SpanState, node: cst.Index) -> None:
    if node.star is not None:
        s.tokens.append(node.star)
    if node.whitespace_after_star is not None:
        _ws(s, node.whitespace_after_star)
    gen(s, node.value)


def _slice(s: SpanState, node: cst.Slice) -> None:
    if node.lower is not None:
        gen(s, node.lower)
    gen(s, node.first_colon)
    if node.upper is not None:
        gen(s, node.upper)
    second = node.second_colon
    if second is _DEFAULT and node.step is not None:
        s.tokens.append(":")
    elif second.__class__ is cst.Colon:
        gen(s, second)
    if node.step is not None:
        gen(s, node.step)


def _collection(open_field: str, close_field: str):
    def render_collection(s: SpanState, node) -> None:  # List, Dict (their elements: ", " between)
        start = _lpar(s, node)
        gen(s, getattr(node, open_field))
        _items(s, node.elements, _ELEMENT, default_comma_whitespace=True)
        gen(s, getattr(node, close_field))
        _rpar(s, node, start)
    return render_collection


def _dict_element(s: SpanState, node: cst.DictElement, default_comma: bool) -> None:
    start = len(s.tokens)
    gen(s, node.key)
    _ws(s, node.whitespace_before_colon)
    s.tokens.append(":")
    _ws(s, node.whitespace_after_colon)
    gen(s, node.value)
    s.spans[id(node)] = (start, len(s.tokens))
    _comma(s, node, default_comma)


def _named_expr(s: SpanState, node: cst.NamedExpr) -> None:
    start = _lpar(s, node)
    gen(s, node.target)
    _ws(s, node.whitespace_before_walrus)
    s.tokens.append(":=")
    _ws(s, node.whitespace_after_walrus)
    gen(s, node.value)
    _rpar(s, node, start)


def _if_exp(s: SpanState, node: cst.IfExp) -> None:
    start = _lpar(s, node)
    tokens = s.tokens
    gen(s, node.body)
    _ws(s, node.whitespace_before_if)
    tokens.append("if")
    _ws(s, node.whitespace_after_if)
    gen(s, node.test)
    _ws(s, node.whitespace_before_else)
    tokens.append("else")
    _ws(s, node.whitespace_after_else)
    gen(s, node.orelse)
    _rpar(s, node, start)


# ---- operators and brackets ---------------------------------------------------------------------

_OP_TOKEN: dict[type, str] = {}


def _one_token_op(s: SpanState, node) -> None:
    _ws(s, node.whitespace_before)
    tokens = s.tokens
    tokens.append(_OP_TOKEN[node.__class__] or node._get_token())
    s.spans[id(node)] = (len(tokens) - 1, len(tokens))
    _ws(s, node.whitespace_after)


def _unary_op(s: SpanState, node) -> None:
    s.tokens.append(_OP_TOKEN[node.__class__] or node._get_token())
    _ws(s, node.whitespace_after)


def _opening(s: SpanState, node) -> None:  # ( [ {
    s.tokens.append(_OP_TOKEN[node.__class__])
    _ws(s, node.whitespace_after)


def _closing(s: SpanState, node) -> None:  # ) ] }
    _ws(s, node.whitespace_before)
    s.tokens.append(_OP_TOKEN[node.__class__])


def _fixed_token(cls: type) -> str | None:
    """An operator class's token, or None when it is the node's own (``!=`` or ``<>``)."""
    try:
        return cls._get_token(None)
    except AttributeError:
        return None


_FAST: dict[type, object] = {
    cst.Module: _module, cst.EmptyLine: _empty_line, cst.TrailingWhitespace: _trailing,
    cst.SimpleStatementLine: _simple_line, cst.SimpleStatementSuite: _simple_suite,
    cst.IndentedBlock: _indented_block, cst.If: _if, cst.Else: _else, cst.For: _for, cst.While: _while,
    cst.With: _with, cst.FunctionDef: _function_def, cst.AssignTarget: _assign_target,
    cst.Name: _atom, cst.Integer: _atom, cst.Float: _atom, cst.SimpleString: _atom,
    cst.BinaryOperation: _parenthesized("left", "operator", "right"),
    cst.BooleanOperation: _parenthesized("left", "operator", "right"),
    cst.UnaryOperation: _parenthesized("operator", "expression"),
    cst.Comparison: _comparison, cst.ComparisonTarget: _comparison_target, cst.Call: _call,
    cst.Attribute: _parenthesized("value", "dot", "attr"), cst.Subscript: _subscript, cst.Index: _index, cst.Slice: _slice,
    cst.List: _collection("lbracket", "rbracket"), cst.Dict: _collection("lbrace", "rbrace"),
    cst.IfExp: _if_exp, cst.NamedExpr: _named_expr,
}
_SMALL = {cst.Expr: _expr_stmt, cst.Assign: _assign, cst.Return: _return, cst.Pass: _keyword_stmt("pass"),
          cst.Break: _keyword_stmt("break"), cst.Continue: _keyword_stmt("continue"), cst.Global: _global}
_COMMA_ITEM = {cst.Arg: _arg, cst.SubscriptElement: _comma_item("slice"), cst.WithItem: _with_item,
               cst.NameItem: _comma_item("name")}
_ELEMENT = {cst.Element: _comma_item("value"), cst.DictElement: _dict_element}
_ELIF = {cst.If: _if}

for _name in dir(cst):
    _cls = getattr(cst, _name)
    if not isinstance(_cls, type) or _name.startswith("_"):
        continue
    # a concrete operator rendered by its base class's _codegen_impl (as the functions assume)
    if issubclass(_cls, _BaseOneTokenOp) and _cls._codegen_impl is _BaseOneTokenOp._codegen_impl \
            and "_get_token" in vars(_cls):
        _OP_TOKEN[_cls], _FAST[_cls] = _fixed_token(_cls), _one_token_op
    elif issubclass(_cls, cst.BaseUnaryOp) and _cls._codegen_impl is cst.BaseUnaryOp._codegen_impl \
            and "_get_token" in vars(_cls):
        _OP_TOKEN[_cls], _FAST[_cls] = _fixed_token(_cls), _unary_op
for _cls, _token in ((cst.LeftParen, "("), (cst.LeftSquareBracket, "["), (cst.LeftCurlyBrace, "{")):
    _OP_TOKEN[_cls], _FAST[_cls] = _token, _opening
for _cls, _token in ((cst.RightParen, ")"), (cst.RightSquareBracket, "]"), (cst.RightCurlyBrace, "}")):
    _OP_TOKEN[_cls], _FAST[_cls] = _token, _closing
