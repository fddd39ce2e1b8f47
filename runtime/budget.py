"""The broker's reply budget: what one reply may cost, counted while the reply is built.

A valid script can ask for a reply far larger than anything it could print (the same page
10,000 times, a million snippets of a whole page each). Encoding such a reply before
measuring it once grew the broker past 20 GB. Handlers that build a reply from many pieces
charge each piece here as they append it, so the broker stops at the first piece over the
budget, never after encoding; the broker's last check on the encoded frame is a backstop.

Each piece is charged its exact size in the reply's JSON (UTF-8, `ensure_ascii=False`, as
`sandbox_worker.protocol.encode` writes it), plus one byte for its separator.
"""

from __future__ import annotations

import json

from runtime.errors import LimitError
from sandbox_worker.protocol import MAX_REPLY_VALUE_BYTES

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


class ReplyBudget:
    """One per broker; `start(op)` before each call, `charge(piece, what)` while building."""

    def __init__(self, limit: int = DEFAULT_MAX_REPLY_BYTES) -> None:
        if not MIN_MAX_REPLY_BYTES <= limit <= MAX_REPLY_VALUE_BYTES:
            raise ValueError(f"the reply budget must be from {mib(MIN_MAX_REPLY_BYTES)} to "
                             f"{mib(MAX_REPLY_VALUE_BYTES)} ({limit} bytes given)")
        self.limit = limit
        self.used = 0
        self.op = ""

    def start(self, op: str) -> None:
        self.op = op
        self.used = 0

    def charge(self, piece, what: str | None = None):
        """Count `piece` (returned unchanged) against the budget; LimitError once over it.
        `what` describes the request for the message ("read of 5,000 pages")."""
        self.used += json_size(piece) + 1
        if self.used > self.limit:
            raise self.exceeded(what)
        return piece

    def exceeded(self, what: str | None = None) -> LimitError:
        request = what or self.op or "this request"
        return LimitError(f"reply would exceed {mib(self.limit)} ({request}); narrow the request "
                          "(or raise --max-reply-bytes)")
