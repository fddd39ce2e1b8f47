"""The per-user server's place and life cycle, for its clients: the directory (private to this
user), the build id a server must match, connecting (starting it first if need be), and
`fdsl server start|stop|status`. runtime/client.py runs commands through it; runtime/server.py
is the server. Standard library and the wire protocol only: the client imports this.
"""

from __future__ import annotations

import _socket  # not `socket`: its enums cost the client a tenth of an interpreter's start
import array
import os
import stat
import sys
import time
import zlib

from wire import protocol

START_TIMEOUT_S = 20.0
PACKAGES = ("runtime", "transpiler", "sandbox_worker", "wire")


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


def build_id() -> str:
    """What the server must have been started from: this interpreter and the project's files."""
    seen = [sys.executable]
    for package in PACKAGES:
        for folder, dirs, files in os.walk(os.path.join(ROOT, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".lark")):
                    st = os.stat(os.path.join(folder, name))
                    seen.append(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}")
    data = "\n".join(seen).encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"  # a change detector, not a defence: same user


def connect(directory: str, build: str, start: bool = True) -> _socket.socket:
    """A connection to a server of this build, started (or restarted) if need be."""
    import fcntl

    with open(os.path.join(directory, "start.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one client starts the server, the others wait for it
        try:
            return _dial(directory)
        except OSError:
            if not start:
                raise ServerUnavailable("no server is running") from None
        _start(directory, build)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                return _dial(directory)
            except OSError:
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


def _start(directory: str, build: str) -> None:
    import subprocess

    log = open(os.path.join(directory, "server.log"), "ab")
    subprocess.Popen([sys.executable, "-m", "runtime.server", "--dir", str(directory), "--build", build],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, cwd=ROOT,
                     close_fds=True, start_new_session=True)
    log.close()


def ask(sock: _socket.socket, message: dict, fds: list[int] = ()) -> None:
    """A request, with descriptors passed along (SCM_RIGHTS) when `fds` names some."""
    ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    data = protocol.encode(message)
    sent = sock.sendmsg([data], ancillary)
    if sent < len(data):
        sock.sendall(data[sent:])


def reply(sock: _socket.socket) -> dict | None:
    try:
        return protocol.read_frame(sock.fileno(), protocol.MAX_REQUEST_BYTES)
    except (EOFError, OSError, protocol.ProtocolError):
        return None


def _stop_stale(directory: str, sock: _socket.socket) -> None:
    """A stale server stops itself once it has answered; wait until its socket is gone."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while os.path.exists(os.path.join(directory, "server.sock")) and time.monotonic() < deadline:
        time.sleep(0.02)


def server_command(args: list[str]) -> int:
    action = args[0] if len(args) == 1 else None
    if action not in ("start", "stop", "status"):
        print("usage: fdsl server start|stop|status", file=sys.stderr)
        return 2
    try:
        directory, build = server_dir(), build_id()
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
        print("fdsl server: stopping")
    else:
        print(f"fdsl server: running, pid {answer.get('pid')}, build {answer.get('build')}, "
              f"{answer.get('served')} runs served, {answer.get('kept')} runners kept, up {answer.get('uptime_s')} s ({directory})")
    return 0
