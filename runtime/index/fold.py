"""The index's tokenizer: case folding and the literals a regex requires.

- `fold(text)` maps every character to the representative of its case class, one character
  for one (so positions and lengths are kept). A class joins a character with its simple
  lowercase (`_sre.unicode_tolower`, what Python's IGNORECASE compares), its single-character
  upper, lower and casefold forms, Python's extra equivalences (`re._casefix`: i ı, s ſ,
  µ μ, ...) and the case variants the `regex` fallback engine knows (`engine_cases`: its
  Unicode may be newer than the interpreter's). It is therefore coarser than, or equal to,
  Python's IGNORECASE, RE2's simple case folding and `regex`'s: two characters a search could
  equate always fold alike. The
  representative is the class's first lowercase member (ASCII text folds as `str.lower()`).
  Line breaks and lone surrogates are kept as they are.
- `required_literals(pattern)` reads the pattern with Python's own parser and returns folded
  strings of at least 3 characters, every one of which occurs in the text of any match, or
  None when it cannot tell (a branch, a class, an optional part...): "all documents". Runs of
  literal characters are cut at line breaks (a text file's page joins lines with "\\n" where
  the file may have "\\r\\n"), at surrogates, and at anything that is not a literal.
"""

from __future__ import annotations

import _sre
import functools
import json
import re
import warnings
from re import _casefix, _parser
from re import _constants as sre

MIN_LITERAL = 3  # the index's grams are trigrams: shorter strings cannot be looked up
_CASED_BELOW = 0x20000  # no character at or above this has a case mapping (tests check all)
_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT) + ((sre.POSSESSIVE_REPEAT,) if hasattr(sre, "POSSESSIVE_REPEAT") else ())


def _single(text: str) -> str | None:
    return text if len(text) == 1 else None


@functools.cache
def fold_table() -> dict[int, int]:
    """Code point -> the representative of its case class, for characters it changes. Building
    it walks every cased code point (0.5 s): it is kept in the user's private cache directory
    under what it derives from, and read from there (1 ms) by every later process."""
    table = kept_table()
    if table is None:
        table = build_fold_table()
        _cache().store(_table_key(), json.dumps(sorted(table.items())).encode())
    return table


def kept_table() -> dict[int, int] | None:
    """The table from the user's cache, if it holds one made from what this one would be."""
    kept = _cache().load(_table_key())
    if kept is None:
        return None
    try:
        table = {int(cp): rep for cp, rep in json.loads(kept)}
    except (ValueError, TypeError):
        return None  # damaged: built again
    if not all(type(rep) is int and 0 <= cp < 0x110000 and 0 <= rep < 0x110000 for cp, rep in table.items()):
        return None
    return table


def _cache():
    from runtime.compile import UserParserCache

    return UserParserCache(kind="fold", suffix=".json")


@functools.cache
def _table_key() -> str:
    """What the table derives from: this module's code, the interpreter's Unicode data, `regex`."""
    import hashlib
    import sys
    import unicodedata

    import regex

    with open(__file__, "rb") as source:
        code = source.read()
    versions = f"{sys.version}|{unicodedata.unidata_version}|{getattr(regex, '__version__', '?')}|{complete_for_case()}"
    return hashlib.sha256(code + versions.encode()).hexdigest()[:24]


def build_fold_table() -> dict[int, int]:
    """fold_table() made from the case tables themselves."""
    parent: dict[str, str] = {}

    def find(c: str) -> str:
        while parent.get(c, c) != c:
            c = parent[c]
        return c

    def union(a: str, b: str) -> None:
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    for cp in range(_CASED_BELOW):
        c = chr(cp)
        if 0xD800 <= cp < 0xE000:
            continue
        for other in (chr(_sre.unicode_tolower(cp)), _single(c.lower()), _single(c.upper()), _single(c.casefold())):
            if other is not None and other != c:
                union(c, other)
    for cp, others in _casefix._EXTRA_CASES.items():
        for other in others:
            union(chr(cp), chr(other))
    for cp, others in engine_cases():
        for other in others:
            union(chr(cp), chr(other))
    classes: dict[str, list[str]] = {}
    for c in parent:
        classes.setdefault(find(c), []).append(c)
    table: dict[int, int] = {}
    for members in classes.values():
        rep = min(members, key=lambda ch: (not ch.islower(), ord(ch)))
        table.update({ord(m): ord(rep) for m in members if m != rep})
    return table


def engine_cases():
    """(code point, its case variants) as the `regex` module, the search's fallback engine
    (runtime/services/textsearch.py), equates them under IGNORECASE. Its Unicode tables can be
    newer than the interpreter's: `regex` 2026 pairs U+0264 with U+A7CB (Unicode 16), which
    Python 3.11's data does not know. Its `get_all_cases` is the one the module itself uses to
    compile a case-insensitive literal; a release without it leaves the index unused for
    case-insensitive searches (`complete_for_case()`), never one that misses a match."""
    all_cases = _engine_all_cases()
    if all_cases is None:
        return
    for cp in range(_CASED_BELOW):
        if not 0xD800 <= cp < 0xE000:
            cases = all_cases(cp)
            if len(cases) > 1:
                yield cp, [other for other in cases if other != cp]


@functools.cache
def _engine_all_cases():
    import regex

    get_all_cases = getattr(getattr(regex, "_regex", None), "get_all_cases", None)
    if get_all_cases is None:
        return None
    return functools.partial(get_all_cases, regex.IGNORECASE | regex.UNICODE)


def complete_for_case() -> bool:
    """Does the fold equate everything the search engines may (both engines' case tables known)?"""
    return _engine_all_cases() is not None


@functools.cache
def fold_digest() -> str:
    """What a stored index records of the fold it was built with: an index built under other
    case tables (another Python, another `regex`) folds some characters otherwise."""
    import hashlib

    return hashlib.sha256(repr(sorted(fold_table().items())).encode()).hexdigest()[:16]


def fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    return text.translate(fold_table())


def _breaks(c: str) -> bool:
    return c in _BREAKS or "\ud800" <= c <= "\udfff"


def _literal_of(op, av) -> str | None:
    """The one character this item matches (a literal, or a class of one literal)."""
    if op is sre.LITERAL:
        return chr(av)
    if op is sre.IN and len(av) == 1 and av[0][0] is sre.LITERAL:
        return chr(av[0][1])
    return None


def _collect(seq, out: list[str]) -> None:
    run: list[str] = []

    def flush() -> None:
        if run:
            out.append("".join(run))
            run.clear()

    for op, av in seq:
        ch = _literal_of(op, av)
        if ch is not None and not _breaks(ch):
            run.append(ch)
            continue
        flush()
        if op is sre.SUBPATTERN:
            _collect(av[-1], out)
        elif op in _REPEATS and av[0] >= 1:
            _collect(av[2], out)
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            _collect(av, out)
        # anything else (a branch, a class, `.`, an anchor, a lookaround, a backreference,
        # an optional repeat) requires no particular text
    flush()


@functools.lru_cache(maxsize=256)
def required_literals(source: str, ignore_case: bool = True) -> tuple[str, ...] | None:
    """Folded strings every match of `source` (Python syntax, MULTILINE) contains; None: no
    such string of MIN_LITERAL characters or more (every document is a candidate)."""
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = _parser.parse(source, flags)
        found: list[str] = []
        _collect(tree, found)
    except (re.error, RecursionError, ValueError, TypeError, OverflowError):
        return None
    pieces = tuple(sorted({fold(p) for p in found if len(p) >= MIN_LITERAL}, key=lambda p: (-len(p), p)))
    return pieces or None
