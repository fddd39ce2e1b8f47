"""`fdsl run-many SCRIPTS... | --from FILE.jsonl`: many scripts on a local pool (runtime/fleet.py).

stdout: one JSON object per script as it finishes (`RunResult.as_json()` with the job's index,
script, id and attempts). stderr: a progress line on a terminal, then a summary. Exit code:
0 when every script succeeded, 1 when any did not (or stdout closed before every result was
written), 2 for a usage error (nothing run).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from runtime.cliparser import UsageError
from runtime.errors import RunSetupError
from runtime.jsonlines import json_line


def command_run_many(args) -> int:
    from runtime.cliparser import check_limits
    from runtime.fleet import job_from_script, jobs_from_jsonl, run_many, run_many_ray

    if not args.scripts and args.from_file is None:
        raise UsageError("run-many: give scripts, or --from FILE.jsonl")
    if args.jobs < 0:
        raise UsageError("--jobs cannot be negative")
    if args.address is not None and args.backend != "ray":
        raise UsageError("--address is for --backend ray")
    check_limits(memory_mb=args.memory, max_output=args.max_output)
    local = args.backend == "local"
    if local:  # (a cluster's nodes have the paths the jobs name: docs/scale.md)
        check_sandbox_options(args)
    if sys.stdout is None:
        raise UsageError("run-many: stdout is closed: the results would have nowhere to go")
    defaults = {"root": args.root, "mounts": args.mount, "project": args.project, "timeout": args.timeout,
                "memory_mb": args.memory, "max_output": args.max_output}
    try:
        jobs = [job_from_script(i, path, defaults) for i, path in enumerate(args.scripts)]
        if args.from_file is not None:
            jobs += jobs_from_jsonl(args.from_file, defaults, first_index=len(jobs), check_paths=local)
    except RunSetupError as exc:
        raise UsageError(str(exc)) from None
    progress = Progress(sys.stderr)
    failed = 0
    started = time.monotonic()
    try:
        if args.backend == "ray":
            results = run_many_ray(jobs, address=args.address, workers=args.jobs or None, approve_all=args.yes,
                                   on_progress=progress.update)
        else:
            results = run_many(jobs, workers=args.jobs or None, approve_all=args.yes, on_progress=progress.update)
    except RunSetupError as exc:  # Ray missing or its cluster unreachable: nothing ran
        raise UsageError(str(exc)) from None
    written = 0
    try:
        for result in results:
            failed += result["exit_code"] != 0
            try:
                sys.stdout.write(json_line(result, sys.stdout.encoding or "utf-8"))
                sys.stdout.flush()
            except BrokenPipeError:
                return stdout_closed(written, len(jobs))
            written += 1
    finally:
        results.close()  # however it ends (a signal, a closed stdout), the pool's processes end now
    progress.finish()
    elapsed = time.monotonic() - started
    rate = len(jobs) / elapsed if elapsed > 0 else 0.0
    print(f"run-many: {len(jobs)} scripts, {len(jobs) - failed} ok, {failed} failed, {elapsed:.1f} s "
          f"({rate:.1f} scripts/s)", file=sys.stderr)
    return 1 if failed else 0


def check_sandbox_options(args) -> None:
    """Every job's defaults from the command line, checked once, before anything runs."""
    from runtime.cliparser import parse_mount

    for flag, directory in (("--root", args.root), ("--project", args.project)):
        if directory is not None and not Path(directory).is_dir():
            raise UsageError(f"{flag} {directory}: not a directory")
    for text in args.mount:
        parse_mount(text)


def stdout_closed(written: int, total: int) -> int:
    """stdout's reader left: the rest of the results cannot be delivered. Exit 1, not 0: a
    caller must not take the batch for done."""
    devnull = os.open(os.devnull, os.O_WRONLY)  # for the exit's flush of what is left: no second error
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    try:
        print(f"run-many: stdout closed after {written} of {total} results; the other scripts were stopped",
              file=sys.stderr)
    except OSError:
        pass
    return 1


class Progress:
    """`[done/total] failed` redrawn in place, on a terminal only (a log stays clean)."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.live = stream.isatty()

    def update(self, done: int, total: int) -> None:
        if self.live:
            width = 30
            filled = width * done // max(total, 1)
            self.stream.write(f"\rrun-many [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
            self.stream.flush()

    def finish(self) -> None:
        if self.live:
            self.stream.write("\n")
