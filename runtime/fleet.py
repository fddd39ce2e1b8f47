"""Many scripts at once, each in its own jailed worker: `fdsl run-many` and `run_many()`.

A job is one script with its own sandbox and limits (`Job`); jobs run on a local pool of
broker processes (`jobs` of them, default: the machine's cores), each of which runs one script
at a time through a warm Session, so every script gets a fresh worker with every hardening
layer, exactly as `fdsl run` would. Results come back as they finish, as JSON-ready dicts
(`RunResult.as_json()` plus the job's `index`, `script`, `id` and `attempts`).

No result is lost silently: a broker process that dies (killed, out of memory) costs only the
job it was running, which is run again on a new one, once; a job whose process died twice is
reported as such (kind InternalError, exit_code null), never dropped.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Callable, Iterator

from runtime.errors import RunSetupError

MAX_ATTEMPTS = 2  # a job whose broker process died is run once more, then reported
LIMIT_KEYS = ("timeout", "memory_mb", "max_output", "max_reply_bytes", "broker_memory_mb", "pdf_memory_mb",
              "max_pdf_pages")
JOB_KEYS = frozenset({"id", "script", "source", "lang", "root", "mounts", "project", *LIMIT_KEYS})
MAX_JOBS = 1_000_000


@dataclass
class Job:
    """One script of a batch. `mounts` are "HOST:/point[:ro|rw]" as --mount takes them."""

    index: int
    script: str  # its path, or "<source N>" for inline source
    source: str
    lang: str
    root: str | None = None
    mounts: list[str] = field(default_factory=list)
    project: str | None = None  # PromptScript: the directory mounted read-write at /
    limits: dict = field(default_factory=dict)
    id: object = None  # the caller's own identifier, echoed in the result


def job_from_script(index: int, path: str, defaults: dict) -> Job:
    from runtime.cliparser import UsageError, read_script
    from transpiler import language_for

    if path == "-":
        raise RunSetupError("run-many reads scripts from files (stdin is not a script here)")
    try:
        script, source = read_script(path)
    except UsageError as exc:
        raise RunSetupError(str(exc)) from None
    except ValueError:  # a path the system cannot take (a NUL byte in it)
        raise RunSetupError(f"{path!r}: not a path that can be opened") from None
    language = language_for(script.name)
    if language is None:
        raise RunSetupError(f"{path}: cannot tell its language: use a .fdsl or .ps extension")
    return Job(index, path, source, language.name, **_common(defaults))


def _common(values: dict) -> dict:
    return {"root": values.get("root"), "mounts": list(values.get("mounts") or []), "project": values.get("project"),
            "limits": {k: values[k] for k in LIMIT_KEYS if values.get(k) is not None}}


def jobs_from_jsonl(path: str, defaults: dict, first_index: int = 0, check_paths: bool = True) -> list[Job]:
    """One job per line: {"script": PATH} or {"source": TEXT, "lang": "fdsl"|"ps"}, and any of
    id, root, mounts, project and the limits (timeout, memory_mb, ...); the command line's
    options are the defaults of every line, and a key whose value is null is as if absent.
    Every line is checked here, before anything runs: a bad one is named by its number.
    `check_paths`: that its directories exist here (not for a cluster's nodes: Ray)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise RunSetupError(f"--from {path}: cannot read it: {exc.strerror}") from None
    jobs = []
    offset = 0
    # Lines end at "\n" alone (JSON Lines): str.splitlines() also split at U+2028, U+0085, \x0c...,
    # which JSON text written with ensure_ascii=False may hold inside a string.
    for number, raw in enumerate(data.split(b"\n"), 1):
        line_offset, offset = offset, offset + len(raw) + 1
        if number == 1 and raw.startswith(UTF8_BOM):
            raw, line_offset = raw[len(UTF8_BOM):], len(UTF8_BOM)
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RunSetupError(f"--from {path}, line {number}: not UTF-8 text (byte {line_offset + exc.start} "
                                f"of the file)") from None
        if line.strip(JSON_SPACE):
            jobs.append(_job_line(path, number, line, defaults, first_index + len(jobs), check_paths))
        if len(jobs) > MAX_JOBS:
            raise RunSetupError(f"--from {path}: more than {MAX_JOBS} jobs")
    return jobs


UTF8_BOM = b"\xef\xbb\xbf"
JSON_SPACE = " \t\r"  # with "\n", JSON's whitespace: a line ending "\r\n" is read as one ending "\n"
MAX_NESTING = 32  # of a line's values (an `id` may be structured); deeper could not be sent to a pool process


def _job_line(path: str, number: int, line: str, defaults: dict, index: int, check_paths: bool = True) -> Job:
    where = f"--from {path}, line {number}"
    entry = _parse_line(line, where)
    if not isinstance(entry, dict):
        raise RunSetupError(f"{where}: expected an object such as {{\"script\": \"a.fdsl\"}}")
    unknown = sorted(set(entry) - JOB_KEYS)
    if unknown:
        raise RunSetupError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(JOB_KEYS))})")
    for key, value in entry.items():
        _check_json_value(value, where, key, 1)
    entry = {key: value for key, value in entry.items() if value is not None}  # null: the command line's value
    if ("script" in entry) == ("source" in entry):
        raise RunSetupError(f"{where}: give exactly one of \"script\" (a path) and \"source\" (the script's text)")
    _check_fields(entry, where, check_paths)
    values = {**defaults, **{k: v for k, v in entry.items() if k not in ("script", "source", "lang", "id")}}
    if "script" in entry:
        if not isinstance(entry["script"], str):
            raise RunSetupError(f"{where}: \"script\" must be a path")
        try:
            job = job_from_script(index, entry["script"], values)
        except RunSetupError as exc:
            raise RunSetupError(f"{where}: {exc}") from None
        if entry.get("lang") not in (None, job.lang):
            raise RunSetupError(f"{where}: \"lang\" {entry['lang']!r} does not match {entry['script']}")
    else:
        lang = entry.get("lang", "fdsl")
        if not isinstance(entry["source"], str):
            raise RunSetupError(f"{where}: \"source\" must be text (the script), not {_kind(entry['source'])}")
        if lang not in ("fdsl", "ps"):
            raise RunSetupError(f"{where}: \"lang\" must be \"fdsl\" or \"ps\", not {json.dumps(lang)}")
        job = Job(index, f"<source {number}>", entry["source"], lang, **_common(values))
    job.id = entry.get("id")
    return job


