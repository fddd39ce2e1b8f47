"""Regexes over untrusted data (script patterns, globs, the TOC patterns), run in the broker in
time linear in the text and never past the run's deadline.

- Syntax and semantics: Python `re` (runtime/services/regex_translate.py), searched, not matched.
  Script patterns get MULTILINE, and IGNORECASE when asked. An invalid pattern is a
  ScriptError "invalid regex '<pattern>': <Python's reason>". Compiled patterns are cached (LRU).
- Engine: RE2 (google-re2). The `regex` module is the fallback for what RE2 cannot do
  exactly: a construct it lacks (lookaround, backreferences... `Pattern.reason`), a Unicode
  `\\b`/`\\B` over a text with non-ASCII word characters, a text holding a lone surrogate,
  or a search whose worst-case RE2 work (compiled positions x bytes) exceeds RE2_MAX_WORK.
  Both run the same translation.
- Deadline: a Searcher checks its deadline before every search. A search that may take long
  (RE2 work over INLINE_WORK, any fallback search) runs in a daemon thread while the caller
  waits for the deadline on the wall clock, in any thread; when it passes, DeadlineExceeded
  ("regex search exceeded the run's time limit"). The abandoned search then ends by itself:
  RE2's within RE2_MAX_WORK, the fallback's at its own `timeout`. That timeout counts the
  whole process's CPU time, which busy threads advance faster than the wall clock: it is the
  time that was left times the CPUs the process may use, so it never fires first.
- Offsets are characters of the searched str. After an empty match, `finditer` looks for the
  next match one character further (Python would first try a longer match at the same place).
- Fast path: a pattern without regex metacharacters is a literal. For a literal, "does this
  file's text contain a match" is decided on the raw bytes when that is provably equivalent
  to searching the decoded text (see `Pattern.bytes_verdict`), so a directory content search
  never decodes or paginates files that cannot match.
"""

from __future__ import annotations

import functools
import math
import os
import queue
import re
import threading
import time
import warnings
import weakref

import re2
import regex

from runtime.errors import DeadlineExceeded, LimitError, ScriptError
from runtime.services import regex_translate

MAX_PATTERN_CHARS = 10_000
# RE2's worst case is about 10 ns per compiled position per byte (its NFA); these bound one
# search run inline (~25 ms) and what an abandoned search can still cost (~2.5 s).
INLINE_WORK = 2_500_000
RE2_MAX_WORK = 250_000_000
RE2_MAX_MEM = 4 << 20  # per compiled pattern: program and DFA caches (RE2's default is 8 MiB)
CACHED_PATTERNS = 32
_METACHARS = frozenset(".^$*+?{}[]\\|()")
# ASCII letters that IGNORECASE also matches against a non-ASCII character
# (i ~ U+0130 and U+0131, k ~ U+212A KELVIN SIGN, s ~ U+017F LONG S).
_SPECIAL_FOLDS = frozenset("iks")
_TIMEOUT_MESSAGE = "regex search exceeded the run's time limit"
_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _re2_options():
    options = re2.Options()
    options.max_mem = RE2_MAX_MEM
    options.log_errors = False  # a failed compile is reported as an error, not on stderr
    return options


def _re2_compile(source: str):
    # Not re2.compile: its module cache would keep up to 128 more programs alive.
    return re2._Regexp(source, _re2_options())


