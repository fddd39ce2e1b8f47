"""The per-user server's place and life cycle, for its clients: the directory (private to this
user), the origin a server must match, connecting (starting it first if need be), and
`fdsl server start|stop|status`. runtime/client.py runs commands through it; runtime/server.py
is the server. Standard library and the wire's framing only: the client imports this.
"""

from __future__ import annotations

import _socket  # not `socket`: its enums cost the client a tenth of an interpreter's start
import _struct
import os
import stat
import sys
import time

from wire import frames

START_TIMEOUT_S = 20.0


class ServerUnavailable(Exception):
    pass


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the project's import root


def server_dir() -> str:
    """This user's private server directory, made if missing; refused unless it is a real
    directory owned by this user and closed to everyone else."""
    base = os.environ.get("FDSL_SERVER_DIR")
    if base:
        path = base
    elif os.environ.get("XDG_RUNTIME_DIR"):
        path = os.path.join(os.environ["XDG_RUNTIME_DIR"], "fdsl")
    else:
        path = f"/tmp/fdsl-{os.getuid()}"
    try:
        if not os.path.lexists(path):
            os.mkdir(path, 0o700)
        st = os.lstat(path)
    except OSError as exc:
        raise ServerUnavailable(f"cannot make the server directory {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise ServerUnavailable(f"{path} is not a directory of this user's closed to others (mode 0700)")
    return path


def origin() -> str:
    """What a server must have been started from to serve this client: this environment (its
    prefix: a venv's `python` and `python3` are one, another venv is not), this Python and this
    checkout of the project. Whether the project's files changed since the server started, the
    server itself watches (runtime/staleness.py)."""
    return f"{sys.prefix}|{sys.version_info[:3]}|{ROOT}"


def connect(directory: str, build: str, start: bool = True) -> _socket.socket:
    """A connection to the server, started (or restarted) if need be."""
    try:
        return _dial(directory)  # the common case, without the lock
    except OSError:
        if not start:
            raise ServerUnavailable("no server is running") from None
    import fcntl

    with open(os.path.join(directory, "start.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one client starts the server, the others wait for it
        try:
            return _dial(directory)  # another client started it meanwhile
        except OSError:
            pass
        server = _start(directory, build)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                return _dial(directory)
            except OSError:
                if server.poll() is not None:  # it died starting: no point waiting out the timeout
                    raise ServerUnavailable(f"the server exited as it started (see {directory}/server.log)") from None
                if time.monotonic() > deadline:
                    raise ServerUnavailable(f"the server did not start (see {directory}/server.log)") from None
                time.sleep(0.02)


def _dial(directory: str) -> _socket.socket:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(os.path.join(directory, "server.sock"))
    except OSError:
        sock.close()
        raise
    return sock


SOCKET_PATH_BYTES = 107  # sockaddr_un's sun_path, less its terminating NUL


def _start(directory: str, build: str):
    import subprocess

    socket_path = os.path.join(directory, "server.sock")
    if len(os.fsencode(socket_path)) > SOCKET_PATH_BYTES:
        raise ServerUnavailable(f"the server's socket path {socket_path} is longer than a socket's "
                                f"{SOCKET_PATH_BYTES} bytes: set FDSL_SERVER_DIR to a shorter directory")
    log = open(os.path.join(directory, "server.log"), "ab")
    since = time.time()  # a project file changed after this makes the new server stale at once
    server = subprocess.Popen([sys.executable, "-m", "runtime.server", "--dir", str(directory), "--build", build,
                               "--since", repr(since)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, cwd=ROOT,
                              close_fds=True, start_new_session=True)
    log.close()
    return server


def ask(sock: _socket.socket, message: dict | bytes, fds: list[int] = ()) -> None:
    """A request (a message, or its frame encoded already), with descriptors passed along
    (SCM_RIGHTS) when `fds` names some."""
    ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _struct.pack(f"{len(fds)}i", *fds))] if fds else []
    data = message if isinstance(message, bytes) else frames.encode(message)
    sent = sock.sendmsg([data], ancillary)
    if sent < len(data):
        sock.sendall(data[sent:])


def reply(sock: _socket.socket) -> dict | None:
    try:
        return frames.read_frame(sock.fileno(), frames.MAX_REQUEST_BYTES)
    except (EOFError, OSError, frames.ProtocolError):
        return None


def _stop_stale(directory: str, sock: _socket.socket) -> None:
    """A stale (or stopped) server removes its socket once it has answered; wait until it is gone."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while os.path.exists(os.path.join(directory, "server.sock")) and time.monotonic() < deadline:
        time.sleep(0.02)


def server_command(args: list[str]) -> int:
    action = args[0] if len(args) == 1 else None
    if action not in ("start", "stop", "status"):
        print("usage: fdsl server start|stop|status", file=sys.stderr)
        return 2
    try:
        directory, build = server_dir(), origin()
        sock = connect(directory, build, start=action == "start")
    except ServerUnavailable as exc:
        print(f"fdsl server: {exc}", file=sys.stderr)
        return 0 if action != "start" and "no server" in str(exc) else 1
    ask(sock, {"t": "status" if action != "stop" else "stop", "build": build})
    answer = reply(sock) or {}
    sock.close()
    if answer.get("t") == "stale":
        _stop_stale(directory, sock)
        if action == "start":
            return server_command(args)
        print("fdsl server: the server running was of another build of the project; it stopped")
        return 0
    if action == "stop":
        _stop_stale(directory, sock)  # its socket goes at once (runs under way finish): a start after this starts anew
        print("fdsl server: stopping")
    else:
        print(f"fdsl server: running, pid {answer.get('pid')}, for {answer.get('build')}, "
              f"{answer.get('served')} runs served, {answer.get('kept')} runners kept, up {answer.get('uptime_s')} s ({directory})")
    return 0
