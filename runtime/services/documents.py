"""Documents: decoding, pagination, PDF text and outlines, tables of contents, and a per-run cache.

- Text (every file whose suffix is not ".pdf", case-insensitive): bytes are decoded as UTF-8
  with errors="replace" (undecodable bytes become U+FFFD, never an error); a UTF-8 BOM is
  stripped; a UTF-16 BOM (FF FE / FE FF) decodes the file as UTF-16. `lines` is
  `text.splitlines()`; page N is lines 80*(N-1)+1 .. 80*N joined with "\\n". An empty file has
  one empty page. `text` is the exact decoded text. A file with a NUL byte in its first
  8 KiB and no UTF-16 BOM is binary (an executable, an image, an archive): it is not
  decoded; reading it is an UnreadableFile error and searches skip it, saying so.
- PDF (via pymupdf, opened from the bytes we read, never by path): one page per PDF page
  (`page.get_text()`); `text` is the pages joined by "\\n\\n"; `lines` is `text.splitlines()`.
- Tables of contents (`Document.toc`, computed lazily): the PDF outline when there is one,
  otherwise `detect_toc` over the lines of each page (see its docstring for the exact rules).
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from runtime.budget import mib
from runtime.errors import DocumentLimit, UnreadableFile
from runtime.fs.entries import Resolved, WalkEntry
from runtime.fs.vfs import VirtualFS
from runtime.services.pdf import PdfExtractor
from runtime.services.textsearch import compile_trusted

LINES_PER_PAGE = 80
DEFAULT_MAX_DOCUMENT_BYTES = 64 << 20
DEFAULT_MEMORY_BYTES = 512 << 20  # the broker's memory budget for parsed documents (--broker-memory)

TocEntry = tuple[int, str, int]  # (level >= 1, title, page; page < 1 when unknown)


def is_pdf_name(name: str) -> bool:
    return name.lower().endswith(".pdf")


BINARY_SNIFF_BYTES = 8192


def is_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB, as grep and git decide; UTF-16 text (with its BOM) is not."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def binary_file(vpath: str) -> UnreadableFile:
    return UnreadableFile(f"{vpath} is a binary file (it holds NUL bytes): only text, markdown and PDF "
                          "files can be read")


def decode_text(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", "replace")
    if data.startswith(b"\xff\xfe") or data.startswith(b"\xfe\xff"):
        return data.decode("utf-16", "replace")  # the codec consumes the BOM
    return data.decode("utf-8", "replace")


def paginate(lines: list[str]) -> list[str]:
    if not lines:
        return [""]
    return ["\n".join(lines[i:i + LINES_PER_PAGE]) for i in range(0, len(lines), LINES_PER_PAGE)]


@dataclass
class Document:
    vpath: str
    kind: str  # "text" | "pdf"
    pages: list[str]
    text: str
    outline: list[TocEntry] | None = None  # PDF outline (None for text or no outline)
    damaged: bool = False  # a PDF pymupdf had to repair to open: its text may be incomplete
    _lines: list[str] | None = field(default=None, repr=False)
    _toc: list[TocEntry] | None = field(default=None, repr=False)
    _toc_done: bool = field(default=False, repr=False)

    @property
    def page_count(self) -> int:
        return len(self.pages)

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines

    def toc(self, check: Callable[[], None] | None = None) -> list[TocEntry] | None:
        """PDF outline, else detected headings/TOC lines; None when nothing is found.
        `check()` runs while lines are scanned (deadline checks)."""
        if not self._toc_done:
            if self.outline:
                self._toc = list(self.outline)
            else:
                found = detect_toc(self.pages, check)
                self._toc = found or None
            self._toc_done = True
        return self._toc


# ------------------------------------------------------------------------- parsing

def text_of(vpath: str, data: bytes) -> str:
    """A text file's text (not a PDF's): decoded, a binary file refused."""
    if is_binary(data):
        raise binary_file(vpath)
    return decode_text(data)


def parse_text(vpath: str, data: bytes) -> Document:
    text = text_of(vpath, data)
    doc = Document(vpath, "text", [], text)
    doc.pages = paginate(doc.lines)
    return doc


def parse_pdf(vpath: str, data: bytes, extractor: PdfExtractor, deadline: float | None = None) -> Document:
    """A PDF's pages and outline, extracted by the jailed extractor (runtime/services/pdf.py)."""
    pages, outline, repaired = extractor.extract(vpath, data, deadline)
    if repaired and not any(page.strip() for page in pages):  # a truncated file pymupdf "repaired" into blank pages
        raise UnreadableFile(f"cannot read PDF {vpath}: the file is damaged (truncated or corrupt) and no text "
                             "could be recovered from it")
    return Document(vpath, "pdf", pages, "\n\n".join(pages), outline or None, damaged=repaired)


