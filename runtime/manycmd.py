"""`fdsl run-many SCRIPTS... | --from FILE.jsonl`: many scripts on a local pool (runtime/fleet.py).

stdout: one JSON object per script as it finishes (`RunResult.as_json()` with the job's index,
script, id and attempts). stderr: a progress line on a terminal, then a summary. Exit code:
0 when every script succeeded, 1 when any did not, 2 for a usage error (nothing run).
"""

from __future__ import annotations

import json
import sys
import time

from runtime.cliparser import UsageError
from runtime.errors import RunSetupError


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
    defaults = {"root": args.root, "mounts": args.mount, "project": args.project, "timeout": args.timeout,
                "memory_mb": args.memory, "max_output": args.max_output}
    try:
        jobs = [job_from_script(i, path, defaults) for i, path in enumerate(args.scripts)]
        if args.from_file is not None:
            jobs += jobs_from_jsonl(args.from_file, defaults, first_index=len(jobs))
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
    for result in results:
        failed += result["exit_code"] != 0
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    progress.finish()
    elapsed = time.monotonic() - started
    rate = len(jobs) / elapsed if elapsed > 0 else 0.0
    print(f"run-many: {len(jobs)} scripts, {len(jobs) - failed} ok, {failed} failed, {elapsed:.1f} s "
          f"({rate:.1f} scripts/s)", file=sys.stderr)
    return 1 if failed else 0


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