def _parse_line(line: str, where: str):
    """The line's JSON, strictly: NaN and Infinity are not JSON numbers."""
    def refuse_constant(name: str):
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(line, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise RunSetupError(f"{where}: not JSON ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise RunSetupError(f"{where}: nested too deeply (at most {MAX_NESTING} levels)") from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python's bound on parsing an int's digits
            raise RunSetupError(f"{where}: a number of more than {sys.get_int_max_str_digits()} digits") from None
        raise RunSetupError(f"{where}: not JSON ({exc})") from None


def _check_json_value(value, where: str, key: str, depth: int) -> None:
    """A value of a line as every job's must be: nested at most MAX_NESTING deep, text that can be
    written as UTF-8 (no lone surrogate, as "\\ud800" decodes to), numbers that are finite."""
    if depth > MAX_NESTING:
        raise RunSetupError(f"{where}: \"{key}\" is nested more than {MAX_NESTING} levels deep")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RunSetupError(f"{where}: \"{key}\" holds a lone surrogate ({value[exc.start]!r}): "
                                f"not text that can be written as UTF-8") from None
    elif isinstance(value, float) and not math.isfinite(value):
        raise RunSetupError(f"{where}: \"{key}\" holds a number too large to be finite")
    elif isinstance(value, list):
        for item in value:
            _check_json_value(item, where, key, depth + 1)
    elif isinstance(value, dict):
        for name, item in value.items():
            _check_json_value(name, where, key, depth + 1)
            _check_json_value(item, where, key, depth + 1)


def _check_fields(entry: dict, where: str, check_paths: bool) -> None:
    """The type and range of every field the line gives (the limits by their own table), and
    (`check_paths`) that its directories exist: so a bad line stops the batch before anything runs."""
    from runtime.cliparser import UsageError, parse_mount
    from runtime.limits import Limits

    for key in ("root", "project"):
        if key in entry:
            if not isinstance(entry[key], str):
                raise RunSetupError(f"{where}: \"{key}\" must be a directory's path, not {_kind(entry[key])}")
            if check_paths and not Path(entry[key]).is_dir():
                raise RunSetupError(f"{where}: \"{key}\" {entry[key]}: not a directory")
    if "mounts" in entry:
        mounts = entry["mounts"]
        if not isinstance(mounts, list) or not all(isinstance(text, str) for text in mounts):
            raise RunSetupError(f"{where}: \"mounts\" must be a list of \"HOST:/point[:ro|rw]\" texts, "
                                f"not {_kind(mounts)}")
        for text in mounts if check_paths else ():  # (parse_mount checks the host directory too)
            try:
                parse_mount(text)
            except UsageError as exc:
                raise RunSetupError(f"{where}: \"mounts\": {exc}") from None
    try:
        Limits(**{key: entry[key] for key in LIMIT_KEYS if key in entry}).check()
    except RunSetupError as exc:
        raise RunSetupError(f"{where}: {exc}") from None


def _kind(value) -> str:
    return {list: "a list", dict: "an object", str: "text", bool: "true or false"}.get(type(value), "a number")


# A pool process keeps a warm Session (runtime/session.py) per sandbox and limits it met last:
# jobs over the same files start in a worker started ahead. Each run still gets a fresh worker.
# A job's timeout is its run's (Session.run(timeout=)), not part of the key: jobs that differ
# only in it share a session made for the longest met so far.
_sessions: OrderedDict = OrderedDict()
MAX_SESSIONS = 4


def run_job(job: Job, approve_all: bool = False) -> dict:
    """Run one job here (in a pool process): its result as a JSON-ready dict."""
    from runtime.api import _usage
    from runtime.cliparser import UsageError, parse_mount

    try:
        session, timeout = _session(job, approve_all, parse_mount)
    except (UsageError, RunSetupError, TypeError) as exc:
        return {**_label(job), **_usage(exc, 0.0).as_json()}
    return {**_label(job), **session.run(job.source, lang=job.lang, filename=job.script, timeout=timeout).as_json()}


def _session(job: Job, approve_all: bool, parse_mount):
    """The session for `job`, and the job's timeout."""
    from runtime.limits import Limits
    from runtime.session import Session

    limits = dict(job.limits)
    timeout = limits.pop("timeout", Limits.timeout)
    Limits(timeout=timeout).check()  # a bad one is named before it is compared
    project = job.project if job.lang == "ps" else None
    key = (job.root, tuple(job.mounts), project, tuple(sorted(limits.items())), approve_all)
    session = _sessions.get(key)
    if session is not None and session.limits.timeout < timeout:
        _sessions.pop(key).close()
        session = None
    if session is None:
        mounts = [parse_mount(text) for text in job.mounts]
        session = Session(root=job.root, mounts=mounts, options={"project": project} if project else None,
                          approve=(lambda description: True) if approve_all else None, workers=1,
                          timeout=timeout, **limits)
        _sessions[key] = session
        while len(_sessions) > MAX_SESSIONS:
            _sessions.popitem(last=False)[1].close()
    _sessions.move_to_end(key)
    return session, timeout


def _label(job: Job) -> dict:
    return {"index": job.index, "script": job.script, "id": job.id}


def _failed(job: Job, kind: str, message: str, exit_code=None) -> dict:
    return {**_label(job), "exit_code": exit_code, "output": "", "error": {"kind": kind, "message": message,
                                                                         "line": None, "column": None},
            "figures": {}, "warnings": [], "layers": None}


# ---- the local pool -----------------------------------------------------------------------------

# Decision: a pool process is a fresh interpreter started here (subprocess), not multiprocessing's.
# Its forkserver and spawn start methods run the main module again in every pool process, and when
# that module is the installed `fdsl` script, that ran the command again (bin/fdsl now has a
# guard, but a caller's own unguarded script would do the same). And a ProcessPoolExecutor that
# loses one process fails every job in flight: with a pipe pair of its own, a pool process's
# death is its job's alone, and is seen at once (EOF on its results pipe).
PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BROKER_COMMAND = (f"import sys; sys.path.insert(0, {PROJECT_DIR!r}); from runtime.fleet import serve_jobs; "
                  "serve_jobs(*map(int, sys.argv[1:]))")
PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 5.0  # a pool process told to stop (SIGTERM) that has not ended by then is killed


class _Stop(BaseException):
    """SIGTERM in a pool process: unwinds the run under way, whose supervisor kills the script's
    worker group on the way out (as `fdsl run` stops)."""


def _raise_stop(_signum, _frame) -> None:
    raise _Stop


def serve_jobs(jobs_fd: int, results_fd: int, parent_pid: int) -> None:
    """A pool process: run each job that comes on jobs_fd (run_job), its result back on
    results_fd; end at the pipe's EOF, or at SIGTERM (the running script ended first)."""
    import ctypes

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _raise_stop)
    # Ends with the thread that started it, even when that is killed (SIGKILL, the OOM killer).
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent ended before the prctl
        return
    for fd in (jobs_fd, results_fd):  # none of a script's processes may hold them: EOF is this process's end
        os.set_inheritable(fd, False)
    jobs, results = Connection(jobs_fd, writable=False), Connection(results_fd, readable=False)
    code = 0
    try:
        _serve(jobs, results)
    except _Stop:
        code = 128 + signal.SIGTERM
    except Exception:  # noqa: BLE001 - said on stderr; the parent sees this process end, and runs its job again
        import traceback

        traceback.print_exc()
        code = 1
    for signum in (signal.SIGTERM, signal.SIGINT):  # closing its sessions is not cut short
        signal.signal(signum, signal.SIG_IGN)
    while _sessions:
        _sessions.popitem()[1].close()
    sys.stderr.flush()
    os._exit(code)  # all it holds is closed: the interpreter's teardown would only delay the batch's end (0.3 s)


def _serve(jobs: Connection, results: Connection) -> None:
    while True:
        try:
            job, approve_all = jobs.recv()
        except (EOFError, OSError):  # the parent let it go, or is gone
            return
        try:
            result = run_job(job, approve_all)
        except Exception as exc:  # noqa: BLE001 - reported with the job, never dropped
            result = _failed(job, "InternalError", f"{type(exc).__name__}: {exc}")
        try:
            results.send(result)
        except OSError:  # the parent is gone
            return


class _Broker:
    """A pool process and its two pipes (serve_jobs), started in a session of its own: the
    terminal's signals reach only the parent, which ends its pool processes itself."""

    def __init__(self) -> None:
        jobs_read, jobs_write = os.pipe()
        results_read, results_write = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-P", "-c", BROKER_COMMAND, str(jobs_read), str(results_write), str(os.getpid())],
                pass_fds=(jobs_read, results_write), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                start_new_session=True)
        except BaseException:
            for fd in (jobs_write, results_read):
                os.close(fd)
            raise
        finally:
            os.close(jobs_read)
            os.close(results_write)
        self.jobs = Connection(jobs_write, readable=False)
        self.results = Connection(results_read, writable=False)

    def close(self, stop: bool) -> None:
        """Let it go: an idle one ends at its pipe's EOF; `stop`: SIGTERM, for one running a job."""
        self.jobs.close()
        self.results.close()
        if stop:
            try:
                self.process.send_signal(signal.SIGTERM)
            except OSError:
                pass

    def reap(self, deadline: float) -> None:
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def run_many(jobs: list[Job], workers: int | None = None, approve_all: bool = False,
             on_progress: Callable[[int, int], None] | None = None) -> Iterator[dict]:
    """Each job's result as it finishes (in completion order; `index` says which job), on at most
    `workers` pool processes, one job each at a time. A pool process that dies costs only its
    own job an attempt. However the iteration ends (its end, an exception such as
    KeyboardInterrupt or the CLI's SIGTERM, close()), the pool processes end with it, each
    running script's worker with them; if this process is killed, they end too (PDEATHSIG)."""
    workers = max(1, workers or os.cpu_count() or 1)
    attempts = {job.index: 0 for job in jobs}
    queue = list(reversed(jobs))
    idle: list[_Broker] = []
    busy: dict[Connection, tuple[_Broker, Job]] = {}  # by its results pipe
    done = 0

    def lost(job: Job, finished: list) -> None:
        """Its pool process died: run it again, or report it after MAX_ATTEMPTS."""
        if attempts[job.index] < MAX_ATTEMPTS:
            queue.append(job)
        else:
            finished.append((job, _failed(job, "InternalError", f"the process running this script died "
                                                                f"{MAX_ATTEMPTS} times; it was not run again")))

    try:
        while queue or busy:
            finished: list[tuple[Job, dict]] = []
            while queue and len(busy) < workers:
                job = queue.pop()
                broker = idle.pop() if idle else _Broker()
                attempts[job.index] += 1
                try:
                    broker.jobs.send((job, approve_all))
                except OSError:  # it died idle
                    broker.close(stop=True)
                    broker.reap(time.monotonic())
                    lost(job, finished)
                except Exception as exc:  # noqa: BLE001 - a job that cannot be pickled: its result says so
                    idle.append(broker)
                    finished.append((job, _failed(job, "InternalError", f"cannot send it to a pool process: "
                                                                        f"{type(exc).__name__}: {exc}")))
                else:
                    busy[broker.results] = (broker, job)
            if busy and not finished:
                for connection in wait(list(busy)):
                    broker, job = busy.pop(connection)
                    try:
                        finished.append((job, connection.recv()))
                    except (EOFError, OSError):
                        broker.close(stop=True)
                        broker.reap(time.monotonic() + STOP_GRACE_S)
                        lost(job, finished)
                    else:
                        idle.append(broker)
            for job, result in finished:
                result["attempts"] = attempts[job.index]
                done += 1
                if on_progress is not None:
                    on_progress(done, len(jobs))
                yield result
    finally:
        brokers = [(broker, False) for broker in idle] + [(broker, True) for broker, _ in busy.values()]
        for broker, running in brokers:
            broker.close(stop=running)
        deadline = time.monotonic() + STOP_GRACE_S
        for broker, _ in brokers:
            broker.reap(deadline)


