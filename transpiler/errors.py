"""Errors as values with positions (starlark-go's ``Position`` / ``Error``).

``format_error`` is shared by every phase and by the runtime (for RuntimeErrors too), so it
takes plain data and knows nothing about the transpiler.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Position", "DSLError", "format_error"]


@dataclass(frozen=True)
class Position:
    """A place in a DSL script. Both numbers are 1-based; ``col`` counts characters."""

    line: int
    col: int

    def __str__(self) -> str:
        return f"line {self.line}, column {self.col}"


class DSLError(Exception):
    """A static error in a script (kind ``SyntaxError``), located at ``line``/``col`` (1-based)."""

    def __init__(
        self,
        message: str,
        line: int | None = None,
        col: int | None = None,
        kind: str = "SyntaxError",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.line = line
        self.col = col

    @property
    def position(self) -> Position | None:
        if self.line is None:
            return None
        return Position(self.line, self.col or 1)

    def format(self, source: str) -> str:
        """The user-facing text: message, location, the source line and a caret."""
        return format_error(self.kind, self.message, source, self.line, self.col)

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.kind}: {self.message}"
        return f"{self.kind}: {self.message} (line {self.line}, column {self.col})"

    def __repr__(self) -> str:
        return f"DSLError({self.message!r}, line={self.line}, col={self.col}, kind={self.kind!r})"


def _source_line(source: str, line: int) -> str | None:
    if source.startswith("\ufeff"):
        source = source[1:]
    lines = source.replace("\r\n", "\n").split("\n")
    if 1 <= line <= len(lines):
        return lines[line - 1].rstrip("\r\n")
    return None


def format_error(kind: str, message: str, source: str, line: int | None, col: int | None) -> str:
    """Render an error exactly as::

        SyntaxError: unexpected ')'
          at line 3, column 14
            print(x))
                     ^

    Tabs in the quoted line are shown as single spaces so that the caret (``col`` - 1 spaces
    after the 4-space margin) stays under the character it points at. A line longer than
    QUOTED_CHARS is quoted as that many characters around the column, each cut end shown as
    "..." (a one-line script of 100,000 characters is not quoted whole, twice). Without a line
    only the first line is produced; a line outside the source gives the first two lines.
    """
    head = f"{kind}: {message}"
    if line is None:
        return head
    if col is None or col < 1:
        col = 1
    out = [head, f"  at line {line}, column {col}"]
    text = _source_line(source, line)
    if text is not None:
        text, caret = text.replace("\t", " "), col - 1
        if len(text) > QUOTED_CHARS:
            start = min(max(0, caret - QUOTED_CHARS // 2), max(0, len(text) - QUOTED_CHARS))
            end = start + QUOTED_CHARS
            shown = ("..." if start else "") + text[start:end] + ("..." if end < len(text) else "")
            text, caret = shown, caret - start + (3 if start else 0)
        out.append("    " + text)
        out.append("    " + " " * caret + "^")
    return "\n".join(out)


QUOTED_CHARS = 160
