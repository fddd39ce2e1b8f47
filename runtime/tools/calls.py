"""`Tools(sandbox).call(name, params) -> str`: the agent-facing tools of definitions.py, answered
over one Sandbox.

    tools = Tools(root="examples/docs")
    tools.call("grep", {"pattern": "language model", "glob": "**/*.md"})   # JSON text
    tools.call("read", {"path": "guides/intro.md", "limit": 20})           # numbered lines

grep, read, ls and find run here, in the trusted process, through FilesService over the
sandbox (the policy, the safe opens, the per-document limits); run_fdsl runs its script in a
fresh jailed worker over the same sandbox, taken from a Session (runtime/session.py: a worker
forked ahead, the compiled scripts and parsed documents kept between calls; each call with its
own timeout). Every failure is a ToolError whose message is what the model reads ("Kind:
message", virtual paths only): a bad parameter names it, a script error is located in the
script, anything unexpected is named by its type alone (its details could hold a host path)
and logged.

The two backends an index may replace later are `grep_backend` and `read_backend`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

from runtime.errors import LimitError, ScriptError
from runtime.fs.sandbox import Sandbox
from runtime.fs.vfs import VirtualFS
from runtime.index.prefilter import RunIndex
from runtime.services.documents import DocumentStore
from runtime.services.files import MAX_ENTRIES, FilesService
from runtime.services.pdf import PdfExtractor
from runtime.tools.definitions import (
    MAX_LINE_CHARS,
    MAX_READ_CHARS,
    MAX_RUN_TIMEOUT_S,
    SPECS,
    TOOL_NAMES,
    ToolSpec,
    tool_definitions,
)

log = logging.getLogger(__name__)

DEFAULT_CALL_TIMEOUT_S = 30.0  # grep/read/ls/find: the deadline of one call's walk and reads
DEFAULT_MAX_OUTPUT = 100_000  # bytes a run_fdsl script may print
_TYPES = {"string": str, "integer": int, "boolean": bool}
_TYPE_NAMES = {str: "string", int: "integer", bool: "boolean", float: "number", list: "array", dict: "object",
               type(None): "null"}


class ToolError(Exception):
    """A tool call that failed; str() is the message for the model ("Kind: message"), after
    `before` (a failed script's output so far)."""

    def __init__(self, kind: str, message: str, *, before: str = "") -> None:
        super().__init__(f"{before}{kind}: {message}")
        self.kind = kind


def _shown(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def check_params(spec: ToolSpec, params: object) -> dict:
    """The call's parameters checked against the spec (types, ranges, lengths, unknown keys),
    with defaults applied; a ToolError naming the parameter otherwise. None counts as absent."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ToolError("UsageError", f"{spec.name}: the parameters must be an object, not {_type_name(params)}")
    names = [p.name for p in spec.params]
    unknown = [key for key in params if key not in names]
    if unknown:
        raise ToolError("UsageError", f"{spec.name}: unknown parameter {_shown(unknown[0])} "
                                      f"(parameters: {', '.join(names)})")
    out = {}
    for p in spec.params:
        value = params.get(p.name)
        if value is None:
            if p.required:
                raise ToolError("UsageError", f"{spec.name}: missing required parameter {p.name!r}")
            out[p.name] = p.default
            continue
        if p.type == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)  # some models write 10.0
        expected = _TYPES[p.type]
        if type(value) is not expected:  # bool is not an integer here
            article = "an" if p.type == "integer" else "a"
            raise ToolError("UsageError", f"{spec.name}: parameter {p.name!r} must be {article} {p.type}, "
                                          f"not {_type_name(value)}")
        if p.max_length is not None and len(value) > p.max_length:
            raise ToolError("UsageError", f"{spec.name}: parameter {p.name!r} is too long ({len(value)} "
                                          f"characters, at most {p.max_length})")
        low = p.minimum if p.minimum is not None else value
        high = p.maximum if p.maximum is not None else value
        if p.type == "integer" and not low <= value <= high:
            bounds = f"from {p.minimum} to {p.maximum}" if p.maximum is not None else f"{p.minimum} or more"
            shown = value if value.bit_length() < 64 else f"a number of {value.bit_length()} bits"
            raise ToolError("UsageError", f"{spec.name}: parameter {p.name!r} must be {bounds}, not {shown}")
        out[p.name] = value
    return out


def _type_name(value: object) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


# ---------------------------------------------------------------------------------- backends


def grep_backend(service: FilesService, pattern: str, glob: str | None, max_results: int,
                 ignore_case: bool) -> dict:
    """{"hits": [{"path", "line", "content"}], "total", "truncated", "skipped", "skipped_count"}:
    matching lines of the documents whose root-relative path matches `glob`, in (path, line)
    order (today FilesService). A glob's leading plain directories are where the walk starts
    ("docs/**/*.md" walks docs only: faster, and a mount elsewhere that needs approval is not
    touched); the same paths match."""
    directory, rest = split_glob(glob)
    return service.grep(directory, pattern, rest, ignore_case, max_results, max_line_chars=MAX_LINE_CHARS, partial=True)


def split_glob(glob: str | None) -> tuple[str, str | None]:
    """("docs/api", "**/*.md") for "docs/api/**/*.md": the leading components without wildcards,
    and the rest (at least one component); ("/", glob) when there are none."""
    if glob is None or glob.startswith("/"):
        return "/", glob
    parts = glob.split("/")
    plain = 0
    while plain < len(parts) - 1 and parts[plain] not in ("", ".", "..") and not set(parts[plain]) & set("*?["):
        plain += 1
    return "/" + "/".join(parts[:plain]), "/".join(parts[plain:])


def tool_glob(service: FilesService, glob: str | None, under: str) -> str | None:
    """A glob as a model writes it, as the tools match it: "/docs/*.md" and "./docs/*.md" are
    "docs/*.md" (globs are relative: to the root for grep, to `path` for find), "docs//a.md" and
    "docs/./a.md" are "docs/a.md", and ".." is refused (it could match nothing); a plain name of
    a directory ("docs") means everything under it; braces, which are not expanded here, are
    refused rather than matching nothing. None (or nothing left): every file."""
    if glob is None:
        return None
    shown = glob
    if "{" in glob or "}" in glob:
        raise ToolError("UsageError", f"glob {_shown(shown)}: braces ({{a,b}}) are not expanded here; "
                                      "make one call per alternative")
    parts = [part for part in glob.split("/") if part not in ("", ".")]  # "a//b", "a/./b", "a/"
    if ".." in parts:
        raise ToolError("UsageError", f"glob {_shown(shown)}: '..' matches nothing: globs match paths below "
                                      "the directory searched")
    glob = "/".join(parts)
    if not glob:
        return None
    if not set(glob) & set("*?["):
        try:
            service.vfs.resolve_dir(f"{under.rstrip('/')}/{glob}")
            return glob + "/**"
        except ScriptError:
            pass  # not a directory: the glob names a file
    return glob


def read_backend(service: FilesService, path: str, offset: int, limit: int) -> tuple[list[str], int]:
    """Lines offset .. offset+limit-1 (1-based) of a document, and how many it has."""
    res, st = service.vfs.resolve_file(path)
    lines = service.store.get(service.vfs, res, st).lines
    return lines[offset - 1: offset - 1 + limit], len(lines)


# ---------------------------------------------------------------------------------- the tools


TOOLS_PDF_CPU_S = 600  # the PDF extractor serves many calls: its CPU budget, renewed when a call needs more


class Tools:
    """The tools over `sandbox` (or `root`, mounted read-only at "/"). `approve(description)`
    answers a mount's read approvals (None: refused). One call runs at a time."""

    max_entries = MAX_ENTRIES  # the entries one ls or find may walk (FilesService's cap)

    def __init__(self, sandbox: Sandbox | None = None, *, root: str | Path | None = None, approve=None,
                 isolation: str = "best", memory_mb: int = 256, max_output: int = DEFAULT_MAX_OUTPUT,
                 call_timeout: float = DEFAULT_CALL_TIMEOUT_S) -> None:
        if sandbox is None:
            from runtime.fs.options import sandbox_from_options

            sandbox = sandbox_from_options(root if root is not None else ".")
        self.sandbox = sandbox
        self.approve = approve
        self.isolation, self.memory_mb, self.max_output = isolation, memory_mb, max_output
        self.call_timeout = call_timeout
        self.vfs = VirtualFS(sandbox, approve=approve)
        # documents stay parsed between calls (a read after a grep costs nothing)
        self.store = DocumentStore(extractor=PdfExtractor(isolation=isolation, cpu_seconds=TOOLS_PDF_CPU_S))
        # the index (runtime/index): grep skips the documents it rules out, a stored one is used
        # when `fdsl index build` made it, and what calls read is learned for the next ones
        self.index = RunIndex()
        self._lock = threading.Lock()
        self._run_session = None  # run_fdsl's (_session)

    @staticmethod
    def definitions(format: str = "openai", *, strict: bool = False) -> list[dict]:
        return tool_definitions(format, strict=strict)

    def close(self) -> None:
        """End the PDF extractor, if a PDF was read, and run_fdsl's sessions (their workers)."""
        self.store.close()
        with self._lock:
            session, self._run_session = self._run_session, None
        if session is not None:
            session.close()

    def call(self, name: str, params: dict | None = None) -> str:
        """Run tool `name` with `params`; its text result, or a ToolError with the message."""
        spec = SPECS.get(name) if isinstance(name, str) else None
        if spec is None:
            raise ToolError("UsageError", f"unknown tool: {_shown(name)} (tools: {', '.join(TOOL_NAMES)})")
        with self._lock:
            try:
                return getattr(self, f"_{spec.name}")(**check_params(spec, params))
            except ToolError:
                raise
            except ScriptError as exc:  # the policy, a missing file, a bad regex or glob...
                raise ToolError(exc.kind, str(exc)) from None
            except Exception as exc:  # its message could hold a host path: the type only
                log.exception("tool %s failed", spec.name)
                raise ToolError("InternalError", f"{spec.name} failed unexpectedly ({type(exc).__name__})") from None

    def _service(self) -> FilesService:
        deadline = time.monotonic() + self.call_timeout
        self.store.begin_run(deadline)  # the call's deadline, its own damaged-PDF warnings, an extractor with CPU left
        self.vfs.forget_listing_warnings()  # and its own names left out
        return FilesService(self.vfs, self.store, deadline=deadline, index=self.index, max_entries=self.max_entries)

    def _grep(self, pattern: str, glob: str | None, max_results: int, ignore_case: bool) -> str:
        service = self._service()
        found = grep_backend(service, pattern, tool_glob(service, glob, "/"), max_results, ignore_case)
        out = {"results": found["hits"], "total": found["total"], "truncated": found["truncated"]}
        if found.get("complete") is False:  # the call's time ran out: what was found, and that there may be more
            out["complete"] = False
        if found.get("skipped_count"):
            out["skipped"], out["skipped_count"] = found["skipped"], found["skipped_count"]
        warnings = self.store.warnings() + self.index.warnings + self.vfs.listing_warnings()
        if warnings:
            out["warnings"] = warnings
        return json.dumps(out, ensure_ascii=False)

    def _read(self, path: str, offset: int, limit: int) -> str:
        lines, total = read_backend(self._service(), path, offset, limit)
        if not lines:  # the seed's answer for an offset past the end (and an empty document)
            return ""
        width = max(3, len(str(offset + len(lines) - 1)))
        shown, size = [], 0
        for n, line in enumerate(lines, start=offset):
            text = f"{n:>{width}}  {line}" if line else f"{n:>{width}}"
            if size + len(text) > MAX_READ_CHARS and shown:
                break
            if len(text) > MAX_READ_CHARS:  # one line over the whole budget: its start, said to be cut
                text = f"{text[:MAX_READ_CHARS]}... [line cut: {len(line)} characters]"
            shown.append(text)
            size += len(text) + 1
        last = offset + len(shown) - 1
        if last < total:
            shown.append(f"[truncated: lines {offset}-{last} of {total} shown; read on with offset={last + 1}]")
        shown += [f"[warning: {warning}]" for warning in self.store.warnings()]
        return "\n".join(shown)

    def _ls(self, path: str, offset: int, limit: int) -> str:
        service = self._service()
        try:
            _, entries = service.list_entries(path)
        except LimitError:  # FilesService's advice names a glob, which ls does not take
            raise ToolError("LimitError", f"ls: {_shown(path)} has more than {self.max_entries} entries, too many "
                            "to list (offset and limit page within that many); use find with this path and a glob "
                            "that picks part of them by name (\"a*\"), or ls a subdirectory") from None
        return _page(service, entries, offset, limit)

    def _find(self, glob: str, path: str, max_results: int) -> str:
        service = self._service()
        # walked from the glob's leading directories, as grep is: a directory symlink the glob
        # names is searched through, where a walk from `path` lists it and never enters it
        start, rest = split_glob(tool_glob(service, glob, path) or "**")
        where = path if start == "/" else path.rstrip("/") + start
        try:
            entries = service.find_entries(where, rest)
        except LimitError:  # max_results cannot help: the entries are counted before a page is cut
            raise ToolError("LimitError", f"find: more than {self.max_entries} entries under {_shown(path)} match "
                            f"{_shown(glob)}, too many to list (max_results cuts what is shown, not what is found); "
                            "narrow the glob or search a path deeper down") from None
        return _page(service, entries, 0, max_results)

    def _run_fdsl(self, script: str, timeout: int) -> str:
        result = self._session().run(script, filename="<run_fdsl>", timeout=timeout)
        text = "".join(f"warning: {w}\n" for w in result.warnings) + result.output
        if result.ok:
            return text or "(the script printed nothing)"
        if text and not text.endswith("\n"):
            text += "\n"
        kind = result.error_kind or "RuntimeError"
        error = result.error or f"{kind}: the run failed"
        raise ToolError(kind, error.removeprefix(f"{kind}: "), before=text)


    def _session(self):
        """run_fdsl's Session, made on the first call: its limits allow the longest timeout a
        call may ask for, and each call runs with its own (Session.run's `timeout`)."""
        from runtime.session import Session

        if self._run_session is None:
            self._run_session = Session(sandbox=self.sandbox, approve=self.approve, timeout=float(MAX_RUN_TIMEOUT_S),
                                        memory_mb=self.memory_mb, max_output=self.max_output, isolation=self.isolation,
                                        workers=1)
        return self._run_session


def _page(service: FilesService, entries: list, offset: int, limit: int) -> str:
    """One page of a listing as JSON: only the page's entries are built (a directory of 100,000
    costs its names, not 100,000 structured entries), with the total and whether it was cut."""
    chosen = [service.entry_json(e) for e in entries[offset: offset + limit]]
    out = {"entries": chosen, "total": len(entries), "truncated": offset + len(chosen) < len(entries)}
    if service.vfs.listing_warnings():
        out["warnings"] = service.vfs.listing_warnings()
    return json.dumps(out, ensure_ascii=False)
