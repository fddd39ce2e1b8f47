"""`fdsl`: run FilesDSL scripts in the sandbox.

Exit codes: 0 success, 1 script error (syntax, runtime, policy denial, limit), 2 usage error,
124 timeout. Script output goes to stdout, errors to stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runtime.api import EXIT_USAGE, LANGUAGES, MountSpec, run_script


class UsageError(Exception):
    pass


def parse_mount(text: str) -> MountSpec:
    """HOST:/point[:ro|rw]"""
    parts = text.rsplit(":", 2)
    mode = "ro"
    if len(parts) == 3 and parts[2] in ("ro", "rw"):
        host, point, mode = parts
    elif len(parts) >= 2:
        host, point = text.rsplit(":", 1)
    else:
        raise UsageError(f"--mount {text!r}: expected HOST:/point[:ro|rw]")
    if not point.startswith("/"):
        raise UsageError(f"--mount {text!r}: the mount point must start with '/'")
    if not Path(host).is_dir():
        raise UsageError(f"--mount {text!r}: {host} is not a directory")
    return MountSpec(host_path=Path(host), mount_point=point, writable=mode == "rw")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fdsl", description="Run FilesDSL scripts in a jailed worker.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a script")
    run.add_argument("script", help="the script (.fdsl)")
    run.add_argument("--root", "--sandbox-root", dest="root", default=".", help="directory mounted at / (default: .)")
    run.add_argument("--mount", action="append", default=[], metavar="HOST:/point[:ro|rw]", help="add a mount (repeatable)")
    run.add_argument("--timeout", type=float, default=60.0, metavar="S", help="wall-clock limit in seconds (default 60)")
    run.add_argument("--memory", type=int, default=256, metavar="MB", help="worker memory limit in MiB (default 256)")
    run.add_argument("--max-output", type=int, default=1_000_000, metavar="BYTES", help="output cap (default 1000000)")
    run.add_argument("--lang", choices=sorted(set(LANGUAGES.values())), help="language (default: by extension)")
    run.add_argument("--verbose", action="store_true", help="print timings and resource figures to stderr")
    return parser


def command_run(args) -> int:
    script = Path(args.script)
    try:
        source = script.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such script: {args.script}") from None
    except IsADirectoryError:
        raise UsageError(f"{args.script} is a directory, not a script") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{args.script} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"cannot read {args.script}: {exc.strerror}") from None
    lang = args.lang or LANGUAGES.get(script.suffix)
    if lang is None:
        raise UsageError(f"cannot tell the language of {args.script}: use a .fdsl extension or --lang")
    if not Path(args.root).is_dir():
        raise UsageError(f"--root {args.root}: not a directory")
    if args.timeout <= 0 or args.memory <= 0 or args.max_output < 0:
        raise UsageError("--timeout and --memory must be positive, --max-output not negative")
    mounts = [parse_mount(text) for text in args.mount]

    def emit(text: str) -> None:
        sys.stdout.write(text)

    result = run_script(
        source,
        root=args.root,
        mounts=mounts,
        lang=lang,
        filename=str(script),
        timeout=args.timeout,
        memory_mb=args.memory,
        max_output=args.max_output,
        on_output=emit,
    )
    sys.stdout.flush()
    if result.error:
        print(result.error, file=sys.stderr)
    if args.verbose:
        for name, value in result.figures.items():
            shown = f"{value * 1000:.1f} ms" if name.endswith("_s") and value is not None else value
            print(f"[fdsl] {name}: {shown}", file=sys.stderr)
    return result.exit_code


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return command_run(args)
    except UsageError as exc:
        print(f"fdsl: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
