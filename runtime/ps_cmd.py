"""RUN_CMD in the broker: an allowlisted program, no shell, in the project, jailed, bounded.

The command starts through runtime/ps_launcher.py (``python -I -S``), which puts it in a new
network namespace with no_new_privs and rlimits and then execs it (see that module). It runs
in its own session / process group with stdin at /dev/null and a small environment (PATH,
LANG, HOME = the project). stdout and stderr are read concurrently; each keeps its first
``output_cap`` bytes (the rest is drained and counted, so the command never blocks on a full
pipe). When the command's time is up the whole process group is killed (SIGKILL) and the
action fails with a message saying so; when the command exits, what is left of its group is
killed too, so nothing keeps running after the action returns.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

from runtime.errors import SandboxError, ScriptError

LAUNCHER = Path(__file__).with_name("ps_launcher.py")
REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUTPUT_CAP = 64 * 1024
CMD_MEMORY_BYTES = 2 << 30
CMD_FILE_BYTES = 64 << 20


class CommandTimeout(ScriptError):
    kind = "RuntimeError"


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_command(program: str, args: list[str], *, cwd: str, timeout_s: float, shown: str,
                output_cap: int = DEFAULT_OUTPUT_CAP) -> dict:
    """Run ``program`` (an absolute path) with ``args``; -> {exitCode, stdout, stderr, ...}."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": cwd}
    config = {"repo": str(REPO), "env": env, "cpu_seconds": max(1, int(timeout_s) + 1),
              "memory_bytes": CMD_MEMORY_BYTES, "file_bytes": CMD_FILE_BYTES}
    status_r, status_w = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(config), str(status_w), program, *args],
            cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, pass_fds=(status_w,), env=env, close_fds=True,
        )
    except OSError as exc:
        os.close(status_r)
        raise ScriptError(f"RUN_CMD: cannot start {shown}: {exc.strerror}") from None
    finally:
        os.close(status_w)
    started = time.monotonic()
    deadline = started + timeout_s
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
                    continue
                if key.data == "status":
                    status += chunk[:4000]
                    continue
                total[key.data] += len(chunk)
                room = output_cap - len(kept[key.data])
                if room > 0:
                    kept[key.data] += chunk[:room]
            if proc.poll() is not None:
                _killpg(proc.pid)  # leftovers of the group: nothing outlives the action
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _killpg(proc.pid)
            proc.wait()
        _killpg(proc.pid)
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
        os.close(status_r)
    elapsed_ms = int((time.monotonic() - started) * 1000)
    if status:
        raise SandboxError(f"RUN_CMD: the command jail could not be set up: {status.decode('utf-8', 'replace')}")
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
    return result
