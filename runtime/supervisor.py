"""The process boundary as one function: `run_worker(code, broker, limits, deadline, on_output)`.

It starts a fresh worker (clean environment, only its three pipes, its own session and
process group), serves its requests through the broker, enforces the wall-clock deadline,
the output cap and the memory watch, and always reaps the whole process group. Each way a
run can end has its own status: ok, error (the script failed), timeout, crash.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Callable

import psutil

from runtime.broker import Broker
from runtime.budget import DEFAULT_MAX_REPLY_BYTES
from runtime.jail import jailed_command
from runtime.services.documents import DEFAULT_MEMORY_BYTES
from runtime.services.pdf import DEFAULT_MAX_PDF_PAGES, DEFAULT_PDF_MEMORY_BYTES
from wire import protocol

MEMORY_POLL_SECONDS = 0.05
MAX_CPU_SECONDS = 10 ** 8  # the CPU rlimit of a run without a wall clock
DIAGNOSTICS_BYTES = 16 * 1024
MAX_ERROR_CHARS = 8 * 1024  # of an error message the worker reports
# Replies written but not yet read by the worker: past this, the worker is flooding calls.
MAX_PENDING_REPLY_BYTES = 2 * protocol.MAX_REPLY_BYTES


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run (documented defaults; the CLI and the API expose each)."""

    timeout: float = 60.0  # wall clock, seconds (math.inf: none, e.g. a .ps run with --max-time 0)
    memory_mb: int = 256  # address space of the worker, and its resident size as watched
    max_output: int = 1_000_000  # bytes of script output
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES  # one reply of the broker (runtime/budget.py)
    broker_memory_mb: int = DEFAULT_MEMORY_BYTES >> 20  # parsed documents kept by the broker
    pdf_memory_mb: int = DEFAULT_PDF_MEMORY_BYTES >> 20  # address space of the PDF extractor
    max_pdf_pages: int = DEFAULT_MAX_PDF_PAGES  # pages of one PDF

    def worker_limits(self) -> dict:
        return {
            "memory_bytes": self.memory_mb << 20,
            # The wall clock is the real limit; CPU time is a backstop if the broker is stalled.
            "cpu_seconds": max(1, int(min(self.timeout, MAX_CPU_SECONDS)) + 2),
        }


@dataclass
class WorkerResult:
    status: str  # "ok" | "error" | "timeout" | "crash"
    error: dict | None = None  # kind, msg and, when the script failed, generated line/col
    output_bytes: int = 0
    figures: dict = field(default_factory=dict)
    layers: dict | None = None  # hardening layer -> status, from the worker's "ready" frame


