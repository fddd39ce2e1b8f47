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
codes, approvals, ASK_USER and limits behave as they do there (runtime/runner.py; the frames
are runtime/serverio.py's). A new runner is forked as soon as
one is taken. A runner that ran a FilesDSL script did it through a Session (WarmRuns) and is
kept for the same directory and command line (`run_key`): it says {"t": "done", "code": N} and
waits for the next such request, until the server lets it go (WARM_RUNNERS at most, each for
WARM_IDLE_SECONDS unused); any other runner exits after its request. A signal the client receives (Ctrl-C, SIGTERM) is passed to
the runner, which ends its script and worker as an in-process run does; the client gets
{"t": "exit", "code": N} when the runner is gone or says its run is done.

The server is one thread (it forks): an event loop over the listening socket, the clients'
sockets and its runners (their sockets and pidfds), which sleeps while nothing happens. It
exits after IDLE_SECONDS without a request, on `fdsl server stop`, and when a client of another
build asks, or its own code changed on disk since it started (runtime/staleness.py): it is
stale, and that client starts a new one.
"""

from __future__ import annotations

import argparse
import os
import selectors
import signal
import socket
import time
from pathlib import Path

from runtime import confinement
from runtime.runner import runner, warm_compile
from runtime.serverctl import ROOT
from runtime.serverio import RequestReader, close_all, peer_credentials, received, send
from runtime.staleness import SourceWatch
from wire import protocol

IDLE_SECONDS = 15 * 60
TICK_SECONDS = 0.05  # how often the loop wakes to reap runners where pidfds are missing
RUNNERS = 2  # forks of the warm server waiting, each with its worker started ahead
WARM_RUNNERS = 2  # runners kept after a FilesDSL run, for the same command line again
WARM_IDLE_SECONDS = 120.0  # a kept runner not used for this long exits (FDSL_SERVER_KEEP_SECONDS)
MAX_PENDING = 64  # connections whose request is still arriving
REQUEST_SECONDS = 2.0  # a connection's whole request must arrive within this (a client sends it at once)


class Server:
    def __init__(self, directory: Path, build: str, since: float | None = None) -> None:
        self.directory, self.build = directory, build
        self.sources = SourceWatch(ROOT, since=since)  # before warm_up imports the project
        self.selector = selectors.DefaultSelector()
        self.ready: list[tuple[int, socket.socket]] = []  # runners waiting: (pid, their socket)
        self.children: dict[int, socket.socket] = {}  # runner pid -> its client's connection
        self.runs: dict[int, tuple[socket.socket, tuple | None]] = {}  # runner pid -> (its socket, its key)
        self.warm: dict[tuple, tuple[int, socket.socket]] = {}  # key -> a kept runner (oldest first)
        self.kept_at: dict[int, float] = {}  # a kept runner's pid -> when its last run ended
        self.leaving: set[int] = set()  # kept runners told to exit, not reaped yet
        self.pidfds: dict[int, int] = {}  # runner pid -> its pidfd, readable once it has exited
        self.tick: float | None = None  # without pidfds (an old kernel): wake this often to reap
        self.last_activity = time.monotonic()
        self.served = 0
        self.started = time.time()
        self.stopping = False
        self.confinement = confinement.of()  # a client's must be the same (runtime/confinement.py)
        self.pending: dict[socket.socket, RequestReader] = {}  # connections whose request is arriving
        self.listener: socket.socket | None = None
        self.socket_id: tuple[int, int] | None = None

    def warm_up(self) -> None:
        """Import and build what every run needs, so that each runner starts with it."""
        import runtime.cli  # noqa: F401 - the command line and everything a run imports
        import runtime.session  # noqa: F401 - a kept runner's runs
        from runtime.jail import ensure_bytecode

        ensure_bytecode()  # once here, not in every runner (a compileall pass over the jailed packages)
        compile_client()
        runtime.cli.build_parser()  # the command line's parser, built once for every runner (~10 ms)
        warm_compile()
        from runtime.index import fold

        if fold.kept_table() is not None:  # the index's case table, when a run has built it before
            fold.fold_table()
        import gc

        gc.freeze()  # what is here now stays put: the runners' garbage collection never touches (copies) it

    def serve(self) -> None:
        path = self.directory / "server.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if path.exists():
            path.unlink()
        listener.bind(str(path))
        os.chmod(path, 0o600)
        st = os.lstat(path)
        self.socket_id = (st.st_dev, st.st_ino)
        listener.listen(64)
        self.listener = listener
        self.selector.register(listener, selectors.EVENT_READ, "accept")
        (self.directory / "server.pid").write_text(f"{os.getpid()} {self.build}\n")
        # The loop sleeps until something happens: a connection, a runner's message or exit (its
        # pidfd), SIGTERM (written to this socket pair by Python's signal handling), or the
        # next deadline (idle_timeout()). Runners clear the wake-up descriptor (runtime/runner.py).
        wake_r, wake_w = socket.socketpair()
        wake_r.setblocking(False)
        wake_w.setblocking(False)
        self.selector.register(wake_r, selectors.EVENT_READ, "wake")
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
        try:
            while not (self.stopping and not self.children):
                self.reap_children()
                self.expire_pending()
                if not self.stopping:
                    self.fill()
                if not self.children and time.monotonic() - self.last_activity > IDLE_SECONDS:
                    break
                for key, _ in self.selector.select(timeout=self.idle_timeout()):
                    if key.data == "accept":
                        self.accept()
                    elif isinstance(key.data, tuple) and key.data[0] == "request":
                        if key.data[1] in self.pending:
                            self.read_request(key.data[1])
                    elif key.data == "wake":
                        while True:
                            try:
                                if not wake_r.recv(64):
                                    break
                            except BlockingIOError:
                                break
                    elif isinstance(key.data, tuple) and key.data[0] == "exited":  # a runner's pidfd
                        self.selector.unregister(key.fileobj)
                        os.close(key.fileobj)
                        self.pidfds.pop(key.data[1], None)
                    elif isinstance(key.data, tuple):  # a runner's socket: its run is done
                        self.runner_message(key.data[1])
                    else:
                        self.client_message(key.fileobj, key.data)
                if self.stopping:
                    self.retire_listener()
                    self.let_warm_go()
                self.let_unused_go()
        finally:
            signal.set_wakeup_fd(-1)
            self.retire_listener()
            for pid, sock in self.ready:
                sock.close()  # a waiting runner reads EOF and exits, ending its worker
            self.let_warm_go()
            self.unlink_own()

    def idle_timeout(self) -> float | None:
        """Seconds until the loop has something to do by itself: a kept runner's unused time
        runs out, or the server's own (with no run going). None: only an event wakes it."""
        deadlines = [self.kept_at[pid] + WARM_IDLE_SECONDS for pid, _ in self.warm.values() if pid in self.kept_at]
        if not self.children:
            deadlines.append(self.last_activity + IDLE_SECONDS)
        deadlines += [reader.deadline for reader in self.pending.values()]
        if self.tick is not None:
            deadlines.append(time.monotonic() + self.tick)
        return max(0.0, min(deadlines) - time.monotonic()) + 0.001 if deadlines else None

    def fill(self) -> None:
        while len(self.ready) < RUNNERS:
            server_end, runner_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            server_pid = os.getpid()
            pid = os.fork()
            if pid == 0:
                server_end.close()
                runner(runner_end, server_pid)  # never returns
            runner_end.close()
            self.ready.append((pid, server_end))
            self.watch_exit(pid)

    def watch_exit(self, pid: int) -> None:
        """Wake the loop when runner `pid` exits (its pidfd), so that it is reaped and its client
        answered at once."""
        if pid in self.pidfds:
            return
        try:
            fd = os.pidfd_open(pid)
        except OSError:  # an old kernel: the loop wakes every TICK_SECONDS to reap
            self.tick = TICK_SECONDS
            return
        self.pidfds[pid] = fd
        self.selector.register(fd, selectors.EVENT_READ, ("exited", pid))

    def accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:  # out of descriptors (EMFILE): the listener stays readable, so not at once again
            time.sleep(0.05)
            return
        try:
            peer, uid, _ = peer_credentials(conn)
        except OSError:
            conn.close()
            return
        if uid != os.getuid():
            send(conn, {"t": "refused", "msg": "this server serves only its own user"})
            conn.close()
            return
        if len(self.pending) >= MAX_PENDING:  # each may buffer a request of up to 1 MiB
            send(conn, {"t": "refused", "msg": "the server has too many requests arriving"})
            conn.close()
            return
        # A client sends its request as it connects; the loop reads it as it comes, and lets go
        # of a connection whose whole request has not come within REQUEST_SECONDS.
        conn.setblocking(False)
        self.pending[conn] = RequestReader(peer, time.monotonic() + REQUEST_SECONDS)
        self.selector.register(conn, selectors.EVENT_READ, ("request", conn))

    def read_request(self, conn: socket.socket) -> None:
        reader = self.pending[conn]
        try:
            request = reader.read(conn)
        except (OSError, EOFError, protocol.ProtocolError):
            self.drop_pending(conn)
            return
        if request is None:
            return
        self.selector.unregister(conn)
        del self.pending[conn]
        conn.setblocking(True)
        self.request(conn, request, reader.fds, reader.peer)

    def drop_pending(self, conn: socket.socket, answer: dict | None = None) -> None:
        """Let go of a connection whose request is still arriving (closing what it brought)."""
        reader = self.pending.pop(conn)
        self.selector.unregister(conn)
        if answer is not None:
            conn.setblocking(True)
            send(conn, answer)
        reader.close()
        conn.close()

    def expire_pending(self) -> None:
        now = time.monotonic()
        for conn, reader in list(self.pending.items()):
            if now >= reader.deadline:
                self.read_request(conn)  # what came while the loop was busy counts: one last read
                if conn in self.pending:  # said, so that the client runs it in process
                    self.drop_pending(conn, {"t": "refused", "msg": f"the request did not arrive within {REQUEST_SECONDS:g} s"})

    def retire_listener(self) -> None:
        """Take no more connections: the socket's name goes first, so that a new client starts a
        new server at once, whatever this one still runs; each connection made already is told
        to try again (stale), not dropped."""
        if self.listener is None:
            return
        self.unlink_own()
        self.socket_id = None  # its inode is free now: a successor's socket may get the same one
        self.selector.unregister(self.listener)
        self.listener.setblocking(False)
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                break
            self.pending[conn] = RequestReader(0, 0.0)
            self.selector.register(conn, selectors.EVENT_READ, ("request", conn))
        self.listener.close()
        self.listener = None
        for conn in list(self.pending):
            self.drop_pending(conn, {"t": "stale", "build": self.build})

    def unlink_own(self) -> None:
        """Remove the socket's name and the pid file if they are still this server's (a new
        server may have made its own since this one retired its listener)."""
        path = self.directory / "server.sock"
        try:
            st = os.lstat(path)
            if (st.st_dev, st.st_ino) == self.socket_id:
                path.unlink()
        except OSError:
            pass
        pid_file = self.directory / "server.pid"
        try:
            if pid_file.read_text().split()[0] == str(os.getpid()):
                pid_file.unlink()
        except (OSError, IndexError):
            pass

    def request(self, conn: socket.socket, request: dict, fds: list[int], peer: int) -> None:
        kind = request.get("t")
        if kind == "run" and not self.stopping:
            client = confinement.of(peer) if peer > 0 else {}
            other = confinement.differences(client, self.confinement) if client else ["pid"]
            if other:  # a fork of this server would run the script outside the client's confinement
                send(conn, {"t": "refused", "msg": "the client is confined otherwise than the server "
                                                   f"({', '.join(other[:3])}): its run is its own"})
                close_all(fds)
                conn.close()
                return
            request["rlimits"] = client["rlimits"]  # the runner takes them (read here, never the client's word)
        self.last_activity = time.monotonic()  # not for a refused client: a server it cannot use may idle out
        if request.get("build") != self.build or self.sources.changed():
            send(conn, {"t": "stale", "build": self.build})
            self.stopping = True
        elif kind == "status":
            send(conn, {"t": "status", "pid": os.getpid(), "build": self.build, "served": self.served,
                        "running": len(self.children), "kept": len(self.warm),
                        "uptime_s": round(time.time() - self.started, 1)})
        elif kind == "stop":
            send(conn, {"t": "stopping"})
            self.stopping = True
        elif kind == "run" and not 3 <= len(fds) <= 4:
            send(conn, {"t": "refused", "msg": "a run passes its standard streams (and terminal), and nothing else"})
        elif kind == "run" and not self.stopping and self.hand_over(conn, request, fds):
            return
        else:
            send(conn, {"t": "refused", "msg": f"cannot serve {str(kind)[:40]!r} now"})
        close_all(fds)
        conn.close()

    def hand_over(self, conn: socket.socket, request: dict, fds: list[int]) -> bool:
        """Give the request to the runner kept for its command line, else to a ready runner;
        False when none could take it."""
        key = run_key(request)
        candidates = []
        if key is not None and key in self.warm:
            candidates.append(self.warm.pop(key))
        while True:
            if not candidates:
                self.fill()
                if not self.ready:
                    return False
                candidates.append(self.ready.pop(0))
            pid, sock = candidates.pop(0)
            try:
                socket.send_fds(sock, [protocol.encode(request)], fds)
            except OSError:  # it died waiting: never used
                self.let_go(pid, sock)
                continue
            break
        close_all(fds)
        self.served += 1
        self.children[pid] = conn
        self.runs[pid] = (sock, key)
        self.selector.register(conn, selectors.EVENT_READ, pid)
        try:
            self.selector.register(sock, selectors.EVENT_READ, ("runner", pid))
        except KeyError:  # a kept runner's socket is registered already
            pass
        self.watch_exit(pid)
        return True

    def runner_message(self, pid: int) -> None:
        """A runner's {"t": "done", "code": N} after a run it may serve again (a FilesDSL run and
        its Session): its client gets the exit code now and it is kept for the same command line.
        EOF: it is exiting (reaped by reap_children)."""
        sock, key = self.runs.get(pid, (None, None))
        if sock is None:  # a kept runner between runs: EOF (it is leaving) or nothing it may say
            for kept_key, (kept_pid, _) in list(self.warm.items()):
                if kept_pid == pid:
                    self.let_go(*self.warm.pop(kept_key))
            return
        message = (received(sock) or [None])[0]
        if not isinstance(message, dict) or message.get("t") != "done" or type(message.get("code")) is not int:
            del self.runs[pid]  # EOF: it is exiting, and its exit is answered when it is reaped
            self.let_go(pid, sock)
            return
        del self.runs[pid]
        self.answer(pid, message["code"])
        if key is None or self.stopping:
            self.let_go(pid, sock)
            return
        if key in self.warm:  # another runner is kept for it already: the older one goes
            self.let_go(*self.warm.pop(key))
        self.warm[key] = (pid, sock)
        self.kept_at[pid] = time.monotonic()
        while len(self.warm) > WARM_RUNNERS:
            self.let_go(*self.warm.pop(next(iter(self.warm))))

    def let_unused_go(self) -> None:
        """Kept runners unused for WARM_IDLE_SECONDS go. The server decides, never the runner:
        a runner leaving by itself could leave as a request reached it."""
        now = time.monotonic()
        for key, (pid, sock) in list(self.warm.items()):
            if now - self.kept_at.get(pid, now) >= WARM_IDLE_SECONDS:
                self.let_go(*self.warm.pop(key))

    def let_go(self, pid: int, sock: socket.socket) -> None:
        """Close a runner's socket: a kept or ready runner reads EOF and exits (reaped later)."""
        self.kept_at.pop(pid, None)
        try:
            self.selector.unregister(sock)
        except (KeyError, ValueError):
            pass
        sock.close()
        self.leaving.add(pid)

    def let_warm_go(self) -> None:
        for pid, sock in list(self.warm.values()):
            self.let_go(pid, sock)
        self.warm.clear()

    def answer(self, pid: int, code: int) -> None:
        """The exit code to the client of runner `pid`'s run."""
        conn = self.children.pop(pid, None)
        if conn is None:
            return
        self.last_activity = time.monotonic()
        send(conn, {"t": "exit", "code": code})
        try:
            self.selector.unregister(conn)
        except (KeyError, ValueError):
            pass
        conn.close()

    def client_message(self, conn: socket.socket, pid: int) -> None:
        """A client whose command runs: it passes on a signal, or it went away (its command
        is then stopped as by Ctrl-C)."""
        messages = received(conn)
        signum = signal.SIGINT
        if messages is not None:
            try:
                signum = int(messages[0].get("signal", signal.SIGINT))
            except (IndexError, ValueError, AttributeError, TypeError):
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
        kept = {pid: key for key, (pid, _) in self.warm.items()}
        for pid in [p for p, _ in self.ready] + list(self.children) + list(kept) + list(self.leaving):
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
            if pid in kept:  # a kept runner left (its idle time ran out)
                self.let_go(*self.warm.pop(kept[pid]))
            self.leaving.discard(pid)
            sock, _ = self.runs.pop(pid, (None, None))
            if sock is not None:
                try:
                    self.selector.unregister(sock)
                except (KeyError, ValueError):
                    pass
                sock.close()
            code = os.waitstatus_to_exitcode(status)
            self.answer(pid, 128 - code if code < 0 else code)


# What the `fdsl` client imports (runtime/client.py): the start of every `fdsl run`.
CLIENT_MODULES = ("runtime", "runtime.client", "runtime.serverctl", "wire", "wire.frames")


def compile_client() -> None:
    """Bytecode for the client's modules, so that each `fdsl run` loads them instead of
    compiling them (about 7 ms of its start): Python does not write it under
    PYTHONDONTWRITEBYTECODE, nor for an editable install until a first import may."""
    import importlib.util
    import py_compile

    for name in CLIENT_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            try:
                py_compile.compile(spec.origin, quiet=2)
            except OSError:  # a read-only installation: left as it is
                pass


def run_key(request: dict) -> tuple | None:
    """Which kept runner may serve a request: its directory and its command line with the
    script's name left out but its suffix kept. None: a request no runner is kept for."""
    argv = request.get("argv")
    if not isinstance(argv, list) or not argv or argv[0] != "run" or not all(type(a) is str for a in argv):
        return None
    import contextlib
    import io

    from runtime.cli import build_parser

    try:  # argparse writes usage errors and --help to stderr and stdout: the runner shows them
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            args = build_parser().parse_args(argv)
    except SystemExit:  # a usage error: the runner reports it
        return None
    if args.script == "-" or args.script not in argv:
        return None
    at = argv.index(args.script)
    # a kept runner has taken its first client's resource limits: it serves only the same again
    limits = request.get("rlimits")
    held = tuple(sorted((k, tuple(v)) for k, v in limits.items())) if isinstance(limits, dict) else None
    return (str(request.get("cwd")), held, *argv[:at], "<script>" + Path(args.script).suffix, *argv[at + 1:])


def keep_seconds(text: str | None) -> float:
    """FDSL_SERVER_KEEP_SECONDS: from 0.1 to 3600 s; anything else (unset, not a number, NaN)
    leaves the default."""
    try:
        keep = float(text) if text is not None else WARM_IDLE_SECONDS
    except ValueError:
        return WARM_IDLE_SECONDS
    return min(max(keep, 0.1), 3600.0) if keep == keep else WARM_IDLE_SECONDS  # NaN != NaN


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m runtime.server")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--build", required=True, help="the clients it serves (runtime/serverctl.py origin())")
    parser.add_argument("--since", type=float, help="when the client that starts it began (time.time())")
    args = parser.parse_args()
    global WARM_IDLE_SECONDS
    WARM_IDLE_SECONDS = keep_seconds(os.environ.get("FDSL_SERVER_KEEP_SECONDS"))
    server = Server(Path(args.dir), args.build, args.since)
    server.warm_up()
    server.serve()


if __name__ == "__main__":
    main()
