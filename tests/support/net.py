"""A loopback TCP listener for tests that prove a jailed process has no network."""

from __future__ import annotations

import contextlib
import socket
import threading


@contextlib.contextmanager
def loopback_listener(timeout: float = 4.0):
    """Yield (port, accepted): a listener on 127.0.0.1 accepting one connection in a thread
    for ``timeout`` seconds; ``accepted`` holds what arrived once the block has ended."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(timeout)
    accepted: list = []

    def accept():
        try:
            accepted.append(listener.accept())
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        yield listener.getsockname()[1], accepted
    finally:
        thread.join()
        listener.close()
        for connection, _address in accepted:
            connection.close()
