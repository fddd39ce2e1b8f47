"""The worker's end of the pipe: every operation is a request to the broker."""

from __future__ import annotations

import fcntl
import sys

from wire import frames

OUTPUT_CHUNK_CHARS = frames.MAX_REQUEST_BYTES // 8
FIONREAD = 0x541B


def bytes_waiting(fd: int) -> int:
    """How many bytes the pipe `fd` holds unread (an ioctl the seccomp layer allows)."""
    return int.from_bytes(fcntl.ioctl(fd, FIONREAD, bytes(4)), sys.byteorder)


class ScriptFailure(Exception):
    """An error to report to the script's author, with the protocol error kind it travels as."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class TimeUp(BaseException):
    """The run's deadline passed (the supervisor's SIGUSR1): the script stops where it is.
    BaseException, so no handler of a script's block (retry, timeout) stops it."""


class BrokerClient:
    """Synchronous request/reply over two inherited pipe descriptors.

    `on_time_up` is the SIGUSR1 handler the supervisor's deadline sends: it records where the
    script was (`stopped_at`, `locate(frame)` of the signal's frame, taken at once: the frame
    moves on as the exception unwinds) and stops it there, except in the middle of writing a
    frame, which is finished first (the interrupted frame would break the pipe)."""

    def __init__(self, read_fd: int, write_fd: int, locate=lambda frame: (None, None)) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.locate = locate
        self.writing = False
        self.time_up = False
        self.stopped_at: tuple[int | None, int | None] = (None, None)

    def on_time_up(self, signum, frame) -> None:
        if self.time_up:
            return
        self.time_up, self.stopped_at = True, self.locate(frame)
        if not self.writing:
            raise TimeUp()

    def _write(self, frame: bytes) -> None:
        if self.time_up:
            raise TimeUp()
        self.writing = True
        try:
            frames.write_all(self.write_fd, frame)
        finally:
            self.writing = False
        if self.time_up:
            raise TimeUp()

    def receive(self) -> dict:
        return frames.read_frame(self.read_fd, frames.MAX_REPLY_BYTES)

    def waiting(self) -> bool:
        """Has the broker's next frame come, or begun to? (receive() reads frames whole, so a
        byte waiting is the start of the next one.)"""
        try:
            return bytes_waiting(self.read_fd) > 0
        except OSError:
            return False

    def call(self, op: str, **args):
        frame = frames.encode({"t": "call", "op": op, "a": args})
        size = len(frame) - frames.HEADER.size
        if size > frames.MAX_REQUEST_BYTES:  # said to the script, at its line, before the broker sees it
            raise ScriptFailure("LimitError", f"this call sends {size:,} bytes to the broker, over the limit of "
                                              f"{frames.MAX_REQUEST_BYTES:,} bytes for one request; send less at a time")
        self._write(frame)
        reply = self.receive()
        if reply.get("t") == "ok":
            return reply.get("v")
        if reply.get("t") == "err":
            raise ScriptFailure(str(reply.get("kind", "RuntimeError")), str(reply.get("msg", "")))
        raise ScriptFailure("InternalError", f"unexpected reply from the broker: {reply.get('t')!r}")

    def output(self, text: str) -> None:
        # In pieces that fit a request frame (4 UTF-8 bytes per character at most), so a
        # huge print meets the broker's output cap instead of its frame limit.
        step = OUTPUT_CHUNK_CHARS
        for start in range(0, max(len(text), 1), step):
            self._write(frames.encode({"t": "out", "s": text[start:start + step]}))

    def end(self, error: dict | None = None) -> None:
        message = {"t": "end", "ok": error is None}
        if error is not None:
            message["error"] = error
        self.writing = True  # from here on, a late SIGUSR1 changes nothing
        frames.write_frame(self.write_fd, message)
