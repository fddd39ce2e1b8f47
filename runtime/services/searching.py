"""What a search over many files gives besides its hits: the lines of a document that match,
and the files it could not read (named, not silently left out). runtime/services/files.py's
dir_search and dir_grep use them."""

from __future__ import annotations

import bisect
from itertools import accumulate

from runtime.errors import FileTooLargeError, UnreadableFile
from runtime.services.documents import Document
from runtime.services.textsearch import Pattern, Searcher

DEFAULT_GREP_RESULTS = 100
MAX_GREP_RESULTS = 10_000
MAX_SKIPPED_SHOWN = 10
SKIPPABLE = (UnreadableFile, FileTooLargeError)  # what one file of a search over many may fail with



class Skipped:
    """The files a search over many could not read: how many, and the first few with why."""

    def __init__(self) -> None:
        self.count = 0
        self.shown: list[dict] = []

    def add(self, vpath: str, exc: Exception | str) -> None:
        self.count += 1
        if len(self.shown) < MAX_SKIPPED_SHOWN:
            self.shown.append({"path": vpath, "reason": str(exc)})

    def reply(self) -> dict:
        return {"skipped": self.shown, "skipped_count": self.count}


def line_starts(text: str) -> list[int]:
    """Where each line starts (line breaks as str.splitlines() sees them), and len(text) after
    a final line break. Built from splitlines(True) in C: a tenth of a regex walk over the breaks."""
    parts = text.splitlines(True)
    if not parts:
        return [0]
    ends = list(accumulate(map(len, parts)))
    ends_with_break = parts[-1].splitlines() != [parts[-1]]
    return [0] + ends[:-1] + (ends[-1:] if ends_with_break else [])


def matching_lines(pat: Pattern, doc: Document, searcher: Searcher, starts: list[int] | None = None):
    """Indexes of the lines of `doc` holding a match, each once, in order (a match spanning
    lines counts on the line where it starts). `starts`: line_starts(doc.text), when kept."""
    text = doc.text
    if starts is None:
        starts = line_starts(text)
    count = len(doc.lines)
    pos = 0
    while pos <= len(text):
        m = searcher.search(pat, text, pos)
        if m is None:
            return
        idx = bisect.bisect_right(starts, m.start()) - 1
        if idx >= count:  # a match at the very end, after the last line break
            return
        yield idx
        if idx + 1 >= len(starts):
            return
        pos = starts[idx + 1]


def numbered(lines: list[str], first: int):
    """Lines as memexfs `read` shows them: the number right-aligned to max(3, digits of the
    last number), two spaces and the line (an empty line is just its number)."""
    width = max(3, len(str(first + len(lines) - 1)))
    for n, line in enumerate(lines, start=first):
        yield f"{n:>{width}}  {line}" if line else f"{n:>{width}}"
