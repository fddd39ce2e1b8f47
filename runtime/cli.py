"""`fdsl`: run FilesDSL (.fdsl) and PromptScript (.ps) scripts in the sandbox.

Exit codes: 0 success, 1 script error (syntax, runtime, policy denial, limit), 2 usage error,
124 timeout. Script output goes to stdout, errors to stderr.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

# Third-party pydantic plugins (logfire's, installed with the full pydantic-ai) are imported as
# soon as a model is built and cost this command over a second at start; the CLI uses none.
# Set PYDANTIC_DISABLE_PLUGINS to anything else (even empty) to keep them.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

from runtime.api import EXIT_USAGE, RunResult, run_script  # noqa: E402
from runtime.cliparser import (  # noqa: E402
    DEFAULT_TIMEOUT_S,
    PS_DEFAULT_FIELDS,
    PS_ONLY_OPTIONS,
    PS_TIMEOUT_MARGIN_S,
    STDIN_SCRIPT,
    UsageError,
    build_parser,
    check_limits,
    parse_mount,
    read_script,
)
from runtime.promptscript.options import PSOptions  # noqa: E402

# How `fdsl run` runs its script when set: a kept server runner's (runtime/runner.py WarmRuns);
# None: run_script.
RUN_SCRIPT = None
from transpiler import language_for  # noqa: E402


def build_sandbox(args):
    """The run's Sandbox from --config/--root/--mount; a bad configuration is a usage error."""
    from runtime.errors import SandboxConfigError
    from runtime.fs.options import sandbox_from_options

    if args.root is not None and not Path(args.root).is_dir():
        raise UsageError(f"--root {args.root}: not a directory")
    mounts = [parse_mount(text) for text in args.mount]
    try:
        sandbox = sandbox_from_options(args.root, mounts, args.config, project=getattr(args, "project", None))
    except SandboxConfigError as exc:
        raise UsageError(str(exc)) from None
    for mount in sandbox.mounts:
        if os.path.realpath(mount.host) == "/":
            mode = "read-write" if mount.writable else "read-only"
            print(f"fdsl: warning: {mount.mount.mount_point} is the machine's own root directory: the script "
                  f"sees every file this user can read ({mode})", file=sys.stderr)
    return sandbox


def approver(args):
    from runtime.terminal import TerminalApprover

    return TerminalApprover(assume_yes=args.yes)


def check_run_limits(args) -> None:
    check_limits(memory_mb=args.memory, max_output=args.max_output, max_reply_bytes=args.max_reply_bytes,
                 broker_memory_mb=args.broker_memory, pdf_memory_mb=args.pdf_memory, max_pdf_pages=args.max_pdf_pages)


def promptscript_options(args) -> tuple[dict, float]:
    """A .ps run's options and its wall-clock limit, from the command line (the run log is
    opened once the run's sandbox is known to be good: open_run_log)."""
    defaults = PSOptions()
    for dest, name in PS_DEFAULT_FIELDS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, list(getattr(defaults, name)) if dest == "allow_command" else getattr(defaults, name))
    if args.project is not None and args.root is not None:
        raise UsageError(f"--root {args.root} and --project {args.project}: both name the directory at /; "
                         "--project mounts it read-write (the project: writes, RUN_CMD, the run log), --root read-only")
    if args.project is None and args.root is None and not args.mount and args.config is None:
        args.project = "."  # the current directory is the project unless the run's sandbox is given
    if min(args.max_steps, args.max_time, args.max_tool_calls, args.max_file_bytes) < 0:
        raise UsageError("--max-steps, --max-time, --max-tool-calls and --max-file-bytes cannot be negative")
    if args.max_llm_calls < 0 or not args.max_cost >= 0 or args.max_cost == math.inf:
        raise UsageError("--max-llm-calls and --max-cost must be non-negative numbers")
    if args.max_files_changed is not None and args.max_files_changed < 0:
        raise UsageError("--max-files-changed cannot be negative")
    timeout = args.timeout
    if timeout is None:
        # The wall clock backs --max-time up: its budget plus a margin (start-up, clean-up);
        # --max-time 0 asks for no time limit, so none unless --timeout is given.
        timeout = args.max_time / 1000 + PS_TIMEOUT_MARGIN_S if args.max_time else math.inf
    if args.project is not None and not Path(args.project).is_dir():
        raise UsageError(f"--project {args.project}: not a directory")
    options = {"project": None if args.project is None else Path(args.project), "max_steps": args.max_steps,
               "max_time_ms": args.max_time, "max_tool_calls": args.max_tool_calls,
               "halt_on_loop": args.halt_on_loop, "verbose": args.verbose,
               "allow_commands": tuple(args.allow_command), "max_files_changed": args.max_files_changed,
               "max_file_bytes": args.max_file_bytes,
               "max_log_bytes": args.max_log_bytes, "provider": args.provider, "model": args.model,
               "base_url": args.base_url,
               "llm_key_env": tuple(args.llm_key_env or ()), "allow_base_urls": tuple(args.allow_base_url or ()),
               "max_llm_calls": args.max_llm_calls, "max_cost": args.max_cost}
    return options, timeout


