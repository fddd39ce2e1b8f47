"""Map positions in the generated Python back to the FilesDSL script.

Conventions:
  * generated lines are 1-based, generated columns are 0-BASED character offsets with an
    EXCLUSIVE end, exactly as ``code.co_positions()`` reports them (the generated code is
    ASCII, so character offsets equal UTF-8 byte offsets);
  * DSL lines and columns are 1-based, as in every error message.

An entry is ``(gen_start_line, gen_start_col, gen_end_line, gen_end_col, dsl_line, dsl_col)``.
There is one per emitted statement (``statements``) and one per emitted expression
(``expressions``). A compound statement's span covers its whole block.
"""

from __future__ import annotations

import json
from typing import Callable, Iterable

__all__ = ["SourceMap", "Entry"]

Entry = tuple[int, int, int, int, int, int]


def _contains(e: Entry, line: int, col: int) -> bool:
    return (e[0], e[1]) <= (line, col) < (e[2], e[3])


def _size(e: Entry) -> tuple[int, int]:
    return (e[2] - e[0], e[3] - e[1] if e[2] == e[0] else e[3])


class SourceMap:
    def __init__(self, statements: Iterable[Entry] = (), expressions: Iterable[Entry] = ()):
        self._statements: list[Entry] = [tuple(map(int, e)) for e in statements]
        self._expressions: list[Entry] = [tuple(map(int, e)) for e in expressions]
        self._build: Callable[[], tuple[list[Entry], list[Entry]]] | None = None

    @classmethod
    def deferred(cls, build: Callable[[], tuple[list[Entry], list[Entry]]]) -> "SourceMap":
        """A map whose entries ``build()`` makes (the emitter's: sorted int tuples) when first
        read: most runs never place an error."""
        made = cls()
        made._build = build
        return made

    def _made(self) -> None:
        build = self._build
        if build is not None:
            self._statements, self._expressions = build()
            self._build = None

    @property
    def statements(self) -> list[Entry]:
        self._made()
        return self._statements

    @property
    def expressions(self) -> list[Entry]:
        self._made()
        return self._expressions

    @property
    def entries(self) -> list[Entry]:
        return self.statements + self.expressions

    def lookup(
        self,
        gen_line: int,
        gen_col: int | None = None,
        gen_end_line: int | None = None,
        gen_end_col: int | None = None,
    ) -> tuple[int, int] | None:
        """The DSL ``(line, col)`` of the innermost emitted construct at a generated position.

        With ``gen_col`` None: the innermost statement whose span includes ``gen_line``.
        With ``gen_col``: the smallest span containing ``(gen_line, gen_col)``; also given the
        end (as ``co_positions()`` yields it), the smallest span containing the whole range.
        Returns None when nothing matches (e.g. a header comment line).
        """
        if gen_line is None:
            return None
        best: Entry | None = None
        if gen_col is None:
            for e in self.statements:
                if e[0] <= gen_line <= e[2] and (best is None or _size(e) < _size(best)):
                    best = e
        else:
            for e in self.entries:
                if not _contains(e, gen_line, gen_col):
                    continue
                if gen_end_line is not None and gen_end_col is not None:
                    if (gen_end_line, gen_end_col) > (e[2], e[3]):
                        continue
                if best is None or _size(e) < _size(best):
                    best = e
            if best is None:
                return self.lookup(gen_line)
        return None if best is None else (best[4], best[5])

    def to_json(self) -> dict:
        """Plain data: ``{"statements": [[...6 ints], ...], "expressions": [...]}``."""
        return {
            "statements": [list(e) for e in self.statements],
            "expressions": [list(e) for e in self.expressions],
        }

    @classmethod
    def from_json(cls, data: dict | str) -> "SourceMap":
        if isinstance(data, str):
            data = json.loads(data)
        return cls(data.get("statements", ()), data.get("expressions", ()))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SourceMap) and self.statements == other.statements
                and self.expressions == other.expressions)

    def __repr__(self) -> str:
        return f"SourceMap({len(self.statements)} statements, {len(self.expressions)} expressions)"
