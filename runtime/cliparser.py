"""The `fdsl` command line's parser: every command, its options and their help (the
languages' one-screen sheets in the epilog, runtime/cheatsheet.py), and the checks of what
they name (a script to read, limits in range) that several commands share. runtime/cli.py
runs them."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from runtime.api import MountSpec
from runtime.budget import DEFAULT_MAX_REPLY_BYTES, MIN_MAX_REPLY_BYTES
from runtime.promptscript.options import PSOptions
from runtime.services.documents import DEFAULT_MEMORY_BYTES
from runtime.services.pdf import DEFAULT_MAX_PDF_PAGES, DEFAULT_PDF_MEMORY_BYTES
from transpiler import LANGUAGES
from wire.protocol import MAX_REPLY_VALUE_BYTES

DEFAULT_TIMEOUT_S = 60.0  # --timeout of a .fdsl run
PS_TIMEOUT_MARGIN_S = 5.0  # a .ps run's --timeout: --max-time plus this


class UsageError(Exception):
    pass


def seconds(text: str) -> float:
    """A --timeout value: a positive number of seconds, or inf for no limit."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds (or inf for no limit), not {text!r}")
    return value


def parse_mount(text: str) -> MountSpec:
    """HOST:/point[:ro|rw]"""
    parts = text.rsplit(":", 2)
    mode = "ro"
    if len(parts) == 3 and parts[2] in ("ro", "rw"):
        host, point, mode = parts
    elif len(parts) == 3 and parts[1].startswith("/") and not parts[2].startswith("/"):
        raise UsageError(f"--mount {text!r}: the mode must be ro or rw, not {parts[2]!r}")
    elif len(parts) >= 2:
        host, point = text.rsplit(":", 1)
    else:
        raise UsageError(f"--mount {text!r}: expected HOST:/point[:ro|rw]")
    if not point.startswith("/"):
        raise UsageError(f"--mount {text!r}: the mount point must start with '/'")
    if not Path(host).is_dir():
        raise UsageError(f"--mount {text!r}: {host} is not a directory")
    return MountSpec(host_path=Path(host), mount_point=point, writable=mode == "rw")


def add_sandbox_options(command) -> None:
    """--root, --mount, --config and --yes: the same for run, ls and find."""
    command.add_argument("--root", "--sandbox-root", dest="root", default=None,
                         help="directory mounted at / (default: . unless --config or --mount is given)")
    command.add_argument("--mount", action="append", default=[], metavar="HOST:/point[:ro|rw]", help="add a mount (repeatable)")
    command.add_argument("--config", default=None, metavar="sandbox.toml", help="mounts and their policy from a TOML file")
    command.add_argument("--yes", action="store_true", help="pre-approve every operation that needs approval")


# PromptScript's options: (flag, dest); each is None unless given, so a .fdsl run can refuse it.
PS_ONLY_OPTIONS = (("--project", "project"), ("--max-steps", "max_steps"), ("--max-time", "max_time"),
                   ("--max-tool-calls", "max_tool_calls"), ("--max-files-changed", "max_files_changed"),
                   ("--halt-on-loop", "halt_on_loop"), ("--max-log-bytes", "max_log_bytes"),
                   ("--allow-command", "allow_command"), ("--max-file-bytes", "max_file_bytes"),
                   ("--provider", "provider"), ("--model", "model"), ("--base-url", "base_url"),
                   ("--llm-key-env", "llm_key_env"), ("--allow-base-url", "allow_base_url"),
                   ("--max-llm-calls", "max_llm_calls"), ("--max-cost", "max_cost"))
# option dest -> the PSOptions field whose default it takes when not given
PS_DEFAULT_FIELDS = {"max_steps": "max_steps", "max_time": "max_time_ms", "max_tool_calls": "max_tool_calls",
                     "max_file_bytes": "max_file_bytes",
                     "halt_on_loop": "halt_on_loop", "max_log_bytes": "max_log_bytes", "allow_command": "allow_commands",
                     "max_llm_calls": "max_llm_calls", "max_cost": "max_cost"}


STDIN_SCRIPT = "-"  # `fdsl run -`: the script comes from stdin (FilesDSL unless --lang says otherwise)
MAX_STDIN_SCRIPT_BYTES = 1 << 20  # the transpiler's own limit on a script