def open_run_log(project: Path, max_log_bytes: int):
    """The run log in the project (a run without a project keeps none)."""
    from runtime.promptscript.runlog import RunLog, RunLogError

    try:
        return RunLog(project, max_log_bytes)
    except RunLogError as exc:
        raise UsageError(str(exc)) from None


def command_run(args) -> int:
    if not args.json:
        from runtime.terminal import terminal_safe

        on_terminal = sys.stdout.isatty()

        def emit(text: str) -> None:
            sys.stdout.write(terminal_safe(text) if on_terminal else text)

        result = execute_run(args, emit)
        sys.stdout.flush()
        report_run(result, args.verbose)
        return result.exit_code
    try:
        result = execute_run(args, None)
    except UsageError as exc:  # the one object on stdout says it too
        result = RunResult(exit_code=EXIT_USAGE, output="", error=f"UsageError: {exc}", error_kind="UsageError",
                           error_message=str(exc))
    json.dump(result.as_json(), sys.stdout, ensure_ascii=False)  # the script's output is inside it
    sys.stdout.write("\n")
    return result.exit_code


def execute_run(args, emit):
    """Run the script the command line names; `emit(text)` receives its output as it is printed."""
    script, source = read_script(args.script)
    lang = args.lang or getattr(language_for(script.name), "name", None)
    if lang is None and args.script == STDIN_SCRIPT:
        lang = "fdsl"
    if lang is None:
        raise UsageError(f"cannot tell the language of {args.script}: use a .fdsl or .ps extension or --lang")
    check_run_limits(args)
    ps_given = [flag for flag, dest in PS_ONLY_OPTIONS if getattr(args, dest) is not None]
    if lang != "ps" and ps_given:
        raise UsageError(f"{', '.join(ps_given)}: only for PromptScript (.ps) scripts")
    options, run_log = None, None
    timeout = args.timeout if args.timeout is not None else DEFAULT_TIMEOUT_S
    if lang == "ps":
        options, timeout = promptscript_options(args)
    sandbox = build_sandbox(args)
    if options is not None and options["project"] is not None:
        run_log = options["run_log"] = open_run_log(options["project"], args.max_log_bytes)
        keep_for_replay(run_log, source, options)
    result = (RUN_SCRIPT or run_script)(
        source, root=None, sandbox=sandbox, approve=approver(args), lang=lang, filename=str(script),
        timeout=timeout, memory_mb=args.memory, max_output=args.max_output, max_reply_bytes=args.max_reply_bytes,
        broker_memory_mb=args.broker_memory, pdf_memory_mb=args.pdf_memory, max_pdf_pages=args.max_pdf_pages,
        on_output=emit, isolation=args.isolation, options=options,
    )
    if run_log is not None and result.error_kind == "SyntaxError":
        from runtime.promptscript.runlog import log_unstarted_run
        log_unstarted_run(run_log, PSOptions(**options), result)  # the script never started; the log says why
    return result


def keep_for_replay(run_log, source: str, options: dict) -> None:
    """The script beside its run log, and its LLM answers as they come (`fdsl replay`)."""
    from runtime.promptscript.llm.replay import SCRIPT, attach

    try:
        attach(run_log.dir, SCRIPT, source)
    except OSError as exc:
        raise UsageError(f"cannot keep the script beside the run log in {run_log.dir}: {exc.strerror}") from None
    options["record_llm"] = True


