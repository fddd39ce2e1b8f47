"""What every language's emitter shares: DSL-line comments, marks, and the source map.

An emitter builds libcst nodes, never joined strings. Each node that stands for a DSL node is
``mark``-ed; ``finish`` renders the module and turns the generated span of every marked node
(the range libcst's ``PositionProvider`` gives it) into the ``SourceMap`` that maps a worker
error back to the DSL line and column.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Callable

import libcst as cst

from .codegen import SpanState, offset_line_cols, render
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

# Brackets, operators and the node-valued defaults of the classes the emitters build most, made
# once and shared by every node that uses them: the same code, fewer nodes built and validated
# (a PromptScript script built 40% of its nodes as default whitespace before they were shared).
NO_SPACE = cst.SimpleWhitespace("")
LPAR, RPAR = cst.LeftParen(), cst.RightParen()
OP = {cls: cls() for cls in (
    cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo, cst.Equal, cst.NotEqual, cst.LessThan,
    cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.In, cst.NotIn, cst.Is, cst.Not, cst.Minus,
    cst.Or, cst.And)}
_X, _Y, _EMPTY_BLOCK = cst.Name("x"), cst.Name("y"), cst.IndentedBlock([])
ARG = node_defaults(cst.Arg, _X)
CALL = node_defaults(cst.Call, _X)
TARGET = node_defaults(cst.AssignTarget, _X)
LINE = node_defaults(cst.SimpleStatementLine, [])
SUITE = node_defaults(cst.SimpleStatementSuite, [])
SUBSCRIPT = node_defaults(cst.Subscript, _X, [cst.SubscriptElement(cst.Index(_Y))])
SLICE = node_defaults(cst.Slice, None, None)
LIST = node_defaults(cst.List, [])
DICT = node_defaults(cst.Dict, [])
DICT_ELEMENT = node_defaults(cst.DictElement, _X, _Y)
BLOCK = node_defaults(cst.IndentedBlock, [])
FOR = node_defaults(cst.For, _X, _Y, _EMPTY_BLOCK)
WHILE = node_defaults(cst.While, _X, _EMPTY_BLOCK)
IF = node_defaults(cst.If, _X, _EMPTY_BLOCK)
ELSE = node_defaults(cst.Else, _EMPTY_BLOCK)
WITH = node_defaults(cst.With, [cst.WithItem(_X)], _EMPTY_BLOCK)
FUNCTION = node_defaults(cst.FunctionDef, _X, cst.Parameters(), _EMPTY_BLOCK)
PARAM = node_defaults(cst.Param, _X)
NAMED = node_defaults(cst.NamedExpr, _X, _Y)
IF_EXP = node_defaults(cst.IfExp, _X, _Y, _Y)


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
        (their statement's own, after its comment lines) is wanted: ``self.generated_lines``.
        The source map is made when first read: a run reads it only to place an error."""
        # One codegen pass gives both the text and every node's span.
        state = SpanState(module.default_indent, module.default_newline)
        render(module, state)
        spans, text, tail = state.spans, state.text(), state.tail()
        if "\r" in text or "\r" in tail:  # positions counted token by token (codegen.SpanState.line_cols)
            marked = [(spans[key], dnode, is_stmt) for key, (_, dnode, is_stmt) in self.origin.items() if key in spans]
            at = state.line_cols({i for span, _, _ in marked for i in span})
            self.generated_lines = {id(node): at[spans[id(node)][0]][0] for node in lines_of}
            entries = [at[start] + at[end] + (dnode.line, dnode.col, is_stmt) for (start, end), dnode, is_stmt in marked]
            return Emitted(text, SourceMap(*_split(entries)))
        ends = state.ends()  # token counts -> character offsets: the map keeps the text, not the tokens
        marked = [(ends[span[0]], ends[span[1]], dnode.line, dnode.col, is_stmt)
                  for key, (_, dnode, is_stmt) in self.origin.items() if (span := spans.get(key)) is not None]
        if lines_of:
            starts = {id(node): ends[spans[id(node)][0]] for node in lines_of}
            at = offset_line_cols(text + tail, set(starts.values()))
            self.generated_lines = {key: at[offset][0] for key, offset in starts.items()}

        def source_map() -> tuple[list, list]:
            at = offset_line_cols(text + tail, {offset for entry in marked for offset in entry[:2]})
            return _split([at[start] + at[end] + (line, col, is_stmt) for start, end, line, col, is_stmt in marked])

        return Emitted(text, SourceMap.deferred(source_map))


def _split(entries: list[tuple]) -> tuple[list, list]:
    """(statements, expressions), each sorted and without repeats, from entries that end with
    whether they are a statement's."""
    stmts = sorted({entry[:-1] for entry in entries if entry[-1]})
    exprs = sorted({entry[:-1] for entry in entries if not entry[-1]})
    return stmts, exprs


def emit_guarded(build: Callable[[], Emitted]) -> Emitted:
    """Run an emitter; a script too deep for the caller's recursion limit is a ``DSLError``."""
    try:
        return build()
    except RecursionError:
        raise DSLError("expression too deep", 1, 1) from None
