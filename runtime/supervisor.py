"""The process boundary as one function: `run_worker(code, broker, limits, deadline, on_output)`,
served by a `WorkerRun` whose states are STARTING, RUNNING and FINISHED.

It starts a fresh worker (clean environment, only its three pipes, its own session and
process group), serves its requests through the broker, enforces the wall-clock deadline,
the output cap and the memory watch, and always reaps the whole process group. Each way a
run can end has its own status: ok, error (the script failed), timeout, crash.
"""

from __future__ import annotations

import enum
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Callable

from runtime.broker import Broker
from runtime.cpus import off_this_cpu, on_any_cpu
from runtime.jail import jailed_command
from runtime.limits import Limits  # noqa: F401  (callers import it from here too)
from runtime.procfs import Resident, peak_resident_kib, script_process
from wire import protocol

MEMORY_POLL_SECONDS = 0.05
# At the deadline the worker is asked (SIGUSR1) to stop and say at which line; past this grace
# it is killed without that.
STOP_GRACE_SECONDS = 0.5
DIAGNOSTICS_BYTES = 16 * 1024
MAX_ERROR_CHARS = 8 * 1024  # of an error message the worker reports
# Replies written but not yet read by the worker: past this, the worker is flooding calls.
MAX_PENDING_REPLY_BYTES = 2 * protocol.MAX_REPLY_BYTES


@dataclass
class WorkerResult:
    status: str  # "ok" | "error" | "timeout" | "crash"
    error: dict | None = None  # kind, msg and, when the script failed, generated line/col
    output_bytes: int = 0
    figures: dict = field(default_factory=dict)
    layers: dict | None = None  # hardening layer -> status, from the worker's "ready" frame


def worker_command(preload: bool = False) -> list[str]:
    """The script worker's command line (`preload`: it imports every language before it waits)."""
    return jailed_command("sandbox_worker.main", ("RestrictedPython",), "main(preload=True)" if preload else "main()")


# Workers this process started ahead for its next runs (runtime/runner.py): taken by the
# next run_script (api._started_ahead) or the first Session's pool.
PRESTARTED: list[subprocess.Popen] = []


def start_worker(preload: bool = False) -> subprocess.Popen:
    """A fresh worker waiting for its start frame: a clean environment, only its three pipes,
    its own session and process group."""
    return subprocess.Popen(
        worker_command(preload), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={}, cwd="/", close_fds=True, start_new_session=True,
    )


def kill_group(pid: int) -> None:
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except OSError:
            pass


def crash_error(wait_status: int, diagnostics: bytes) -> dict:
    if os.WIFSIGNALED(wait_status):
        sig = os.WTERMSIG(wait_status)
        if sig == signal.SIGXCPU:
            return {"kind": "LimitError", "msg": "CPU time limit exceeded"}
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return {"kind": "InternalError", "msg": f"the worker process crashed ({name})"}
    code = os.WEXITSTATUS(wait_status)
    detail = diagnostics.decode("utf-8", "replace").strip().splitlines()
    tail = f": {detail[-1][:200]}" if detail else ""
    return {"kind": "InternalError", "msg": f"the worker process exited with status {code} before finishing{tail}"}


class State(enum.Enum):
    STARTING = "starting"  # the worker's first frame may be its "ready" report, no later one
    RUNNING = "running"  # serving its calls, collecting its output
    FINISHED = "finished"  # it sent "end", or the supervisor stopped it


