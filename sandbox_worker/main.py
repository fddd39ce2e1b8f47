"""Worker entry point: import, harden, compile the script under RestrictedPython, run it.

The broker starts this in a fresh process (or a session's zygote forks it,
sandbox_worker/zygote.py) with a clean environment and only three descriptors: 0 (frames from
the broker), 1 (frames to the broker) and 2 (diagnostics of a crash). Everything the worker
will ever need is imported before it hardens itself; after that it cannot open a file, start a
process or grow past its limits.
"""

from __future__ import annotations

import importlib
import os
import signal
from typing import Callable

from RestrictedPython import compile_restricted_exec

from sandbox_worker.client import BrokerClient, ScriptFailure, TimeUp
from sandbox_worker.hardening import apply_limits, enter_namespaces, harden, lock_down, set_name
from wire import protocol
from wire.layers import missing_layers

SCRIPT_FILENAME = "<script>"

# Compiled (never run) by a worker started ahead, before it waits: the shapes the languages emit,
# so that a script's own compile_restricted does not pay for RestrictedPython's first pass through
# its code in a fresh process (0.45 -> 0.25 ms for one line, 1.3 -> 0.6 ms for 20 statements).
WARM_UP = """
@ps_run({3: 1})
def ps_script():
    global ps_n
    with ps_main():
        d = Directory('/')
        for f in d.files():
            if f.size > 10 and not f.name.endswith('.md') or f[0:3] == {'k': [1, -2.5, None]}:
                print(f.name, f.read(1)[0:3], sep='')
        while (i < 10 if ps_type(i) is ps_int else ps_lt(i, 10)):
            if (ps_n := ps_n + 2) < ps_at:
                total = total + i
            else:
                ps_step(); break
"""

# What a "warm" frame compiles while the broker compiles the script: after a pause, the worker's
# compile path is cold (its core's caches hold other work), and warming it in parallel with the
# broker's transpile takes half a millisecond off a run's critical path (bench/session.py).
WARM_LINE = 'print(x.y(1, "a")[0])\n'

# A language's generated code runs with sandbox_worker/lang/<lang>'s restricted_globals(client).
# Only the run's own language is imported (before hardening: afterwards nothing can be).
LANGUAGE_PACKAGE = "sandbox_worker.lang"


