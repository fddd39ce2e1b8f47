"""The escape corpus: fuzz/corpus/*.py, one known sandbox-escape or DoS payload per file.

Each file starts with a header of comment lines:

    # attack: <attack class>                  (a row of the table in docs/security.md)
    # stops: <layer>: <regex>                 the restricted run
    # os: <layer>: <regex>                    the os run
    # baseline: -<layer> [-<layer>...] [+interrupt] => <verdict>
    # <what the payload tries>

Every payload is run three times, each through `runtime.audit.audit` (what `fdsl audit` runs):

- restricted: `--mode restricted`, every layer in force. It must be stopped by the layer that
  `stops:` names, with an error matching its regex (so a payload that fails for an unrelated
  reason, say a NameError on its first line, fails the check instead of counting as a stop).
- os: `--mode os`, RestrictedPython and the guards removed: plain Python with full builtins and
  the restricted globals (API objects, hooks) in reach, in the fully hardened worker with the
  real broker and limits. It must be stopped where `os:` says: defense in depth.
- baseline: the layers the header lists removed AND the process jail off (no hardening layer).
  The payload must then succeed, with the named verdict: this is what proves it real.

A payload succeeds by printing ESCAPED (or showing the canary or a host path of the sandbox),
by completing, or, for a DoS payload, by outliving its deadline or exceeding its memory or
output (see `verdict`). In the restricted and os runs anything but a stop is an escape.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from fuzz.hostile import pdf_bomb

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"

# The layers a run can tell apart, outermost first, and what each means.
LAYER_ORDER = {
    "restrictedpython": "compile_restricted refuses the code (names starting with '_', exec/eval, star imports, async, except*...)",
    "guards": "the restricted globals: only a few built-ins (no getattr, type, open, __import__, exception classes...), whitelisted attributes per type, guarded indexing, iteration and writes",
    "worker": "the worker's run loop: a BaseException the script raises (SystemExit, KeyboardInterrupt...) ends the run as a reported failure, never as a success",
    "broker": "the broker refuses the request: validation, the Sandbox policy, virtual paths (a host path names nothing), the regex deadline",
    "limits": "the deadline, the memory limit (address-space rlimit, resident watch), the output cap, the CPU rlimit, Python's recursion and int-digit limits, the API's range cap",
    "process": "the worker's jail: Landlock, seccomp, namespaces, uid, and the NOFILE/NPROC rlimits (process/<part> names the part that answered)",
}
# The part of the jail an errno comes from, for "process/<part>".
PROCESS_PARTS = {"seccomp": "EPERM from the seccomp filter (an import after start-up finds no module)",
                 "landlock": "EACCES from Landlock",
                 "rlimits": "EMFILE/EAGAIN from RLIMIT_NOFILE/RLIMIT_NPROC"}
# What a baseline can remove (the jail is always off in a baseline) or add.
REMOVABLE = ("restrictedpython", "guards", "worker", "broker", "limits")
ADDABLE = {"interrupt": "an exception-based deadline: KeyboardInterrupt raised into the script every 0.3 s, as a weaker sandbox would stop it"}
VERDICTS = {
    "escaped": "printed ESCAPED, or showed the canary or a host path of the sandbox",
    "completed": "ran to its end (for the naive runner: exited as a success)",
    "outlives": "was still running at its deadline",
    "memory": "went past its memory limit",
    "output": "went past its output cap",
    "crash": "crashed the interpreter (a signal)",
}

CORPUS_TIMEOUT = 2.0
CORPUS_MEMORY_MB = 128
CORPUS_MAX_OUTPUT = 50_000
# A baseline that removes "limits" runs with these multiples: a real bomb exceeds even those.
LIFTED_TIMEOUT, LIFTED_MEMORY, LIFTED_OUTPUT = 2, 4, 4
# A stopped run must end by its deadline plus this (worker start and kill on a busy machine).
DEADLINE_SLACK = 1.5
# A file in the corpus root on which a backtracking engine takes exponential time.
BACKTRACK_FILE = ("data/backtrack.txt", "a" * 40 + "!\n")
# A document whose lines made the table-of-contents patterns backtrack cubically (~50 ms a line).
TOC_BOMB_FILE = ("data/toc_bomb.txt", ("1 a" + " " * 290 + "x1\n") * 200)
# One page of 80 KB, asked many times in one request (a reply the broker once built whole).
WIDE_FILE = ("amplify/wide.txt", ("w" * 1000 + "\n") * 80)
# A 0.2 MB PDF whose text extraction needs ~2 GB (fuzz/hostile.py).
PDF_BOMB_FILE = ("amplify/bomb.pdf", pdf_bomb(3_000_000))
CORPUS_FILES = (BACKTRACK_FILE, TOC_BOMB_FILE, WIDE_FILE, PDF_BOMB_FILE)

HEADER = re.compile(r"#\s*(attack|stops|os|baseline):\s*(.+)")
LAYER_LINE = re.compile(r"([a-z]+(?:/[a-z]+)?):\s*(.+)")
BASELINE_LINE = re.compile(r"((?:[-+][a-z]+\s*)+)=>\s*([a-z]+)")

# Errors a run can end with, by layer; anything else is unexplained and fails the check.
GUARD_ERRORS = re.compile(
    r"variable '\w+' is not defined|has no attribute|cannot be indexed|cannot iterate over|cannot be modified"
    r"|attribute names cannot start with '_'|__import__ not found|__build_class__ not found"
)
PROCESS_ERRORS = {
    # "No module named": an import after start-up; seccomp refuses the importer's directory
    # listings (EPERM), which it takes for empty directories. Each payload's baseline proves
    # the module imports without the jail.
    "seccomp": re.compile(r"\[Errno 1\]|Operation not permitted|No module named"),
    "landlock": re.compile(r"\[Errno 13\]|Permission denied"),
    "rlimits": re.compile(r"\[Errno (24|11)\]|Too many open files|Resource temporarily unavailable"),
}
LIMIT_ERRORS = re.compile(r"Exceeds the limit \(\d+ digits\)|more than \d+ digits cannot be turned into text"
                          r"|can't start new thread|maximum recursion depth")
WORKER_ERRORS = re.compile(r"(SystemExit|KeyboardInterrupt|GeneratorExit)\b")


@dataclass
class Expectation:
    layer: str
    reason: re.Pattern


@dataclass
class Entry:
    name: str
    attack: str
    description: str
    code: str
    stops: Expectation
    os: Expectation
    removed: frozenset[str]
    added: frozenset[str]
    verdict: str


@dataclass
class Run:
    mode: str  # "restricted" | "os" | "baseline"
    layer: str  # a LAYER_ORDER key (process/<part>), "none" (completed), "crash" or "unexplained"
    verdict: str  # a VERDICTS key or "stopped"
    detail: str
    output: str = ""
    seconds: float = 0.0

    @property
    def escaped(self) -> bool:
        # Outliving the deadline or passing a limit is the limits' stop, not an escape.
        return self.mode != "baseline" and self.verdict in ("escaped", "completed")


@dataclass
class Report:
    entry: Entry
    runs: dict[str, Run] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _expectation(path: Path, field_name: str, text: str) -> Expectation:
    match = LAYER_LINE.fullmatch(text)
    if not match:
        raise ValueError(f"{path.name}: '# {field_name}:' needs '<layer>: <regex>'")
    layer, reason = match.groups()
    top, _, part = layer.partition("/")
    if field_name == "os" and layer == "none":
        return Expectation(layer, re.compile(reason))
    if top not in LAYER_ORDER or (part and (top != "process" or part not in PROCESS_PARTS)):
        raise ValueError(f"{path.name}: '# {field_name}:' layer {layer!r} is not one of {sorted(LAYER_ORDER)} (process/<part>: {sorted(PROCESS_PARTS)})")
    return Expectation(layer, re.compile(reason))


def parse_entry(path: Path) -> Entry:
    code = path.read_text(encoding="utf-8")
    fields, description = {}, ""
    for line in code.splitlines():
        if not line.startswith("#"):
            break
        match = HEADER.match(line)
        if match:
            fields[match.group(1)] = match.group(2).strip()
        elif not description:
            description = line.lstrip("# ").strip()
    missing = {"attack", "stops", "os", "baseline"} - set(fields)
    if missing or not description:
        raise ValueError(f"{path.name}: the header needs # attack:, # stops:, # os:, # baseline: and a description (missing {sorted(missing)})")
    baseline = BASELINE_LINE.fullmatch(fields["baseline"])
    if not baseline:
        raise ValueError(f"{path.name}: '# baseline:' needs '-layer [-layer...] [+interrupt] => verdict'")
    changes = baseline.group(1).split()
    removed = frozenset(c[1:] for c in changes if c.startswith("-"))
    added = frozenset(c[1:] for c in changes if c.startswith("+"))
    if not removed <= set(REMOVABLE) or not added <= set(ADDABLE) or baseline.group(2) not in VERDICTS:
        raise ValueError(f"{path.name}: baseline {fields['baseline']!r}: remove from {REMOVABLE}, add from {sorted(ADDABLE)}, verdict one of {sorted(VERDICTS)}")
    return Entry(path.stem, fields["attack"], description, code, _expectation(path, "stops", fields["stops"]),
                 _expectation(path, "os", fields["os"]), removed, added, baseline.group(2))


def load_corpus(directory: Path = CORPUS_DIR) -> list[Entry]:
    return [parse_entry(path) for path in sorted(directory.glob("*.py"))]


class RecordingBroker:
    """Wraps the run's broker and remembers the error replies it sent, so a failure can be
    attributed to the broker (its reply) rather than to the guards (raised in the worker)."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.errors: list[str] = []

    @property
    def requests(self) -> int:
        return self.broker.requests

    @property
    def deadline_replies(self) -> int:
        return self.broker.deadline_replies

    def reply(self, message: dict) -> dict:
        answer = self.broker.reply(message)
        if answer.get("t") == "err":
            self.errors.append(str(answer.get("msg", "")))
        return answer

    def reply_frame(self, message: dict) -> bytes:
        return self.broker.encode_reply(self.reply(message))