def read_script(name: str) -> tuple[Path, str]:
    """A script's path and text; an unreadable one is a usage error naming why."""
    if name == STDIN_SCRIPT:
        data = sys.stdin.buffer.read(MAX_STDIN_SCRIPT_BYTES + 1)
        if len(data) > MAX_STDIN_SCRIPT_BYTES:
            raise UsageError(f"the script on stdin is over {MAX_STDIN_SCRIPT_BYTES} bytes")
        try:
            return Path("<stdin>"), data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"the script on stdin is not UTF-8 text (byte {exc.start})") from None
    script = Path(name)
    try:
        return script, script.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such script: {name}") from None
    except IsADirectoryError:
        raise UsageError(f"{name} is a directory, not a script") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"cannot read {name}: {exc.strerror}") from None


# Limits field -> the flag that sets it (for the limits' own range check, runtime/limits.py)
LIMIT_FLAGS = {"memory_mb": "--memory", "max_output": "--max-output", "max_reply_bytes": "--max-reply-bytes",
               "broker_memory_mb": "--broker-memory", "pdf_memory_mb": "--pdf-memory", "max_pdf_pages": "--max-pdf-pages"}


def check_limits(**fields) -> None:
    """Limits given on the command line, in their ranges (runtime/limits.py: the table the
    Python API checks too); --timeout is checked by its type, seconds()."""
    from runtime.errors import RunSetupError
    from runtime.limits import Limits

    try:
        Limits(**fields).check(LIMIT_FLAGS)
    except RunSetupError as exc:
        raise UsageError(str(exc)) from None


