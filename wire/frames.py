"""The wire's framing: a 4-byte big-endian length, then that many bytes of UTF-8 JSON (JSON, not
pickle or marshal: decoding a hostile frame can only ever yield plain data). The messages these
frames carry are wire/protocol.py's; this module is apart so that `fdsl`'s client, which frames
its requests to the server, imports no more than it needs.
"""

from __future__ import annotations

import _json  # json's C codec itself, what json.dumps and json.loads run (see below)
import os
from _struct import Struct  # not `struct`: its wrapper module costs the client start-up time

HEADER = Struct(">I")

# Worker requests are small; replies may carry a whole document. A reply's value is bounded by
# the broker's reply budget (runtime/budget.py), which cannot be set above MAX_REPLY_VALUE_BYTES;
# the envelope around it is small. So a reply the broker sends always fits the worker's limit.
MAX_REQUEST_BYTES = 1 << 20
MAX_REPLY_VALUE_BYTES = 64 << 20
REPLY_ENVELOPE_BYTES = 64 << 10
MAX_REPLY_BYTES = MAX_REPLY_VALUE_BYTES + REPLY_ENVELOPE_BYTES


class ProtocolError(Exception):
    """A frame or message that does not follow this protocol."""


# JSON through _json, json's C accelerator, called as json.dumps(ensure_ascii=False,
# separators=(",", ":")) and json.loads (default settings) call it, to the same output and the
# same refusals (tests/wire/test_frames.py compares them): the json package's Python layer costs
# every `fdsl run` 2-3 ms of imports, and each frame 1-2 us of settings.
_JSON_WHITESPACE = " \t\n\r"


def _not_serializable(value):
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


class _LoadsSettings:
    """What _json's scanner reads from a json.JSONDecoder: json.loads's defaults."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int

    def __init__(self) -> None:
        self.parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


_scan = _json.make_scanner(_LoadsSettings())


def dumps(value) -> str:
    # a new encoder each time: its circular-reference marks are left behind by a failed call
    return "".join(_json.make_encoder({}, _not_serializable, _json.encode_basestring, None, ":", ",",
                                      False, False, True)(value, 0))


def loads(text: str):
    """json.loads(text): ValueError (json's JSONDecodeError) for what is not one JSON value."""
    start = len(text) - len(text.lstrip(_JSON_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        raise ValueError("Expecting value") from None
    except SystemError:  # _json raises its errors as json.decoder's, and fails so where that is not loaded
        raise ValueError("not JSON") from None
    if text[end:].strip(_JSON_WHITESPACE):
        raise ValueError("Extra data")
    return value


def encode(message: dict, errors: str = "surrogatepass") -> bytes:
    """The frame of `message`; `errors="strict"`: UnicodeEncodeError for a lone surrogate (what
    decode() refuses), as a client checks what it is about to send."""
    payload = dumps(message).encode("utf-8", errors)
    return HEADER.pack(len(payload)) + payload


def decode(payload: bytes) -> dict:
    try:
        message = loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"undecodable frame: {type(exc).__name__}") from None
    if not isinstance(message, dict) or not isinstance(message.get("t"), str):
        raise ProtocolError("a message must be an object with a string field 't'")
    return message


def write_frame(fd: int, message: dict) -> None:
    write_all(fd, encode(message))


def write_all(fd: int, frame: bytes) -> None:
    data = memoryview(frame)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def read_exact(fd: int, size: int) -> bytes:
    """Read exactly size bytes; EOFError if the other side closed first."""
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError("pipe closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, limit: int) -> dict:
    (size,) = HEADER.unpack(read_exact(fd, HEADER.size))
    if size > limit:
        raise ProtocolError(f"frame of {size} bytes exceeds the limit of {limit}")
    return decode(read_exact(fd, size))


class FrameBuffer:
    """Incremental frame parser for a non-blocking reader (the broker's poll loop)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[dict]:
        self.buffer += data
        messages = []
        while len(self.buffer) >= HEADER.size:
            (size,) = HEADER.unpack_from(self.buffer)
            if size > self.limit:
                raise ProtocolError(f"frame of {size} bytes exceeds the limit of {self.limit}")
            end = HEADER.size + size
            if len(self.buffer) < end:
                break
            messages.append(decode(bytes(self.buffer[HEADER.size:end])))
            del self.buffer[:end]
        return messages
