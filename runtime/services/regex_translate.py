"""Python `re` patterns for RE2: the same matches, or the name of what RE2 cannot do.

A pattern is parsed by Python's own parser (`re._parser`, so its syntax and its errors are
exactly Python's) and written back in two dialects with Python's semantics made explicit:

- `re2`: RE2 syntax, or None with `reason` naming the construct RE2 lacks (lookaround,
  backreferences, conditionals, atomic groups, possessive repeats, `$` without MULTILINE,
  repeat counts over 1000, a repeat of something that can match the empty string, which
  Python and RE2 end differently). RE2 runs in time linear in the text. RE2 reads UTF-8, which has
  no surrogates: its sets leave them out (a text holding one goes to the fallback).
- `python`: the same pattern for the `regex` module (the deadline-guarded fallback), with the
  same explicit classes, so both engines agree wherever both can run.

What is made explicit:
- `\\d \\w \\s` (and their negations, also inside classes) are Python's Unicode classes, taken
  from the running Python's own `re` (RE2's are ASCII); with the ASCII flag they are ASCII.
- `\\Z` is RE2's `\\z`; `^`/`$` carry their MULTILINE state; `.` is `[^\\n]` unless DOTALL.
- IGNORECASE is Unicode simple case folding (RE2's `(?i)`, which agrees with Python's on
  every character but one group): Python also equates i and I with U+0130 and U+0131, so
  those four are spelled out. With the ASCII flag, only ASCII letters fold, as in Python.
- `\\b`/`\\B`: RE2's are ASCII, which is exact on a text without non-ASCII word characters;
  `unicode_boundary` tells the caller to use the fallback otherwise (`non_boundary` too on an
  empty text, where Python's `\\B` never matches).
- A one-character lookahead before a one-character class is the class difference or
  intersection (`(?!/)[^x]` is `[^x/]`), so globs and such patterns stay on RE2.

`positions` counts the character positions RE2 compiles (repeats unrolled as RE2 does): its
worst-case work per byte of text is proportional to it.
"""

from __future__ import annotations

import array
import functools
import re
import re._constants as C
import re._parser as P
from dataclasses import dataclass

MAX_CHAR = 0x10FFFF
MAX_TRANSLATED_CHARS = 1_000_000
RE2_MAX_REPEAT = 1000
_I_GROUP = ((0x49, 0x49), (0x69, 0x69), (0x130, 0x131))  # I, i, U+0130 and U+0131: one fold under Python
_NOT_SURROGATES = ((0, 0xD7FF), (0xE000, MAX_CHAR))
_SAFE_ASCII = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class Unsupported(ValueError):
    """The pattern needs a construct this dialect cannot express (the message names it)."""


class TooLarge(Exception):
    """The translation would exceed MAX_TRANSLATED_CHARS."""


@dataclass(frozen=True)
class Translation:
    re2: str | None
    python: str
    reason: str | None  # why `re2` is None
    unicode_boundary: bool
    non_boundary: bool
    positions: int


def parse(source: str, flags: int):
    """Python's parse tree of `source` (raises re.error with Python's message)."""
    return P.parse(source, flags)


def translate(source: str, flags: int) -> Translation:
    tree = parse(source, flags)
    names = {index: name for name, index in tree.state.groupdict.items()}
    python = _Emitter("python", names)
    python_text = python.emit(tree, tree.state.flags)
    try:
        re2_emitter = _Emitter("re2", names)
        re2_text, reason = re2_emitter.emit(tree, tree.state.flags), None
    except Unsupported as exc:
        re2_emitter, re2_text, reason = python, None, str(exc)
    return Translation(re2_text, python_text, reason, re2_emitter.unicode_boundary, re2_emitter.non_boundary,
                       re2_emitter.positions)


# ------------------------------------------------------------------------- sets of characters
# A set is a sorted tuple of disjoint, non-adjacent (lo, hi) ranges of code points.


