"""The wire's framing: a 4-byte big-endian length, then that many bytes of UTF-8 JSON (JSON, not
pickle or marshal: decoding a hostile frame can only ever yield plain data). The messages these
frames carry are wire/protocol.py's; this module is apart so that `fdsl`'s client, which frames
its requests to the server, imports no more than it needs.
"""

from __future__ import annotations

import json
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


def encode(message: dict) -> bytes:
    payload = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return HEADER.pack(len(payload)) + payload


def decode(payload: bytes) -> dict:
    try:
        message = json.loads(payload.decode("utf-8"))
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