class WorkerRun:
    """One worker from start to reaping: a poll loop over its three pipes, in named states."""

    def __init__(self, code: str, broker: Broker, limits: Limits, deadline: float,
                 on_output: Callable[[str], None], mode: str, lang: str,
                 layers: frozenset[str] | None, isolation: str, proc: subprocess.Popen | None = None,
                 retire: Callable[[subprocess.Popen], None] | None = None, primed: bool = False,
                 unsent: bytes | None = None) -> None:
        self.broker, self.limits, self.deadline, self.on_output = broker, limits, deadline, on_output
        self.start_frame = start_frame(limits, isolation, layers, lang)
        self.code_frame = code_frame(code, lang, mode)
        self.state = State.STARTING
        self.result = WorkerResult(status="crash")
        self.frames = protocol.FrameBuffer(protocol.MAX_REQUEST_BYTES)
        self.diagnostics = bytearray()
        self.first_frame_at: float | None = None
        self.peak_kib: int | None = None
        self.proc = proc  # a worker started ahead (a session's pool), or None: start one
        self.primed = primed  # proc has its start frame already (prime()): it is sent the code only
        self.unsent = unsent  # not None: the code frame was written ahead (send_ahead), all but this
        self.retire = retire  # a session's pool reaps a finished worker later; None: reaped here
        self.stop_by: float | None = None  # set at the deadline: the worker's grace to report its line

    # -- the run -------------------------------------------------------------------------------

    def run(self) -> WorkerResult:
        self.started = time.monotonic()
        self._spawn()
        try:
            self._serve()
        finally:
            self.watcher.close()
            if self.retire is not None and self.state is State.FINISHED:
                # Killed now, so nothing of the run executes once it has returned; the session's
                # pool thread reaps it (the kernel's teardown, about 1 ms) off the result's path.
                kill_group(self.pid)
                self.retire(self.proc)
            else:
                # Reaped before the result returns: when a one-shot run is over, no process of
                # it exists any more (fuzz/targets.py checks it).
                wait_status = reap(self.pid)
                self.proc.returncode = wait_status
                _close_pipes(self.proc)
        result = self.result
        if self.state is not State.FINISHED:  # the pipes closed first: the worker died
            result.error = crash_error(wait_status, bytes(self.diagnostics))
            result.status = "error" if result.error["kind"] == "LimitError" else "crash"
        result.figures = {
            "worker_start_s": (self.first_frame_at - self.started) if self.first_frame_at else None,
            "worker_s": time.monotonic() - self.started,
            "worker_peak_rss_kib": self.peak_kib,
            "requests": self.broker.requests,
        }
        return result

    def _spawn(self) -> None:
        if self.proc is None:
            self.proc = start_worker()
        proc = self.proc
        self.pid = self.script_pid = proc.pid  # script_pid: the worker's child in a PID namespace
        self.to_worker, self.from_worker, self.diagnostics_fd = proc.stdin.fileno(), proc.stdout.fileno(), proc.stderr.fileno()
        os.set_blocking(self.to_worker, False)
        self.outbox = bytearray() if self.primed else bytearray(protocol.encode(self.start_frame))
        self.outbox += protocol.encode(self.code_frame) if self.unsent is None else self.unsent
        self.writer_open = True
        self.open_fds = {self.from_worker, self.diagnostics_fd}
        self.watcher = Resident(self.pid)
        self.next_memory_check = self.started + MEMORY_POLL_SECONDS  # none before it can have run
        self.poller = select.poll()
        self.poller.register(self.from_worker, select.POLLIN)
        self.poller.register(self.diagnostics_fd, select.POLLIN)
        self.poller.register(self.to_worker, select.POLLOUT)
        self._flush()  # now, not after a first poll: the worker is waiting for it

    def _serve(self) -> None:
        while self.state is not State.FINISHED and self.open_fds:
            now = time.monotonic()
            if now >= self.deadline:
                self._time_up(now)
                if self.state is State.FINISHED:
                    return
            if now >= self.next_memory_check:
                self._check_memory(now)
                if self.state is State.FINISHED:
                    return
            wait_ms = max(0, min((self.stop_by or self.deadline) - now, MEMORY_POLL_SECONDS)) * 1000
            for fd, event in self.poller.poll(wait_ms):
                if fd == self.to_worker:
                    self._writable(event)
                else:
                    self._readable(fd, event)
                if self.state is State.FINISHED:
                    return

    def _timeout_error(self) -> dict:
        return {"kind": "TimeoutError", "msg": f"the script did not finish within {self.limits.timeout:g} s"}

    def _time_up(self, now: float) -> None:
        """The deadline: a running script is asked to stop and report its line (SIGUSR1, which
        the worker turns into an exception where the script is); killed at once otherwise, or
        when the grace has passed."""
        if self.state is State.RUNNING and self.stop_by is None:
            self.stop_by = now + STOP_GRACE_SECONDS
            try:
                os.kill(self.script_pid, signal.SIGUSR1)
            except OSError:
                pass
        elif self.stop_by is None or now >= self.stop_by:
            self.stop("timeout", self._timeout_error())

    def stop(self, status: str, error: dict | None) -> None:
        self.result.status, self.result.error = status, error
        self.state = State.FINISHED
        kill_group(self.pid)

    def _broke(self, detail: str, stopped: bool = False) -> None:
        message = f"the worker broke the protocol ({detail})" + ("; it was stopped" if stopped else "")
        self.stop("crash", {"kind": "InternalError", "msg": message})

    def _check_memory(self, now: float) -> None:
        self.next_memory_check = now + MEMORY_POLL_SECONDS
        if self.watcher.bytes() > self.limits.memory_mb << 20:
            self.stop("error", {"kind": "LimitError", "msg": f"memory limit exceeded ({self.limits.memory_mb} MiB)"})

    # -- the pipes ------------------------------------------------------------------------------

    def _close_writer(self) -> None:
        if self.writer_open:
            self.writer_open = False
            self.poller.unregister(self.to_worker)
        self.outbox.clear()

    def _flush(self) -> None:
        """Write what we can now; wait for POLLOUT only for the rest (large replies)."""
        if not self.writer_open:
            self.outbox.clear()
            return
        try:
            written = os.write(self.to_worker, self.outbox)
        except BlockingIOError:
            written = 0
        except BrokenPipeError:
            self._close_writer()
            return
        del self.outbox[:written]
        self.poller.modify(self.to_worker, select.POLLOUT if self.outbox else 0)

    def _writable(self, event: int) -> None:
        if event & (select.POLLERR | select.POLLHUP):
            self._close_writer()
        else:
            self._flush()

    def _readable(self, fd: int, event: int) -> None:
        data = os.read(fd, 1 << 16) if event & (select.POLLIN | select.POLLHUP) else b""
        if not data:
            self.poller.unregister(fd)
            self.open_fds.discard(fd)
        elif fd == self.diagnostics_fd:
            self.diagnostics += data[: max(0, DIAGNOSTICS_BYTES - len(self.diagnostics))]
        else:
            if self.first_frame_at is None:
                self.first_frame_at = time.monotonic()
            try:
                messages = self.frames.feed(data)
            except protocol.ProtocolError as exc:
                self._broke(str(exc), stopped=True)
                return
            for message in messages:
                self._message(message)
                if self.state is State.FINISHED:
                    return

    # -- the worker's messages ------------------------------------------------------------------

    def _message(self, message: dict) -> None:
        kind = message["t"]
        if self.state is State.STARTING:
            self.state = State.RUNNING
            if kind == "ready":  # only the first frame, written by the worker before any script code
                self._ready(message)
                return
        handler = {"call": self._call, "out": self._out, "end": self._end}.get(kind)
        if handler is None:
            self._broke(f"message {str(kind)[:40]!r}")
        else:
            handler(message)

    def _ready(self, message: dict) -> None:
        reported = message.get("layers")
        if not isinstance(reported, dict) or not all(isinstance(v, str) for v in reported.values()):
            self._broke("bad ready")
            return
        self.result.layers = {str(k)[:40]: v[:300] for k, v in reported.items()}
        if self.result.layers.get("pidns") == "active":
            self.script_pid = script_process(self.pid)
            if self.script_pid != self.pid:
                self.watcher.close()
                self.watcher = Resident(self.script_pid)
        if self.retire is not None:  # moved off our CPU for its warm-up (api.execute): its round trips go anywhere
            on_any_cpu({self.script_pid, self.pid})

    def _call(self, message: dict) -> None:
        self.outbox += self.broker.reply_frame(message)
        self._flush()
        if len(self.outbox) > MAX_PENDING_REPLY_BYTES:  # a correct worker waits for each reply
            self._broke("it does not read its replies", stopped=True)

    def _out(self, message: dict) -> None:
        text = message.get("s")
        if type(text) is not str:
            self._broke("bad output")
            return
        encoded = text.encode("utf-8", "replace")  # a lone surrogate (JSON's "\ud800") is replaced
        room = self.limits.max_output - self.result.output_bytes
        if len(encoded) > room:
            self.on_output(encoded[:room].decode("utf-8", "ignore"))
            self.result.output_bytes = self.limits.max_output
            self.stop("error", {"kind": "LimitError",
                                "msg": f"output limit exceeded: the script printed more than {self.limits.max_output} bytes"})
            return
        self.result.output_bytes += len(encoded)
        self.on_output(encoded.decode("utf-8"))

    def _end(self, message: dict) -> None:
        status, error = end_outcome(message, self.broker, self.deadline)
        if self.stop_by is not None:  # stopped at the deadline: the worker's word is only its line
            located = error if status in ("error", "timeout") else {}
            status, error = "timeout", {**self._timeout_error(), "line": located.get("line"), "col": located.get("col")}
        self.result.status, self.result.error = status, error
        self.state = State.FINISHED
        self.peak_kib = peak_resident_kib(self.script_pid)
        if self.retire is not None:  # killed next (run()), asleep: its teardown on another CPU than ours
            off_this_cpu((self.script_pid, self.pid))