def memory_cost(doc: Document) -> int:
    """About what a parsed document holds in the broker: its text, its pages and its lines
    (a str object each, and a list slot)."""
    size = sys.getsizeof(doc.text)
    return 2 * size + sum(sys.getsizeof(page) + 8 for page in doc.pages) + 64 * (doc.text.count("\n") + 1)


# ------------------------------------------------------------------------- TOC detection

# The patterns run on RE2 (runtime/services/textsearch.py): a document is hostile input, and these once
# backtracked cubically on a run of blanks. Python syntax; each is matched at a line's start.
# ATX heading: up to 3 spaces, 1-6 '#', then a space/tab and the title (an optional closing
# run of '#' preceded by a space is removed).
ATX_HEADING = r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*\Z"
# Fenced code block delimiter: up to 3 spaces then ``` or ~~~ (3 or more).
FENCE = r"^ {0,3}(`{3,}|~{3,})"
# Dotted TOC line: a title, a leader of 3+ dots (optionally spaced: ". . .") or ellipsis
# characters, then the page number at the end of the line.  "1.1 Scope ........ 2"
DOTTED_TOC = r"^[ \t]*(?P<title>\S.*?)[ \t]*(?:(?:\.[ \t]?){3,}|\u2026+)[ \t]*(?P<page>\d{1,5})[ \t]*\Z"
# Numbered TOC line without leader: a section number, a title, then 2+ spaces (or a tab) and
# the page number at the end.  "2.3 Results     14"
NUMBERED_TOC = r"^[ \t]*(?P<title>\d+(?:\.\d+)*\.?[ \t]+\S.*?)(?:[ \t]{2,}|\t)[ \t]*(?P<page>\d{1,5})[ \t]*\Z"
# An underline: one of these characters repeated, 3 times or more, nothing else on the line.
UNDERLINE_CHARS = frozenset("=-~^*#+\"'`:.")
# A dotted leader and a page number alone on a line (the title was the line before).
LEADER_ONLY = r"^[ \t]*(?:(?:\.[ \t]?){3,}|\u2026+)[ \t]*(?P<page>\d{1,5})[ \t]*\Z"
# Section number at the start of a title (then a blank): its components give the level.
SECTION_NUMBER = r"^(\d+(?:\.\d+)*)\.?[ \t]"
MAX_TOC_LINE = 300
TOC_CHECK_EVERY = 256  # lines between deadline checks
# One character class each: no engine can backtrack on these.
_HAS_LETTER = re.compile(r"[^\W\d_]")
_BLANKS = re.compile(r"\s+")


@functools.cache
def _toc_patterns():
    return tuple(compile_trusted(source, what="TOC pattern")
                 for source in (ATX_HEADING, FENCE, DOTTED_TOC, NUMBERED_TOC, SECTION_NUMBER, LEADER_ONLY))


def _toc_level(title: str) -> int:
    m = _toc_patterns()[4].match(title)
    return m.group(1).count(".") + 1 if m else 1


