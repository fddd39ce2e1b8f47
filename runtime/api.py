"""The public Python API: run a script from a string, get its output, error and figures.

    from runtime import run_script
    result = run_script('print(len(Directory("guides").files()))', root="examples/docs")
    result.exit_code, result.output, result.error, result.figures
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from runtime.broker import Broker, Handlers
from runtime.budget import DEFAULT_MAX_REPLY_BYTES
from runtime.cpus import off_this_cpu
from runtime.errors import RunSetupError, SandboxConfigError
from runtime.fs.vfs import VirtualFS
from runtime.index.prefilter import RunIndex
from runtime.procfs import script_process
from runtime.services.documents import DEFAULT_MEMORY_BYTES, DocumentStore
from runtime.services.files import FilesService
from runtime.services.pdf import DEFAULT_MAX_PDF_PAGES, DEFAULT_PDF_MEMORY_BYTES, PdfExtractor
from runtime.supervisor import PRESTARTED, Limits, _collect, kill_group, prime, run_worker, send_ahead, start_worker
from wire import protocol

EXIT_OK, EXIT_SCRIPT_ERROR, EXIT_USAGE, EXIT_TIMEOUT = 0, 1, 2, 124
SESSION_PDF_CPU_S = 600  # CPU seconds of a PDF extractor shared by the runs of a session
ISOLATIONS = ("best", "strict")  # the hardening a run needs: what the machine has, or every layer


@dataclass
class RunResult:
    """What a run produced. `error` is the formatted, DSL-located message (None on success)."""

    exit_code: int
    output: str
    error: str | None = None
    error_kind: str | None = None
    error_message: str | None = None  # the error's message alone (`error` adds the kind and the place)
    error_line: int | None = None
    error_column: int | None = None
    figures: dict = field(default_factory=dict)
    layers: dict | None = None  # hardening layer -> status, as the worker applied them
    warnings: list[str] = field(default_factory=list)  # about the run's inputs (a damaged PDF...)

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK

    def as_json(self) -> dict:
        """The result as one JSON object (`fdsl run --json`, `fdsl run-many`): the error as
        {kind, message, line, column, text (the formatted, located error)} or null; `layers`
        the hardening layers in force (null when no worker ran)."""
        error = None
        if self.error is not None:
            error = {"kind": self.error_kind, "message": self.error_message, "line": self.error_line,
                     "column": self.error_column, "text": self.error}
        return {"exit_code": self.exit_code, "output": self.output, "error": error, "figures": self.figures,
                "warnings": self.warnings, "layers": self.layers}


@dataclass(frozen=True)
class MountSpec:
    """A host directory shown to the script at a virtual mount point."""

    host_path: Path
    mount_point: str = "/"
    writable: bool = False


def run_script(
    source: str, *, root: str | Path | None = None, mounts: list[MountSpec] | tuple = (), lang: str = "fdsl",
    filename: str = "<script>", timeout: float = 60.0, memory_mb: int = 256, max_output: int = 1_000_000,
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES, broker_memory_mb: int = DEFAULT_MEMORY_BYTES >> 20,
    pdf_memory_mb: int = DEFAULT_PDF_MEMORY_BYTES >> 20, max_pdf_pages: int = DEFAULT_MAX_PDF_PAGES,
    on_output=None, isolation: str = "best", sandbox=None, approve=None, options: dict | None = None,
) -> RunResult:
    """Transpile `source` and run it in a fresh jailed worker over the run's sandbox: `sandbox`,
    or `root` read-only at "/" (default: the current directory unless mounts or a PromptScript
    `options["project"]`, mounted read-write, are given) plus `mounts` (runtime/fs/options.py).
    `approve(description) -> bool` answers approvals. Exit codes: 0 ok, 1 script error, 2 a bad
    argument (a UsageError naming it, never an exception), 124 timeout. Figures: transpile_s,
    worker_start_s, run_s, wall_s, worker_peak_rss_kib, broker_peak_rss_kib, requests.
    `isolation="strict"` refuses to run unless every hardening layer is in force (`result.layers`
    says which were). The limits' defaults and ranges: runtime/limits.py; `options` are the
    language's own (PromptScript: runtime.promptscript.options.PSOptions fields).
    """
    limits = Limits(timeout=timeout, memory_mb=memory_mb, max_output=max_output,
                    max_reply_bytes=max_reply_bytes, broker_memory_mb=broker_memory_mb,
                    pdf_memory_mb=pdf_memory_mb, max_pdf_pages=max_pdf_pages)
    try:
        _check_arguments(lang, isolation, options, limits)
    except RunSetupError as exc:
        return _usage(exc, 0.0)

    def sandbox_of():
        return sandbox if sandbox is not None else _sandbox(root, mounts, lang, options or {})

    return execute(source, lang=lang, filename=filename, limits=limits, isolation=isolation, approve=approve,
                   options=options, on_output=on_output, sandbox_of=sandbox_of)


def execute(source: str, *, lang: str, filename: str, limits: Limits, isolation: str, approve, options,
            on_output, sandbox_of, shared: dict | None = None, take_worker=None, retire_worker=None,
            return_worker=None) -> RunResult:
    """One run of checked arguments: compile, build the handlers over `sandbox_of()`, run the
    worker (`take_worker()`'s, started ahead and sent its start frame already, or a new one;
    `retire_worker` reaps it later, `return_worker` takes it back unused), locate the failure.
    `shared`: what a Session keeps between runs (runtime/session.py); None for a one-shot run."""
    wall_started = time.monotonic()
    reused = shared is not None and (lang, filename, source) in shared["compiled"]  # a session compiled it already
    pooled = take_worker is not None
    if not pooled:  # a one-shot run's worker starts (imports, hardens) on another core while the script compiles
        take_worker, return_worker = (lambda: _started_ahead(limits, isolation, lang)), _discard
    proc = None
    started = False
    unsent = None
    try:  # until run_worker owns the worker: one whose run does not start is given back (or ended)
        proc = take_worker()
        if pooled:  # it warms up, or compiles its code, beside the broker's work
            off_this_cpu((proc.pid, script_process(proc.pid)))  # (a child forked after inherits it)
            if not reused:  # (a compiled script's code follows at once)
                _warmed(proc)
        compile_started = time.monotonic()
        emitted = _compile(source, filename, lang, compile_started, shared)
        if isinstance(emitted, RunResult):
            return emitted
        transpiled = time.monotonic()
        deadline = time.monotonic() + limits.timeout
        unsent = b""  # from here the worker may hold the script (an interrupt may land in the write)
        unsent = send_ahead(proc, emitted.python, lang)  # it compiles while the broker is built
        try:
            handlers = LANGUAGE_RUNS[lang](sandbox_of(), approve=approve, limits=limits, deadline=deadline,
                                           isolation=isolation, options=dict(options or {}), shared=shared)
        except (RunSetupError, SandboxConfigError) as exc:
            return _usage(exc, transpiled - compile_started)
        started = True
    finally:
        if not started and proc is not None:  # a worker sent its code is not given back: it holds a script now
            (return_worker if unsent is None else _discard)(proc)
    chunks: list[str] = []

    def collect(text: str) -> None:
        chunks.append(text)
        if on_output is not None:
            on_output(text)

    try:
        outcome = run_worker(emitted.python, Broker(handlers, limits.max_reply_bytes), limits, deadline, collect,
                             lang=lang, isolation=isolation, proc=proc, retire=retire_worker if pooled else None,
                             primed=True, unsent=unsent)
    finally:
        handlers.close()
    result = RunResult(exit_code=EXIT_OK, output="".join(chunks), layers=outcome.layers,
                       figures=_figures(outcome, transpiled - compile_started, wall_started, reused))
    if outcome.status != "ok":
        _locate_failure(result, outcome, emitted, source)
    handlers.finish(result)
    return result


def _started_ahead(limits: Limits, isolation: str, lang: str):
    """A worker sent its start frame: the one this process started ahead (a server runner's,
    which has imported every language), or a new one."""
    if PRESTARTED:
        proc = PRESTARTED.pop(0)
        prime(proc, limits, isolation)
        return proc
    proc = start_worker()
    prime(proc, limits, isolation, lang)
    return proc


def _discard(proc) -> None:
    """A worker that will run nothing (a run that did not start, a session's spare): its process
    group ended, and the worker reaped before the caller goes on."""
    kill_group(proc.pid)
    _collect(proc)


def _warmed(proc) -> None:
    """A worker taken before its script is compiled, told to warm its own compile path meanwhile
    (a "warm" frame: the two run on two cores)."""
    try:
        protocol.write_frame(proc.stdin.fileno(), {"t": "warm"})
    except OSError:  # it died meanwhile: the run finds out, as with any dead worker
        pass


def _check_arguments(lang, isolation, options, limits: Limits) -> None:
    if lang not in LANGUAGE_RUNS:
        raise RunSetupError(f"lang must be one of {', '.join(map(repr, LANGUAGE_RUNS))}, not {lang!r}")
    if isolation not in ISOLATIONS:
        raise RunSetupError(f"isolation must be one of {', '.join(map(repr, ISOLATIONS))}, not {isolation!r}")
    if options is not None and not isinstance(options, dict):
        raise RunSetupError(f"options must be a dict of the language's options, not {type(options).__name__}")
    limits.check()


def _usage(exc: Exception, transpile_s: float) -> RunResult:
    return RunResult(exit_code=EXIT_USAGE, output="", error=f"UsageError: {exc}", error_kind="UsageError",
                     error_message=str(exc), figures={"transpile_s": transpile_s})


def _figures(outcome, transpile_s: float, wall_started: float, reused: bool) -> dict:
    # compile_reused: 1 when a session of this process had compiled this script already (transpile_s is then its lookup)
    figures = {"transpile_s": transpile_s, "compile_reused": int(reused), **outcome.figures}
    figures["run_s"] = outcome.figures["worker_s"] - (outcome.figures["worker_start_s"] or 0.0)
    figures["wall_s"] = time.monotonic() - wall_started
    figures["broker_peak_rss_kib"] = peak_rss_kib()
    return figures


def _sandbox(root, mounts, lang: str, options: dict):
    """The run's Sandbox from run_script's root, mounts and (PromptScript) project."""
    from runtime.fs.options import sandbox_from_options

    project = options.get("project") if lang == "ps" else None
    if project is not None and root is not None:
        raise RunSetupError("root and the option project both name the directory at /: give one "
                            "(project mounts it read-write, root read-only)")
    return sandbox_from_options(root, mounts, None, project=project,
                                write_approval=options.get("write_approval", True))


def _compile(source: str, filename: str, lang: str, started: float, shared: dict | None = None):
    """The emitted module, or the RunResult of a script that does not compile. A session's runs
    (`shared["compiled"]`, which the process's sessions share) keep what they compiled: the same
    script again is not compiled again, in whichever session it runs."""
    import transpiler
    from runtime.compile import compile_script

    try:
        if shared is not None:
            return shared["compiled"].compile(source, filename, lang)
        return compile_script(source, filename=filename, lang=lang)
    except transpiler.DSLError as exc:
        return RunResult(
            exit_code=EXIT_SCRIPT_ERROR,
            output="",
            error=transpiler.format_error(exc.kind, exc.message, source, exc.line, exc.col),
            error_kind=exc.kind,
            error_message=exc.message,
            error_line=exc.line,
            error_column=exc.col,
            figures={"transpile_s": time.monotonic() - started},
        )


def _locate_failure(result: RunResult, outcome, emitted, source: str) -> None:
    """A failed run's exit code and its error, located in the DSL through the source map."""
    import transpiler

    error = outcome.error or {"kind": "InternalError", "msg": "the run failed"}
    line = column = None
    if error.get("line") is not None:
        located = emitted.source_map.lookup(error["line"], error.get("col"))
        if located is not None:
            line, column = located
    result.exit_code = EXIT_TIMEOUT if outcome.status == "timeout" else EXIT_SCRIPT_ERROR
    result.error_kind = error["kind"]
    result.error_message = error["msg"]
    result.error_line, result.error_column = line, column
    result.error = transpiler.format_error(error["kind"], error["msg"], source, line, column)


def file_handlers(service: FilesService) -> dict:
    """The broker's handler table for FilesDSL: one FilesService method per op, plus ping."""
    handlers = {
        op: getattr(service, op.replace(".", "_"))
        for op in protocol.OPS
        if op != "ping" and op not in protocol.TOOLSET_OPS and op.startswith(("dir.", "file."))
    }
    handlers["ping"] = lambda: None
    return handlers


def filesdsl_run(sandbox, *, approve, limits: Limits, deadline: float, isolation: str, options: dict,
                 shared: dict | None = None) -> Handlers:
    """The broker's handlers for a FilesDSL run: its files service over the sandbox, and the
    document store (with its PDF extractor): a session's, kept in `shared` for its next runs,
    or the run's own, closed after it."""
    if options:
        raise RunSetupError(f"option(s) {', '.join(sorted(options))}: FilesDSL has no language options")
    store = shared.get("store") if shared is not None else None
    if store is None:
        # A session's extractor serves many runs: a CPU budget of its own (SESSION_PDF_CPU_S), renewed when spent
        store = DocumentStore(memory_bytes=limits.broker_memory_mb << 20,
                              extractor=PdfExtractor(memory_bytes=limits.pdf_memory_mb << 20,
                                                     max_pages=limits.max_pdf_pages, isolation=isolation,
                                                     cpu_seconds=SESSION_PDF_CPU_S if shared is not None else None))
        if shared is not None:
            shared["store"] = store
    store.begin_run(deadline)
    # The run's index: a stored one (fdsl index build) when there is one; a session's (made by
    # the Session) also learns what its runs read, between runs, for their later searches (a
    # one-shot run's first search would only pay for tokenizing what it reads)
    index = shared.setdefault("index", RunIndex()) if shared is not None else RunIndex(learning=False)
    vfs = VirtualFS(sandbox, approve=approve)
    service = FilesService(vfs, store, deadline=deadline, max_reply_bytes=limits.max_reply_bytes, index=index)
    return Handlers(file_handlers(service), close=store.close if shared is None else (lambda: None),
                    finish=lambda result: result.warnings.extend(store.warnings() + index.warnings
                                                                 + vfs.listing_warnings()))


def promptscript_run(sandbox, *, shared: dict | None = None, **kwargs) -> Handlers:
    """PromptScript keeps nothing between the runs of a session (`shared` is unused): each run
    has its own policies, budgets and run log."""
    from runtime.promptscript.session import promptscript_run as run

    return run(sandbox, **kwargs)


# language -> the broker's handler table for a run of it (registry.LANGUAGES names the same ones)
LANGUAGE_RUNS = {"fdsl": filesdsl_run, "ps": promptscript_run}


def peak_rss_kib() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
