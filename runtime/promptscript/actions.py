"""PromptScript's file actions and RUN_CMD, behind the run's Sandbox and the policy in force.

The actions act on the run's Sandbox, the same one a FilesDSL run gets from the same options
(runtime/fs/options.py): ``--project DIR`` mounted read-write at "/" (writes ask the approver:
the command line asks on the terminal, ``--yes`` pre-approves, no terminal refuses), ``--root``
read-only, ``--mount`` and ``--config`` mounts with their own modes, suffixes, size limits and
approvals. Paths in actions and policies are virtual paths: "src/a.py" and "/src/a.py" are the
same file; "/data/x.csv" is in the mount at /data; climbing above "/" is refused. Every read
goes through the one reader (runtime/fs/vfs.py), every write through the file toolset
(runtime/services/toolset.py), with one memory of approvals for the run.

Scopes: each scope of the run's PolicyStack holds its Sandbox (``bind``). The bottom is the
run's Sandbox; each ``with policy`` pushes ``Sandbox.derive(allow_read, allow_write)`` of
the scope below it, with the scope's effective (intersected) path lists, so an inner scope
can never reach more than the outer one (derive refuses to widen). Writes are confined to
the readable part too: the write list handed to derive is allowWrite intersected with
allowRead, so ``allowRead: ["src"]`` alone also keeps writes inside src.

Limits of the policy in force: ``maxFileBytes`` refuses reading, writing or patching a file
larger than it (SEARCH skips such files); ``maxFilesChanged`` caps the distinct files the run
writes or patches (``files_budget``, from --max-files-changed, is the run's own cap: reaching
it spends a budget; a narrower policy cap is a policy denial); ``allowCommands`` is RUN_CMD's
allowlist (the program name as the script writes it, resolved on the broker's PATH). Every
denial names what is allowed, exactly (readable: allowRead; writable: allowWrite within
allowRead). The run log directory ``.ps-runs`` is never writable by scripts.

RUN_CMD runs in the project (the directory mounted read-write at "/"); a run without a
project (``--root`` or mounts only) cannot run commands.

SEARCH is runtime/promptscript/search.py.

Time: ``deadline`` (runtime.promptscript.deadline.OpDeadline) says when the op must stop: SEARCH checks
it per directory entry and per file, RUN_CMD's timeout is lowered to it; past it, ``expired(what)``
is a spent --max-time budget or the worker's `timeout` block, whichever came first.
"""

from __future__ import annotations

import codecs
import math
import os
import shutil
from pathlib import Path
from typing import Callable

from runtime.errors import ApprovalDeniedError, LimitError, RunSetupError, SandboxError, ScriptError
from runtime.fs import paths
from runtime.fs.approvals import Approvals
from runtime.fs.paths import absolute, refuse_directory_syntax, relative, rooted
from runtime.fs.sandbox import Sandbox
from runtime.fs.vfs import VirtualFS
from runtime.promptscript.arguments import ActionArgError
from runtime.promptscript.command import DEFAULT_OUTPUT_CAP, CommandTimeout, run_command
from runtime.promptscript.patch import PatchError, apply_diff, apply_edits, apply_replace, looks_like_diff
from runtime.promptscript.policy import intersect_paths, under
from runtime.promptscript.runlog import RUN_LOG_DIR
from runtime.promptscript.search import search
from runtime.services.toolset import FileSystemToolset
from wire import protocol

DEFAULT_CMD_TIMEOUT_MS = 60_000
MAX_CMD_TIMEOUT_MS = protocol.PS_MAX_CMD_TIMEOUT_MS


def _shown_list(values) -> str:
    return ", ".join(values) if values else "none"


def minimal_paths(paths) -> list[str]:
    """Policy paths without those inside another one of the list ("src", "src/a" -> "src")."""

    unique = sorted(set(paths))
    return [p for p in unique if not any(q != p and under(p, q) for q in unique)]


def project_mount(sandbox: Sandbox, project) -> Path:
    """The project's directory, which must be the one mounted read-write at "/" of the run's
    Sandbox (RUN_CMD works there and the run log goes there: never outside what the script sees)."""
    real = Path(os.path.realpath(project))
    top = sandbox.mount_for(())
    if top is None or top.point != () or top.mount.mode != "rw" or Path(os.path.realpath(top.host)) != real:
        raise RunSetupError(f"the project {project} must be the directory mounted read-write at / of the run's sandbox")
    return real