def classify(outcome: str, error: dict | None, broker_errors=()) -> str:
    """The layer that ended a run, from its outcome and error; "unexplained" when no layer's
    known errors match (an error unrelated to any layer is never counted as a stop)."""
    error = error or {}
    message, kind = str(error.get("msg", "")), error.get("kind")
    if outcome == "completed":
        return "none"
    if message.startswith("code rejected by RestrictedPython"):
        return "restrictedpython"
    # The run's deadline is a limit, whether the supervisor or the broker (its regexes) enforced it.
    if outcome == "timeout" or kind in ("LimitError", "TimeoutError") or LIMIT_ERRORS.search(message):
        return "limits"
    if message and message in broker_errors:
        return "broker"
    if outcome == "crash":
        return "crash"
    if WORKER_ERRORS.match(message):
        return "worker"
    for part, pattern in PROCESS_ERRORS.items():
        if pattern.search(message):
            return f"process/{part}"
    if GUARD_ERRORS.search(message):
        return "guards"
    return "unexplained"


def verdict(outcome: str, error: dict | None, text: str, canary: str | None, host_strings=()) -> str:
    """What a run achieved: one of VERDICTS, or "stopped"."""
    error = error or {}
    message, kind = str(error.get("msg", "")), error.get("kind")
    if "ESCAPED" in text or (canary and canary in text) or any(h in text for h in host_strings):
        return "escaped"
    if outcome == "completed":
        return "completed"
    if outcome == "timeout" and message.startswith("the script did not finish"):
        return "outlives"
    if kind == "LimitError" and message.startswith("memory limit exceeded"):
        return "memory"
    if kind == "LimitError" and message.startswith("output limit exceeded"):
        return "output"
    if outcome == "crash" and "crashed" in message:
        return "crash"
    return "stopped"