# ---- Ray: the same jobs on a cluster ---------------------------------------------------------

# Failures of the machinery, not of the script: the task is run again (once), then reported.
RAY_SYSTEM_ERRORS = ("WorkerCrashedError", "NodeDiedError", "ActorDiedError", "OutOfMemoryError",
                     "ObjectLostError", "OwnerDiedError", "LocalRayletDiedError", "TaskUnschedulableError")


def run_many_ray(jobs: list[Job], address: str | None = None, workers: int | None = None, approve_all: bool = False,
                 on_progress: Callable[[int, int], None] | None = None) -> Iterator[dict]:
    """run_many on Ray: each job a task (run_job on whichever node runs it: its jailed worker
    starts there), at most `workers` in flight (default: the cluster's CPUs). `address`: a
    `ray://host:port` client address, "auto" for the cluster this machine belongs to, or None
    for a local Ray started here. Ray's own retries are off: a task whose process or node died
    is run again once by us, then reported, as on the local pool."""
    try:
        import ray
    except ImportError:
        raise RunSetupError("--backend ray needs Ray: pip install 'filesdsl[ray]'") from None
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RunSetupError(f"cannot reach the Ray cluster {address or '(local)'}: {str(exc)[:300]}") from None
    workers = max(1, workers or int(ray.cluster_resources().get("CPU", 1)))
    return _ray_results(ray, jobs, workers, approve_all, on_progress)


def _ray_results(ray, jobs: list[Job], workers: int, approve_all: bool, on_progress) -> Iterator[dict]:
    task = ray.remote(max_retries=0, retry_exceptions=False)(run_job)
    attempts = {job.index: 0 for job in jobs}
    queue, running, done = list(reversed(jobs)), {}, 0
    while queue or running:
        while queue and len(running) < workers:
            job = queue.pop()
            attempts[job.index] += 1
            running[task.remote(job, approve_all)] = job
        finished, _ = ray.wait(list(running), num_returns=1)
        job = running.pop(finished[0])
        try:
            result = ray.get(finished[0])
        except ray.exceptions.RayError as exc:
            if type(exc).__name__ in RAY_SYSTEM_ERRORS and attempts[job.index] < MAX_ATTEMPTS:
                queue.append(job)
                continue
            result = _failed(job, "InternalError", f"Ray could not run this script ({type(exc).__name__}, "
                                                   f"{attempts[job.index]} attempt(s)): {str(exc)[:300]}")
        result["attempts"] = attempts[job.index]
        done += 1
        if on_progress is not None:
            on_progress(done, len(jobs))
        yield result