def run_worker(
    code: str,
    broker: Broker,
    limits: Limits,
    deadline: float,
    on_output: Callable[[str], None],
    mode: str = "restricted",
    lang: str = "fdsl",
    layers: frozenset[str] | None = None,
    isolation: str = "best",
    proc: subprocess.Popen | None = None,
    retire: Callable[[subprocess.Popen], None] | None = None,
    primed: bool = False,
    unsent: bytes | None = None,
) -> WorkerResult:
    """Run `code` in a fresh worker. `layers` (trusted callers only: tests, `fdsl audit`)
    applies a subset of the hardening layers; `isolation="strict"` makes the worker refuse to
    run the script unless every layer is in force. `proc`: a worker started ahead by
    `start_worker(preload=True)` that has run nothing yet (runtime/session.py); `retire`: given
    the worker, killed, after a run that ended normally, to reap it later (the session's pool);
    `primed`: proc was given its start frame already (`prime`); `unsent`: and its code frame too
    (`send_ahead`), all but these bytes."""
    return WorkerRun(code, broker, limits, deadline, on_output, mode, lang, layers, isolation, proc, retire,
                     primed, unsent).run()


def code_frame(code: str, lang: str, mode: str = "restricted") -> dict:
    return {"t": "code", "code": code, "lang": lang, "mode": mode}