def _position(code, lasti: int, lineno: int) -> tuple[int | None, int | None]:
    start_line, _end_line, start_col, _end_col = list(code.co_positions())[lasti // 2]
    return start_line or lineno, start_col


def script_position(tb) -> tuple[int | None, int | None]:
    """The generated (line, 0-based column) of the innermost script frame of a traceback."""
    line = column = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == SCRIPT_FILENAME:
            line, column = _position(code, tb.tb_lasti, tb.tb_lineno)
        tb = tb.tb_next
    return line, column


def frame_position(frame) -> tuple[int | None, int | None]:
    """The generated (line, column) of the innermost script frame of a stack, from its top."""
    while frame is not None:
        if frame.f_code.co_filename == SCRIPT_FILENAME:
            return _position(frame.f_code, frame.f_lasti, frame.f_lineno)
        frame = frame.f_back
    return None, None


def classify(exc: BaseException, limits: dict, language) -> tuple[str, str]:
    """(kind, message) of what stopped the script; Python's own errors in the language's words
    (each language package has ``python_message(exc)``)."""
    if isinstance(exc, ScriptFailure):
        return exc.kind, exc.message
    if isinstance(exc, MemoryError):
        return "LimitError", f"memory limit exceeded ({int(limits['memory_bytes']) >> 20} MiB)"
    if isinstance(exc, RecursionError):
        return "LimitError", "recursion too deep"
    if isinstance(exc, (TypeError, ValueError, NameError, ZeroDivisionError, IndexError, KeyError, OverflowError)):
        return "RuntimeError", language.python_message(exc)
    return "RuntimeError", f"{type(exc).__name__}: {exc}"


def output_print(client: BrokerClient):
    """print() for mode "os": fd 1 is the pipe, so output travels as "out" frames."""

    def print_(*values, sep=" ", end="\n", file=None, flush=False):
        if file is not None:
            return print(*values, sep=sep, end=end, file=file, flush=flush)
        client.output((" " if sep is None else str(sep)).join(map(str, values)) + ("\n" if end is None else str(end)))

    return print_


def run(client: BrokerClient, code: str, limits: dict, mode: str, lang: str = "fdsl") -> dict | None:
    """Compile and execute the module; the failure to report, or None.

    mode "restricted" is every script's. Mode "os" runs plain Python with full builtins, so
    tests and audits can attack the process layer alone (the broker chooses it, never a script).
    """
    language = importlib.import_module(f"{LANGUAGE_PACKAGE}.{lang}")  # imported before hardening
    if mode == "os":
        try:
            code_object = compile(code, SCRIPT_FILENAME, "exec")
        except SyntaxError as exc:
            return {"kind": "RuntimeError", "msg": f"SyntaxError: {exc.msg}", "line": exc.lineno, "col": exc.offset}
        namespace = {"__builtins__": __builtins__, "broker": client, "print": output_print(client)}
    else:
        compiled = compile_restricted_exec(code, filename=SCRIPT_FILENAME)
        if compiled.errors or compiled.code is None:
            return {"kind": "InternalError", "msg": "code rejected by RestrictedPython: " + "; ".join(compiled.errors)}
        code_object, namespace = compiled.code, language.restricted_globals(client)
    signal.signal(signal.SIGUSR1, client.on_time_up)
    try:
        exec(code_object, namespace)
    except BaseException as exc:  # noqa: BLE001 - every failure is reported, none escapes as a traceback
        kind, message = classify(exc, limits, language)
        where = exc
        while isinstance(where, TimeUp) and where.__context__ is not None:
            where = where.__context__  # the stop cut short a block's clean-up: the script was where that began
        line, column = script_position(where.__traceback__)
        return {"kind": kind, "msg": message, "line": line, "col": column}
    return None


def warm_up() -> None:
    """Import every language and compile WARM_UP: what a worker started ahead does before it
    waits (or its zygote, sandbox_worker/zygote.py, once for all the workers it forks)."""
    for lang in protocol.LANGUAGES:
        importlib.import_module(f"{LANGUAGE_PACKAGE}.{lang}")
    compile_restricted_exec(WARM_UP, filename=SCRIPT_FILENAME)


def harden_ahead(warmed: Callable[[], Callable[[], None]] | None = None) -> tuple[dict, Callable[[], None] | None]:
    """A worker started ahead of its script (runtime/session.py's pool): every layer but the
    run's limits, before it waits. The namespaces (and the PID namespace's fork) come before the
    languages are imported, so the fork copies a small process; Landlock after, as it ends file
    access. apply_limits() adds the rlimits when the start frame brings them. `warmed`: what a
    worker forked from a zygote that ran warm_up() already does instead (sandbox_worker/zygote.py);
    it returns what the worker does while it waits for its script (the second value)."""
    entered = enter_namespaces(None)
    idle = warmed() if warmed is not None else warm_up()
    return lock_down(entered), idle


def main(preload: bool = False, warmed: Callable[[], Callable[[], None]] | None = None) -> None:
    """`preload`: this worker is started ahead of its script and hardened before it waits
    (`warmed`: see harden_ahead)."""
    set_name(b"fdsl-worker")
    ahead, idle = harden_ahead(warmed) if preload else (None, None)
    client = BrokerClient(read_fd=0, write_fd=1, locate=frame_position)
    start = client.receive()
    if start.get("t") != "start":
        os._exit(3)
    limits = start["limits"]
    if ahead is not None:
        if start.get("layers") is not None:  # hardened with every layer already: a subset is a broker bug
            os._exit(3)
        imported = protocol.LANGUAGES
        layers = {**ahead, "rlimits": apply_limits(limits)}
    else:
        imported = (start.get("lang"),)
        if imported[0] not in protocol.LANGUAGES:
            os._exit(3)
        importlib.import_module(f"{LANGUAGE_PACKAGE}.{imported[0]}")
        layers = harden(limits, start.get("layers"))
    # The first frame, written before any script code runs: the layers actually in force.
    protocol.write_frame(client.write_fd, {"t": "ready", "layers": layers})
    if idle is not None:
        idle()
    try:  # the script: a worker started ahead may have had its start long before (runtime/session.py)
        module = client.receive()
        while module.get("t") == "warm":  # the broker compiles the script meanwhile
            if not client.waiting():  # (if it came while this worker woke, warming would delay it)
                compile_restricted_exec(WARM_LINE, filename=SCRIPT_FILENAME)
            module = client.receive()
    except EOFError:
        os._exit(4)  # let go unused
    lang = module.get("lang")
    if module.get("t") != "code" or type(module.get("code")) is not str or lang not in imported:
        os._exit(3)  # (a language not imported before hardening cannot be imported now)
    missing = missing_layers(layers)
    if start.get("isolation") == "strict" and missing:
        reasons = "; ".join(f"{name}: {status}" for name, status in missing.items())
        error = {"kind": "SandboxError", "msg": f"isolation strict: layers not in force ({reasons})"}
    try:
        if not (start.get("isolation") == "strict" and missing):
            try:
                error = run(client, module["code"], limits, module.get("mode", "restricted"), lang)
            except TimeUp:  # the signal came as the script ended
                error = None
            if client.time_up:  # a timeout, at the place the script's own error names (its traceback's,
                # exact), else where the signal found it
                line, column = client.stopped_at
                if error is not None and error.get("line") is not None:
                    line, column = error["line"], error.get("col")
                error = {"kind": "TimeoutError", "msg": "the run's time limit passed", "line": line, "col": column}
        client.end(error)
    except (BrokenPipeError, EOFError):
        os._exit(4)
    except MemoryError:
        client.end({"kind": "LimitError", "msg": "memory limit exceeded"})
    # Stay until the broker has read our peak memory figure and ends the process group (a
    # reply the script stopped waiting for may still be in the pipe: read past it).
    try:
        while os.read(0, 1 << 16):
            pass
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