class Pattern:
    __slots__ = ("source", "ignore_case", "re2", "reason", "python", "unicode_boundary", "non_boundary",
                 "positions", "_fallback", "literal", "_lit_bytes", "_lit_ci", "_special")

    def __init__(self, source: str, ignore_case: bool, translation: regex_translate.Translation) -> None:
        self.source = source
        self.ignore_case = ignore_case
        self.reason = translation.reason  # why RE2 cannot run it (None: it can)
        self.re2 = None
        if translation.re2 is not None:
            try:
                self.re2 = _re2_compile(translation.re2)
            except re2.error as exc:  # a program over RE2_MAX_MEM, nested repeats over 1000...
                detail = exc.args[0] if exc.args else ""
                detail = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
                self.reason = f"RE2 cannot compile it ({detail})"
        self.python = translation.python
        self.unicode_boundary = translation.unicode_boundary
        self.non_boundary = translation.non_boundary
        self.positions = max(translation.positions, 1)
        self._fallback = None
        lit = source if source and not (_METACHARS & set(source)) else None
        self.literal = lit
        self._lit_bytes = lit.encode("utf-8", "surrogatepass") if lit is not None else b""
        # A bytes pattern's IGNORECASE is ASCII-only: exactly "an ASCII-only match exists".
        self._lit_ci = (
            re.compile(re.escape(self._lit_bytes), re.IGNORECASE)
            if lit is not None and ignore_case and lit.isascii()
            else None
        )
        self._special = lit is not None and bool(_SPECIAL_FOLDS & set(lit.lower()))

    @property
    def fallback(self):
        """The `regex` module's compilation of the same translation (compiled on first use)."""
        if self._fallback is None:
            try:
                self._fallback = regex.compile(self.python, regex.VERSION0)
            except (regex.error, ValueError, OverflowError, RecursionError) as exc:
                raise ScriptError(f"invalid regex {self.source!r}: {exc}") from None
        return self._fallback

    def match(self, text: str):
        """Anchored at the start, on RE2, inline: for trusted patterns over short strings
        (TOC lines, glob paths). Groups of the result are str."""
        m = self.re2.match(text.encode("utf-8", "replace"))
        return None if m is None else _Groups(m)

    def bytes_verdict(self, data: bytes) -> bool | None:
        """Whether the text decoded from `data` (runtime.services.documents.decode_text) contains a
        match, decided on the bytes; None when only a real search can tell.

        Valid because Python's UTF-8 decoder with errors="replace" maps every valid sequence
        to itself and only replaces invalid bytes: a literal that contains neither U+FFFD nor
        U+FEFF occurs in the decoded text iff its UTF-8 bytes occur in the raw bytes (UTF-16
        files are excluded). Case-insensitively, an ASCII literal found by a bytes regex
        (whose IGNORECASE is ASCII-only) is a match; the only non-ASCII
        characters IGNORECASE equates with ASCII letters are for i, k and s, so a miss is
        final unless the literal has one of those and the data is not pure ASCII.
        """
        lit = self.literal
        if lit is None or "\ufffd" in lit or "\ufeff" in lit:
            return None
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return None
        if not self.ignore_case:
            return self._lit_bytes in data
        if self._lit_ci is None:
            return None
        if self._lit_ci.search(data) is not None:
            return True
        if self._special and not data.isascii():
            return None
        return False


class _Groups:
    __slots__ = ("_m",)

    def __init__(self, m) -> None:
        self._m = m

    def group(self, key=0) -> str:
        value = self._m.group(key)
        return value.decode("utf-8") if value is not None else None


class Match:
    """A match found by a Searcher: character offsets into the searched text."""

    __slots__ = ("_start", "_end")

    def __init__(self, start: int, end: int) -> None:
        self._start, self._end = start, end

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end


@functools.lru_cache(maxsize=CACHED_PATTERNS)
def _compile(source: str, ignore_case: bool, flags: int) -> Pattern:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Python's FutureWarnings ("possible nested set")
        return Pattern(source, ignore_case, regex_translate.translate(source, flags))


def _checked(source: str, ignore_case: bool, flags: int, what: str, shown: str) -> Pattern:
    try:
        return _compile(source, ignore_case, flags)
    except re.error as exc:
        # A glob's error positions would point into its translation: only the reason is shown.
        raise ScriptError(f"invalid {what} {shown!r}: {exc if what == 'regex' else exc.msg}") from None
    except regex_translate.TooLarge:
        raise LimitError(f"{what} {shown[:80]!r} is too large once its classes are spelled out "
                         f"(over {regex_translate.MAX_TRANSLATED_CHARS} characters); simplify it") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise ScriptError(f"invalid {what} {shown!r}: {type(exc).__name__}: {exc}") from None


def compile_pattern(source: str, ignore_case: bool = False) -> Pattern:
    """A script's regex: MULTILINE, IGNORECASE when asked."""
    if not isinstance(source, str):
        raise ScriptError(f"a regex must be a string, not {type(source).__name__}")
    if len(source) > MAX_PATTERN_CHARS:
        raise LimitError(f"regex is too long ({len(source)} characters, at most {MAX_PATTERN_CHARS})")
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    return _checked(source, bool(ignore_case), flags, "regex", source)


def compile_trusted(source: str, flags: int = 0, *, what: str = "pattern", shown: str | None = None) -> Pattern:
    """A pattern the broker builds (a glob's translation, the TOC patterns). It must run on
    RE2; an error names `what` and `shown` (the script's glob), not the translation."""
    pattern = _checked(source, False, flags, what, source if shown is None else shown)
    if pattern.re2 is None:
        raise ValueError(f"{what} {source[:80]!r} does not run on RE2: {pattern.reason}")
    return pattern


@functools.cache
def _non_ascii_word():
    classes = regex_translate.non_ascii_word_set()
    return _re2_compile("[" + "".join(f"\\x{{{lo:x}}}-\\x{{{hi:x}}}" for lo, hi in classes) + "]")