# The os and baseline runs: this module runs in the worker in mode "os" (full builtins, a
# `broker` client) and executes the payload with the layers named in `removed` taken out.
WRAPPER = '''\
import builtins as _builtins, sys as _sys
from RestrictedPython import compile_restricted_exec as _compile_restricted
from RestrictedPython.Guards import guarded_iter_unpack_sequence as _iter_unpack, guarded_unpack_sequence as _unpack
from sandbox_worker.lang.fdsl import api as _api, guards as _guards
_removed, _added, _root, _source = {removed!r}, {added!r}, {root!r}, {source!r}
_namespace = _guards.restricted_globals(broker)
_names = _namespace["__builtins__"]
if "limits" in _removed:
    _names["inclusive_range"] = lambda a, b: list(range(a, b + 1) if b >= a else range(a, b - 1, -1))
    _sys.setrecursionlimit(10 ** 8)
    _sys.set_int_max_str_digits(0)
if "broker" in _removed:
    exec({naive!r}, _naive := {{"ROOT": _root}})
    _names["File"], _names["Directory"] = _naive["NaiveFile"], _naive["NaiveDirectory"]
    _guards.ALLOWED_ATTRIBUTES[_naive["NaiveFile"]] = _guards.ALLOWED_ATTRIBUTES[_api.FileObject]
    _guards.ALLOWED_ATTRIBUTES[_naive["NaiveDirectory"]] = _guards.ALLOWED_ATTRIBUTES[_api.DirectoryObject]
if "guards" in _removed:
    # Every Python built-in, the script's own versions winning (print, len, str... as scripts see them).
    _namespace["__builtins__"] = {{**vars(_builtins), **_names}}
    if "restrictedpython" not in _removed:
        _namespace.update(
            _getattr_=getattr, _getitem_=lambda obj, key: obj[key], _getiter_=iter, _write_=lambda obj: obj,
            _iter_unpack_sequence_=_iter_unpack, _unpack_sequence_=_unpack, _apply_=lambda f, *a, **k: f(*a, **k),
            __metaclass__=type, __name__="__main__",
        )
if "restrictedpython" in _removed:
    _code = compile(_source, "<script>", "exec")
else:
    _compiled = _compile_restricted(_source, filename="<script>")
    if _compiled.errors:
        raise RuntimeError("code rejected by RestrictedPython: " + "; ".join(_compiled.errors))
    _code = _compiled.code
if "interrupt" in _added:
    import signal as _signal
    def _deadline(signum, frame):
        raise KeyboardInterrupt("the deadline, as an exception")
    _signal.signal(_signal.SIGALRM, _deadline)
    _signal.setitimer(_signal.ITIMER_REAL, 0.3, 0.3)
exec(_code, _namespace)
'''

