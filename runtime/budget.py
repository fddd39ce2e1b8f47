"""The broker's reply budget: what one reply may cost, counted while the reply is built.

A valid script can ask for a reply far larger than anything it could print (the same page
10,000 times, a million snippets of a whole page each). Encoding such a reply before
measuring it once grew the broker past 20 GB. Handlers that build a reply from many pieces
charge each piece here as they append it, so the broker stops at the first piece over the
budget, never after encoding; the broker's last check on the encoded frame is a backstop.

Each piece is charged its exact size in the reply's JSON (UTF-8, `ensure_ascii=False`, as
`wire.protocol.encode` writes it), plus one byte for its separator.
"""

from __future__ import annotations

import json

from runtime.errors import LimitError
from wire.protocol import MAX_REPLY_VALUE_BYTES

DEFAULT_MAX_REPLY_BYTES = 16 << 20
MIN_MAX_REPLY_BYTES = 4 << 10

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def mib(size: int) -> str:
    """A byte count as people read it: '16 MiB', '1.5 MiB', '4 KiB', '300 bytes'."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            value = size / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) or value >= 100 else f"{value:.1f} {unit}"
    return f"{size} bytes"


def json_size(value) -> int:
    """Bytes `value` takes in a reply frame."""
    return len(_encode(value).encode("utf-8", "surrogatepass"))


def check_limit(limit: int) -> int:
    """A reply budget's size, refused outside what the worker's frame limit allows."""
    if not MIN_MAX_REPLY_BYTES <= limit <= MAX_REPLY_VALUE_BYTES:
        raise ValueError(f"the reply budget must be from {mib(MIN_MAX_REPLY_BYTES)} to "
                         f"{mib(MAX_REPLY_VALUE_BYTES)} ({limit} bytes given)")
    return limit


class ReplyBudget:
    """The budget of one reply being built: `charge(piece)` as each piece is added.
    `what` describes the request in the error ("read of 5,000 pages of a.txt")."""

    __slots__ = ("limit", "what", "used")

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        self.used = 0

    def charge(self, piece):
        """Count `piece` (returned unchanged) against the budget; LimitError once over it."""
        self.used += json_size(piece) + 1
        if self.used > self.limit:
            raise exceeded(self.limit, self.what)
        return piece

    def fits(self, piece) -> bool:
        """Charge `piece` if it fits in what is left; False (nothing charged) if it does not."""
        size = json_size(piece) + 1
        if self.used + size > self.limit:
            return False
        self.used += size
        return True


def exceeded(limit: int, what: str) -> LimitError:
    return LimitError(f"reply would exceed {mib(limit)} ({what}); narrow the request (or raise --max-reply-bytes)")