class _Subject:
    """A text being searched, with its UTF-8 bytes (None if it holds a lone surrogate) and a
    cursor converting offsets between the two, cheap for increasing offsets."""

    __slots__ = ("text", "data", "ascii", "_char", "_byte", "_non_ascii_word")

    def __init__(self, text: str) -> None:
        self.text = text
        try:
            self.data = text.encode("utf-8")
        except UnicodeEncodeError:
            self.data = None
        self.ascii = self.data is not None and len(self.data) == len(text)
        self._char = self._byte = 0
        self._non_ascii_word = None

    def byte_of(self, char: int) -> int:
        if self.ascii:
            return char
        if char < self._char:
            self._char = self._byte = 0
        self._byte += len(self.text[self._char:char].encode("utf-8"))
        self._char = char
        return self._byte

    def char_of(self, byte: int) -> int:
        if self.ascii:
            return byte
        if byte < self._byte:
            self._char = self._byte = 0
        self._char += len(self.data[self._byte:byte].decode("utf-8"))
        self._byte = byte
        return self._char


class _Waiter:
    """The one daemon thread a Searcher hands its long searches to, so that a search operation
    over many files (or many matches of one) starts one thread, not one per search. A search
    abandoned at the deadline keeps it busy until it ends by itself; the run is over by then.
    It ends when its Searcher is collected."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, args=(self.jobs,), name="fdsl-regex", daemon=True).start()

    @staticmethod
    def _serve(jobs: queue.SimpleQueue) -> None:
        while True:
            item = jobs.get()
            if item is None:
                return
            job, left, outcome, done = item
            try:
                outcome.append((True, job(left)))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                outcome.append((False, exc))
            finally:
                done.set()

    def run(self, job, left: float):
        outcome: list = []
        done = threading.Event()
        self.jobs.put((job, left, outcome, done))
        if not done.wait(left):
            raise DeadlineExceeded(_TIMEOUT_MESSAGE)
        ok, value = outcome[0]
        if not ok:
            raise value
        return value


class Searcher:
    """Runs patterns under a deadline (a time.monotonic() value, or None for no limit)."""

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self._subject: _Subject | None = None
        self._waiter: _Waiter | None = None

    def remaining(self) -> float | None:
        if self.deadline is None or not math.isfinite(self.deadline):  # inf: no time limit
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded(_TIMEOUT_MESSAGE)
        return left

    def check(self) -> None:
        self.remaining()

    def _run(self, work: int | None, job):
        """`job(left)` inline when it is cheap or there is no deadline, else in a daemon
        thread that the caller waits for until the deadline."""
        left = self.remaining()
        if left is None or (work is not None and work <= INLINE_WORK):
            return job(left)
        if self._waiter is None:
            self._waiter = _Waiter()
            weakref.finalize(self, self._waiter.jobs.put, None)  # its thread ends with this Searcher
        return self._waiter.run(job, left)

    def _subject_of(self, text: str) -> _Subject:
        if self._subject is None or self._subject.text is not text:
            self._subject = _Subject(text)
        return self._subject

    def _needs_fallback(self, pattern: Pattern, subject: _Subject, start_byte: int) -> bool:
        if pattern.re2 is None or subject.data is None:
            return True
        if pattern.non_boundary and not subject.text:
            return True
        if pattern.positions * (len(subject.data) - start_byte + 1) > RE2_MAX_WORK:
            return True
        if pattern.unicode_boundary and not subject.ascii:
            if subject._non_ascii_word is None:
                data = subject.data
                subject._non_ascii_word = self._run(len(data), lambda left: _non_ascii_word().search(data) is not None)
            return subject._non_ascii_word
        return False

    def search(self, pattern: Pattern, text: str, pos: int = 0) -> Match | None:
        """Python's `pattern.search(text, pos)`: the text before `pos` is context (for `^`,
        `\\b`, lookbehind), never part of a match."""
        subject = self._subject_of(text)
        self.check()
        start = subject.byte_of(pos) if subject.data is not None else 0
        if not self._needs_fallback(pattern, subject, start):
            data = subject.data
            m = self._run(pattern.positions * (len(data) - start + 1), lambda left: pattern.re2.search(data, start))
            if m is None:
                return None
            return Match(subject.char_of(m.start()), subject.char_of(m.end()))
        fallback = pattern.fallback

        def job(left):
            if left is None:
                return fallback.search(text, pos)
            return fallback.search(text, pos, timeout=left * _CPUS, concurrent=True)

        try:
            m = self._run(None, job)
        except TimeoutError:
            raise DeadlineExceeded(_TIMEOUT_MESSAGE) from None
        return None if m is None else Match(m.start(), m.end())

    def finditer(self, pattern: Pattern, text: str):
        """Matches in order, each starting where the previous one ended (one character
        further after an empty match)."""
        pos = 0
        while pos <= len(text):
            m = self.search(pattern, text, pos)
            if m is None:
                return
            yield m
            pos = m.end() if m.end() > m.start() else m.end() + 1

    def text_matches(self, pattern: Pattern, text: str) -> bool:
        return self.search(pattern, text) is not None
