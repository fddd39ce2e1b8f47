"""RUN_CMD in the broker: an allowlisted program, no shell, in the project, jailed, bounded.

The command starts through its own jail (sandbox_worker/cmd_jail.py): never root and never a
capability, its own user, network, IPC, UTS, PID and mount namespaces, a filesystem view of the
system's program directories (read-only) and the project (read-write, at /project, its working
directory), Landlock, a seccomp deny list of kernel attack surface and rlimits. A program
outside the system directories (a virtualenv's python, pyenv's shims) also sees its own
installation, read-only. stdin is /dev/null, the environment small (PATH, LANG, HOME =
/project). stdout and stderr are read concurrently; each keeps its first ``output_cap`` bytes
(the rest is drained and counted, so the command never blocks on a full pipe). When the
command's time is up, or when it exits, the launcher is killed and with it (PR_SET_PDEATHSIG,
then the PID namespace) every process the command started: nothing outlives the action.

What the jail could not apply is reported in the result as ``jail``; under --isolation strict
the command does not run instead.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path

from runtime.errors import SandboxError, ScriptError

DEFAULT_OUTPUT_CAP = 64 * 1024
CMD_MEMORY_BYTES = 2 << 30
CMD_FILE_BYTES = 64 << 20
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


class CommandTimeout(ScriptError):
    kind = "RuntimeError"


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def installation(program: str) -> list[str]:
    """The directories a program outside the system directories needs to see, read-only: the
    prefix it was found under (a virtualenv) and the one its real file lives in (the Python
    that virtualenv uses, or pyenv behind a shim)."""
    out: list[str] = []
    for path in (Path(os.path.abspath(program)), Path(os.path.realpath(program))):
        prefix = str(path.parent.parent)
        if prefix == "/" or any(prefix == d or prefix.startswith(d + "/") for d in SYSTEM_DIRS):
            continue
        if not any(prefix == o or prefix.startswith(o + "/") for o in out):
            out = [o for o in out if not o.startswith(prefix + "/")] + [prefix]
    return out


def run_command(program: str, args: list[str], *, cwd: str, timeout_s: float, shown: str,
                output_cap: int = DEFAULT_OUTPUT_CAP, isolation: str = "best", layers: dict | None = None) -> dict:
    """Run ``program`` (an absolute path) with ``args`` in the project ``cwd``;
    -> {exitCode, stdout, stderr, truncated, ms[, signal][, jail]}. ``layers``, when given, gets
    the jail's report of every layer."""
    proc, status_r = _launch(program, args, cwd, timeout_s, shown, isolation)
    started = time.monotonic()
    kept, total, status, timed_out = _collect(proc, status_r, started + timeout_s, output_cap)
    elapsed_ms = int((time.monotonic() - started) * 1000)
    applied = _jail_report(status, proc.returncode)
    if layers is not None:
        layers.update(applied)
    if timed_out:
        raise CommandTimeout(f"RUN_CMD: {shown} timed out after {int(timeout_s * 1000)} ms "
                             "and was killed (its whole process group)")
    code = proc.returncode
    result = {
        "exitCode": code if code >= 0 else 128 - code,
        "stdout": kept["stdout"].decode("utf-8", "replace"),
        "stderr": kept["stderr"].decode("utf-8", "replace"),
        "truncated": total["stdout"] > output_cap or total["stderr"] > output_cap,
        "ms": elapsed_ms,
    }
    if code < 0:
        result["signal"] = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
    missing = {name: value for name, value in applied.items() if not value.startswith("active")}
    if missing:
        result["jail"] = {"missing": missing}
    return result


def _launch(program: str, args: list[str], cwd: str, timeout_s: float, shown: str, isolation: str):
    """The jailed launcher's process, and the pipe its layer report comes on."""
    from runtime import jail

    extra = installation(program)
    env = {"PATH": ":".join([BASE_PATH] + [f"{prefix}/bin" for prefix in extra]), "LANG": "C.UTF-8", "HOME": "/project"}
    config = {"project": str(Path(cwd).resolve()), "env": env, "extra": extra, "isolation": isolation,
              "cpu_seconds": max(1, int(timeout_s) + 1), "memory_bytes": CMD_MEMORY_BYTES, "file_bytes": CMD_FILE_BYTES}
    status_r, status_w = os.pipe()
    try:
        proc = subprocess.Popen(
            [*jail.jailed_command("sandbox_worker.cmd_jail", ()), json.dumps(config), str(status_w), program, *args],
            cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, pass_fds=(status_w,), env={}, close_fds=True,
        )
    except OSError as exc:
        os.close(status_r)
        raise ScriptError(f"RUN_CMD: cannot start {shown}: {exc.strerror}") from None
    finally:
        os.close(status_w)
    return proc, status_r


def _collect(proc, status_r: int, deadline: float, output_cap: int):
    """Read the command's output (keeping ``output_cap`` bytes of each stream) and the jail's
    report until it ends or the deadline passes; the whole group is killed either way."""
    kept = {"stdout": bytearray(), "stderr": bytearray()}
    total = {"stdout": 0, "stderr": 0}
    status = bytearray()
    timed_out = False
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    sel.register(status_r, selectors.EVENT_READ, "status")
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                _killpg(proc.pid)
                break
            for key, _ in sel.select(timeout=min(left, 0.5)):
                fd = key.fileobj if isinstance(key.fileobj, int) else key.fileobj.fileno()
                chunk = os.read(fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.data == "status":
                    status += chunk[:4000]
                else:
                    total[key.data] += len(chunk)
                    kept[key.data] += chunk[:max(0, output_cap - len(kept[key.data]))]
            if proc.poll() is not None:
                _killpg(proc.pid)  # leftovers of the group: nothing outlives the action
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _killpg(proc.pid)
            proc.wait()
        _killpg(proc.pid)
    except BaseException:  # the broker itself is being stopped (SIGTERM, Ctrl-C): the command ends too
        _killpg(proc.pid)
        raise
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
        os.close(status_r)
    return kept, total, status, timed_out


def _jail_report(status: bytes, returncode: int) -> dict:
    """The layers the launcher applied, or SandboxError when it could not set the jail up."""
    lines = status.decode("utf-8", "replace").splitlines()
    errors = [line.removeprefix("error ") for line in lines if line.startswith("error ")]
    reports = [line.removeprefix("layers ") for line in lines if line.startswith("layers ")]
    if errors or not reports:
        reason = errors[0] if errors else f"the launcher ended with status {returncode} before the command ran"
        raise SandboxError(f"RUN_CMD: the command jail could not be set up: {reason}")
    return json.loads(reports[0])
