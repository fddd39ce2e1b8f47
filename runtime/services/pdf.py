"""PDF text in the broker, extracted out of process (sandbox_worker/pdf_worker.py).

`PdfExtractor.extract(vpath, data, deadline)` hands the bytes of a PDF to a jailed extractor
process started on first use and kept for the run, and returns its pages and outline. What a
hostile PDF can cost is bounded there, by construction: the extractor's address space
(`memory_bytes`), its CPU time, the pages and the bytes of text it may return, and the run's
deadline (the broker kills it then). The broker never imports PyMuPDF.

Each way an extraction can fail has its own error, naming the PDF and never a host path:
a PDF the parser refuses ("cannot read PDF x.pdf: ..."), a limit (LimitError), the run's
deadline (DeadlineExceeded), an extractor that dies (its memory or CPU limit, or a crash).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
import weakref

from runtime.budget import mib
from runtime.errors import DeadlineExceeded, DocumentLimit, SandboxError, ScriptError, UnreadableFile
from wire import protocol

DEFAULT_PDF_MEMORY_BYTES = 768 << 20  # the extractor's address space (Python and MuPDF take ~90 MiB)
DEFAULT_MAX_PDF_PAGES = 10_000
DEFAULT_MAX_PDF_TEXT_BYTES = 64 << 20
START_SECONDS = 30.0  # start-up and hardening of the extractor, when the run has no deadline
# JSON escapes (a newline is two bytes) make a reply larger than the text it carries.
_REPLY_SLACK = 1 << 20


class PdfExtractor:
    def __init__(self, *, memory_bytes: int = DEFAULT_PDF_MEMORY_BYTES, max_pages: int = DEFAULT_MAX_PDF_PAGES,
                 max_text_bytes: int = DEFAULT_MAX_PDF_TEXT_BYTES, isolation: str = "best",
                 cpu_seconds: int | None = None) -> None:
        """`cpu_seconds`: the extractor's CPU limit when it serves many runs (a Session, a tool
        server: it is replaced when what is left cannot cover a run, fit_deadline); None: the
        time left to the deadline it starts under (one run's)."""
        self.memory_bytes = memory_bytes
        self.cpu_seconds = cpu_seconds
        self.max_pages = max_pages
        self.max_text_bytes = max_text_bytes
        self.isolation = isolation
        self.layers: dict | None = None
        self.started = 0  # extractor processes started (one per run unless one died)
        self.cpu_limit = 0  # the running extractor's RLIMIT_CPU, in seconds
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    # -------------------------------------------------------------- the process

    def _start(self, deadline: float | None) -> subprocess.Popen:
        from runtime import jail

        proc = subprocess.Popen(jail.jailed_command("sandbox_worker.pdf_worker", ("pymupdf",)),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env={}, cwd="/", close_fds=True, start_new_session=True)
        self.started += 1
        # An extractor nobody closed ends with the object that owns it (a FilesService of a
        # test or a library caller), not with the broker process.
        weakref.finalize(self, self._kill, proc)
        cpu = START_SECONDS if deadline is None else max(1.0, deadline - time.monotonic())
        self.cpu_limit = int(min(max(cpu, self.cpu_seconds or 0), 10 ** 6)) + 2
        start = {"t": "start", "max_pages": self.max_pages, "max_text_bytes": self.max_text_bytes,
                 "limits": {"memory_bytes": self.memory_bytes, "cpu_seconds": self.cpu_limit}}
        try:
            protocol.write_frame(proc.stdin.fileno(), start)
            ready = self._receive(proc, deadline if deadline is not None else time.monotonic() + START_SECONDS,
                                  "starting the PDF extractor")
        except BaseException:
            self._kill(proc)
            raise
        if ready.get("t") != "ready" or not isinstance(ready.get("layers"), dict):
            self._kill(proc)
            raise ScriptError("the PDF extractor did not start")
        self.layers = ready["layers"]
        missing = {name: status for name, status in self.layers.items()
                   if not (str(status).startswith("active") or str(status).startswith("not needed"))}
        if self.isolation == "strict" and missing:
            self._kill(proc)
            reasons = "; ".join(f"{name}: {status}" for name, status in missing.items())
            raise SandboxError(f"isolation strict: the PDF extractor's layers are not in force ({reasons})")
        return proc

    def _receive(self, proc: subprocess.Popen, deadline: float, doing: str) -> dict:
        frames = protocol.FrameBuffer(self.max_text_bytes * 2 + _REPLY_SLACK)
        fd = proc.stdout.fileno()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill(proc)
                raise DeadlineExceeded(f"the run's time limit was reached while {doing}")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            data = os.read(fd, 1 << 20)
            if not data:
                return {"t": "dead"}
            try:
                messages = frames.feed(data)
            except protocol.ProtocolError:
                self._kill(proc)
                return {"t": "err", "limit": True,
                        "msg": f"its text passes the limit of {self.max_text_bytes} bytes per document"}
            if messages:
                return messages[0]

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not refused
            pass
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def fit_deadline(self, deadline: float | None) -> None:
        """A new run (or tool call) shares this extractor up to `deadline`: if the CPU time its
        process has left cannot cover that, end it now; the next PDF starts a fresh one. (Its
        CPU limit was set from the deadline it started under; a Session or a tool server keeps it
        across many.)"""
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                return
            import psutil

            try:  # the process and its child (the PID namespace's pid 1, which does the work)
                outer = psutil.Process(proc.pid)
                used = sum(sum(p.cpu_times()[:2]) for p in [outer, *outer.children(recursive=True)])
            except psutil.Error:
                used = float(self.cpu_limit)
            needed = START_SECONDS if deadline is None else max(1.0, deadline - time.monotonic())
            if self.cpu_limit - used < needed + 1:
                self._kill(proc)
                self._proc = None

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._kill(self._proc)
                self._proc = None

    # -------------------------------------------------------------- extraction

    def extract(self, vpath: str, data: bytes, deadline: float | None) -> tuple[list[str], list, bool]:
        """(pages, outline [(level, title, page)], repaired) of the PDF `data`."""
        reply = self._ask(vpath, data, deadline, {})
        return reply["pages"] or [""], [tuple(entry) for entry in reply["outline"]], bool(reply.get("repaired"))

    def outline(self, vpath: str, data: bytes, deadline: float | None) -> tuple[list, bool]:
        """(outline [(level, title, page)], repaired) of the PDF `data`, no page's text extracted."""
        reply = self._ask(vpath, data, deadline, {"only": "outline"})
        return [tuple(entry) for entry in reply["outline"]], bool(reply.get("repaired"))

    def _ask(self, vpath: str, data: bytes, deadline: float | None, extra: dict) -> dict:
        """The extractor's "ok" reply to one PDF; its failure as the document's error."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start(deadline)
            proc = self._proc
            try:
                protocol.write_frame(proc.stdin.fileno(), {"t": "pdf", "size": len(data), **extra})
                proc.stdin.write(data)
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                reply = {"t": "dead"}
            else:
                until = deadline if deadline is not None else float("inf")
                reply = self._receive(proc, until, f"reading the PDF {vpath}")
            if reply.get("t") == "dead":
                self._proc = None
                raise self._death(vpath, proc)
        if reply.get("t") == "ok":
            return reply
        message = f"cannot read PDF {vpath}: {str(reply.get('msg', 'unknown error'))[:500]}"
        raise DocumentLimit(message) if reply.get("limit") else UnreadableFile(message)

    def _death(self, vpath: str, proc: subprocess.Popen) -> ScriptError:
        try:
            status = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self._kill(proc)
            status = proc.returncode
        self._kill(proc)
        if status == -signal.SIGXCPU:
            return DocumentLimit(f"cannot read PDF {vpath}: the PDF extractor ran out of CPU time (--timeout)")
        if status == -signal.SIGKILL or status == -signal.SIGSEGV or status == -signal.SIGABRT:
            return DocumentLimit(f"cannot read PDF {vpath}: the PDF extractor was stopped (it needs more than "
                              f"{mib(self.memory_bytes)} of memory (--pdf-memory), or the file is damaged)")
        return UnreadableFile(f"cannot read PDF {vpath}: the PDF extractor stopped (status {status})")
