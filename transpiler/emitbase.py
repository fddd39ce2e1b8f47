"""What every language's emitter shares: DSL-line comments, marks, and the source map.

An emitter builds libcst nodes, never joined strings. Each node that stands for a DSL node is
``mark``-ed; ``finish`` renders the module and turns the generated span of every marked node
(libcst's ``PositionProvider``) into the ``SourceMap`` that maps a worker error back to the
DSL line and column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import libcst as cst
from libcst.metadata.position_provider import PositionProvidingCodegenState

from .errors import DSLError
from .sourcemap import SourceMap
from .tree import Node

__all__ = ["Emitted", "EmitterBase", "safe_comment", "emit_guarded"]


@dataclass(frozen=True)
class Emitted:
    python: str
    source_map: SourceMap


def safe_comment(text: str) -> str:
    """``text`` as one printable-ASCII comment line (a CR or control character would end it)."""
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
        return [cst.EmptyLine(comment=cst.Comment(safe_comment(f"# L{line}: {text}")))]

    @staticmethod
    def header(text: str) -> list[cst.EmptyLine]:
        return [cst.EmptyLine(comment=cst.Comment(safe_comment(text)))]

    def finish(self, module: cst.Module) -> Emitted:
        # One codegen pass gives both the text and every node's span (libcst's PositionProvider
        # state, without the metadata wrapper's extra traversal and a second codegen for the text).
        positions = _Positions()
        state = PositionProvidingCodegenState(
            default_indent=module.default_indent, default_newline=module.default_newline, provider=positions)
        module._codegen(state)
        stmts, exprs = [], []
        for cnode, rng in positions._computed.items():
            found = self.origin.get(id(cnode))
            if found is None or found[0] is not cnode:
                continue
            _, dnode, is_stmt = found
            entry = (rng.start.line, rng.start.column, rng.end.line, rng.end.column, dnode.line, dnode.col)
            (stmts if is_stmt else exprs).append(entry)
        return Emitted("".join(state.tokens), SourceMap(sorted(set(stmts)), sorted(set(exprs))))


class _Positions:
    """Where the codegen state records each node's CodeRange (the provider's one attribute it uses)."""

    def __init__(self) -> None:
        self._computed: dict = {}


def emit_guarded(build: Callable[[], Emitted]) -> Emitted:
    """Run an emitter; a script too deep for the caller's recursion limit is a ``DSLError``."""
    try:
        return build()
    except RecursionError:
        raise DSLError("expression too deep", 1, 1) from None