def worker_command() -> list[str]:
    """The script worker's command line."""
    return jailed_command("sandbox_worker.main", ("RestrictedPython",))


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
) -> WorkerResult:
    """Run `code` in a fresh worker. `layers` (trusted callers only: tests, `fdsl audit`)
    applies a subset of the hardening layers; `isolation="strict"` makes the worker refuse to
    run the script unless every layer is in force."""
    started = time.monotonic()
    proc = subprocess.Popen(
        worker_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={},
        cwd="/",
        close_fds=True,
        start_new_session=True,
    )
    pid = proc.pid
    to_worker, from_worker, diagnostics_fd = proc.stdin.fileno(), proc.stdout.fileno(), proc.stderr.fileno()
    os.set_blocking(to_worker, False)
    start = {"t": "start", "code": code, "mode": mode, "lang": lang, "limits": limits.worker_limits(), "isolation": isolation}
    if layers is not None:
        start["layers"] = sorted(layers)
    outbox = bytearray(protocol.encode(start))
    frames = protocol.FrameBuffer(protocol.MAX_REQUEST_BYTES)
    diagnostics = bytearray()
    result = WorkerResult(status="crash")
    first_frame_at = None
    finished = False
    peak_kib = None
    script_pid = pid  # the process running the script: the worker's child in a PID namespace
    watcher = psutil.Process(pid)
    next_memory_check = started
    memory_limit = limits.memory_mb << 20
    open_fds = {from_worker, diagnostics_fd}

    poller = select.poll()
    poller.register(from_worker, select.POLLIN)
    poller.register(diagnostics_fd, select.POLLIN)
    poller.register(to_worker, select.POLLOUT)

    writer_open = True
    ready_allowed = True

    def close_writer() -> None:
        nonlocal writer_open
        if writer_open:
            writer_open = False
            poller.unregister(to_worker)
        outbox.clear()

    def flush() -> None:
        """Write what we can now; wait for POLLOUT only for the rest (large replies)."""
        if not writer_open:
            outbox.clear()
            return
        try:
            written = os.write(to_worker, outbox)
        except BlockingIOError:
            written = 0
        except BrokenPipeError:
            close_writer()
            return
        del outbox[:written]
        poller.modify(to_worker, select.POLLOUT if outbox else 0)

    def stop(status: str, error: dict | None) -> None:
        nonlocal finished
        result.status, result.error = status, error
        finished = True
        kill_group(pid)

    try:
        while not finished and open_fds:
            now = time.monotonic()
            if now >= deadline:
                stop("timeout", {"kind": "TimeoutError", "msg": f"the script did not finish within {limits.timeout:g} s"})
                break
            if now >= next_memory_check:
                next_memory_check = now + MEMORY_POLL_SECONDS
                try:
                    if watcher.memory_info().rss > memory_limit:
                        stop("error", {"kind": "LimitError", "msg": f"memory limit exceeded ({limits.memory_mb} MiB)"})
                        break
                except psutil.Error:
                    pass
            wait_ms = max(0, min(deadline - now, MEMORY_POLL_SECONDS)) * 1000
            for fd, event in poller.poll(wait_ms):
                if fd == to_worker:
                    if event & (select.POLLERR | select.POLLHUP):
                        close_writer()
                    else:
                        flush()
                    continue
                data = os.read(fd, 1 << 16) if event & (select.POLLIN | select.POLLHUP) else b""
                if not data:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                    continue
                if fd == diagnostics_fd:
                    diagnostics += data[: max(0, DIAGNOSTICS_BYTES - len(diagnostics))]
                    continue
                if first_frame_at is None:
                    first_frame_at = time.monotonic()
                try:
                    messages = frames.feed(data)
                except protocol.ProtocolError as exc:
                    stop("crash", {"kind": "InternalError", "msg": f"the worker broke the protocol ({exc}); it was stopped"})
                    break
                for message in messages:
                    kind = message["t"]
                    first_message, ready_allowed = ready_allowed, False
                    if kind == "ready" and first_message:
                        # Only the first frame, written by the worker before any script code.
                        reported = message.get("layers")
                        if not isinstance(reported, dict) or not all(isinstance(v, str) for v in reported.values()):
                            stop("crash", {"kind": "InternalError", "msg": "the worker broke the protocol (bad ready)"})
                            break
                        result.layers = {str(k)[:40]: v[:300] for k, v in reported.items()}
                        if result.layers.get("pidns") == "active":
                            script_pid = script_process(pid)
                            watcher = watch(script_pid, watcher)
                    elif kind == "call":
                        outbox += broker.reply_frame(message)
                        flush()
                        if len(outbox) > MAX_PENDING_REPLY_BYTES:
                            # A correct worker waits for each reply; this one floods calls.
                            stop("crash", {"kind": "InternalError", "msg": "the worker broke the protocol (it does not read its replies); it was stopped"})
                            break
                    elif kind == "out":
                        text = message.get("s")
                        if type(text) is not str:
                            stop("crash", {"kind": "InternalError", "msg": "the worker broke the protocol (bad output)"})
                            break
                        # A lone surrogate (JSON's "\ud800") cannot be written anywhere: replaced.
                        encoded = text.encode("utf-8", "replace")
                        text = encoded.decode("utf-8")
                        room = limits.max_output - result.output_bytes
                        if len(encoded) > room:
                            on_output(encoded[:room].decode("utf-8", "ignore"))
                            result.output_bytes = limits.max_output
                            stop("error", {"kind": "LimitError", "msg": f"output limit exceeded: the script printed more than {limits.max_output} bytes"})
                            break
                        result.output_bytes += len(encoded)
                        on_output(text)
                    elif kind == "end":
                        result.status, result.error = end_outcome(message, broker, deadline)
                        finished = True
                        peak_kib = peak_resident_kib(script_pid)
                        break
                    else:
                        stop("crash", {"kind": "InternalError", "msg": f"the worker broke the protocol (message {str(kind)[:40]!r})"})
                        break
                if finished:
                    break
    finally:
        wait_status = reap(pid)
        proc.returncode = wait_status
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
    if not finished:
        result.error = crash_error(wait_status, bytes(diagnostics))
        result.status = "error" if result.error["kind"] == "LimitError" else "crash"
    ended = time.monotonic()
    result.figures = {
        "worker_start_s": (first_frame_at - started) if first_frame_at else None,
        "worker_s": ended - started,
        "worker_peak_rss_kib": peak_kib,
        "requests": broker.requests,
    }
    return result


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


def script_process(pid: int) -> int:
    """The process running the script of a worker that forked into a PID namespace
    (sandbox_worker/hardening.py): its only child (the worker itself if that cannot be told)."""
    try:
        children = psutil.Process(pid).children()
    except psutil.Error:
        return pid
    return children[0].pid if len(children) == 1 else pid


def watch(pid: int, fallback: psutil.Process) -> psutil.Process:
    try:
        return psutil.Process(pid)
    except psutil.Error:  # it has ended already: the run ends with it
        return fallback


def peak_resident_kib(pid: int) -> int | None:
    """The worker's own high-water resident size (VmHWM), read while it waits to be ended.

    Not wait4's ru_maxrss: across exec it keeps the high-water mark of the parent's memory
    that the child shared before exec.
    """
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


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