def reachable(sandbox: Sandbox, policy: dict) -> tuple[list[str], list[str]]:
    """The paths a policy lets a script read and write within a Sandbox, in the policy's
    relative form: its allowRead within what the Sandbox can read; its allowWrite within that
    (what cannot be read cannot be written: `allowRead: ["src"]` alone confines writes too)
    and within what the Sandbox can write (a read-only mount stays read-only whatever the policy)."""

    def rel(roots):
        return [relative(paths.split(r)) for r in roots]

    reads = intersect_paths(rel(sandbox.readable_roots), policy["allowRead"])
    writes = intersect_paths(rel(sandbox.writable_roots), intersect_paths(reads, policy["allowWrite"]))
    return reads, writes


class ProjectActions:
    def __init__(self, sandbox: Sandbox, *, project=None, approve: Callable[[str], bool] | None = None,
                 deadline=None, output_cap: int = DEFAULT_OUTPUT_CAP,
                 files_budget: int | None = None, stop: Callable[[str], None] | None = None,
                 protected: frozenset[tuple[int, int]] = frozenset(), isolation: str = "best") -> None:
        self.project = project_mount(sandbox, project) if project is not None else None
        self.protected = protected  # the run logs' directory, by identity (FileSystemToolset)
        self.isolation = isolation  # "strict": RUN_CMD refuses to run without its whole jail
        self.root = sandbox
        self.scopes = None  # the run's PolicyStack, once bound: it holds each scope's Sandbox
        self.approvals = Approvals(approve)  # remembered for the run
        self.deadline = deadline if deadline is not None else _NoDeadline()
        self.output_cap = output_cap
        self.changed: set[str] = set()  # project-relative paths written or patched by the run
        self.files_budget = files_budget

        def refuse(message: str):
            raise LimitError(message)

        self.stop = stop or refuse

    # -- scopes --

    @property
    def sandbox(self) -> Sandbox:
        return self.scopes.sandbox if self.scopes is not None else self.root

    def bind(self, scopes) -> None:
        """Keep each scope's Sandbox on the run's policy stack, the project Sandbox at the bottom."""
        scopes.attach(self.root, self.derive_scope)
        self.scopes = scopes

    @staticmethod
    def derive_scope(parent: Sandbox, effective: dict) -> Sandbox:
        reads, writes = reachable(parent, effective)
        try:
            return parent.derive(allow_read=[rooted(p) for p in reads], allow_write=[rooted(p) for p in writes])
        except SandboxError as exc:
            raise SandboxError(f"policy: {exc}") from None

    def handlers(self) -> dict:
        return {"READ_FILE": self.read_file, "WRITE_FILE": self.write_file, "PATCH_FILE": self.patch_file,
                "SEARCH": self.search, "RUN_CMD": self.run_cmd}

    # -- helpers --

    def _denied(self, action: str, exc: SandboxError, policy: dict) -> SandboxError:
        """The sandbox's reason, then exactly what the policy in force allows (the Sandbox's own
        list repeats a path both readable and writable, and a write rule it cannot use)."""

        if exc.reason == str(exc):  # a refusal that names no allowed paths: shown as it is
            return type(exc)(f"{action}: {exc}")
        readable, writable = (minimal_paths(p) for p in reachable(self.root, policy))

        def shown(allowed, nothing):
            return ", ".join(absolute(paths.split(p)) for p in allowed) if allowed else nothing

        return type(exc)(f"{action}: {exc.reason} Readable: {shown(readable, 'nothing')}. "
                         f"Writable: {shown(writable, 'nothing (read-only)')}.")

    def _no_trailing_slash(self, action: str, path: str) -> None:
        try:
            refuse_directory_syntax(path)
        except ScriptError as exc:
            raise ActionArgError(f"{action}: {exc}") from None

    def _count_change(self, action: str, rel: str, policy: dict) -> None:
        """Refuse a write that would make one distinct changed file too many."""
        limit = policy.get("maxFilesChanged")
        if limit is None or rel in self.changed or len(self.changed) < limit:
            return
        so_far = sorted(self.changed)
        shown = ", ".join(so_far[:5]) + (", ..." if len(so_far) > 5 else "") if so_far else "none"
        detail = f"{action} {rel} would be changed file {len(so_far) + 1}; changed so far: {shown}"
        if self.files_budget is not None and limit >= self.files_budget:
            self.stop(f"budget exceeded: --max-files-changed {self.files_budget} ({detail})")
        raise SandboxError(f"{action}: policy maxFilesChanged {limit} denies changing {rel} ({detail})")

    def _toolset(self, sb: Sandbox) -> FileSystemToolset:
        return FileSystemToolset(sb, protected=self.protected, approvals=self.approvals)

    def _vfs(self, sb: Sandbox) -> VirtualFS:
        return VirtualFS(sb, approvals=self.approvals)

    @staticmethod
    def _over_cap(action: str, shown: str, size: int, cap: int) -> SandboxError:
        return SandboxError(f"{action}: {shown} is {size} bytes; the policy's maxFileBytes is {cap}")

    def _read_all(self, action: str, sb: Sandbox, path: str, policy: dict, limit: int | None = None) -> bytes:
        """The bytes of a file, read through the one reader (the mount's suffixes, size
        limit and read approval); `limit` (at most maxFileBytes) reads the start of a file of
        any size, else a file over maxFileBytes is refused."""
        vfs = self._vfs(sb)
        cap = policy["maxFileBytes"]
        start_only = limit is not None and limit <= cap  # READ_FILE's maxBytes: the start of any file
        try:
            res, st = vfs.resolve_file(rooted(path))
            if st.st_size > cap and not start_only:
                raise self._over_cap(action, res.vpath, st.st_size, cap)
            data, _st = vfs.read_bytes(res, None if start_only else cap, upto=limit)
            return data
        except OverflowError as exc:  # grew past the cap while it was read
            raise self._over_cap(action, res.vpath, exc.args[0], cap) from None
        except SandboxError as exc:
            raise self._denied(action, exc, policy) from None
        except ScriptError as exc:  # no such file, a directory, not a regular file
            raise type(exc)(f"{action}: {exc}") from None

    def _check_writable(self, action: str, sb: Sandbox, path: str, policy: dict) -> str:
        self._no_trailing_slash(action, path)
        vpath = rooted(path)
        try:
            parts = paths.split(vpath)
        except SandboxError as exc:
            raise self._denied(action, exc, policy) from None
        if parts and parts[0] == RUN_LOG_DIR:
            raise SandboxError(f"{action}: {RUN_LOG_DIR}/ holds the run logs and is not writable by scripts")
        if not parts:
            raise ScriptError(f"{action}: / is a directory, not a file")
        try:
            sb.locate(vpath, op="write", follow_last=False)
        except SandboxError as exc:
            raise self._denied(action, exc, policy) from None
        return "/".join(parts)

    def _write(self, action: str, sb: Sandbox, path: str, content: str, policy: dict,
               create_only: bool = False) -> tuple[int, bool]:
        """(bytes written, whether the file existed)."""
        data = content.encode("utf-8", errors="surrogatepass")
        cap = policy["maxFileBytes"]
        if len(data) > cap:
            raise SandboxError(f"{action}: {len(data)} bytes for {path}; the policy's maxFileBytes is {cap}")
        self._count_change(action, path, policy)
        try:
            _loc, existed = self._toolset(sb).put(rooted(path), content, create_only=create_only)
        except ApprovalDeniedError as exc:
            raise ApprovalDeniedError(f"{action}: {exc}") from None
        except SandboxError as exc:
            raise self._denied(action, exc, policy) from None
        self.changed.add(path)
        return len(data), existed

    # -- the actions --

    def read_file(self, args: dict, policy: dict):
        a = args  # checked by runtime/promptscript/arguments.py
        limit = a.get("maxBytes")  # None: the whole file (a file over maxFileBytes is refused, not cut)
        if limit is not None and limit < 0:
            raise ActionArgError("READ_FILE: maxBytes must be a non-negative integer")
        self._no_trailing_slash("READ_FILE", a["path"])
        data = self._read_all("READ_FILE", self.sandbox, a["path"], policy, limit)
        # Cut at maxBytes on a character boundary (an incomplete last character is left out).
        return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=False), None

    def write_file(self, args: dict, policy: dict):
        a = args  # checked by runtime/promptscript/arguments.py
        mode = a.get("mode", "overwrite")
        if mode not in ("overwrite", "create_only"):
            raise ActionArgError(f'WRITE_FILE: mode must be "overwrite" or "create_only", not {mode[:40]!r}')
        sb = self.sandbox
        rel = self._check_writable("WRITE_FILE", sb, a["path"], policy)
        try:
            size, existed = self._write("WRITE_FILE", sb, rel, a["content"], policy, create_only=mode == "create_only")
        except ScriptError as exc:
            if mode == "create_only" and str(exc).endswith("already exists"):
                raise ScriptError(f"WRITE_FILE: {rel} already exists (mode create_only); "
                                  "use mode overwrite or PATCH_FILE") from None
            raise
        return {"path": rel, "bytes": size, "created": not existed}, None

    def patch_file(self, args: dict, policy: dict):
        a = args  # checked by runtime/promptscript/arguments.py
        given = [k for k in ("patch", "edits", "old") if k in a]
        if ("old" in a) != ("new" in a):
            raise ActionArgError("PATCH_FILE: old and new go together")
        if len(given) != 1:
            raise ActionArgError("PATCH_FILE: give exactly one of patch (REPLACE: or a unified diff), "
                                 "edits ([{old, new}]) or old+new")
        sb = self.sandbox
        rel = self._check_writable("PATCH_FILE", sb, a["path"], policy)
        data = self._read_all("PATCH_FILE", sb, rel, policy)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ScriptError(f"PATCH_FILE: {rel} is not UTF-8 text; it cannot be patched") from None
        try:
            if "patch" in a:
                patch = a["patch"]
                if patch.startswith("REPLACE:"):
                    new_text, fmt = apply_replace(patch), "replace"
                elif looks_like_diff(patch):
                    new_text, fmt = apply_diff(text, patch), "unified diff"
                else:
                    raise PatchError("PATCH_FILE: a patch is 'REPLACE:\\n<content>' or a unified diff "
                                     "('--- a/x', '+++ b/x', '@@ -l,n +l,n @@'); for exact edits use edits or old+new")
            elif "edits" in a:
                new_text, fmt = apply_edits(text, a["edits"]), "edits"
            else:
                new_text, fmt = apply_edits(text, [{"old": a["old"], "new": a["new"]}]), "edits"
        except PatchError as exc:
            message = str(exc)
            raise PatchError(message if message.startswith("PATCH_FILE") else
                             f"PATCH_FILE: {message}; {rel} is unchanged") from None
        size, _existed = self._write("PATCH_FILE", sb, rel, new_text, policy)
        return {"path": rel, "bytes": size, "format": fmt, "changed": new_text != text}, None

    def search(self, args: dict, policy: dict):
        try:
            found = search(self._vfs(self.sandbox), args, policy, self.deadline)
            return found, found.notice()
        except ApprovalDeniedError as exc:
            raise ApprovalDeniedError(f"SEARCH: {exc}") from None

    def run_cmd(self, args: dict, policy: dict):
        a = args  # checked by runtime/promptscript/arguments.py
        cmd = a["cmd"]
        argv = a.get("args", [])
        allowed = policy["allowCommands"]
        if cmd not in allowed:
            raise SandboxError(f"RUN_CMD: policy denies command {cmd[:80]!r} "
                               f"(allowCommands here: {_shown_list(allowed)})")
        timeout_ms = a.get("timeoutMs", DEFAULT_CMD_TIMEOUT_MS)
        if not 1 <= timeout_ms <= MAX_CMD_TIMEOUT_MS:
            raise ActionArgError(f"RUN_CMD: timeoutMs must be an integer from 1 to {MAX_CMD_TIMEOUT_MS}")
        if any("\x00" in x for x in [cmd, *argv]) or len(argv) > 1000:
            raise ActionArgError("RUN_CMD: arguments cannot contain NUL characters (and at most 1000 of them)")
        if self.project is None:
            raise ScriptError("RUN_CMD: commands run in the project, and this run has none "
                              "(fdsl run --project DIR; run_script options project=...)")
        program = shutil.which(cmd)
        if program is None:
            raise ScriptError(f"RUN_CMD: {cmd[:80]!r} is allowed but not found on the PATH")
        shown = " ".join([cmd, *argv])[:200]
        capped = False  # lowered to the run's --max-time or the enclosing timeout block
        left = self.deadline.left()
        if left is not None:
            if left <= 0:
                raise self.deadline.expired(f"RUN_CMD {shown} was not started")
            if left * 1000 < timeout_ms:
                timeout_ms, capped = max(1, math.ceil(left * 1000)), True
        try:
            value = run_command(os.path.abspath(program), list(argv), cwd=str(self.project),
                                timeout_s=timeout_ms / 1000, shown=shown, output_cap=self.output_cap,
                                isolation=self.isolation)
        except CommandTimeout:
            if capped:
                raise self.deadline.expired(f"RUN_CMD {shown} was killed (its whole process group)") from None
            raise
        return value, None


class _NoDeadline:
    """ProjectActions without a session: no time limit."""

    def left(self):
        return None

    def check(self, what: str) -> None:
        return None
