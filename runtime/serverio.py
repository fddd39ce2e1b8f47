"""The frames the per-user server, its runners and its clients exchange over Unix sockets: a
request with the descriptors passed along (SCM_RIGHTS), and the small frames that come back
(a client's signal, a runner's "done"). runtime/server.py and runtime/runner.py read and write
them; the client's side is runtime/serverctl.py (standard library only).
"""

from __future__ import annotations

import os
import socket
import struct

from wire import protocol

MAX_FDS = 4  # stdin, stdout, stderr and the controlling terminal
MAX_REQUEST_BYTES = 1 << 20


def peer_credentials(conn: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end (pid 0: not in this pid namespace)."""
    pid_uid_gid = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", pid_uid_gid)


def receive_request(conn: socket.socket) -> tuple[dict, list[int]]:
    """The request frame and the descriptors passed with it (SCM_RIGHTS). A request that cannot
    be read closes the descriptors it brought: none stays open in the server."""
    data, fds, flags, _addr = socket.recv_fds(conn, MAX_REQUEST_BYTES, MAX_FDS)
    try:
        if flags & socket.MSG_CTRUNC:
            raise protocol.ProtocolError(f"more than {MAX_FDS} descriptors were passed")
        buffer = protocol.FrameBuffer(MAX_REQUEST_BYTES)
        messages = buffer.feed(data)
        while not messages:
            more = conn.recv(MAX_REQUEST_BYTES)
            if not more:
                raise EOFError("the client closed the connection")
            messages = buffer.feed(more)
        return messages[0], fds
    except BaseException:
        close_all(fds)
        raise


class RequestReader:
    """A client's request arriving on a non-blocking connection, in as many reads as it takes
    (the server's loop reads whichever connection is ready: a slow client holds up no other).
    The descriptors it brought are ``fds``; ``close()`` closes them."""

    def __init__(self, peer: int, deadline: float) -> None:
        self.peer, self.deadline = peer, deadline
        self.buffer = protocol.FrameBuffer(MAX_REQUEST_BYTES)
        self.fds: list[int] = []

    def read(self, conn: socket.socket) -> dict | None:
        """The request once whole, else None; EOFError, OSError or ProtocolError: it never will be."""
        try:
            data, fds, flags, _addr = socket.recv_fds(conn, MAX_REQUEST_BYTES, MAX_FDS)
        except BlockingIOError:
            return None
        self.fds += fds
        if flags & socket.MSG_CTRUNC or len(self.fds) > MAX_FDS:
            raise protocol.ProtocolError(f"more than {MAX_FDS} descriptors were passed")
        if not data:
            raise EOFError("the client closed the connection")
        messages = self.buffer.feed(data)
        return messages[0] if messages else None

    def close(self) -> None:
        close_all(self.fds)
        self.fds = []


def close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def received(conn: socket.socket) -> list[dict] | None:
    """The small frames a readable socket holds (a client's signal, a runner's "done"): None at
    EOF, [] when what came is not a frame."""
    try:
        data = conn.recv(4096)
    except OSError:
        return None
    if not data:
        return None
    try:
        return protocol.FrameBuffer(4096).feed(data)
    except protocol.ProtocolError:
        return []


def send(conn: socket.socket, message: dict) -> None:
    try:
        conn.sendall(protocol.encode(message))
    except OSError:
        pass
