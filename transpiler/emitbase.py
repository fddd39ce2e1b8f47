"""What every language's emitter shares: DSL-line comments, marks, and the source map.

An emitter builds libcst nodes, never joined strings. Each node that stands for a DSL node is
``mark``-ed; ``finish`` renders the module and turns the generated span of every marked node
(the range libcst's ``PositionProvider`` gives it) into the ``SourceMap`` that maps a worker
error back to the DSL line and column.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import MISSING, dataclass, fields
from itertools import accumulate
from typing import Callable

import libcst as cst
from libcst._nodes.internal import CodegenState

from .errors import DSLError
from .sourcemap import SourceMap
from .tree import Node

__all__ = ["Emitted", "EmitterBase", "safe_comment", "emit_guarded", "node_defaults"]


@dataclass(frozen=True)
class Emitted:
    python: str
    source_map: SourceMap


def node_defaults(cls: type, *args, **kwargs) -> dict:
    """The node-valued defaults of libcst class ``cls`` (whitespace, newlines, brackets...), made
    once: passed to every ``cls(...)`` they spare building (and validating) the same default
    nodes again. Codegen does not care that one node stands in many places of a tree, and a
    default node is never ``mark``-ed. ``args``/``kwargs``: what a sample instance needs."""
    sample = cls(*args, **kwargs)
    return {f.name: getattr(sample, f.name) for f in fields(cls)
            if f.default_factory is not MISSING and f.name not in kwargs and isinstance(getattr(sample, f.name), cst.CSTNode)}


def safe_comment(text: str) -> str:
    """``text`` as one printable-ASCII comment line (a CR or control character would end it)."""
    if text.isascii() and text.isprintable():  # nothing to replace
        return text
    out = []
    for ch in text:
        if " " <= ch <= "~":
            out.append(ch)
        elif ch == "\t":
            out.append(" ")
        elif ch < " " or ch == "\x7f":
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch.encode("ascii", "backslashreplace").decode("ascii"))
    return "".join(out)


_EMPTY_LINE = node_defaults(cst.EmptyLine)


class EmitterBase:
    def __init__(self, source: str) -> None:
        if source.startswith("\ufeff"):
            source = source[1:]
        self.lines = source.replace("\r\n", "\n").split("\n")
        self.origin: dict[int, tuple[cst.CSTNode, Node, bool]] = {}

    def mark(self, cnode, dnode: Node, is_stmt: bool = False):
        """Remember that ``cnode`` was generated for ``dnode`` (for the source map)."""
        self.origin[id(cnode)] = (cnode, dnode, is_stmt)
        return cnode

    def comment(self, line: int, end_line: int | None = None) -> list[cst.EmptyLine]:
        """``# L<line>: <DSL line>``, with `` ...`` when the construct runs past that line."""
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        if end_line is not None and end_line > line:
            text += " ..."
        return [cst.EmptyLine(comment=cst.Comment(safe_comment(f"# L{line}: {text}")), **_EMPTY_LINE)]

    @staticmethod
    def header(text: str) -> list[cst.EmptyLine]:
        return [cst.EmptyLine(comment=cst.Comment(safe_comment(text)), **_EMPTY_LINE)]

    def finish(self, module: cst.Module, lines_of=()) -> Emitted:
        """The module's text and source map. `lines_of`: marked nodes whose generated line
        (their statement's own, after its comment lines) is wanted: ``self.generated_lines``."""
        # One codegen pass gives both the text and every node's span.
        state = _SpanState(module.default_indent, module.default_newline)
        module._codegen(state)
        spans = state.spans
        marked = [(spans[key], dnode, is_stmt) for key, (_, dnode, is_stmt) in self.origin.items() if key in spans]
        at = state.line_cols({i for span, _, _ in marked for i in span})
        stmts, exprs = [], []
        for (start, end), dnode, is_stmt in marked:
            (stmts if is_stmt else exprs).append(at[start] + at[end] + (dnode.line, dnode.col))
        self.generated_lines = {id(node): at[spans[id(node)][0]][0] for node in lines_of}
        return Emitted(state.text(), SourceMap(sorted(set(stmts)), sorted(set(exprs))))


_NEWLINE_RE = re.compile(r"\r\n?|\n")  # libcst's, for its line count


class _SpanState(CodegenState):
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
        tokens = self.tokens
        whole = "".join(tokens)
        if "\r" in whole:  # libcst counts newlines token by token (\r then \n are two)
            return self._line_cols_by_token(wanted)
        ends = [0, *accumulate(map(len, tokens))]
        breaks = [m.end() for m in _NEWLINE_RE.finditer(whole)]
        out = {}
        for i in wanted:
            offset = ends[i]
            n = bisect_right(breaks, offset)
            out[i] = (n + 1, offset - (breaks[n - 1] if n else 0))
        return out

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


class _Syntactic:
    """The context ``record_syntactic_position`` returns (a class: cheaper than a generator)."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _SpanState, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = len(self.state.tokens)

    def __exit__(self, *exc) -> None:
        spans = self.state.spans
        start = self.start if self.start_node is None else spans[id(self.start_node)][0]
        end = len(self.state.tokens) if self.end_node is None else spans[id(self.end_node)][1]
        spans[id(self.node)] = (start, end)


def emit_guarded(build: Callable[[], Emitted]) -> Emitted:
    """Run an emitter; a script too deep for the caller's recursion limit is a ``DSLError``."""
    try:
        return build()
    except RecursionError:
        raise DSLError("expression too deep", 1, 1) from None
