"""The per-user background server behind a thin `fdsl run` (runtime/client.py).

    python -m runtime.server --dir DIR --build ID      (the client starts it; `fdsl server start`)

It holds what a cold `fdsl run` pays for on every call: the interpreter and the imports (the
transpiler's parsers built). It listens on DIR/server.sock, in a directory only this user can
enter, and serves only connections whose peer credentials (SO_PEERCRED) are this user's.

Runners wait ready: each a fork of the warm server that has started its script worker (started
and hardened ahead, runtime/session.py) as its own child, and waits on a socket pair. One request
is one command line: the client passes its standard streams (and its terminal, for approvals) as
descriptors (SCM_RIGHTS) with {argv, cwd, env, build}; the server hands them to a ready runner,
which takes them as its own 0, 1 and 2, the client's directory and environment, and runs
`runtime.cli.main(argv)` with its worker: the same code as an in-process run, so output, exit
codes, approvals, ASK_USER and limits behave as they do there. A runner serves one request and
exits; a new one is forked at once. A signal the client receives (Ctrl-C, SIGTERM) is passed to
the runner, which ends its script and worker as an in-process run does; the client gets
{"t": "exit", "code": N} when the runner is gone.

The server is one thread (it forks): an event loop over the listening socket, the clients'
sockets and its runners. It exits after IDLE_SECONDS without a request, on `fdsl server stop`,
and when a client of another build asks (it is stale: that client starts a new one).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
from pathlib import Path

from wire import protocol

IDLE_SECONDS = 15 * 60
RUNNERS = 2  # forks of the warm server waiting, each with its worker started ahead
MAX_FDS = 4  # stdin, stdout, stderr and the controlling terminal
MAX_REQUEST_BYTES = 1 << 20


def peer_uid(conn: socket.socket) -> int:
    pid_uid_gid = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", pid_uid_gid)[1]


def receive_request(conn: socket.socket) -> tuple[dict, list[int]]:
    """The request frame and the descriptors passed with it (SCM_RIGHTS)."""
    data, fds, _flags, _addr = socket.recv_fds(conn, MAX_REQUEST_BYTES, MAX_FDS)
    buffer = protocol.FrameBuffer(MAX_REQUEST_BYTES)
    messages = buffer.feed(data)
    while not messages:
        more = conn.recv(MAX_REQUEST_BYTES)
        if not more:
            raise EOFError("the client closed the connection")
        messages = buffer.feed(more)
    return messages[0], fds


def send(conn: socket.socket, message: dict) -> None:
    try:
        conn.sendall(protocol.encode(message))
    except OSError:
        pass


class Server:
    def __init__(self, directory: Path, build: str) -> None:
        self.directory, self.build = directory, build
        self.selector = selectors.DefaultSelector()
        self.ready: list[tuple[int, socket.socket]] = []  # runners waiting: (pid, their socket)
        self.children: dict[int, socket.socket] = {}  # runner pid -> its client's connection
        self.last_activity = time.monotonic()
        self.served = 0
        self.started = time.time()
        self.stopping = False

    def warm_up(self) -> None:
        """Import and build what every run needs, so that each runner starts with it."""
        import runtime.cli  # noqa: F401 - the command line and everything a run imports
        from runtime.jail import ensure_bytecode

        ensure_bytecode()  # once here, not in every runner (a compileall pass over the jailed packages)
        runtime.cli.build_parser()  # the command line's parser, built once for every runner (~10 ms)
        warm_compile()
        import gc

        gc.freeze()  # what is here now stays put: the runners' garbage collection never touches (copies) it

    def serve(self) -> None:
        path = self.directory / "server.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if path.exists():
            path.unlink()
        listener.bind(str(path))
        os.chmod(path, 0o600)
        listener.listen(64)
        self.listener = listener
        self.selector.register(listener, selectors.EVENT_READ, "accept")
        (self.directory / "server.pid").write_text(f"{os.getpid()} {self.build}\n")
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        try:
            while not (self.stopping and not self.children):
                self.reap_children()
                if not self.stopping:
                    self.fill()
                if not self.children and time.monotonic() - self.last_activity > IDLE_SECONDS:
                    break
                for key, _ in self.selector.select(timeout=0.05):
                    if key.data == "accept":
                        self.accept()
                    elif isinstance(key.data, tuple):  # a runner's pidfd
                        self.selector.unregister(key.fileobj)
                        os.close(key.fileobj)
                    else:
                        self.client_message(key.fileobj, key.data)
        finally:
            for pid, sock in self.ready:
                sock.close()  # a waiting runner reads EOF and exits, ending its worker
            try:
                path.unlink()
            except OSError:
                pass

    def fill(self) -> None:
        while len(self.ready) < RUNNERS:
            server_end, runner_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            pid = os.fork()
            if pid == 0:
                server_end.close()
                runner(runner_end)  # never returns
            runner_end.close()
            self.ready.append((pid, server_end))

    def accept(self) -> None:
        conn, _ = self.listener.accept()
        self.last_activity = time.monotonic()
        try:
            if peer_uid(conn) != os.getuid():
                send(conn, {"t": "refused", "msg": "this server serves only its own user"})
                conn.close()
                return
            request, fds = receive_request(conn)
        except (OSError, EOFError, protocol.ProtocolError):
            conn.close()
            return
        self.request(conn, request, fds)

    def request(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        kind = request.get("t")
        if request.get("build") != self.build:
            send(conn, {"t": "stale", "build": self.build})
            self.stopping = True
        elif kind == "status":
            send(conn, {"t": "status", "pid": os.getpid(), "build": self.build, "served": self.served,
                        "running": len(self.children), "uptime_s": round(time.time() - self.started, 1)})
        elif kind == "stop":
            send(conn, {"t": "stopping"})
            self.stopping = True
        elif kind == "run" and not self.stopping and self.hand_over(conn, request, fds):
            return
        else:
            send(conn, {"t": "refused", "msg": f"cannot serve {str(kind)[:40]!r} now"})
        for fd in fds:
            os.close(fd)
        conn.close()

    def hand_over(self, conn: socket.socket, request: dict, fds: list[int]) -> bool:
        """Give the request to a ready runner; False when none could take it."""
        self.fill()
        while self.ready:
            pid, sock = self.ready.pop(0)
            try:
                socket.send_fds(sock, [protocol.encode(request)], fds)
            except OSError:  # it died waiting: never used
                sock.close()
                self.fill()
                continue
            sock.close()
            for fd in fds:
                os.close(fd)
            self.served += 1
            self.children[pid] = conn
            self.selector.register(conn, selectors.EVENT_READ, pid)
            try:  # readable when the runner exits: its exit is answered at once, not at the next tick
                self.selector.register(os.pidfd_open(pid), selectors.EVENT_READ, ("exited", pid))
            except OSError:
                pass  # an old kernel: the loop's tick finds it
            return True
        return False

    def client_message(self, conn: socket.socket, pid: int) -> None:
        """A client whose command runs: it passes on a signal, or it went away (its command
        is then stopped as by Ctrl-C)."""
        try:
            data = conn.recv(4096)
        except OSError:
            data = b""
        signum = signal.SIGINT
        if data:
            try:
                message = json.loads(data[protocol.HEADER.size:].decode("utf-8"))
                signum = int(message.get("signal", signal.SIGINT))
            except (ValueError, AttributeError, TypeError):
                return
            if signum not in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                return
        else:
            self.selector.unregister(conn)
        try:
            os.kill(pid, signum)
        except OSError:
            pass

    def reap_children(self) -> None:
        for pid in [p for p, _ in self.ready] + list(self.children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done == 0:
                continue
            waiting = [entry for entry in self.ready if entry[0] == pid]
            if waiting:  # a ready runner died before any request: replaced by fill()
                self.ready.remove(waiting[0])
                waiting[0][1].close()
                continue
            conn = self.children.pop(pid)
            self.last_activity = time.monotonic()
            code = os.waitstatus_to_exitcode(status)
            send(conn, {"t": "exit", "code": 128 - code if code < 0 else code})
            try:
                self.selector.unregister(conn)
            except (KeyError, ValueError):
                pass
            conn.close()


def warm_compile() -> None:
    from runtime.compile import compile_script

    for lang, source in (("fdsl", "print(1)\n"), ("ps", "log(1)\n")):
        compile_script(source, filename="<warm-up>", lang=lang)


def runner(sock: socket.socket) -> None:
    """A forked runner: start its worker, wait for one request, run it, exit."""
    code = 1
    try:
        keep = {0, 1, 2, sock.fileno()}
        for name in os.listdir("/proc/self/fd"):
            if int(name) not in keep:
                try:
                    os.close(int(name))
                except OSError:
                    pass
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        from runtime.supervisor import start_worker

        worker = start_worker(preload=True)
        warm_compile()  # the pages a run touches, copied from the server now rather than during the run
        try:
            request, fds = receive_request(sock)
        except (OSError, EOFError, protocol.ProtocolError):
            from runtime.supervisor import kill_group

            kill_group(worker.pid)
            code = 0
            return
        sock.close()
        code = run_as_client(request, fds, {worker.stdin.fileno(), worker.stdout.fileno(), worker.stderr.fileno()},
                             worker)
    finally:
        os._exit(code)


def run_as_client(request: dict, fds: list[int], keep: set[int], worker) -> int:
    """The forked child's work: the client's streams, directory and environment, then the
    command line as `fdsl` would run it in process, with `worker` as its script's worker."""
    from runtime import cli, supervisor, terminal

    stdin, stdout, stderr, *tty = fds
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
    keep = keep | {0, 1, 2, *tty}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False, buffering=1 if os.isatty(1) else -1)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)
    if tty:
        terminal.CONTROLLING_TTY = f"/proc/self/fd/{tty[0]}"
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in dict(request.get("env") or {}).items()})
    os.chdir(str(request.get("cwd") or "/"))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    supervisor.PRESTARTED.append(worker)
    try:
        code = cli.main([str(a) for a in request.get("argv") or []])
    except SystemExit as exc:  # argparse's usage errors and --help
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m runtime.server")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--build", required=True)
    args = parser.parse_args()
    server = Server(Path(args.dir), args.build)
    server.warm_up()
    server.serve()


if __name__ == "__main__":
    main()