def send_ahead(proc: subprocess.Popen, code: str, lang: str) -> bytes:
    """Write a primed worker its code frame as soon as the script is compiled, before the run's
    broker is built: the worker compiles the script (RestrictedPython) meanwhile, on its own
    core. Nothing of the script can act before the broker serves it, since all it can do is
    ask the broker. Returns what did not fit in the pipe (run_worker's `unsent`, written as the
    worker reads): the write never waits, so a worker that does not read cannot hold the run
    past its deadline."""
    frame = protocol.encode(code_frame(code, lang))
    try:
        os.set_blocking(proc.stdin.fileno(), False)
        written = os.write(proc.stdin.fileno(), frame)
    except BlockingIOError:
        written = 0
    except OSError:  # it died meanwhile: the run finds out, as with any dead worker
        return b""
    return frame[written:]


def start_frame(limits: Limits, isolation: str, layers: frozenset[str] | None = None, lang: str | None = None) -> dict:
    """The worker's first frame. `lang`: the language a worker not started ahead imports before it
    hardens (one started ahead has imported every language)."""
    frame = {"t": "start", "limits": limits.worker_limits(), "isolation": isolation}
    if layers is not None:
        frame["layers"] = sorted(layers)
    if lang is not None:
        frame["lang"] = lang
    return frame


def prime(proc: subprocess.Popen, limits: Limits, isolation: str, lang: str | None = None) -> None:
    """Send a worker started ahead its start frame while it waits (a session's pool knows its
    runs' limits): it applies them and reports ready then, off any run's path, and a run sends it
    its code only (run_worker(..., primed=True)). One small frame into an empty pipe: the write
    never waits. `lang`: for a worker started fresh (not `preload`), the one language it imports
    before it hardens (a one-shot run's, started while its script compiles)."""
    try:
        protocol.write_frame(proc.stdin.fileno(), start_frame(limits, isolation, lang=lang))
    except OSError:  # it died meanwhile (killed from outside): the pool's take() skips it
        pass


def end_outcome(message: dict, broker: Broker, deadline: float) -> tuple[str, dict | None]:
    """(status, error) of the worker's "end" frame, every field checked: whatever the worker
    wrote there is untrusted. A timeout is the supervisor's clock or the run's deadline the
    broker itself enforced (its DeadlineExceeded replies), never the worker's word alone."""
    if message.get("ok") is True and "error" not in message:
        return "ok", None
    error = message.get("error")
    bad = {"kind": "InternalError", "msg": "the worker broke the protocol (a malformed end message); it was stopped"}
    if message.get("ok") is not False or not isinstance(error, dict):
        return "crash", bad
    kind, msg, line, col = (error.get(field) for field in protocol.ERROR_FIELDS)
    if (kind not in protocol.ERROR_KINDS or type(msg) is not str
            or any(v is not None and type(v) is not int for v in (line, col))):
        return "crash", bad
    msg = msg[:MAX_ERROR_CHARS].encode("utf-8", "replace").decode("utf-8")
    error = {"kind": kind, "msg": msg, "line": line, "col": col}
    if kind == "TimeoutError":
        if broker.deadline_replies or time.monotonic() >= deadline:
            return "timeout", error
        return "crash", {"kind": "InternalError",
                         "msg": "the worker broke the protocol (it reported a timeout that did not happen); it was stopped"}
    return "error", error


def _close_pipes(proc: subprocess.Popen) -> None:
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            stream.close()
        except OSError:
            pass


def _collect(proc: subprocess.Popen) -> None:
    """Reap a worker whose group was killed, then close its pipes."""
    reap(proc.pid)
    _close_pipes(proc)


def reap(pid: int) -> int:
    """Kill the worker's whole group, then reap it; returns the wait status.

    The group is killed while the worker is still unreaped (even a zombie keeps the group
    id reserved), so the signal can never reach a recycled process group.
    """
    kill_group(pid)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            return status
        except InterruptedError:
            continue
        except ChildProcessError:
            return 0
