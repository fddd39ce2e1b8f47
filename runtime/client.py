"""The `fdsl` command's entry point: `fdsl run` through the per-user server, the rest in process.

`fdsl run ...` connects to this user's server (runtime/server.py), starting it on first use,
and hands it the command line with its own standard streams and terminal (SCM_RIGHTS): the
server's warm runner runs it exactly as `fdsl run` would in process, writing straight to this
process's stdout and stderr. This module imports only the standard library and the wire's
framing, so the client costs an interpreter start and a connection.

In process instead (as before the server existed): `--no-server`, FDSL_NO_SERVER or CI set in
the environment, every command but `run`, and whenever the server cannot be used (an unsafe
socket directory, a server that cannot start): then with a one-line note on stderr.

`fdsl server start|stop|status` manages the server. Its directory: FDSL_SERVER_DIR, else
$XDG_RUNTIME_DIR/fdsl, else /tmp/fdsl-<uid>; it must be this user's and closed to others (0700),
or the server is not used. A server of another interpreter or checkout, or whose files changed
since it started (runtime/staleness.py), is stale: it is stopped and a new one started.
"""

from __future__ import annotations

import _signal  # not `signal`: its enums cost the client start-up time
import _socket
import os
import sys

from runtime.serverctl import ServerUnavailable, _stop_stale, ask, connect, origin, reply, server_command, server_dir
from wire import frames


def wants_server(argv: list[str]) -> bool:
    if not argv or argv[0] != "run" or "--no-server" in argv:
        return False
    return not (os.environ.get("FDSL_NO_SERVER") or os.environ.get("CI"))


def main(argv: list[str] | None = None, *, leave: bool = False) -> int:
    """`leave`: the fdsl command itself (bin/fdsl): after a run the server served, exit at once."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["server"]:
        return server_command(argv[1:])
    if wants_server(argv):
        try:
            code = run_through_server(argv)
        except ServerUnavailable as exc:
            print(f"fdsl: running in process: {exc}", file=sys.stderr)
        else:
            if leave:
                _leave(code)
            return code
    from runtime.cli import main as in_process

    return in_process(argv)


def _leave(code: int) -> None:
    """Exit without the interpreter's teardown (2-3 ms of a served run's client): the run's output
    went to our descriptors from the runner, and all this process holds is its own messages."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code & 0xFF)


def run_through_server(argv: list[str]) -> int:
    directory, build = server_dir(), origin()
    request = {"t": "run", "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "build": build}
    fds = [0, 1, 2]
    try:
        fds.append(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
    except OSError:
        pass  # no terminal: approvals are refused, as in process
    for _ in range(2):
        sock = connect(directory, build)
        ask(sock, request, fds)
        answer = _wait(sock)
        if answer.get("t") != "stale":
            break
        _stop_stale(directory, sock)
    else:
        raise ServerUnavailable("the server was replaced twice in a row")
    if answer.get("t") == "exit":
        return int(answer.get("code", 1))
    if answer.get("t") == "refused":
        raise ServerUnavailable(str(answer.get("msg", "the server refused the run")))
    print(f"fdsl: the server stopped during the run (its log: {directory}/server.log)", file=sys.stderr)
    return 1


def _wait(sock: _socket.socket) -> dict:
    """The server's answer; meanwhile Ctrl-C, SIGTERM and SIGHUP go to the running command."""

    def forward(signum, _frame):
        try:
            sock.sendall(frames.encode({"t": "signal", "signal": signum}))
        except OSError:
            pass

    handled = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
    previous = {signum: _signal.signal(signum, forward) for signum in handled}
    try:
        while True:
            message = reply(sock)
            if message is None:
                return {"t": "lost"}
            if message.get("t") in ("exit", "stale", "refused"):
                return message
    finally:
        for signum, handler in previous.items():
            _signal.signal(signum, handler)
        sock.close()


if __name__ == "__main__":
    sys.exit(main(leave=True))
