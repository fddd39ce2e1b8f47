"""Regexes from scripts, run in the broker under the run's deadline.

- Syntax: the `regex` module in VERSION0 (Python `re` syntax), flags MULTILINE, plus
  IGNORECASE when asked. Patterns are searched, not matched.
- Compiled patterns are cached (LRU). An invalid pattern is a ScriptError
  "invalid regex '<pattern>': <reason>".
- Every search passes `timeout=` = the seconds left before the run's deadline; when it expires
  (or has already passed) DeadlineExceeded("regex search exceeded the run's time limit").
  The regex module measures that timeout in process CPU time, so a broker starved of CPU
  would overrun the wall clock: in the main thread each search also arms a one-shot
  ITIMER_REAL at the deadline, whose SIGALRM interrupts the match (the regex engine checks
  for signals while it backtracks). A timer the caller had armed is restored afterwards.
  Elsewhere (a broker in another thread) only the CPU-time bound applies.
- Fast path: a pattern without regex metacharacters is a literal. For a literal, "does this
  file's text contain a match" is decided on the raw bytes when that is provably equivalent
  to searching the decoded text (see `Pattern.bytes_verdict`), so a directory content search
  never decodes or paginates files that cannot match.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from functools import lru_cache

import regex

from runtime.errors import DeadlineExceeded, LimitError, ScriptError

MAX_PATTERN_CHARS = 10_000
_METACHARS = frozenset(".^$*+?{}[]\\|()")
# ASCII letters that IGNORECASE also matches against a non-ASCII character
# (i ~ U+0130, k ~ U+212A KELVIN SIGN, s ~ U+017F LONG S).
_SPECIAL_FOLDS = frozenset("iks")
_TIMEOUT_MESSAGE = "regex search exceeded the run's time limit"


class Pattern:
    __slots__ = ("source", "ignore_case", "compiled", "literal", "_lit_bytes", "_lit_ci", "_special")

    def __init__(self, source: str, ignore_case: bool, compiled) -> None:
        self.source = source
        self.ignore_case = ignore_case
        self.compiled = compiled
        lit = source if source and not (_METACHARS & set(source)) else None
        self.literal = lit
        self._lit_bytes = lit.encode("utf-8") if lit is not None else b""
        # A bytes pattern's IGNORECASE is ASCII-only: exactly "an ASCII-only match exists".
        self._lit_ci = (
            regex.compile(regex.escape(self._lit_bytes), regex.IGNORECASE)
            if lit is not None and ignore_case and lit.isascii()
            else None
        )
        self._special = lit is not None and bool(_SPECIAL_FOLDS & set(lit.lower()))

    def bytes_verdict(self, data: bytes) -> bool | None:
        """Whether the text decoded from `data` (runtime.documents.decode_text) contains a
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


@lru_cache(maxsize=256)
def _compile(source: str, ignore_case: bool) -> Pattern:
    flags = regex.VERSION0 | regex.MULTILINE | (regex.IGNORECASE if ignore_case else 0)
    try:
        compiled = regex.compile(source, flags)
    except regex.error as exc:
        raise ScriptError(f"invalid regex {source!r}: {exc}") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise ScriptError(f"invalid regex {source!r}: {exc}") from None
    return Pattern(source, ignore_case, compiled)


def compile_pattern(source: str, ignore_case: bool = False) -> Pattern:
    if not isinstance(source, str):
        raise ScriptError(f"a regex must be a string, not {type(source).__name__}")
    if len(source) > MAX_PATTERN_CHARS:
        raise LimitError(f"regex is too long ({len(source)} characters, at most {MAX_PATTERN_CHARS})")
    return _compile(source, bool(ignore_case))


# Beyond this (a run with no real time limit) no timer is armed: setitimer overflows near 1e9 s.
MAX_TIMER_S = 1e6


class _WallClockExpired(Exception):
    pass


_interruptible = threading.local()


def _on_alarm(signum, frame) -> None:
    # Raise only inside a search: an alarm that lands just after one ended changes nothing.
    if getattr(_interruptible, "active", False):
        raise _WallClockExpired()


@contextlib.contextmanager
def wall_clock_limit(seconds: float | None):
    """Interrupt the regex search inside when `seconds` of wall-clock time pass (main thread
    only; elsewhere a no-op). Raises DeadlineExceeded."""
    if seconds is None or seconds > MAX_TIMER_S or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous_handler = signal.signal(signal.SIGALRM, _on_alarm)
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-6))
    started = time.monotonic()
    _interruptible.active = True
    try:
        yield
    except _WallClockExpired:
        raise DeadlineExceeded(_TIMEOUT_MESSAGE) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)  # disarmed first: no alarm can land below
        _interruptible.active = False
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay:
            left = max(previous_delay - (time.monotonic() - started), 1e-6)
            signal.setitimer(signal.ITIMER_REAL, left, previous_interval)


class Searcher:
    """Runs patterns under a deadline (a time.monotonic() value, or None for no limit)."""

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline

    def remaining(self) -> float | None:
        if self.deadline is None or not math.isfinite(self.deadline):  # inf: no time limit
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded(_TIMEOUT_MESSAGE)
        return left

    def check(self) -> None:
        self.remaining()

    def search(self, pattern: Pattern, text: str, pos: int = 0):
        left = self.remaining()
        try:
            with wall_clock_limit(left):
                return pattern.compiled.search(text, pos, timeout=left)
        except TimeoutError:
            raise DeadlineExceeded(_TIMEOUT_MESSAGE) from None

    def finditer(self, pattern: Pattern, text: str):
        """Matches in order; empty matches advance as in `re.finditer`."""
        try:
            matches = pattern.compiled.finditer(text, timeout=self.remaining())
            while True:
                with wall_clock_limit(self.remaining()):  # armed only while the engine runs
                    m = next(matches, None)
                if m is None:
                    return
                yield m
        except TimeoutError:
            raise DeadlineExceeded(_TIMEOUT_MESSAGE) from None

    def text_matches(self, pattern: Pattern, text: str) -> bool:
        return self.search(pattern, text) is not None