# File() and Directory() with the broker's policy removed: a path is joined to the root with
# os.path.join (an absolute path replaces it, '..' climbs, symlinks are followed) and opened,
# and regexes run with no deadline. What a naive file API does.
NAIVE_API = '''\
import os, re, regex

class NaiveFile:
    def __init__(self, path):
        self.host = os.path.join(ROOT, path)
        self.path = path

    def read(self, pages=None):
        with open(self.host, "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
        if isinstance(pages, list):  # the whole reply built before anyone measures it
            return "".join(text for _ in pages)
        return text

    @property
    def page_count(self):
        if not self.host.endswith(".pdf"):
            return 1
        import pymupdf  # a PDF parsed in the process that asks, as a naive API does
        with open(self.host, "rb") as handle:
            return len([page.get_text() for page in pymupdf.open(stream=handle.read())])

    def snippets(self, pattern, max_results=5, context_chars=80, ignore_case=False):
        text = self.read()
        return [text[max(0, m.start() - context_chars):m.end() + context_chars]
                for m, _ in zip(regex.finditer(pattern, text), range(max_results))]

    def lines(self, offset=1, limit=2000):
        rows = self.read().splitlines()[offset - 1:offset - 1 + limit]
        return [str(offset + i) + ": " + row for i, row in enumerate(rows)]

    def head(self):
        return "\\n".join(self.read().splitlines()[:10])

    def search(self, pattern, ignore_case=False):
        return [1] if regex.search(pattern, self.read(), regex.MULTILINE) else []

    def table(self, max_items=50):
        from runtime.services.documents import DOTTED_TOC, NUMBERED_TOC  # the TOC patterns, on a backtracking engine
        return [line for line in self.read().splitlines() if re.match(DOTTED_TOC, line) or re.match(NUMBERED_TOC, line)]


class NaiveDirectory:
    def __init__(self, path, recursive=True):
        self.host = os.path.join(ROOT, path)
        self.path = path

    def _walk(self):
        for folder, _dirs, names in os.walk(self.host, followlinks=True):
            for name in names:
                path = os.path.join(folder, name)
                if os.access(path, os.R_OK) and os.path.isfile(path):
                    yield path

    def files(self, recursive=None):
        return [NaiveFile(path) for path in self._walk()]

    def list(self):
        return sorted(os.listdir(self.host))

    def find(self, glob):
        # "*" and "**" as greedy regexes, as naive glob code translates them
        parts = re.split(r"(\\*\\*|\\*|\\?)", glob)
        rx = "".join({"**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part)) for part in parts)
        return [p for p in self._walk() if re.fullmatch(rx, os.path.relpath(p, self.host))]

    def grep(self, pattern, glob=None, ignore_case=True):
        hits = []
        for path in self._walk():
            for line in NaiveFile(path).read().splitlines():
                if regex.search(pattern, line, regex.IGNORECASE if ignore_case else 0):
                    hits.append(line)
        return hits

    def search(self, pattern, scope="name", in_content=False, recursive=None, ignore_case=False):
        if scope == "content" or in_content:
            return [NaiveFile(p) for p in self._walk() if regex.search(pattern, NaiveFile(p).read(), regex.MULTILINE)]
        return [NaiveFile(p) for p in self._walk() if regex.search(pattern, os.path.basename(p))]
'''