def detect_toc(pages: list[str], check: Callable[[], None] | None = None) -> list[TocEntry]:
    """Headings and TOC lines, in document order, one entry per line.

    For each line of each page (page text split with str.splitlines, so a text file's line L
    is on page (L-1)//80+1), outside fenced code blocks:
      1. an ATX markdown heading (ATX_HEADING) -> (number of '#', title, page of the line);
      2. an underlined heading (reStructuredText, markdown setext): a line with a letter,
         then a line of one repeated UNDERLINE_CHARS character, at least as long ->
         (the rank of that character among the underlines met so far, title, its page);
      3. else a dotted TOC line (DOTTED_TOC) -> (section-number components or 1, title, the
         number at the end of the line), also when the leader and the number are alone on the
         line after the title (LEADER_ONLY, as PDF text layers often split them);
      4. else a numbered TOC line (NUMBERED_TOC) -> same, the title keeps its number.
    A TOC title must contain a letter. Levels are at least 1. Lines longer than
    MAX_TOC_LINE characters are never headings or TOC entries. `check()` runs every
    TOC_CHECK_EVERY lines.
    """
    scan = _TocScan()
    seen = 0
    for page_no, page in enumerate(pages, start=1):
        for line in page.splitlines():
            seen += 1
            if check is not None and seen % TOC_CHECK_EVERY == 0:
                check()
            scan.line(line, page_no)
    return scan.entries


def _is_underline(text: str) -> bool:
    return len(text) >= 3 and text[0] in UNDERLINE_CHARS and text == text[0] * len(text)


class _TocScan:
    """detect_toc's state: the entries so far, the open code fence, the previous line (a
    title an underline or a lone leader may belong to) and the underline styles met."""

    def __init__(self) -> None:
        self.entries: list[TocEntry] = []
        self.fence: str | None = None
        self.previous: tuple[str, int] | None = None  # (a possible title, its page)
        self.underlines: list[str] = []

    def line(self, line: str, page_no: int) -> None:
        previous, self.previous = self.previous, None
        atx_heading, fence_line, dotted_toc, numbered_toc, _, leader_only = _toc_patterns()
        lead = line.lstrip(" ")[:1]
        fm = fence_line.match(line) if lead in ("`", "~") else None
        if self.fence is not None:
            if fm and fm.group(1)[0] == self.fence[0] and len(fm.group(1)) >= len(self.fence) \
                    and not line.strip().strip(self.fence[0]):
                self.fence = None
            return
        if fm:
            self.fence = fm.group(1)
            return
        if len(line) > MAX_TOC_LINE:
            return
        m = atx_heading.match(line) if lead == "#" else None
        if m:
            title = m.group(2).strip()
            if title and not set(title) <= {"#"}:
                self.entries.append((len(m.group(1)), title, page_no))
            return
        mark = line.rstrip()
        if previous is not None and _is_underline(mark) and len(mark) >= len(previous[0]):
            style = mark[0]
            if style not in self.underlines:
                self.underlines.append(style)
            self.entries.append((self.underlines.index(style) + 1, previous[0], previous[1]))
            return
        if line.rstrip()[-1:].isdigit():
            m = leader_only.match(line) if previous is not None else None
            if m:
                self.entries.append((_toc_level(previous[0]), previous[0], int(m.group("page"))))
                return
            m = dotted_toc.match(line) or numbered_toc.match(line)
            if m:
                title = _BLANKS.sub(" ", m.group("title").strip())
                if _HAS_LETTER.search(title):
                    self.entries.append((_toc_level(title), title, int(m.group("page"))))
                return
        title = _BLANKS.sub(" ", line.strip())
        if title and not line[:1].isspace() and _HAS_LETTER.search(title):
            self.previous = (title, page_no)


def format_toc(entries: list[TocEntry], max_items: int) -> str:
    out = []
    for level, title, page in entries[:max_items]:
        suffix = f" (p.{page})" if page >= 1 else ""
        out.append("  " * (max(level, 1) - 1) + title + suffix)
    if len(entries) > max_items:
        out.append(f"... ({len(entries) - max_items} more entries)")
    return "\n".join(out)


