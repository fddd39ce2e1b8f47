"""A warm run context: scripts back to back in milliseconds, each still in a fresh jail.

    from runtime.session import Session
    with Session(root="examples/docs", timeout=10) as session:
        for source in scripts:
            result = session.run(source)        # the RunResult run_script returns

What a Session keeps between runs is the broker's: the Sandbox (policy and mounts, checked
once), the document store (parsed documents and the PDF extractor), the compiled scripts, a
pool of workers started ahead and, with the process's other sessions, the zygote that forks
them (runtime/zygote.py: a process that has only imported, never run a script; ended with the
last session). What it never keeps is a worker: each run takes
a worker that has run nothing yet (forked before its script arrived, its imports done,
hardened with every layer as a one-shot run is, the session's limits applied, waiting for its
script), and kills its whole process group before the run returns. A background thread reaps
it and forks its replacement, so the next run finds one ready.

`run_script` is the one-shot form of the same path (runtime/api.py `execute`).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import threading
import weakref
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Callable

from runtime.api import (
    LANGUAGE_RUNS,
    RunResult,
    _check_arguments,
    _discard,
    _sandbox,
    _usage,
    execute,
)
from runtime.budget import DEFAULT_MAX_REPLY_BYTES
from runtime.compile import CompiledScripts
from runtime.errors import RunSetupError, SandboxConfigError
from runtime.index.prefilter import RunIndex
from runtime.services.documents import DEFAULT_MEMORY_BYTES
from runtime.services.pdf import DEFAULT_MAX_PDF_PAGES, DEFAULT_PDF_MEMORY_BYTES
from runtime.supervisor import PRESTARTED, Limits, _collect, prime, start_worker
from runtime.zygote import Zygote

MAX_POOL = 16


class ProcessShared:
    """One object the sessions of this process share, since nothing in it is a session's: made
    by the first `acquire()`, ended (`end`) by the last `release()`, so nothing of it outlives
    the sessions; a forked copy of the process starts anew (the parent's is not its own)."""

    def __init__(self, make: Callable[[], object], end: Callable[[object], None]) -> None:
        self.make, self.end = make, end
        self._forget()
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self.lock = threading.RLock()  # (a close on the acquiring thread, if no thread was to be had for it)
        self.value, self.users = None, 0

    def acquire(self):
        with self.lock:
            if self.value is None:
                self.value, self.users = self.make(), 0
            self.users += 1
            return self.value

    def release(self, value) -> None:
        with self.lock:
            if value is self.value:
                self.users -= 1
                if self.users > 0:
                    return
                self.value = None
        self.end(value)


# The zygote that forks every pool's workers, and what the sessions compiled: a compile takes the
# script alone, and a fleet's pool process makes a session per root, often for the same scripts.
# A compiled script holds about 32 bytes per character of source (text, emitted module, source
# map): 2 M characters, 64 MiB at most.
ZYGOTES = ProcessShared(Zygote, Zygote.close)
COMPILED = ProcessShared(lambda: CompiledScripts(max_chars=2 << 20), lambda compiled: None)


class WorkerPool:
    """Workers started ahead, each used once. `take()` returns one that is still alive (or a
    new one when none is), already sent `prime`, its start frame (the session's limits): it has
    applied them and waits for its script only. The workers `retire()` was given (killed already)
    are reaped, and their replacements started, by the session's Upkeep thread once the run is
    over: off the run's path and not competing with it for the GIL.

    Workers are forked by the zygote the process's pools share (runtime/zygote.py: a fresh
    start's imports done once), or started fresh where it cannot fork them. The first ones are made by the Upkeep
    thread too, so that making a session does not wait for the zygote's start; a worker this
    process started ahead (a server runner's, runtime/runner.py) joins the pool at once."""

    def __init__(self, size: int, prime: Callable[[subprocess.Popen], None]) -> None:
        self.size, self.prime = size, prime
        self.lock = threading.Lock()
        self.ready: list = []
        self.retired: list = []
        self.closed = False
        self.zygote = ZYGOTES.acquire()  # the process's, shared with its other sessions
        while PRESTARTED and len(self.ready) < size:  # a server runner's, waiting already: the first run's
            proc = PRESTARTED.pop(0)
            prime(proc)
            self.ready.append(proc)

    def start(self):
        """A new worker, not yet primed: forked by the zygote, or else started fresh."""
        return self.zygote.spawn() or start_worker(preload=True)

    def refill(self) -> None:
        while True:
            with self.lock:
                if self.closed or len(self.ready) >= self.size:
                    return
            proc = self.start()  # outside the pool's lock (take() may wait for the zygote's, one fork)
            self.prime(proc)
            with self.lock:
                if not self.closed:
                    self.ready.append(proc)
                    continue
            _discard(proc)
            return

    def retire(self, proc) -> None:
        with self.lock:
            self.retired.append(proc)

    def reap_retired(self) -> None:
        with self.lock:
            retired, self.retired = self.retired, []
        for proc in retired:
            _collect(proc)

    def give_back(self, proc) -> None:
        """A worker taken for a run that did not start (its script did not compile): it has run
        nothing (a "warm" frame compiles a fixed line), so it is the next run's."""
        with self.lock:
            if not self.closed:
                self.ready.insert(0, proc)
                return
        _discard(proc)

    def take(self):
        proc = None
        with self.lock:
            while self.ready:
                candidate = self.ready.pop(0)
                if not _exited(candidate):
                    proc = candidate
                    break
                _discard(candidate)  # died while waiting (killed from outside): never used
        if proc is None:
            proc = self.start()
            self.prime(proc)
        return proc

    def close(self) -> None:
        with self.lock:
            self.closed = True
            waiting, self.ready = self.ready, []
        self.reap_retired()
        for proc in waiting:
            _discard(proc)
        ZYGOTES.release(self.zygote)


class Upkeep:
    """The session's one thread between its runs: it reaps the workers the last run retired and
    starts their replacements (`pool`, may be None), then teaches the index (a deferred
    RunIndex: a search pays for no learning) the texts the runs' searches read, one at a time
    and never while a run holds `lock`. A run says it wants the lock first (`before_run()`),
    and the learning stops at the next text: the lock is not fair, so a thread that takes it
    again at once would keep a waiting run out until the last text. So a run waits at most for
    one text's tokenizing (1 M characters at most). `after_run()` wakes it again."""

    def __init__(self, pool: WorkerPool | None, index) -> None:
        self.pool, self.index = pool, index
        self.lock = threading.Lock()
        self.running = threading.Event()  # a run wants the lock, or holds it
        self.wake = threading.Event()
        self.closed = False
        self.thread = threading.Thread(target=self._work, name="fdsl-session-upkeep", daemon=True)
        self.thread.start()
        self.wake.set()  # the pool's first workers

    def before_run(self) -> None:
        self.running.set()

    def after_run(self) -> None:
        self.running.clear()
        self.wake.set()

    def _work(self) -> None:
        while not self.closed:
            self.wake.wait()
            self.wake.clear()
            if self.pool is not None:
                self.pool.reap_retired()
                self.pool.refill()
            # a run that ended meanwhile (wake set) has its worker replaced before more learning
            while self.index.pending and not self.closed and not self.wake.is_set() and not self.running.is_set():
                with self.lock:
                    self.index.learn_pending(iter((False, True)).__next__)  # one text

    def close(self) -> None:
        """Stops the thread (a refill under way finishes first), then the pool."""
        self.closed = True
        if self.pool is not None:
            with self.pool.lock:
                self.pool.closed = True  # a refill under way stops at its next worker
        self.wake.set()
        if self.thread is not threading.current_thread():
            self.thread.join()
        if self.pool is not None:
            self.pool.close()


def _exited(proc) -> bool:
    """Has the worker ended? Asked without reaping it (WNOWAIT): its group id stays reserved
    until _discard has killed the group, as supervisor.reap requires."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


class Session:
    """Runs scripts over one sandbox with warm broker state and pre-started workers.

    The arguments are run_script's (the same defaults and checks; a bad one raises
    RunSetupError naming it), plus `workers`: how many workers wait ready (0: start each
    run's worker when it runs, as run_script does). `run(source, lang=, filename=, on_output=,
    timeout=)` returns the RunResult of one script. Not for concurrent `run` calls from several threads:
    use a Session per thread.
    """

    def __init__(
        self, *, root: str | Path | None = None, mounts=(), timeout: float = 60.0, memory_mb: int = 256,
        max_output: int = 1_000_000, max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        broker_memory_mb: int = DEFAULT_MEMORY_BYTES >> 20, pdf_memory_mb: int = DEFAULT_PDF_MEMORY_BYTES >> 20,
        max_pdf_pages: int = DEFAULT_MAX_PDF_PAGES, isolation: str = "best", sandbox=None, approve=None,
        options: dict | None = None, workers: int = 2,
    ) -> None:
        self.limits = Limits(timeout=timeout, memory_mb=memory_mb, max_output=max_output,
                             max_reply_bytes=max_reply_bytes, broker_memory_mb=broker_memory_mb,
                             pdf_memory_mb=pdf_memory_mb, max_pdf_pages=max_pdf_pages)
        if type(workers) is not int or not 0 <= workers <= MAX_POOL:
            raise RunSetupError(f"workers must be an integer from 0 to {MAX_POOL}, not {workers!r}")
        _check_arguments("fdsl", isolation, options, self.limits)
        self.isolation, self.approve, self.options = isolation, approve, dict(options or {})
        try:  # PromptScript's `project` option mounts its directory read-write, as run_script does
            self.sandbox = sandbox if sandbox is not None else _sandbox(
                root, mounts, "ps" if self.options.get("project") is not None else "fdsl", self.options)
        except SandboxConfigError as exc:
            raise RunSetupError(str(exc)) from None
        # Its index learns between runs (Upkeep), so that no search pays for learning.
        self.shared: dict = {"index": RunIndex(deferred=True)}
        # (not a lambda over self: the Upkeep thread holds the pool, and would keep the session alive)
        self.pool = WorkerPool(workers, partial(prime, limits=self.limits, isolation=isolation)) if workers else None
        try:
            self.upkeep = Upkeep(self.pool, self.shared["index"])
        except BaseException:  # (no thread to be had): the pool lets go of its zygote
            if self.pool is not None:
                self.pool.close()
            raise
        self.closed = False
        self.owner = os.getpid()
        self.shared["compiled"] = COMPILED.acquire()  # what the process's sessions compiled, kept while one is open
        # A session the garbage collector frees is closed on a thread of its own: the collecting
        # thread may hold the lock of the zygote that this session's Upkeep thread waits for, and
        # closing joins that thread. One still open at exit is closed then (_close_live).
        self._finalizer = weakref.finalize(self, _close_elsewhere, self.shared, self.upkeep, self.owner)
        self._finalizer.atexit = False
        _LIVE.add(self)

    def run(self, source: str, *, lang: str = "fdsl", filename: str = "<script>", on_output=None,
            timeout: float | None = None) -> RunResult:
        """`timeout`: this run's wall clock, at most the session's (None: the session's). Its
        workers were primed with the session's limits, so a shorter run keeps the session's CPU
        rlimit as its backstop; the wall clock, which the broker enforces, ends it in time."""
        if self.closed:
            raise RunSetupError("this Session is closed")
        if lang not in LANGUAGE_RUNS:
            return _usage(RunSetupError(f"lang must be one of {', '.join(map(repr, LANGUAGE_RUNS))}, not {lang!r}"), 0.0)
        limits = self.limits
        if timeout is not None:
            limits = replace(limits, timeout=timeout)
            try:
                limits.check()
                if timeout > self.limits.timeout:
                    raise RunSetupError(f"timeout must be a number of seconds up to the session's "
                                        f"{self.limits.timeout:g}, not {timeout!r}")
            except RunSetupError as exc:
                return _usage(exc, 0.0)
        options = self.options if lang == "ps" else {}
        self.upkeep.before_run()
        try:
            with self.upkeep.lock:  # the index does not learn while a run searches it
                return execute(source, lang=lang, filename=filename, limits=limits, isolation=self.isolation,
                               approve=self.approve, options=options, on_output=on_output,
                               sandbox_of=lambda: self.sandbox, shared=self.shared,
                               take_worker=self.pool.take if self.pool is not None else None,
                               retire_worker=self.pool.retire if self.pool is not None else None,
                               return_worker=self.pool.give_back if self.pool is not None else None)
        finally:
            self.upkeep.after_run()

    def close(self) -> None:
        """End the waiting workers and the document store's PDF extractor."""
        self.closed = True
        if self._finalizer.detach() is not None:  # (None: closed already)
            _close(self.shared, self.upkeep, self.owner)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _close(shared: dict, upkeep: Upkeep, owner: int) -> None:
    if os.getpid() != owner:  # a forked copy of the process: the workers and the zygote are the parent's
        return
    upkeep.close()
    COMPILED.release(shared["compiled"])
    store = shared.pop("store", None)
    if store is not None:
        store.close()


def _close_elsewhere(shared: dict, upkeep: Upkeep, owner: int) -> None:
    try:
        threading.Thread(target=_close, args=(shared, upkeep, owner), name="fdsl-session-close", daemon=True).start()
    except RuntimeError:  # no thread to be had
        _close(shared, upkeep, owner)


_LIVE: weakref.WeakSet = weakref.WeakSet()  # the sessions not closed yet


@atexit.register
def _close_live() -> None:
    """Sessions still open when the interpreter exits are closed as `with` would have: their
    waiting workers and the zygote ended before the process is gone."""
    for session in list(_LIVE):
        session.close()