# The baseline of a payload that removes "worker": a plain CPython process that executes the
# script and, like a naive runner, treats anything but an Exception as the script's own exit.
NAIVE_RUNNER = '''\
import sys
source = sys.stdin.read()
try:
    exec(compile(source, "<script>", "exec"), {"__name__": "__main__"})
except Exception as exc:
    print("the script failed:", type(exc).__name__, exc)
    sys.exit(1)
'''


def wrapped(entry: Entry, root, removed, added=frozenset()) -> str:
    return WRAPPER.format(removed=sorted(removed), added=sorted(added), root=str(root), source=entry.code, naive=NAIVE_API)


def _run(mode: str, entry: Entry, root, canary, host_strings, *, audit_mode: str, code: str,
         layers=None, scale: int = 1) -> Run:
    from runtime.audit import audit, broker_for

    timeout = CORPUS_TIMEOUT * (LIFTED_TIMEOUT if scale > 1 else 1)
    broker = RecordingBroker(broker_for(root, time.monotonic() + timeout))
    started = time.monotonic()
    result = audit(code, mode=audit_mode, root=root, timeout=timeout,
                   memory_mb=CORPUS_MEMORY_MB * (LIFTED_MEMORY if scale > 1 else 1),
                   max_output=CORPUS_MAX_OUTPUT * (LIFTED_OUTPUT if scale > 1 else 1), layers=layers, broker=broker)
    error = result.error or {}
    text = result.output + str(error.get("msg", ""))
    return Run(
        mode=mode,
        layer=classify(result.outcome, result.error, broker.errors),
        verdict=verdict(result.outcome, result.error, text, canary, host_strings),
        detail=f"{result.outcome}: {error.get('kind')}: {error.get('msg')}",
        output=result.output[-300:],
        seconds=time.monotonic() - started,
    )


def run_restricted(entry: Entry, root, host_strings=(), canary: str | None = None) -> Run:
    """`fdsl audit --mode restricted`: every layer in force."""
    return _run("restricted", entry, root, canary, host_strings, audit_mode="restricted", code=entry.code)