def _normalize(ranges) -> tuple:
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def _complement(ranges) -> tuple:
    out, nxt = [], 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CHAR:
        out.append((nxt, MAX_CHAR))
    return tuple(out)


def _intersect(a, b) -> tuple:
    return _complement(_normalize(_complement(a) + _complement(b)))


def _overlaps(a, b) -> bool:
    return bool(_intersect(a, b))


@functools.cache
def _all_characters() -> str:
    return array.array("I", range(MAX_CHAR + 1)).tobytes().decode("utf-32-le", "surrogatepass")


_NEGATED = {C.CATEGORY_NOT_DIGIT: C.CATEGORY_DIGIT, C.CATEGORY_NOT_SPACE: C.CATEGORY_SPACE,
            C.CATEGORY_NOT_WORD: C.CATEGORY_WORD}
_ASCII_CATEGORIES = {
    C.CATEGORY_DIGIT: ((0x30, 0x39),),
    C.CATEGORY_SPACE: ((0x09, 0x0D), (0x20, 0x20)),
    C.CATEGORY_WORD: ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
}


@functools.cache
def _unicode_category(code) -> tuple:
    """Python's own Unicode set for CATEGORY_DIGIT, _SPACE or _WORD, read off its `re`."""
    letter = {C.CATEGORY_DIGIT: "d", C.CATEGORY_SPACE: "s", C.CATEGORY_WORD: "w"}[code]
    return _normalize((m.start(), m.end() - 1) for m in re.finditer(f"\\{letter}+", _all_characters()))


def _category_set(code, ascii_only: bool) -> tuple:
    base = _NEGATED.get(code, code)
    ranges = _ASCII_CATEGORIES[base] if ascii_only else _unicode_category(base)
    return _complement(ranges) if code in _NEGATED else ranges


def non_ascii_word_set() -> tuple:
    """Python's word characters outside ASCII: where RE2's `\\b` and Python's part ways."""
    return _intersect(_unicode_category(C.CATEGORY_WORD), ((0x80, MAX_CHAR),))


def _ascii_case_closure(ranges) -> tuple:
    extra = []
    for lo, hi in _intersect(ranges, ((0x41, 0x5A), (0x61, 0x7A))):
        for c in range(lo, hi + 1):
            extra.append((c ^ 0x20, c ^ 0x20))
    return _normalize(ranges + tuple(extra))


# ------------------------------------------------------------------------- the emitter


