"""The options of a PromptScript run, with their defaults: one dataclass the session, the
command line's flags and their help text share (light to import: the CLI builds its help
from it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from runtime.promptscript.policy import DEFAULT_MAX_FILE_BYTES
from runtime.promptscript.runlog import DEFAULT_MAX_LOG_BYTES

if TYPE_CHECKING:
    from runtime.promptscript.runlog import RunLog


@dataclass
class PSOptions:
    """The options of a PromptScript run (CLI flags of `fdsl run x.ps`), with their defaults."""

    project: str | Path | None = None  # --project: mounted read-write at /; the run log goes to its .ps-runs/<id>/
    max_steps: int = 50_000  # --max-steps: statements executed (0: unlimited)
    max_time_ms: int = 600_000  # --max-time: milliseconds of running (0: unlimited)
    max_tool_calls: int = 0  # --max-tool-calls: apply() calls (0: unlimited)
    halt_on_loop: bool = False  # --halt-on-loop
    verbose: bool = False  # --verbose: trace each action on stderr
    allow_commands: tuple = ()  # the base scope's command allowlist (RUN_CMD)
    max_files_changed: int | None = None  # --max-files-changed: distinct files written/patched (None: no limit)
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES  # --max-file-bytes: the base policy's maxFileBytes
    write_approval: bool = True  # writes to the project mount ask `approve` (the CLI: terminal or --yes)
    approve: Callable | None = None  # approve(description) -> bool; None: writes needing approval are refused
    output_cap: int = 64 * 1024  # RUN_CMD: bytes kept of stdout and of stderr
    run_log: "RunLog | None" = None  # an already opened run log (the CLI opens it first); else one is made
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES  # --max-log-bytes: the run log's size limit
    isolation: str = "best"  # the run's --isolation: "strict" also refuses a RUN_CMD without its whole jail
    provider: str | None = None  # --provider: every LLM call's provider, over the script's (None: the script's, else detected)
    model: str | None = None  # --model: every LLM call's model (over the script's)
    base_url: str | None = None  # --base-url: every LLM call's base URL (provider custom: an OpenAI-compatible server)
    llm_key_env: tuple = ()  # --llm-key-env: environment variables a script's apiKey may name (beyond the provider's own)
    allow_base_urls: tuple = ()  # --allow-base-url: base URLs a script may choose (beyond its provider's and loopback)
    max_llm_calls: int = 500  # --max-llm-calls: requests sent to a model, retries included (0: unlimited)
    max_cost: float = 10.0  # --max-cost: USD of the LLM calls' token usage (0: unlimited)
    record_llm: bool = False  # keep the LLM answers beside the run log, for `fdsl replay` (the CLI sets it)
    replay: list | None = None  # `fdsl replay`: the recorded answers, used instead of any provider
    replay_of: str | None = None  # `fdsl replay`: the id of the run replayed (in the run log's start event)