def command_replay(args) -> int:
    """Run a recorded run's script again with its options and its recorded LLM answers."""
    from runtime.errors import RunSetupError
    from runtime.promptscript.llm.replay import load, recorded_names

    project = Path(args.project)
    if not project.is_dir():
        raise UsageError(f"--project {args.project}: not a directory")
    try:
        source, recorded, answers = load(project, args.run_id)
        names = recorded_names(recorded)
    except RunSetupError as exc:
        raise UsageError(str(exc)) from None
    # Budgets and allowed commands from this command line, checked as fdsl run's: a crafted run
    # directory must not choose them (its allow_commands once made a replay run sh).
    args.root, args.mount, args.config, args.verbose = None, [], None, False
    args.provider = args.model = args.base_url = args.llm_key_env = args.allow_base_url = None
    options, timeout = promptscript_options(args)
    options.update(names, project=project, replay=answers, replay_of=args.run_id)
    options["run_log"] = open_run_log(project, options["max_log_bytes"])
    result = run_script(source, sandbox=build_sandbox(args), approve=approver(args), lang="ps",
                        filename=f"{args.run_id}/script.ps", timeout=timeout, on_output=sys.stdout.write,
                        options=options)
    sys.stdout.flush()
    report_run(result, False)
    return result.exit_code


def report_run(result, verbose: bool) -> None:
    """The run's warnings and error, and with --verbose its layers and figures, on stderr."""
    for warning in result.warnings:
        print(f"fdsl: warning: {warning}", file=sys.stderr)
    if result.error:
        print(result.error, file=sys.stderr)
    if verbose:
        layers = result.layers or {}
        shown_layers = ", ".join(f"{name}={status}" for name, status in layers.items()) or "not reported"
        print(f"[fdsl] layers: {shown_layers}", file=sys.stderr)
        for name, value in result.figures.items():
            shown = f"{value * 1000:.1f} ms" if name.endswith("_s") and value is not None else value
            print(f"[fdsl] {name}: {shown}", file=sys.stderr)


def command_doctor(args) -> int:
    from runtime.audit import describe_layers, probe_command_jail, probe_layers
    from wire.layers import is_active, missing_layers

    layers = probe_layers(timeout=args.timeout)
    print("Hardening layers of the worker on this machine:")
    for line in describe_layers(layers):
        print("  " + line)
    command = probe_command_jail(timeout=args.timeout)
    print("PromptScript's RUN_CMD jail (docs/security.md):")
    for name, status in command.items():
        print(f"  {name:<13} {'ok ' if is_active(status) else 'MISSING':<8} {status}")
    missing = missing_layers(layers)
    command_missing = {name: status for name, status in command.items() if not is_active(status)}
    if missing:
        print(f"{len(missing)} layer(s) missing: `fdsl run` works (isolation best) but `--isolation strict` will refuse.")
    if "jail" in command_missing:
        print("RUN_CMD cannot run on this machine: PromptScript's RUN_CMD actions will fail.")
    elif command_missing:
        print(f"RUN_CMD jail: {len(command_missing)} layer(s) missing: RUN_CMD runs (isolation best) "
              "and names them in its result; under `--isolation strict` it refuses.")
    if missing or command_missing:
        return 1
    print("All layers in force: `fdsl run --isolation strict` will run.")
    return 0


def command_audit(args) -> int:
    from runtime.audit import audit, describe_layers
    from wire.layers import LAYERS

    script, source = read_script(args.script)
    if args.root is not None and not Path(args.root).is_dir():
        raise UsageError(f"--root {args.root}: not a directory")
    check_limits(memory_mb=args.memory, max_output=args.max_output)
    layers = None
    if args.layers is not None:
        layers = frozenset(name.strip() for name in args.layers.split(",") if name.strip())
        unknown = sorted(layers - set(LAYERS))
        if unknown:
            raise UsageError(f"--layers: unknown layer(s) {', '.join(unknown)} (known: {', '.join(LAYERS)})")

    def emit(text: str) -> None:
        sys.stdout.write(text)

    result = audit(
        source, mode=args.mode, root=args.root, timeout=args.timeout, memory_mb=args.memory,
        max_output=args.max_output, layers=layers, on_output=emit,
    )
    sys.stdout.flush()
    report = sys.stderr
    print(f"[audit] mode: {args.mode}", file=report)
    for line in describe_layers(result.layers or {}):
        print(f"[audit] layer {line}", file=report)
    error = result.error or {}
    detail = f"{error.get('kind')}: {error.get('msg')}" if error else ""
    verdict = {
        "completed": "the script ran to its end: everything it printed, it managed to do",
        "failed": f"the script was stopped: {detail}",
        "timeout": f"the script was stopped at the deadline: {detail}",
        "crash": f"THE WORKER CRASHED (not a success): {detail}",
    }[result.outcome]
    print(f"[audit] outcome: {result.outcome}: {verdict}", file=report)
    return result.exit_code


