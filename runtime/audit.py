"""`fdsl doctor` and `fdsl audit`: which hardening layers are in force, and what raw Python can do.

`probe_layers()` starts a real worker with an empty script and returns the layers it reports
having applied: the doctor's answer is what a run gets on this machine, not a guess.

`audit(code, mode=...)` runs plain Python in the hardened worker with the transpiler bypassed:
mode "restricted" still compiles it with RestrictedPython and runs it with the FilesDSL
guards; mode "os" runs it with full builtins (and a `broker` object for the pipe), so the
process layers can be audited on their own. `layers` (trusted side only) leaves some out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from runtime.broker import Broker
from runtime.supervisor import Limits, WorkerResult, run_worker
from wire.layers import LAYERS, is_active

EXIT_OK, EXIT_FAILED, EXIT_TIMEOUT = 0, 1, 124

# Why a layer matters, for the doctor's listing.
LAYER_PURPOSE = {
    "netns": "no network (new network namespace)",
    "ipcns": "no other process's SysV shared memory, queues or semaphores (new IPC namespace)",
    "utsns": "not the host's name (new UTS namespace)",
    "pidns": "no other process to see or signal (new PID namespace: the script is its pid 1)",
    "uid": "no root (drop to nobody)",
    "no_new_privs": "no privilege gain through exec",
    "landlock": "no filesystem access (Landlock)",
    "seccomp": "only the system calls it needs (seccomp allow-list): no exec, fork, sockets, ptrace, mount, IPC, signals or limits of other processes",
    "rlimits": "no writes, no descriptors, CPU and memory caps (rlimits)",
}


@dataclass
class AuditResult:
    exit_code: int
    outcome: str  # "completed" | "failed" | "timeout" | "crash"
    output: str
    error: dict | None = None
    layers: dict | None = None
    figures: dict = field(default_factory=dict)


def broker_for(root: str | Path | None, deadline: float) -> Broker:
    """The FilesDSL broker over `root` mounted read-only at `/` (just ping without a root)."""
    if root is None:
        return Broker({"ping": lambda: None})
    from runtime.api import file_handlers
    from runtime.fs.vfs import VirtualFS
    from runtime.services.files import FilesService

    service = FilesService(VirtualFS([("/", Path(root), False)]), deadline=deadline)
    return Broker(file_handlers(service))


def audit(
    code: str,
    *,
    mode: str = "restricted",
    root: str | Path | None = None,
    timeout: float = 10.0,
    memory_mb: int = 256,
    max_output: int = 1_000_000,
    layers: frozenset[str] | None = None,
    on_output: Callable[[str], None] | None = None,
    broker: Broker | None = None,
) -> AuditResult:
    if mode not in ("os", "restricted"):
        raise ValueError(f"mode must be 'os' or 'restricted', not {mode!r}")
    chunks: list[str] = []

    def collect(text: str) -> None:
        chunks.append(text)
        if on_output is not None:
            on_output(text)

    deadline = time.monotonic() + timeout
    limits = Limits(timeout=timeout, memory_mb=memory_mb, max_output=max_output)
    broker = broker if broker is not None else broker_for(root, deadline)
    result = run_worker(code, broker, limits, deadline, collect, mode=mode, layers=layers)
    return AuditResult(
        exit_code=exit_code_of(result),
        outcome={"ok": "completed", "error": "failed", "timeout": "timeout"}.get(result.status, "crash"),
        output="".join(chunks),
        error=result.error,
        layers=result.layers,
        figures=result.figures,
    )


def exit_code_of(result: WorkerResult) -> int:
    if result.status == "ok":
        return EXIT_OK
    return EXIT_TIMEOUT if result.status == "timeout" else EXIT_FAILED


def probe_layers(timeout: float = 10.0) -> dict:
    """Start a real worker with an empty script; the layers it applied (or why it failed)."""
    result = audit("", mode="os", timeout=timeout)
    if result.layers is None:
        message = (result.error or {}).get("msg", "no report")
        return {name: f"missing: the worker did not report its layers ({message})" for name in LAYERS}
    return result.layers


def probe_command_jail(timeout: float = 10.0) -> dict:
    """Run /bin/true through RUN_CMD's jail in an empty project: {layer: status}, or
    {"jail": "missing: <why>"} when it cannot be set up at all."""
    import shutil
    import tempfile

    from runtime.errors import ScriptError
    from runtime.promptscript.command import run_command

    program = shutil.which("true") or "/bin/true"
    layers: dict = {}
    with tempfile.TemporaryDirectory() as project:
        try:
            run_command(program, [], cwd=project, timeout_s=timeout, shown="true", layers=layers)
        except ScriptError as exc:
            return {"jail": f"missing: {str(exc).removeprefix('RUN_CMD: ')}"}
    return layers


def describe_layers(layers: dict) -> list[str]:
    """One line per layer: name, state, status text."""
    lines = []
    for name in LAYERS:
        status = layers.get(name, "missing: not reported")
        mark = "ok " if is_active(status) else ("off" if status == "off" else "MISSING")
        lines.append(f"{name:<13} {mark:<8} {status}  [{LAYER_PURPOSE.get(name, '')}]")
    return lines
