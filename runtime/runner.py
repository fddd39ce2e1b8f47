"""A runner of the per-user server (runtime/server.py): a fork of the warm server that has started
its script worker ahead, waits for one request on its socket pair, takes the client's streams,
directory and environment, and runs the command line as `fdsl` would in process. After a
FilesDSL run through a Session (WarmRuns) it says so ("done") and waits for the same command
line again, until the server lets it go.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

from runtime.serverio import receive_request, send
from wire import protocol

DEFAULT_TTY = "/dev/tty"
PR_SET_PDEATHSIG = 1


def sandbox_signature(sandbox) -> tuple | None:
    """What a kept Session's sandbox must still be: its configuration and each mount's real
    directory (the same inode: a directory replaced at the same path is another sandbox)."""
    mounts = []
    for ms in sandbox.mounts:
        try:
            st = os.stat(ms.host)
        except OSError:
            return None
        mounts.append((ms.host, st.st_dev, st.st_ino))
    return sandbox.config.model_dump_json(), tuple(mounts)


class WarmRuns:
    """run_script for a runner that may serve its command line again: a FilesDSL run goes
    through one Session (runtime/session.py: its document store, compiled scripts, index and a
    worker started ahead), kept while the sandbox and the limits stay the same; any other run
    is run_script's, and then the runner is not kept (`warm` says which the last run was)."""

    def __init__(self) -> None:
        self.session = None
        self.signature: tuple | None = None
        self.warm = False

    def run_script(self, source: str, *, sandbox=None, lang: str = "fdsl", options=None, approve=None,
                   filename: str = "<script>", on_output=None, root=None, **limits):
        from runtime.api import run_script
        from runtime.errors import RunSetupError

        self.warm = False
        signature = None
        if lang == "fdsl" and not options and root is None and sandbox is not None:
            signature = sandbox_signature(sandbox)
        if signature is None:
            return run_script(source, root=root, sandbox=sandbox, lang=lang, options=options, approve=approve,
                              filename=filename, on_output=on_output, **limits)
        signature = (signature, tuple(sorted(limits.items())))
        if signature != self.signature:
            from runtime.session import Session

            try:  # made before the old one closes, so that the zygote they share stays up
                session = Session(sandbox=sandbox, approve=approve, workers=2, **limits)
            except RunSetupError:  # run_script reports it as a usage error
                self.close()
                return run_script(source, sandbox=sandbox, lang=lang, approve=approve, filename=filename,
                                  on_output=on_output, **limits)
            self.close()
            self.session, self.signature = session, signature
        self.session.approve = approve  # this request's terminal
        result = self.session.run(source, lang=lang, filename=filename, on_output=on_output)
        self.warm = True
        return result

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session, self.signature = None, None


def warm_compile() -> None:
    from runtime.compile import compile_script

    for lang, source in (("fdsl", "print(1)\n"), ("ps", "log(1)\n")):
        compile_script(source, filename="<warm-up>", lang=lang)


def end_with(server_pid: int) -> None:
    """SIGTERM this runner when the server's process ends (PR_SET_PDEATHSIG: the server has one
    thread, whose end is its process's): a run stops as on its client's SIGTERM (its worker's
    group ended, exit 143) instead of writing on to a client that was told the server stopped;
    an idle runner exits, and its waiting workers with it (their pipes' EOF)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != server_pid:  # it ended before the prctl
        os._exit(0)


def runner(sock: socket.socket, server_pid: int) -> None:
    """A forked runner: start its worker, wait for a request, run it; exit, or, after a FilesDSL
    run (WarmRuns), say so to the server and wait for the same command line again."""
    signal.set_wakeup_fd(-1)  # the server's: its descriptor is closed below, and a number reused
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the server's handler: this runner ends
    end_with(server_pid)
    code = 1
    warm = WarmRuns()
    try:
        keep = {0, 1, 2, sock.fileno()}
        for name in os.listdir("/proc/self/fd"):
            if int(name) not in keep:
                try:
                    os.close(int(name))
                except OSError:
                    pass
        from runtime import cli, supervisor

        worker = supervisor.start_worker(preload=True)
        warm_compile()  # the pages a run touches, copied from the server now rather than during the run
        try:
            request, fds = receive_request(sock)
        except (OSError, EOFError, protocol.ProtocolError):
            supervisor.kill_group(worker.pid)
            code = 0
            return
        supervisor.PRESTARTED.append(worker)  # the run's worker (a Session's pool takes it too)
        cli.RUN_SCRIPT = warm.run_script
        while True:
            code = run_as_client(request, fds)
            if not warm.warm or code >= 128:  # stopped by a signal: its state may be cut anywhere
                return
            release_client(fds[3:])
            send(sock, {"t": "done", "code": code})
            try:  # the next request, or EOF when the server lets it go (unused, or the server stops)
                request, fds = receive_request(sock)
            except (OSError, EOFError, protocol.ProtocolError):
                code = 0
                return
    except KeyboardInterrupt:  # a Ctrl-C passed on before the run's own handler was in place
        code = 128 + signal.SIGINT
        _say("stopped by SIGINT")
    except Exception as exc:  # noqa: BLE001 - said in one line (the client's stderr, or the server's log)
        _say(f"the server's runner failed ({type(exc).__name__}); run with --no-server to see the error")
    finally:
        warm.close()
        os._exit(code)


def _say(message: str) -> None:
    try:
        os.write(2, f"fdsl: {message}\n".encode())
    except OSError:
        pass


def run_as_client(request: dict, fds: list[int]) -> int:
    """One request: the client's streams, directory and environment, then the command line as
    `fdsl` would run it in process."""
    from runtime import cli, confinement, terminal

    stdin, stdout, stderr, *tty = fds
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target)
    for fd in (stdin, stdout, stderr):
        if fd > 2:
            os.close(fd)
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False, buffering=1 if os.isatty(1) else -1)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)
    # the client's terminal by its descriptor: reopened by path (/proc/self/fd/N -> /dev/tty) it
    # would be this process's controlling terminal, which it has none of (ENXIO)
    terminal.CONTROLLING_TTY = tty[0] if tty else DEFAULT_TTY
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in dict(request.get("env") or {}).items()})
    time.tzset()  # the client's TZ: local times (a run log's name) as in process
    if isinstance(request.get("rlimits"), dict):  # the client's, read by the server from /proc
        confinement.apply_rlimits(request["rlimits"])
    umask = request.get("umask")
    os.umask(umask & 0o777 if type(umask) is int else 0o077)  # an old client's request: the strictest
    os.chdir(str(request.get("cwd") or "/"))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        code = cli.main([str(a) for a in request.get("argv") or []])
    except SystemExit as exc:  # argparse's usage errors and --help
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def release_client(tty: list[int]) -> None:
    """A kept runner lets go of its client's streams and terminal: a pipe the client's output
    went into must see its end when the client exits."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(devnull, target)
    for fd in (devnull, *tty):
        try:
            os.close(fd)
        except OSError:
            pass
    os.chdir("/")
