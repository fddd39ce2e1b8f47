"""PromptScript in the broker: the ``ps.*`` handlers, policy scopes, budgets and the run log.

One ``PSSession`` per run. Its handler table (``session.handlers()``) is what the broker
serves a PromptScript worker: ``ping`` and the ``ps.*`` ops, nothing else. Each handler says
its decision:

  * ``ps.start``  Allow: starts the run's clock (--max-time counts from here, not from the
    worker's start-up) and returns the budgets the worker enforces itself (steps; time too,
    with its interval timer) and the base policy; the broker enforces time and tool calls
    again on every op.
  * ``ps.steps``  Record the worker's step counter (it reports every 16384 steps); a count
    past --max-steps spends the budget (logged as ``budget``).
  * ``ps.scope``  enter: validate the policy, push its INTERSECTION with the scope in force
    (an inner scope can never widen an outer one); exit: pop (never below the base).
  * ``ps.action`` Deny when a budget is spent, when the loop detector trips, or when the
    policy in force does not allow the action; then dispatch to ``self.actions[name]``
    (a callable ``(args: dict, policy: dict) -> (value, printed_text|None)``): REPORT and
    ASK_USER here, the file actions and RUN_CMD in runtime/promptscript/actions.py (given a sandbox).
    The work stops at the earlier of --max-time (a LimitError) and the worker's pending
    ``timeout`` block (``deadline_ms``; a TimeoutError the worker turns into that block's
    timeout): ``self.deadline`` is what the handlers consult.
  * ``ps.parallel`` READ_FILE / SEARCH items in windows of ``max`` threads, in input order.
  * ``ps.llm``    A language-model call (runtime/promptscript/llm/layer.py: its budgets,
    deadlines, answer checks and keys); the plans it returns come back as ``ps.action``.
  * ``ps.event``  Append a run-log event the worker reports (retry attempt, timeout, block
    start/end, a budget the worker enforces); ``end`` records the final step count.

Each scope of the policy stack also holds its Sandbox (``ProjectActions.bind``): the run's
Sandbox (the project at "/", other mounts as given) at the bottom, ``Sandbox.derive`` for each
``with policy``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import fields
from functools import partial
from pathlib import Path
from typing import Callable

from runtime.broker import Handlers
from runtime.errors import LimitError, RunSetupError, SandboxError, ScriptError
from runtime.promptscript import dialogue
from runtime.promptscript.arguments import check_action_args
from runtime.promptscript.deadline import OpDeadline
from runtime.promptscript.llm.config import CLIDefaults
from runtime.promptscript.llm.layer import LLMLayer
from runtime.promptscript.options import PSOptions
from runtime.promptscript.parallel import run_parallel
from runtime.promptscript.policy import ACTIONS, ActionError, PolicyStack
from runtime.promptscript.runlog import RunLog, RunLogError, start_fields
from runtime.promptscript.search import Found
from wire.protocol import LOOP_MAX_CYCLE, LOOP_REPEATS, repeating_cycle

EVENT_KINDS = frozenset({"retry", "timeout", "block_start", "block_end", "budget", "end"})


# ---- the session -------------------------------------------------------------------------

def _canonical(args: dict) -> str:
    return json.dumps(args, sort_keys=True, ensure_ascii=False)


class PSSession:
    def __init__(self, options: PSOptions, sandbox=None, *, stdin=None, stderr=None,
                 run_deadline: float | None = None) -> None:
        self.options = options
        self.run_deadline = run_deadline  # the run's wall clock (time.monotonic()), from run_script
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stderr = stderr if stderr is not None else sys.stderr
        self.started = time.monotonic()  # restarted by ps.start: --max-time counts the script only
        self.script_started = False
        self.policies = PolicyStack(options.allow_commands, options.max_files_changed, options.max_file_bytes)
        self.tool_calls = 0
        self.steps = 0
        self.history: list[str] = []
        self.stopped: ScriptError | None = None  # a spent budget stays spent
        self.reports: list[dict] = []
        self.deadline = OpDeadline(self)
        self.log = options.run_log
        if self.log is None and options.project is not None:
            self.log = RunLog(Path(options.project), options.max_log_bytes)
        self.llm = LLMLayer(self, CLIDefaults(options.provider, options.model, options.base_url,
                                          tuple(options.llm_key_env), tuple(options.allow_base_urls)))
        self.actions: dict[str, Callable[[dict, dict], tuple]] = {
            "REPORT": partial(dialogue.report, self),
            "ASK_USER": partial(dialogue.ask_user, self),
        }
        self.files = None  # the file actions and RUN_CMD, over the run's Sandbox
        if sandbox is not None:
            from runtime.promptscript.actions import ProjectActions

            self.files = ProjectActions(sandbox, project=options.project, approve=options.approve,
                                        deadline=self.deadline, output_cap=options.output_cap,
                                        files_budget=options.max_files_changed, stop=self.stop,
                                        protected=frozenset({self.log.identity}) if self.log else frozenset(),
                                        isolation=options.isolation)
            self.files.bind(self.policies)
            self.actions.update(self.files.handlers())
        if self.log:
            try:
                self.log.write("start", options=start_fields(options))
            except LimitError as exc:  # before the script: a problem of the project, not the script's
                raise RunLogError(str(exc).replace("; the run is stopped", "")) from None

    def event(self, event: str, **fields) -> None:
        if self.log:
            self._logged(self.log.write, event, **fields)

    def log_action(self, name: str, values: dict, ok: bool, **fields) -> None:
        if self.log:
            self._logged(self.log.action, name, values, ok, **fields)

    def _logged(self, write, *args, **fields) -> None:
        """A run log that cannot be written (a full disk) stops the run, for good."""
        try:
            write(*args, **fields)
        except LimitError as exc:
            if self.stopped is None:
                self.stopped = exc
            raise

    # -- budgets --

    def check_budgets(self) -> None:
        if self.stopped is not None:
            raise self.stopped
        o = self.options
        elapsed_ms = (time.monotonic() - self.started) * 1000
        if o.max_time_ms and elapsed_ms > o.max_time_ms:
            self.stop_for_time()

    def stop_for_time(self, what: str | None = None):
        elapsed_ms = int((time.monotonic() - self.started) * 1000)
        detail = f"; {what}" if what else ""
        self.stop(f"budget exceeded: --max-time {self.options.max_time_ms} ms "
                  f"(the script ran for {elapsed_ms} ms{detail})")

    def spend_budget(self, message: str, **fields) -> None:
        """A budget ran out: it stays spent, and the run log says so once."""
        if self.stopped is None:
            self.stopped = LimitError(message)
            self.event("budget", **fields, message=message)

    def stop(self, message: str):
        self.spend_budget(message)
        raise self.stopped

    # -- handlers --

    def handlers(self) -> Handlers:
        return Handlers({
            "ping": lambda: None,
            "ps.start": self.op_start,
            "ps.steps": self.op_steps,
            "ps.action": self.op_action,
            "ps.parallel": self.op_parallel,
            "ps.scope": self.op_scope,
            "ps.event": self.op_event,
            "ps.llm": self.llm.op_llm,
            "ps.counters": self.llm.counters,
        }, finish=self.finish)

    def op_start(self):
        if not self.script_started:  # once: a worker cannot restart the clock
            self.script_started = True
            self.started = time.monotonic()  # the script starts now: the worker's start-up is not counted
        return {"max_steps": self.options.max_steps, "max_time_ms": self.options.max_time_ms,
                "policy": self.policies.current, "files_changed": self.files_changed,
                "halt_on_loop": self.options.halt_on_loop, "max_llm_calls": self.options.max_llm_calls,
                "max_cost": self.options.max_cost, **self.llm.counters()}

    @property
    def files_changed(self) -> int:
        return len(self.files.changed) if self.files is not None else 0

    def op_steps(self, count: int):
        o = self.options
        if o.max_steps and count > o.max_steps:
            self.steps = max(self.steps, o.max_steps)
            self.stop(f"budget exceeded: --max-steps {o.max_steps} (the script executed {o.max_steps} statements)")
        self.steps = max(self.steps, count)
        self.check_budgets()
        return None

    def op_event(self, kind: str, line: int, data: dict):
        if kind not in EVENT_KINDS:
            raise ActionError(f"unknown event kind {kind[:40]!r}")
        fields = data
        if type(fields) is not dict:
            raise ActionError("event data must be an object")
        if kind == "end":  # the worker's final step count (the run log's `end` event reports it)
            if type(fields.get("steps")) is int:
                self.steps = max(self.steps, fields["steps"])
            return None
        if kind == "budget":  # a budget the worker enforces itself (--max-time) ran out
            self.spend_budget(str(fields.get("message", "budget exceeded"))[:500], line=line)
            return None
        self.event(kind, line=line, **{str(k)[:40]: v for k, v in fields.items()})
        return None

    def op_scope(self, change: str, policy: dict, line: int):
        if change == "enter":
            value = policy
            effective = self.policies.enter(value)
            self.event("scope_enter", line=line, policy=value, effective=effective)
            return effective
        if change == "exit":
            restored = self.policies.exit()
            self.event("scope_exit", line=line, restored=restored)
            return restored
        raise ActionError(f"unknown scope change {change[:40]!r}")

    def parse_action(self, name, args) -> dict:
        if name not in ACTIONS:
            raise ActionError(f"unknown action '{str(name)[:40]}'")
        if type(args) is not dict:
            raise ActionError(f"{name}: args must be an object")
        return args

    def admit(self, name: str, values: dict) -> None:
        """Count the call against --max-tool-calls and the loop detector (both stop the run)."""
        o = self.options
        if o.max_tool_calls and self.tool_calls >= o.max_tool_calls:
            self.stop(f"budget exceeded: --max-tool-calls {o.max_tool_calls} "
                      f"(action {self.tool_calls + 1}, {name}, refused)")
        self.tool_calls += 1
        self.history.append(name + " " + _canonical(values))
        del self.history[:-LOOP_REPEATS * LOOP_MAX_CYCLE]
        if o.halt_on_loop:
            cycle = repeating_cycle(self.history)
            if cycle == 1:
                self.stop(f"loop detected: {name} with the same arguments {LOOP_REPEATS} times in a row (--halt-on-loop)")
            if cycle:
                names = ", ".join(key.split(" ", 1)[0] for key in self.history[-cycle:])
                self.stop(f"loop detected: the same {cycle} actions ({names}) with the same arguments "
                          f"{LOOP_REPEATS} times in a row (--halt-on-loop)")

    def dispatch(self, name: str, values: dict, policy: dict):
        if name not in policy["allowActions"]:
            allowed = ", ".join(policy["allowActions"]) or "none"
            raise SandboxError(f"policy denies action {name} (allowed here: {allowed})")
        handler = self.actions.get(name)
        if handler is None:
            raise ActionError(f"action {name} needs files to act on: this session has no sandbox")
        return handler(check_action_args(name, values), policy)

    def _block_deadline(self, deadline_ms: int) -> None:
        if type(deadline_ms) is not int or deadline_ms < 0:
            raise ActionError("deadline_ms must be a non-negative integer")
        self.deadline.block_at = time.monotonic() + deadline_ms / 1000 if deadline_ms else None

    def op_action(self, name: str, args: dict, deadline_ms: int = 0):
        self.check_budgets()
        values = self.parse_action(name, args)
        self._block_deadline(deadline_ms)
        try:
            self.admit(name, values)
            policy = self.policies.current
            started = time.monotonic()
            try:
                self.deadline.check(name)
                value, printed = self.dispatch(name, values, policy)
            except ScriptError as exc:
                self.trace(name, values, f"error: {exc}", started)
                self.log_action(name, values, False, error=str(exc))
                self.llm.noted(name, values, False, str(exc))
                raise
        finally:
            self.deadline.block_at = None
        self.trace(name, values, "ok", started)
        self.llm.noted(name, values, True)
        reply = {"value": value, "print": printed, "files_changed": self.files_changed}
        if isinstance(value, Found):
            reply["search"] = value.info
        self.log_action(name, values, True, value=value, **({"search": value.info} if "search" in reply else {}))
        return reply

    def op_parallel(self, items: list, max: int, fail_fast: bool, deadline_ms: int = 0) -> dict:
        self._block_deadline(deadline_ms)
        try:
            return run_parallel(self, items, max, fail_fast)
        finally:
            self.deadline.block_at = None

    def trace(self, name: str, values: dict, outcome: str, started: float) -> None:
        if self.options.verbose:
            shown = _canonical(values)
            if len(shown) > 200:
                shown = shown[:197] + "..."
            ms = (time.monotonic() - started) * 1000
            print(f"[ps] action #{self.tool_calls} {name} {shown} -> {outcome} ({ms:.1f} ms)", file=self.stderr)

    # -- end of run --

    def finish(self, result) -> None:
        self.llm.close()
        if self.stopped is not None and result.exit_code == 0:  # a spent budget fails the run, whatever caught it
            _fail(result, self.stopped)
        if self.log is None or self.log.closed:
            return
        fields = {"exit_code": result.exit_code, "steps": self.steps, "tool_calls": self.tool_calls,
                  **self.llm.totals()}
        try:
            if result.error:
                self.log.write("error", kind=result.error_kind, line=result.error_line,
                               column=result.error_column, message=result.error.splitlines()[0])
            self.log.write("end", **fields)
        except LimitError as exc:  # the buffered events could not be written: the run's record is incomplete
            if result.exit_code == 0:
                _fail(result, exc)
            else:
                result.warnings.append(str(exc))
        self.log.close()


def _fail(result, exc) -> None:
    """A run that finished fails with `exc` (a ScriptError's kind and message)."""
    result.exit_code, result.error_kind, result.error_message = 1, exc.kind, str(exc)
    result.error = f"{exc.kind}: {exc}"


def promptscript_run(sandbox, *, approve, limits, deadline: float, isolation: str, options: dict) -> Handlers:
    """The broker's handlers for a PromptScript run over the run's Sandbox (``LANGUAGE_RUNS["ps"]``);
    ``options`` are PSOptions fields (an unknown one is a RunSetupError). The run's approver
    answers writes unless the options name their own. Keeps the session as ``handlers.session``."""
    known = {f.name for f in fields(PSOptions)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise RunSetupError(f"unknown PromptScript option(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    options.setdefault("approve", approve)
    options.setdefault("isolation", isolation)
    if options.get("project") is not None:
        from runtime.promptscript.actions import project_mount

        project_mount(sandbox, options["project"])  # checked before a run log is made there
    session = PSSession(PSOptions(**options), sandbox, run_deadline=deadline)
    table = session.handlers()
    table.session = session
    return table