def run_os(entry: Entry, root, host_strings=(), canary: str | None = None) -> Run:
    """`fdsl audit --mode os`: RestrictedPython and the guards removed, the jail in force."""
    return _run("os", entry, root, canary, host_strings, audit_mode="os",
                code=wrapped(entry, root, {"restrictedpython", "guards"}))


def run_baseline(entry: Entry, root, host_strings=(), canary: str | None = None) -> Run:
    """The payload with its header's layers removed and no jail: it must succeed."""
    if "worker" in entry.removed:
        return run_naive_runner(entry, canary, host_strings)
    return _run("baseline", entry, root, canary, host_strings, audit_mode="os", layers=frozenset(),
                code=wrapped(entry, root, entry.removed, entry.added), scale=2 if "limits" in entry.removed else 1)


def run_naive_runner(entry: Entry, canary=None, host_strings=()) -> Run:
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", NAIVE_RUNNER], input=entry.code, capture_output=True,
                              text=True, timeout=CORPUS_TIMEOUT * LIFTED_TIMEOUT, cwd="/", env={})
    except subprocess.TimeoutExpired:
        return Run("baseline", "none", "outlives", "timeout: naive runner", seconds=time.monotonic() - started)
    outcome = "completed" if proc.returncode == 0 else "failed"
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [""]
    error = None if proc.returncode == 0 else {"kind": "RuntimeError", "msg": tail[0]}
    return Run("baseline", "none" if error is None else "unexplained", verdict(outcome, error, proc.stdout, canary, host_strings),
               f"{outcome}: exit status {proc.returncode}: {tail[0][:200]}", proc.stdout[-300:], time.monotonic() - started)


def check_stop(entry: Entry, run: Run, expected: Expectation) -> list[str]:
    if expected.layer == "none":
        # Claimed harmless in mode os: its goal is the worker's own memory, readable by design.
        if run.layer != "none" or not expected.reason.search(run.detail):
            return [f"{entry.name}: the {run.mode} run was expected to complete (nothing to gain there), got {run.layer} ({run.detail[:300]})"]
        return []
    if run.seconds > CORPUS_TIMEOUT + DEADLINE_SLACK:
        return [f"{entry.name}: the {run.mode} run took {run.seconds:.1f} s, past its {CORPUS_TIMEOUT:g} s deadline ({run.detail[:300]})"]
    if run.escaped:
        return [f"{entry.name}: ESCAPED in the {run.mode} run ({run.detail[:300]}; output {run.output[-120:]!r})"]
    if run.layer != expected.layer:
        return [f"{entry.name}: the {run.mode} run was stopped by {run.layer}, its header says {expected.layer} ({run.detail[:300]})"]
    if not expected.reason.search(run.detail):
        return [f"{entry.name}: the {run.mode} run was stopped by {run.layer} but not for the stated reason /{expected.reason.pattern}/ ({run.detail[:300]})"]
    return []


def check_entry(entry: Entry, root, host_strings=(), canary: str | None = None, modes=("restricted", "os", "baseline")) -> Report:
    """Run the payload in each mode and list what contradicts its header."""
    report = Report(entry)
    if "restricted" in modes:
        report.runs["restricted"] = run = run_restricted(entry, root, host_strings, canary)
        report.problems += check_stop(entry, run, entry.stops)
    if "os" in modes:
        report.runs["os"] = run = run_os(entry, root, host_strings, canary)
        report.problems += check_stop(entry, run, entry.os)
    if "baseline" in modes:
        report.runs["baseline"] = run = run_baseline(entry, root, host_strings, canary)
        if run.verdict != entry.verdict:
            report.problems.append(f"{entry.name}: not proven real: its baseline ({describe_baseline(entry)}) {run.verdict}, "
                                   f"expected {entry.verdict} ({run.detail[:300]}; output {run.output[-120:]!r})")
    return report


def describe_baseline(entry: Entry) -> str:
    changes = [f"-{name}" for name in REMOVABLE if name in entry.removed] + [f"+{name}" for name in sorted(entry.added)]
    return " ".join(changes + ["-process"])