@functools.cache  # built once per process (the server builds it before forking its runners); parse_args leaves it as it is
def build_parser() -> argparse.ArgumentParser:
    from runtime.cheatsheet import SHEETS

    sheets = "\n".join(SHEETS.values()) + "\nThe full references: fdsl help filesdsl, fdsl help promptscript."
    parser = argparse.ArgumentParser(prog="fdsl", description="Run FilesDSL (.fdsl) and PromptScript (.ps) scripts in a jailed worker.",
                                     epilog=sheets, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a script", epilog=sheets, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("script", help="the script: FilesDSL (.fdsl) or PromptScript (.ps); - reads it from stdin (FilesDSL unless --lang ps)")
    add_sandbox_options(run)
    run.add_argument("--timeout", type=seconds, default=None, metavar="S",
                     help=f"wall-clock limit in seconds (default: {DEFAULT_TIMEOUT_S:g} for .fdsl; for .ps, --max-time "
                          f"plus {PS_TIMEOUT_MARGIN_S:g} s, or no limit with --max-time 0)")
    run.add_argument("--memory", type=int, default=256, metavar="MB", help="worker memory limit in MiB (default 256)")
    run.add_argument("--max-output", type=int, default=1_000_000, metavar="BYTES", help="output cap (default 1000000)")
    run.add_argument("--max-reply-bytes", type=int, default=DEFAULT_MAX_REPLY_BYTES, metavar="BYTES",
                     help=f"largest reply of the broker to one request (default {DEFAULT_MAX_REPLY_BYTES}: 16 MiB; "
                          f"{MIN_MAX_REPLY_BYTES} to {MAX_REPLY_VALUE_BYTES})")
    run.add_argument("--broker-memory", type=int, default=DEFAULT_MEMORY_BYTES >> 20, metavar="MB",
                     help=f"memory the broker may keep parsed documents in, in MiB (default {DEFAULT_MEMORY_BYTES >> 20})")
    run.add_argument("--pdf-memory", type=int, default=DEFAULT_PDF_MEMORY_BYTES >> 20, metavar="MB",
                     help=f"memory of the jailed PDF text extractor, in MiB (default {DEFAULT_PDF_MEMORY_BYTES >> 20})")
    run.add_argument("--max-pdf-pages", type=int, default=DEFAULT_MAX_PDF_PAGES, metavar="N",
                     help=f"pages of one PDF (default {DEFAULT_MAX_PDF_PAGES})")
    run.add_argument("--lang", choices=sorted(LANGUAGES), help="language (default: by extension)")
    run.add_argument("--no-server", action="store_true",
                     help="run in this process, not through the per-user server (as FDSL_NO_SERVER=1 or CI=1 do)")
    run.add_argument("--verbose", action="store_true", help="print timings, resource figures and the hardening layers to stderr")
    run.add_argument("--json", action="store_true",
                     help="print one JSON object on stdout: exit_code, output, error (kind, message, line, column, text), "
                          "figures, warnings (docs/tools.md)")
    run.add_argument(
        "--isolation", choices=("best", "strict"), default="best",
        help="best: run with the hardening layers this machine has (default); strict: refuse unless all are in force",
    )
    add_promptscript_options(run)
    add_other_commands(commands)
    return parser


def add_promptscript_options(run) -> None:
    ps = run.add_argument_group("PromptScript (.ps) only")  # budgets: runtime/promptscript/session.py
    default = PSOptions()
    ps.add_argument("--project", default=None, metavar="DIR", help="project directory, mounted read-write at / (writes ask, --yes pre-approves); RUN_CMD runs there and the run log goes to DIR/.ps-runs/<id>/ (default: . unless --root, --mount or --config is given)")
    add_budget_options(ps, default)
    add_llm_options(ps, default)


def add_budget_options(ps, default: PSOptions) -> None:
    """A run's budgets and allowed commands: `fdsl run`'s, and `fdsl replay`'s (a replay takes
    them from its command line, never from the recorded run's directory)."""
    ps.add_argument("--max-steps", type=int, default=None, metavar="N", help=f"statements executed (default {default.max_steps}; 0: no limit)")
    ps.add_argument("--max-time", type=int, default=None, metavar="MS", help=f"running time in ms (default {default.max_time_ms}; 0: no limit; --timeout still applies)")
    ps.add_argument("--max-tool-calls", type=int, default=None, metavar="N", help=f"apply() calls (0: no limit; default {default.max_tool_calls})")
    ps.add_argument("--max-files-changed", type=int, default=None, metavar="N",
                    help="distinct files WRITE_FILE/PATCH_FILE may change (default: no limit; 0: none)")
    ps.add_argument("--halt-on-loop", action="store_true", default=None,
                    help="stop when the same action with the same args, or the same cycle of up to 4 such actions, runs 3 times in a row")
    ps.add_argument("--max-log-bytes", type=int, default=None, metavar="BYTES",
                    help=f"size limit of the run log; later events are dropped, and it says so (default {default.max_log_bytes})")
    ps.add_argument("--max-file-bytes", type=int, default=None, metavar="BYTES",
                    help=f"the largest file the file actions read, write or patch (the base policy's maxFileBytes; "
                         f"default {default.max_file_bytes}; a write also fits one request of 1 MiB)")
    ps.add_argument("--allow-command", action="append", default=None, metavar="CMD",
                    help="a program RUN_CMD may run (repeatable; default: none)")
    ps.add_argument("--max-llm-calls", type=int, default=None, metavar="N",
                    help=f"requests sent to a model, retries included (default {default.max_llm_calls}; 0: no limit)")
    ps.add_argument("--max-cost", type=float, default=None, metavar="USD",
                    help=f"cost of the LLM calls in USD, from their token usage (default {default.max_cost:g}; 0: no limit)")


def add_llm_options(ps, default: PSOptions) -> None:
    from runtime.promptscript.llm.config import PROVIDERS

    ps.add_argument("--provider", default=None, choices=PROVIDERS,
                    help="every LLM call's provider, over the script's (default: the script's, else the first of "
                         "OPENAI_API_KEY, OPENROUTER_API_KEY, ANTHROPIC_API_KEY set; mock: offline)")
    ps.add_argument("--model", default=None, metavar="NAME", help="every LLM call's model, over the script's")
    ps.add_argument("--base-url", default=None, metavar="URL",
                    help="every LLM call's base URL, over the script's (e.g. a local OpenAI-compatible server with --provider custom)")
    ps.add_argument("--llm-key-env", action="append", default=None, metavar="NAME",
                    help="an environment variable a script's apiKey may name, beyond its provider's own "
                         "(OPENAI_API_KEY, OPENROUTER_API_KEY, ANTHROPIC_API_KEY) (repeatable)")
    ps.add_argument("--allow-base-url", action="append", default=None, metavar="URL",
                    help="a baseUrl a script may choose, beyond its provider's own and this machine's (repeatable)")


def add_other_commands(commands) -> None:
    help_ = commands.add_parser("help", help="print a language's full reference")
    help_.add_argument("topic", choices=("filesdsl", "promptscript"))
    doctor = commands.add_parser("doctor", help="show which hardening layers are in force on this machine")
    doctor.add_argument("--timeout", type=seconds, default=10.0, metavar="S", help=argparse.SUPPRESS)
    audit = commands.add_parser("audit", help="run plain Python in the hardened worker (no transpiler) and report what it did")
    audit.add_argument("script", help="a Python file")
    audit.add_argument("--mode", choices=("os", "restricted"), default="restricted",
                       help="restricted: compile with RestrictedPython and the FilesDSL guards (default); os: plain Python")
    audit.add_argument("--root", "--sandbox-root", dest="root", default=None, help="directory mounted at / for the broker's file ops")
    audit.add_argument("--timeout", type=seconds, default=10.0, metavar="S", help="wall-clock limit in seconds (default 10)")
    audit.add_argument("--memory", type=int, default=256, metavar="MB", help="worker memory limit in MiB (default 256)")
    audit.add_argument("--max-output", type=int, default=1_000_000, metavar="BYTES", help="output cap (default 1000000)")
    audit.add_argument("--layers", default=None, metavar="L1,L2",
                       help="apply only these hardening layers, to audit each alone (default: all)")
    replay = commands.add_parser("replay",
                                 help="run a recorded PromptScript run again with its recorded LLM answers (no network)")
    replay.add_argument("run_id", help="the run's id: its directory in PROJECT/.ps-runs/")
    replay.add_argument("--project", default=".", metavar="DIR", help="the project the run was in (default: .)")
    replay.add_argument("--yes", action="store_true", help="pre-approve every write")
    replay.add_argument("--timeout", type=seconds, default=None, metavar="S", help="wall-clock limit in seconds")
    add_budget_options(replay.add_argument_group("budgets (as fdsl run's, never the recorded run's)"), PSOptions())
    ls = commands.add_parser("ls", help="list a directory of the sandbox (structured entries)")
    ls.add_argument("path", nargs="?", default="/", help="virtual directory (default /)")
    ls.add_argument("--json", action="store_true", help="print the entries as JSON with @type")
    ls.add_argument("--recursive", action="store_true", help="list everything under the directory")
    ls.add_argument("--offset", type=int, default=0, metavar="N", help="skip the first N entries (paging a large directory)")
    ls.add_argument("--limit", type=int, default=0, metavar="N", help="print at most N entries (default 0: all)")
    add_sandbox_options(ls)
    add_run_many(commands)
    server = commands.add_parser("server", help="the per-user server behind `fdsl run` (docs/scale.md)")
    server.add_argument("action", choices=("start", "stop", "status"))
    find = commands.add_parser("find", help="find entries under a directory of the sandbox by glob")
    find.add_argument("path", help="virtual directory")
    find.add_argument("glob", help="glob on the path relative to PATH ('**/*.md')")
    find.add_argument("--json", action="store_true", help="print the entries as JSON with @type")
    add_sandbox_options(find)
    mcp = commands.add_parser("mcp", help="serve grep, read, ls, find and run_fdsl to an MCP client over stdio (docs/tools.md)")
    add_sandbox_options(mcp)
    mcp.add_argument("--isolation", choices=("best", "strict"), default="best",
                     help="run_fdsl's worker and the PDF extractor: best (default) or strict (every hardening layer)")
    mcp.add_argument("--memory", type=int, default=256, metavar="MB", help="run_fdsl's worker memory limit in MiB (default 256)")
    from runtime.index.cli import add_index_command

    add_index_command(commands)


def add_run_many(commands) -> None:
    many = commands.add_parser("run-many", help="run many scripts, each in its own jailed worker; results as JSON lines",
                               description="Run many scripts on a local pool of brokers, each script in a fresh jailed "
                                           "worker; print one JSON object per script as it finishes (docs/scale.md).")
    many.add_argument("scripts", nargs="*", help="scripts (.fdsl or .ps)")
    many.add_argument("--from", dest="from_file", default=None, metavar="FILE.jsonl",
                      help='jobs, one JSON object per line: {"script": PATH} or {"source": TEXT, "lang": "fdsl"}, '
                           "with optional id, root, mounts, project, timeout, memory_mb, max_output, ...")
    many.add_argument("--root", default=None, help="directory mounted read-only at / (default for every job: .)")
    many.add_argument("--mount", action="append", default=[], metavar="HOST:/point[:ro|rw]", help="add a mount to every job")
    many.add_argument("--project", default=None, metavar="DIR", help="PromptScript jobs: the project, read-write at /")
    many.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT_S, metavar="S",
                      help=f"each script's wall-clock limit (default {DEFAULT_TIMEOUT_S:g})")
    many.add_argument("--memory", type=int, default=256, metavar="MB", help="each worker's memory limit in MiB (default 256)")
    many.add_argument("--max-output", type=int, default=1_000_000, metavar="BYTES", help="each script's output cap")
    many.add_argument("--jobs", type=int, default=0, metavar="N", help="scripts at once (default: the machine's cores)")
    many.add_argument("--yes", action="store_true", help="pre-approve every operation that needs approval")
    many.add_argument("--backend", choices=("local", "ray"), default="local",
                      help="local: a pool of broker processes on this machine (default); ray: tasks on a Ray cluster "
                           "(pip install 'filesdsl[ray]')")
    many.add_argument("--address", default=None, metavar="ray://HOST:PORT|auto",
                      help="--backend ray: the cluster (default: a local Ray started for this command)")
