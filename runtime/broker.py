"""The broker: validates each request from the worker and serves it.

The worker is untrusted, so every message is checked against the protocol's op table before
anything is done: the op must be allowed for this run, the arguments must be exactly the
listed names with the listed types and within size limits. Anything else is denied.
"""

from __future__ import annotations

from typing import Callable

from runtime.budget import DEFAULT_MAX_REPLY_BYTES, check_limit, exceeded, mib
from runtime.errors import DeadlineExceeded, ScriptError
from wire import protocol

MAX_STRING_CHARS = 64 * 1024
MAX_LIST_ITEMS = 10_000


class RequestDenied(Exception):
    """A request that no correct worker sends: unknown op, wrong arguments, oversized values."""


def check_argument(op: str, name: str, kind: str, value) -> None:
    def deny(expected: str):
        raise RequestDenied(f"{op}: argument '{name}' must be {expected}")

    if kind in (protocol.STR, protocol.OPT_STR):
        if value is None and kind == protocol.OPT_STR:
            return
        if type(value) is not str:
            deny("a string")
        if len(value) > MAX_STRING_CHARS:
            deny(f"at most {MAX_STRING_CHARS} characters")
    elif kind == protocol.OBJECT:
        if type(value) is not dict:
            deny("an object")
    elif kind == protocol.OBJECTS:
        if type(value) is not list or any(type(item) is not dict for item in value):
            deny("a list of objects")
        if len(value) > MAX_LIST_ITEMS:
            deny(f"at most {MAX_LIST_ITEMS} items")
    elif kind == protocol.INT:
        if type(value) is not int:
            deny("an integer")
    elif kind == protocol.BOOL:
        if type(value) is not bool:
            deny("a boolean")
    elif kind == protocol.PAGES:
        if value is None or type(value) is int:
            return
        if type(value) is not list or any(type(item) is not int for item in value):
            deny("null, an integer or a list of integers")
        if len(value) > MAX_LIST_ITEMS:
            deny(f"at most {MAX_LIST_ITEMS} pages")
    else:
        raise RequestDenied(f"{op}: argument '{name}' has an unknown kind")


def validate_call(message: dict, allowed_ops: frozenset[str]) -> tuple[str, dict]:
    """Deny a call unless its op is allowed here and its arguments match the op table exactly."""
    op = message.get("op")
    args = message.get("a")
    if type(op) is not str or op not in protocol.OPS:
        raise RequestDenied(f"unknown op {str(op)[:80]!r}")
    if op not in allowed_ops:
        raise RequestDenied(f"op {op!r} is not allowed in this run")
    if type(args) is not dict:
        raise RequestDenied(f"{op}: arguments must be an object")
    spec = protocol.OPS[op]
    if set(args) != set(spec):
        missing = sorted(set(spec) - set(args))
        extra = sorted(set(args) - set(spec))
        raise RequestDenied(f"{op}: wrong arguments (missing {missing}, unexpected {[str(e)[:40] for e in extra]})")
    for name, kind in spec.items():
        check_argument(op, name, kind, args[name])
    return op, args


class Handlers(dict):
    """A run's handler table (op -> callable), with the run's two hooks: ``close()`` once the
    worker is gone (free what the handlers hold) and ``finish(result)`` with the run's result
    (PromptScript writes the end of its run log there)."""

    def __init__(self, table: dict, *, close: Callable[[], None] | None = None,
                 finish: Callable[[object], None] | None = None) -> None:
        super().__init__(table)
        self.close = close or (lambda: None)
        self.finish = finish or (lambda result: None)


class Broker:
    """Turns validated calls into handler calls and handler results or errors into replies.

    `max_reply_bytes` is the run's reply budget: handlers that build large replies charge it
    piece by piece (runtime/budget.py); the broker checks it once more on the encoded frame."""

    def __init__(self, handlers: dict[str, Callable[..., object]], max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES) -> None:
        self.handlers = handlers
        self.allowed_ops = frozenset(handlers)
        self.max_reply_bytes = check_limit(max_reply_bytes)
        self.op = ""
        self.requests = 0
        self.deadline_replies = 0  # replies saying the run's deadline passed (DeadlineExceeded)

    def reply(self, message: dict) -> dict:
        self.requests += 1
        try:
            op, args = validate_call(message, self.allowed_ops)
        except RequestDenied as exc:
            return {"t": "err", "kind": "SandboxError", "msg": f"request denied: {exc}"}
        self.op = op
        try:
            return {"t": "ok", "v": self.handlers[op](**args)}
        except ScriptError as exc:
            if isinstance(exc, DeadlineExceeded):
                self.deadline_replies += 1
            return {"t": "err", "kind": exc.kind, "msg": str(exc)}
        except MemoryError:
            return {"t": "err", "kind": "LimitError",
                    "msg": f"{op}: the broker ran out of memory serving this request; narrow it"}
        except Exception as exc:  # noqa: BLE001 - a bug or an OS error; its text may hold a host path
            return {"t": "err", "kind": "InternalError", "msg": f"{op} failed ({type(exc).__name__})"}

    def reply_frame(self, message: dict) -> bytes:
        """The encoded reply to a call."""
        return self.encode_reply(self.reply(message))

    def encode_reply(self, reply: dict) -> bytes:
        """A reply as a frame. A reply over the budget that no handler charged (a bug, never a
        script's doing) is replaced by the budget's error, so the worker never gets a frame
        over its limit."""
        frame = protocol.encode(reply)
        if len(frame) - protocol.HEADER.size > self.max_reply_bytes + protocol.REPLY_ENVELOPE_BYTES:
            message = str(exceeded(self.max_reply_bytes, f"{self.op}, {mib(len(frame))}"))
            frame = protocol.encode({"t": "err", "kind": "LimitError", "msg": message})
        return frame