def command_mcp(args) -> int:
    """`fdsl mcp`: the agent tools over the sandbox, as a stdio MCP server (runtime/tools/mcpserver.py).
    Nobody can be asked on a terminal: a mount's approvals are granted with --yes, refused without."""
    check_limits(memory_mb=args.memory)
    if args.root is None and not args.mount and args.config is None:
        raise UsageError("fdsl mcp: name what to serve with --root DIR (or --mount, --config); an MCP client "
                         "may start the server anywhere, so it never serves the directory it starts in")
    sandbox = build_sandbox(args)
    if any(os.path.realpath(mount.host) == "/" for mount in sandbox.mounts):
        raise UsageError("fdsl mcp: the machine's root directory would be open to the model; serve a directory of documents")
    try:
        import mcp  # noqa: F401  (the official SDK: an optional dependency)
    except ImportError as exc:
        raise UsageError(f"fdsl mcp needs the MCP SDK: pip install 'filesdsl[mcp]' ({exc})") from None
    try:
        os.fstat(0)
    except OSError:
        raise UsageError("fdsl mcp: its requests come on stdin, which is closed") from None
    from runtime.tools.calls import Tools
    from runtime.tools.mcpserver import serve_stdio

    approve = (lambda description: True) if args.yes else None
    serve_stdio(Tools(sandbox, approve=approve, isolation=args.isolation, memory_mb=args.memory))
    return 0


class Stopped(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived: unwinds like KeyboardInterrupt, so every `finally` on the way
    (the supervisor's, RUN_CMD's, the PDF extractor's) ends the processes it started."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum, _frame) -> None:
    raise Stopped(signum)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import signal
    import threading

    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) if threading.current_thread() is threading.main_thread() else ()
    previous = {signum: signal.signal(signum, _stop) for signum in handled}
    try:
        return run_command(args)
    except Stopped as exc:
        name = signal.Signals(exc.signum).name
        message = f"stopped by {name}; the script's worker and every process it started were ended"
        try:  # (after a SIGHUP the terminal may be gone)
            print(f"fdsl: {message}", file=sys.stderr)
            if getattr(args, "json", False):  # --json's one object, even now
                print(json.dumps({"exit_code": 128 + exc.signum, "output": "", "error": {
                    "kind": "Stopped", "message": message, "line": None, "column": None, "text": f"Stopped: {message}"},
                    "figures": {}, "warnings": [], "layers": None}))
        except OSError:
            pass
        return 128 + exc.signum
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def command_help(args) -> int:
    from runtime.cheatsheet import SHEETS, reference

    text = reference(args.topic)
    if text is None:  # an installation without the docs: the one-screen sheet, and where the rest is
        print(SHEETS["fdsl" if args.topic == "filesdsl" else "ps"])
        print(f"(the full reference, docs/{args.topic}.md, is not installed here; it is in the source tree)")
        return 0
    sys.stdout.write(text)
    return 0


def run_command(args) -> int:
    try:
        if args.command == "help":
            return command_help(args)
        if args.command == "doctor":
            return command_doctor(args)
        if args.command == "audit":
            return command_audit(args)
        if args.command == "run-many":
            from runtime.manycmd import command_run_many

            return command_run_many(args)
        if args.command == "server":
            from runtime.serverctl import server_command

            return server_command([args.action])
        if args.command == "mcp":
            return command_mcp(args)
        if args.command == "index":
            from runtime.index.cli import command_index

            return command_index(args)
        if args.command == "replay":
            return command_replay(args)
        if args.command in ("ls", "find"):
            from runtime.lscmd import command_listing

            return command_listing(args, build_sandbox(args), approver(args))
        return command_run(args)
    except UsageError as exc:
        print(f"fdsl: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
