"""Step 1 of parsing: the pre-scan over the raw text, before lark or any recursive algorithm
sees it. A language's ``Lexicon`` names its quotes, raw strings and brackets."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Mapping

from .errors import DSLError
from .limits import DEFAULT_LIMITS, Limits

__all__ = ["Lexicon", "prescan", "char_error"]


@dataclass(frozen=True)
class Lexicon:
    """The lexical surface the pre-scan knows: one-line strings with backslash escapes, an
    optional multi-line raw string, and brackets."""

    quotes: str
    brackets: Mapping[str, str]
    raw_quote: str = ""
    raw_name: str = ""
    interesting: re.Pattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        specials = "#" + self.quotes + self.raw_quote + "".join(self.brackets) + "".join(self.brackets.values())
        pattern = "[" + re.escape(specials) + r"]|[^\t -~]"
        object.__setattr__(self, "interesting", re.compile(pattern))


_BAD_IN_TEXT = re.compile(r"[\x00\ud800-\udfff]")  # refused even inside strings and comments


def char_error(ch: str, line: int, col: int) -> DSLError:
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
        raise char_error(m.group(), line, start_col + m.start())


class _Indents:
    """Indentation of code lines: spaces only, consistent, at most ``max_blocks`` deep."""

    def __init__(self, max_blocks: int) -> None:
        self.stack = [0]
        self.seen_code = False
        self.max_blocks = max_blocks

    def line(self, line: str, lineno: int) -> None:
        stripped = line.lstrip(" \t")
        if not stripped or stripped.startswith("#"):
            return
        lead = line[: len(line) - len(stripped)]
        tab = lead.find("\t")
        if tab >= 0:
            raise DSLError("tab character in indentation (indent with spaces only)", lineno, tab + 1)
        width = len(lead)
        if not self.seen_code and width:
            raise DSLError("unexpected indent", lineno, width + 1)
        self.seen_code = True
        if width > self.stack[-1]:
            self.stack.append(width)
            if len(self.stack) - 1 > self.max_blocks:
                raise DSLError(f"blocks nested too deep (limit {self.max_blocks})", lineno, width + 1)
            return
        while width < self.stack[-1]:
            self.stack.pop()
        if width != self.stack[-1]:
            raise DSLError("unindent does not match any outer indentation level", lineno, width + 1)


def _string_end(line: str, quote: str, start: int) -> int:
    """Index of the quote closing the string opened at ``start``, or -1."""
    j, n = start + 1, len(line)
    while j < n and line[j] != quote:
        j += 2 if line[j] == "\\" else 1
    return j if j < n else -1


def prescan(source: str, lexicon: Lexicon, limits: Limits = DEFAULT_LIMITS) -> str:
    """Check the raw text; return it normalised for lark (no BOM, ``\\n`` line ends, final
    newline). Raises ``DSLError`` on the first problem found, scanning in source order.

    Lone carriage returns: ``\\r\\n`` is a line end; a ``\\r`` not followed by ``\\n`` is an
    error ("unexpected character U+000D")."""
    max_bytes = limits.max_bytes
    size = len(source) if len(source) > max_bytes else len(source.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise DSLError(f"script is too large ({size} bytes; limit {max_bytes})", 1, 1)
    if source.startswith("\ufeff"):
        source = source[1:]
    text = source.replace("\r\n", "\n")
    scan = _Scan(lexicon, limits)
    for lineno, line in enumerate(text.split("\n"), 1):
        scan.line(line, lineno)
    scan.finish()
    return text if text.endswith("\n") else text + "\n"


class _Scan:
    """The pre-scan's state across lines: open brackets, indentation, an unfinished raw string."""

    def __init__(self, lexicon: Lexicon, limits: Limits) -> None:
        self.lexicon, self.limits = lexicon, limits
        self.brackets: list[tuple[str, int, int]] = []
        self.indents = _Indents(limits.max_blocks)
        self.closers = set(lexicon.brackets.values())
        self.raw_open: tuple[int, int] | None = None  # where an unfinished raw string started

    def line(self, line: str, lineno: int) -> None:
        pos = 0
        if self.raw_open is not None:
            end = line.find(self.lexicon.raw_quote)
            _check_text(line if end < 0 else line[:end], lineno, 1)
            if end < 0:
                return
            self.raw_open, pos = None, end + 1
        elif not self.brackets:
            self.indents.line(line, lineno)
        while m := self.lexicon.interesting.search(line, pos):
            pos = self.token(line, lineno, m.group(), m.start())
            if pos < 0:
                return

    def token(self, line: str, lineno: int, ch: str, i: int) -> int:
        """Check what starts at ``line[i]``; the position to go on from, or -1 for the line's end."""
        lexicon = self.lexicon
        if ch == "#":
            _check_text(line[i + 1:], lineno, i + 2)
            return -1
        if ch in lexicon.quotes:
            j = _string_end(line, ch, i)
            if j < 0:
                raise DSLError("unterminated string", lineno, i + 1)
            _check_text(line[i + 1:j], lineno, i + 2)
            return j + 1
        if ch == lexicon.raw_quote:
            j = line.find(ch, i + 1)
            _check_text(line[i + 1:] if j < 0 else line[i + 1:j], lineno, i + 2)
            if j < 0:
                self.raw_open = (lineno, i + 1)
                return -1
            return j + 1
        if ch in lexicon.brackets:
            self.brackets.append((ch, lineno, i + 1))
            if len(self.brackets) > self.limits.max_nesting:
                raise DSLError(f"nesting too deep (limit {self.limits.max_nesting})", lineno, i + 1)
        elif ch in self.closers:
            if not self.brackets or lexicon.brackets[self.brackets[-1][0]] != ch:
                raise DSLError(f"unexpected '{ch}'", lineno, i + 1)
            self.brackets.pop()
        else:
            raise char_error(ch, lineno, i + 1)
        return i + 1

    def finish(self) -> None:
        if self.raw_open is not None:
            raise DSLError(f"unterminated {self.lexicon.raw_name} string", *self.raw_open)
        if self.brackets:
            ch, line, col = self.brackets[-1]
            raise DSLError(f"'{ch}' was never closed", line, col)
