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
    umask = os.umask(0o022)  # read by setting it: the files a run makes get the client's
    os.umask(umask)
    request = {"t": "run", "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask, "build": build}
    try:  # what the server can read: UTF-8 (the environment may hold other bytes), at most 1 MiB
        frame = frames.encode(request, errors="strict")
    except UnicodeEncodeError:
        raise ServerUnavailable("the environment, arguments or directory hold bytes that are not UTF-8") from None
    if len(frame) > frames.MAX_REQUEST_BYTES - 64 * 1024:
        raise ServerUnavailable(f"the command's environment and arguments are too large to pass ({len(frame):,} bytes)")
    _open_standard_streams()
    fds = [0, 1, 2]
    try:
        fds.append(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
    except OSError:
        pass  # no terminal: approvals are refused, as in process
    for _ in range(2):
        sock = connect(directory, build)
        try:
            ask(sock, frame, fds)
        except OSError as exc:  # nothing ran: the server closed the connection first
            sock.close()
            raise ServerUnavailable(f"the server did not take the request ({exc.strerror or exc})") from None
        answer = _wait(sock, directory)
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


class _GaveUp(Exception):
    pass


SIGNAL_GRACE_S = 5  # a signal passed on that gets no answer this long: stop waiting


def _wait(sock: _socket.socket, directory: str) -> dict:
    """The server's answer; meanwhile Ctrl-C, SIGTERM and SIGHUP go to the running command. A
    command stopped that way answers at once; if the server does not (it never took the run,
    or hangs), the client stops waiting SIGNAL_GRACE_S later, or at a second signal."""
    passed: list[int] = []

    def forward(signum, _frame):
        if signum == _signal.SIGALRM or passed:
            raise _GaveUp
        passed.append(signum)
        try:
            sock.sendall(frames.encode({"t": "signal", "signal": signum}))
        except OSError:
            pass
        _signal.alarm(SIGNAL_GRACE_S)

    handled = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGALRM)
    previous = {signum: _signal.signal(signum, forward) for signum in handled}
    try:
        while True:
            message = reply(sock)
            if message is None:
                return {"t": "lost"}
            if message.get("t") in ("exit", "stale", "refused"):
                return message
    except _GaveUp:
        signum = passed[0]
        name = {_signal.SIGINT: "SIGINT", _signal.SIGTERM: "SIGTERM", _signal.SIGHUP: "SIGHUP"}.get(signum, signum)
        try:
            print(f"fdsl: stopped waiting for the server's answer to {name} (its log: {directory}/server.log)",
                  file=sys.stderr)
        except OSError:
            pass
        return {"t": "exit", "code": 128 + signum}
    finally:
        _signal.alarm(0)
        for signum, handler in previous.items():
            _signal.signal(signum, handler)
        sock.close()


def _open_standard_streams() -> None:
    """/dev/null in place of a closed standard descriptor, as the run in process would find it
    missing: else the next file or socket opened would take its number, and be passed as it."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open("/dev/null", os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


if __name__ == "__main__":
    sys.exit(main(leave=True))
