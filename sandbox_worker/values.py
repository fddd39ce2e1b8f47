"""Values as a script's language says them: the one type naming and the one rendering every
language's worker uses. A language gives its words (``Vocabulary``: "none" or "null", "list"
or "array", how a string is quoted) and the names and forms of its own objects (files,
records, class instances); the plain values (text, booleans, numbers, lists, objects) are
named and rendered here, for all of them alike.

Rendering is bounded: nesting deeper than ``MAX_RENDER_DEPTH`` shows as "...", and a value
whose text would pass ``MAX_RENDER_CHARS`` (a list that doubles itself 30 times is a billion
items) fails at once with the language's error, not after the worker has spent its time and
memory building it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

MAX_RENDER_DEPTH = 50
MAX_RENDER_CHARS = 8 << 20

class _TooLong(Exception):
    pass


@dataclass(frozen=True)
class Vocabulary:
    """A language's words for values, and its own objects' names and forms."""

    null: str  # the word for None
    words: dict  # a plain Python type (str, bool, int, float, list, dict) -> the language's name for it
    quote: Callable[[str], str]  # a string inside a list or an object
    error: Callable[[str], Exception]  # the language's error, for a value that cannot be shown
    own_name: Callable[[object], str | None] = field(default=lambda value: None)  # its objects' names
    own_form: Callable[[object], str | None] = field(default=lambda value: None)  # its objects as text
    key: Callable[[str], str] = field(default=lambda key: key)  # an object's key as written

    def type_name(self, value) -> str:
        """The language's name for a value's type, used in every error message."""
        if value is None:
            return self.null
        word = self.words.get(type(value))
        if word is not None:
            return word
        return self.own_name(value) or "value"

    def render(self, value, top: bool = True) -> str:
        """A value as the language writes it: strings bare at the top level, quoted inside."""
        if type(value) is str and top:
            return value
        budget = [MAX_RENDER_CHARS]
        try:
            return self._render(value, 0, budget)
        except _TooLong:
            raise self.error(f"this {self.type_name(value)} is too large to turn into text "
                             f"(more than {MAX_RENDER_CHARS} characters)") from None

    def _render(self, value, depth: int, budget: list) -> str:
        t = type(value)
        if t is list or t is dict:
            if depth >= MAX_RENDER_DEPTH:
                return _spent("...", budget)
            _spent("[]", budget)
            if t is list:
                items = [self._render(v, depth + 1, budget) for v in value]
            else:
                items = [_spent(f"{self.key(str(k))}: ", budget) + self._render(v, depth + 1, budget)
                         for k, v in value.items()]
            _spent(", " * max(0, len(items) - 1), budget)
            return ("[" if t is list else "{") + ", ".join(items) + ("]" if t is list else "}")
        if t is str:
            if len(value) > budget[0]:
                raise _TooLong
            return _spent(self.quote(value), budget)
        return _spent(self._scalar(value), budget)

    def _scalar(self, value) -> str:
        t = type(value)
        if value is None:
            return self.null
        if t is bool:
            return "true" if value else "false"
        if t is int:
            try:
                return str(value)
            except ValueError:  # Python's limit on the digits of an int turned into text
                raise self.error("a number of more than 4300 digits cannot be turned into text") from None
        if t is float:
            return str(value) if math.isnan(value) or math.isinf(value) else repr(value)
        form = self.own_form(value)
        return form if form is not None else f"<{self.type_name(value)}>"


def _spent(text: str, budget: list) -> str:
    budget[0] -= len(text)
    if budget[0] < 0:
        raise _TooLong
    return text
