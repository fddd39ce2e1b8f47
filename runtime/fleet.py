"""Many scripts at once, each in its own jailed worker: `fdsl run-many` and `run_many()`.

A job is one script with its own sandbox and limits (`Job`); jobs run on a local pool of
broker processes (`jobs` of them, default: the machine's cores), each of which runs one script
at a time through `run_script`, so every script gets a fresh worker with every hardening layer,
exactly as `fdsl run` would. Results come back as they finish, as JSON-ready dicts
(`RunResult.as_json()` plus the job's `index`, `script`, `id` and `attempts`).

No result is lost silently: a broker process that dies (killed, out of memory) breaks the pool;
the jobs that were running in it are run again in a new pool, once, and a job whose process
died twice is reported as such (kind InternalError, exit_code null), never dropped.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import OrderedDict
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
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
    language = language_for(script.name)
    if language is None:
        raise RunSetupError(f"{path}: cannot tell its language: use a .fdsl or .ps extension")
    return Job(index, path, source, language.name, **_common(defaults))


def _common(values: dict) -> dict:
    return {"root": values.get("root"), "mounts": list(values.get("mounts") or []), "project": values.get("project"),
            "limits": {k: values[k] for k in LIMIT_KEYS if values.get(k) is not None}}


def jobs_from_jsonl(path: str, defaults: dict, first_index: int = 0) -> list[Job]:
    """One job per line: {"script": PATH} or {"source": TEXT, "lang": "fdsl"|"ps"}, and any of
    id, root, mounts, project and the limits (timeout, memory_mb, ...); the command line's
    options are the defaults of every line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RunSetupError(f"--from {path}: cannot read it: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise RunSetupError(f"--from {path}: not UTF-8 text") from None
    jobs = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            jobs.append(_job_line(path, number, line, defaults, first_index + len(jobs)))
        if len(jobs) > MAX_JOBS:
            raise RunSetupError(f"--from {path}: more than {MAX_JOBS} jobs")
    return jobs


def _job_line(path: str, number: int, line: str, defaults: dict, index: int) -> Job:
    where = f"--from {path}, line {number}"
    try:
        entry = json.loads(line)
    except json.JSONDecodeError as exc:
        raise RunSetupError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(entry, dict):
        raise RunSetupError(f"{where}: expected an object such as {{\"script\": \"a.fdsl\"}}")
    unknown = sorted(set(entry) - JOB_KEYS)
    if unknown:
        raise RunSetupError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(JOB_KEYS))})")
    if ("script" in entry) == ("source" in entry):
        raise RunSetupError(f"{where}: give exactly one of \"script\" (a path) and \"source\" (the script's text)")
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
        if not isinstance(entry["source"], str) or lang not in ("fdsl", "ps"):
            raise RunSetupError(f"{where}: \"source\" must be text and \"lang\" \"fdsl\" or \"ps\"")
        job = Job(index, f"<source {number}>", entry["source"], lang, **_common(values))
    job.id = entry.get("id")
    return job


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
            "figures": {}, "warnings": []}


def run_many(jobs: list[Job], workers: int | None = None, approve_all: bool = False,
             on_progress: Callable[[int, int], None] | None = None) -> Iterator[dict]:
    """Each job's result as it finishes (in completion order; `index` says which job). At most
    `workers` jobs are in flight, so when a pool process dies the jobs it broke were running."""
    workers = max(1, workers or os.cpu_count() or 1)
    attempts = {job.index: 0 for job in jobs}
    queue = list(reversed(jobs))
    done = 0
    while queue:
        context = multiprocessing.get_context("forkserver")
        with ProcessPoolExecutor(max_workers=min(workers, len(queue)), mp_context=context) as pool:
            running: dict = {}
            broken = False
            while (queue and not broken) or running:
                while queue and not broken and len(running) < workers:
                    job = queue.pop()
                    attempts[job.index] += 1
                    running[pool.submit(run_job, job, approve_all)] = job
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    job = running.pop(future)
                    try:
                        result = future.result()
                    except (KeyboardInterrupt, SystemExit):
                        raise
                    except BrokenProcessPool:
                        broken = True
                        if attempts[job.index] < MAX_ATTEMPTS:
                            queue.append(job)  # run again, in the next pool
                            continue
                        result = _failed(job, "InternalError", f"the process running this script died "
                                                               f"{MAX_ATTEMPTS} times; it was not run again")
                    except Exception as exc:  # noqa: BLE001 - reported with the job, never dropped
                        result = _failed(job, "InternalError", f"{type(exc).__name__}: {exc}")
                    result["attempts"] = attempts[job.index]
                    done += 1
                    if on_progress is not None:
                        on_progress(done, len(jobs))
                    yield result


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
