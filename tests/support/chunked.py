"""Annotated test-data files (after starlark-go's ``chunkedfile``).

A file is split into chunks by lines that are exactly ``---``. Inside a chunk, an expected
error is written at the end of the line where it occurs::

    x = open("f")   ### "unknown function 'open'"

The annotation starts with ``###`` followed by a quoted regex (Python ``re`` syntax, matched
with ``re.search`` against the error message). ``#`` starts a comment in FilesDSL, so the
annotation does not change how the line parses. Line numbers in ``Chunk.expectations`` are
relative to the chunk (line 1 is the chunk's first line), which is also how the chunk's
``source`` numbers them; ``first_line_in_file`` maps them back for failure messages.

One helper for parser, checker, emitter and runtime tests: add a case by adding text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Chunk", "load_chunks", "parse_chunks"]

_ANNOTATION = re.compile(r'###\s*"((?:[^"\\]|\\.)*)"\s*$')


@dataclass
class Chunk:
    source: str
    first_line_in_file: int
    expectations: list[tuple[int, str]] = field(default_factory=list)
    path: str = ""

    def file_line(self, line: int) -> int:
        """The line in the data file of chunk-relative ``line``."""
        return self.first_line_in_file + line - 1

    def where(self, line: int | None = None) -> str:
        return f"{self.path}:{self.file_line(line or 1)}"

    def __repr__(self) -> str:  # shows up as the pytest id
        return f"Chunk({self.where()})"


def parse_chunks(text: str, path: str = "<chunks>") -> list[Chunk]:
    chunks: list[Chunk] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    start = 0
    for i in range(len(lines) + 1):
        if i == len(lines) or lines[i].rstrip("\r") == "---":
            body = lines[start:i]
            expectations = []
            for n, line in enumerate(body, 1):
                m = _ANNOTATION.search(line)
                if m:
                    expectations.append((n, m.group(1).replace('\\"', '"')))
            source = "".join(line + "\n" for line in body)
            chunks.append(Chunk(source, start + 1, expectations, path))
            start = i + 1
    return chunks


def load_chunks(path: str | Path) -> list[Chunk]:
    """Read a chunked test-data file (UTF-8)."""
    p = Path(path)
    return parse_chunks(p.read_text(encoding="utf-8"), str(p))