class _Emitter:
    def __init__(self, dialect: str, names: dict[int, str]) -> None:
        self.dialect = dialect
        self.names = names
        self.size = 0
        self.positions = 0
        self.unicode_boundary = False
        self.non_boundary = False

    def _out(self, text: str) -> str:
        """Every character class and literal passes here (wrappers add a bounded amount)."""
        self.size += len(text)
        if self.size > MAX_TRANSLATED_CHARS:
            raise TooLarge()
        return text

    def _unsupported(self, what: str) -> None:
        if self.dialect == "re2":
            raise Unsupported(what)

    # -- characters and classes

    def _char(self, c: int) -> str:
        ch = chr(c)
        if ch in _SAFE_ASCII:
            return ch
        if self.dialect == "re2":
            return f"\\x{{{c:x}}}"
        return f"\\U{c:08x}"

    def _class(self, ranges: tuple, negate: bool = False) -> str:
        if self.dialect == "re2":
            ranges = _intersect(ranges, _NOT_SURROGATES)
        if negate:
            if not ranges:
                return self._out("(?s:.)")
            return self._out("[^" + self._ranges(ranges) + "]")
        if not ranges:
            return self._out("[^\\x{0}-\\x{10ffff}]" if self.dialect == "re2" else "(?!)")
        if ranges in (((0, MAX_CHAR),), _NOT_SURROGATES):
            return self._out("(?s:.)")
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            return self._out(self._char(ranges[0][0]))
        return self._out("[" + self._ranges(ranges) + "]")

    def _ranges(self, ranges: tuple) -> str:
        return "".join(self._char(lo) if lo == hi else f"{self._char(lo)}-{self._char(hi)}" for lo, hi in ranges)

    def _one_char_set(self, op, av, flags) -> tuple[tuple, bool, bool] | None:
        """(items, negated, folds case) of a node that matches one character; None for others.
        Case folds before negation, as in Python: `(?i)[^a]` matches neither a nor A."""
        ascii_only = bool(flags & C.SRE_FLAG_ASCII)
        fold = bool(flags & C.SRE_FLAG_IGNORECASE)
        if op is C.ANY:
            return ((10, 10),), not flags & C.SRE_FLAG_DOTALL, False
        if op in (C.LITERAL, C.NOT_LITERAL):
            items, negate = ((av, av),), op is C.NOT_LITERAL
        elif op is C.IN:
            negate = bool(av) and av[0][0] is C.NEGATE
            items = []
            for item_op, item_av in av[1:] if negate else av:
                if item_op is C.LITERAL:
                    items.append((item_av, item_av))
                elif item_op is C.RANGE:
                    items.append(item_av)
                elif item_op is C.CATEGORY:
                    items.extend(_category_set(item_av, ascii_only))
                else:
                    raise Unsupported(f"the class item {item_op}")
            items = _normalize(items)
        else:
            return None
        if fold and ascii_only:
            items, fold = _ascii_case_closure(items), False
        elif fold and _overlaps(items, _I_GROUP):
            items = _normalize(items + _I_GROUP)
        return items, negate, fold

    def _set(self, op, av, flags) -> str:
        items, negate, fold = self._one_char_set(op, av, flags)
        self.positions += 1
        if op is C.ANY and not negate:
            return "(?s:.)"
        if self.dialect == "python" and negate:
            # The regex module unites alternatives of negated sets wrongly ([^x]|[^a] misses
            # "x"): it gets no negated set. Case folds before the negation, as in Python.
            if fold:
                return f"(?:(?!(?i:{self._class(items)}))(?s:.))"
            items, negate = _complement(items), False
        text = self._class(items, negate)
        return f"(?i:{text})" if fold else text

    # -- structure

    def emit(self, pattern, flags: int) -> str:
        items = list(pattern)
        out = []
        i = 0
        while i < len(items):
            op, av = items[i]
            if op in (C.ASSERT, C.ASSERT_NOT) and av[0] == 1 and i + 1 < len(items):
                merged = self._lookahead_before_char(op, av[1], items[i + 1], flags)
                if merged is not None:
                    out.append(merged)
                    i += 2
                    continue
            out.append(self._node(op, av, flags))
            i += 1
        return "".join(out)

    def _lookahead_before_char(self, op, sub, following, flags) -> str | None:
        """`(?=A)B` / `(?!A)B` with A and B one character each, case-sensitive: B∩A / B−A."""
        if flags & C.SRE_FLAG_IGNORECASE or len(sub) != 1:
            return None
        a = self._one_char_set(*sub[0], flags)
        b = self._one_char_set(*following, flags)
        if a is None or b is None:
            return None
        a_set = _complement(a[0]) if a[1] else a[0]
        b_set = _complement(b[0]) if b[1] else b[0]
        self.positions += 1
        return self._class(_intersect(b_set, a_set if op is C.ASSERT else _complement(a_set)))

    @staticmethod
    def _group(text: str) -> str:
        return f"(?:{text})"

    def _node(self, op, av, flags) -> str:
        if op in (C.LITERAL, C.NOT_LITERAL, C.ANY, C.IN):
            return self._set(op, av, flags)
        if op is C.BRANCH:
            return self._group("|".join(self.emit(alt, flags) for alt in av[1]))
        if op is C.SUBPATTERN:
            group, add, remove, sub = av
            inner = self.emit(sub, (flags | add) & ~remove)
            if group is None:
                return self._group(inner)
            name = self.names.get(group)
            return f"(?P<{name}>{inner})" if name else f"({inner})"
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            return self._repeat(op, av, flags)
        if op is C.AT:
            return self._at(av, flags)
        if op in (C.ASSERT, C.ASSERT_NOT):
            ahead = av[0] == 1
            if not ahead and av[1].getwidth()[0] != av[1].getwidth()[1]:  # as Python's compiler says
                raise re.error("look-behind requires fixed-width pattern")
            sign = "=" if op is C.ASSERT else "!"
            self._unsupported(f"{'lookahead' if ahead else 'lookbehind'} (?{'' if ahead else '<'}{sign}...)")
            return f"(?{'' if ahead else '<'}{sign}{self.emit(av[1], flags)})"
        if op is C.GROUPREF:
            self._unsupported("a backreference")
            ref = f"\\g<{av}>"
            return f"(?i:{ref})" if flags & C.SRE_FLAG_IGNORECASE else f"(?:{ref})"
        if op is C.GROUPREF_EXISTS:
            self._unsupported("a conditional group (?(...)...)")
            group, yes, no = av
            return f"(?({group}){self.emit(yes, flags)}|{self.emit(no, flags) if no else ''})"
        if op is C.ATOMIC_GROUP:
            self._unsupported("an atomic group (?>...)")
            return f"(?>{self.emit(av, flags)})"
        raise Unsupported(f"the construct {op}")

    def _repeat(self, op, av, flags) -> str:
        lo, hi, sub = av
        if op is C.POSSESSIVE_REPEAT:
            self._unsupported("a possessive repeat (*+, ++, ?+, {m,n}+)")
        bounded = hi is not C.MAXREPEAT
        if (not bounded or hi > 1) and sub.getwidth()[0] == 0:
            # Python ends a loop at an iteration that matched nothing; RE2 may go on with a
            # later alternative ((?:\B|x)* on "11" is (0,1) in Python, (0,2) in RE2).
            self._unsupported("a repeat of something that can match the empty string")
        if self.dialect == "re2" and (lo > RE2_MAX_REPEAT or (bounded and hi > RE2_MAX_REPEAT)):
            raise Unsupported(f"a repeat count over {RE2_MAX_REPEAT}")
        before = self.positions
        inner = self.emit(sub, flags)
        copies = hi if bounded else max(lo, 1)
        self.positions = before + (self.positions - before) * copies
        count = f"{{{lo},{hi}}}" if bounded else f"{{{lo},}}"
        suffix = "?" if op is C.MIN_REPEAT else "+" if op is C.POSSESSIVE_REPEAT else ""
        return f"(?:{inner}){count}{suffix}"

    def _at(self, code, flags) -> str:
        multiline = bool(flags & C.SRE_FLAG_MULTILINE)
        if code is C.AT_BEGINNING:
            return "(?m:^)" if multiline else "\\A"
        if code is C.AT_BEGINNING_STRING:
            return "\\A"
        if code is C.AT_END:
            if multiline:
                return "(?m:$)"
            self._unsupported("$ without MULTILINE (it also matches before a final newline)")
            return "(?-m:$)"
        if code is C.AT_END_STRING:
            return "\\z" if self.dialect == "re2" else "\\Z"
        if code in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
            boundary = code is C.AT_BOUNDARY
            ascii_only = bool(flags & C.SRE_FLAG_ASCII)
            if self.dialect == "re2":  # ASCII, exact unless the caller says otherwise (see module doc)
                self.unicode_boundary |= not ascii_only
                self.non_boundary |= not boundary
                return "\\b" if boundary else "\\B"
            w = self._class(_category_set(C.CATEGORY_WORD, ascii_only))
            if boundary:
                return self._out(f"(?:(?<={w})(?!{w})|(?<!{w})(?={w}))")
            # Python's \B never matches in an empty text.
            return self._out(f"(?:(?<={w})(?={w})|(?<!{w})(?!{w})(?:(?<=(?s:.))|(?=(?s:.))))")
        raise Unsupported(f"the position {code}")