# ------------------------------------------------------------------------- the store


MAX_NOTED = 10
MAX_OUTLINES_KEPT = 1000  # outlines asked of the extractor alone, kept while their file is unchanged


def identity(st: os.stat_result) -> tuple[int, ...]:
    """What a cached document must still match to be served again: mtime and size, and the
    inode and its change time, so that a file replaced by one of the same size with its mtime
    set back (utime sets the ctime) is read again."""
    return st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns


class DocumentStore:
    """The run's parsed documents, each read and parsed once while unchanged: keyed by its
    real host path and revalidated by (mtime_ns, size).

    Bounded, because documents are hostile input: a file over `max_bytes` is not read, and
    the cache is an LRU bounded in bytes (`memory_bytes`, the broker's memory budget,
    --broker-memory): the least recently used documents are dropped to make room, and a
    single document that would not fit alone is refused with a LimitError naming the budget.
    PDFs are parsed by `extractor` (runtime/services/pdf.py, out of process; started on first PDF)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES, memory_bytes: int = DEFAULT_MEMORY_BYTES,
                 extractor: PdfExtractor | None = None, deadline: float | None = None) -> None:
        self.max_bytes = max_bytes
        self.memory_bytes = memory_bytes
        self.extractor = extractor if extractor is not None else PdfExtractor()
        self.deadline = deadline  # a time.monotonic() value: PDF extraction stops there
        self._cache: OrderedDict[str, tuple[tuple[int, int], Document, int]] = OrderedDict()
        self.used = 0  # bytes of the cached documents (memory_cost)
        self.parse_count = 0
        self.evictions = 0
        self._outlines: dict[str, tuple[tuple[int, int], list]] = {}  # PDF outlines read alone (pdf_outline)
        self.damaged: list[str] = []  # the damaged documents parsed (the first MAX_NOTED), for the run's warnings
        self.damaged_count = 0

    def begin_run(self, deadline: float | None) -> None:
        """A run starts with this store (a session's store serves many): its deadline, and the
        damaged documents it will be told about counted afresh."""
        self.deadline = deadline
        self.damaged, self.damaged_count = [], 0
        self.extractor.fit_deadline(deadline)

    def close(self) -> None:
        """End the PDF extractor (if one was started)."""
        self.extractor.close()

    def too_big(self, vpath: str, size: int) -> DocumentLimit:
        return DocumentLimit(f"{vpath} is {size} bytes, over the limit of {self.max_bytes} bytes per document")

    def cached(self, real: str, vpath: str, st: os.stat_result) -> Document | None:
        """The document of the file at `real`, parsed while it was as `st` says, read as `vpath`
        names it: a link "a.txt" to "b.pdf" is text, its target a PDF (the other is a miss)."""
        hit = self._cache.get(real)
        if hit is not None and hit[0] == identity(st) and hit[1].kind == ("pdf" if is_pdf_name(vpath) else "text"):
            self._cache.move_to_end(real)
            doc = hit[1]
            if doc.damaged:  # told to each run that reads it, not only the one that parsed it
                self._note_damaged(vpath)
            if doc.vpath != vpath:  # the same file reached by another virtual path
                doc = Document(vpath, doc.kind, doc.pages, doc.text, doc.outline, doc.damaged, doc._lines)
            return doc
        return None

    def get(self, vfs: VirtualFS, res: Resolved, st: os.stat_result | None = None) -> Document:
        """The document at a resolved path (parsed at most once while unchanged)."""
        if st is None:
            st = vfs.stat(res)
        doc = self.cached(res.real, res.vpath, st)
        if doc is not None:
            return doc
        data, fst = self._read(vfs, res, st)
        return self.parse(res.vpath, res.real, data, fst)

    def _read(self, vfs: VirtualFS, res: Resolved, st: os.stat_result) -> tuple[bytes, os.stat_result]:
        """A resolved file's bytes (and their stat), under the size limit per document."""
        if st.st_size > self.max_bytes:
            raise self.too_big(res.vpath, st.st_size)
        try:
            return vfs.read_bytes(res, self.max_bytes)
        except OverflowError as exc:
            raise self.too_big(res.vpath, int(exc.args[0])) from None

    def pdf_outline(self, vfs: VirtualFS, res: Resolved, st: os.stat_result) -> list[TocEntry]:
        """A PDF's outline ([] when it has none) without extracting its pages' text: from the
        parsed document when it is here, else asked of the extractor alone and kept while the
        file is unchanged (table() of a 1,000-page manual costs its outline, not its text)."""
        doc = self.cached(res.real, res.vpath, st)
        if doc is not None:
            return list(doc.outline or [])
        key = identity(st)
        kept = self._outlines.get(res.real)
        if kept is not None and kept[0] == key:
            return list(kept[1])
        data, fst = self._read(vfs, res, st)
        outline, repaired = self.extractor.outline(res.vpath, data, self.deadline)
        if repaired:
            self._note_damaged(res.vpath)
        if len(self._outlines) >= MAX_OUTLINES_KEPT:
            self._outlines.pop(next(iter(self._outlines)))
        self._outlines[res.real] = (identity(fst), outline)
        return list(outline)

    def read_entry(self, vfs: VirtualFS, entry: WalkEntry) -> bytes:
        """Raw bytes of a file met in a walk, under the size limit (not parsed, not cached)."""
        if entry.st.st_size > self.max_bytes:
            raise self.too_big(entry.vpath, entry.st.st_size)
        try:
            return vfs.read_entry(entry, self.max_bytes)
        except OverflowError as exc:
            raise self.too_big(entry.vpath, int(exc.args[0])) from None

    def get_entry(self, vfs: VirtualFS, entry: WalkEntry, data: bytes | None = None) -> Document:
        """The document of a file met in a walk; `data` is its bytes when already read."""
        doc = self.cached(entry.real, entry.vpath, entry.st)
        if doc is not None:
            return doc
        if data is None:
            data = self.read_entry(vfs, entry)
        return self.parse(entry.vpath, entry.real, data, entry.st)

    def parse(self, vpath: str, real: str, data: bytes, st: os.stat_result) -> Document:
        """Parse bytes just read and cache the result under (mtime_ns, size) of `st`."""
        self.parse_count += 1
        if is_pdf_name(vpath):
            doc = parse_pdf(vpath, data, self.extractor, self.deadline)
        else:
            doc = parse_text(vpath, data)
        del data
        if doc.damaged:
            self._note_damaged(vpath)
        self._keep(real, identity(st), doc)
        return doc

    def _note_damaged(self, vpath: str) -> None:
        if vpath not in self.damaged:
            self.damaged_count += 1
            if len(self.damaged) < MAX_NOTED:
                self.damaged.append(vpath)

    def warnings(self) -> list[str]:
        """What the run's reader should know about the documents it was given."""
        if not self.damaged_count:
            return []
        more = self.damaged_count - len(self.damaged)
        names = ", ".join(self.damaged) + (f" and {more} more" if more else "")
        return [f"damaged PDF{'s' if self.damaged_count != 1 else ''} repaired on opening, whose text may be "
                f"incomplete: {names}"]

    def _keep(self, real: str, key: tuple[int, ...], doc: Document) -> None:
        cost = memory_cost(doc)
        if cost > self.memory_bytes:
            # A DocumentLimit: a search over many files skips this one (and names it); reading it is an error
            raise DocumentLimit(f"{doc.vpath} needs about {mib(cost)} of broker memory once parsed, over the "
                                f"broker's memory budget of {mib(self.memory_bytes)} (--broker-memory)")
        old = self._cache.pop(real, None)
        if old is not None:
            self.used -= old[2]
        while self._cache and self.used + cost > self.memory_bytes:
            _, (_, _, freed) = self._cache.popitem(last=False)
            self.used -= freed
            self.evictions += 1
        self._cache[real] = (key, doc, cost)
        self.used += cost
