"""The run-time state a PromptScript worker keeps: steps, deadlines, the policy scope mirror."""

from __future__ import annotations

import math
import signal
import time

from sandbox_worker.client import BrokerClient, ScriptFailure

from .errors import SCRIPT_FILENAME, STEP_REPORT_EVERY, BudgetExceeded, PSError, TimeoutInterrupt

# ---- the run-time state: steps, deadlines, scopes ------------------------------------------

# The code of every block's __enter__/__exit__ (blocks.py adds them): no interrupt inside.
MACHINERY: set = set()


class Deadline:
    __slots__ = ("at", "ms", "line", "fired", "budget")

    def __init__(self, at: float, ms, line: int, budget: bool = False) -> None:
        self.at, self.ms, self.line, self.fired, self.budget = at, ms, line, False, budget


def _interruptible(frame) -> bool:
    """True when an interrupt may be raised right here: the innermost frame is the worker's
    helper code, called (directly or not) by the script, and no block machinery is running."""
    if frame is None or frame.f_code.co_filename == SCRIPT_FILENAME:
        return False  # the script's own code: wait for its next statement
    script = False
    while frame is not None:
        code = frame.f_code
        if code in MACHINERY:
            return False
        if code.co_filename == SCRIPT_FILENAME:
            script = True
        frame = frame.f_back
    return script


class Runtime:
    def __init__(self, client: BrokerClient, config: dict) -> None:
        # The script's module globals. The generated code keeps the step counter here (``ps_n``,
        # read and written as a global by every function of the script, so counting a run of
        # statements costs no call) and compares it with ``ps_at``, the count at which the next
        # slow path is due (``check_at``): a report, the step budget, or an interrupt.
        self.globals: dict = {"ps_n": 0, "ps_at": 0}
        # Generated line -> how many statements of its run follow it (ps_run's table): they were
        # counted when the run started, so an exception there gives them back (unwind).
        self.lines: dict = {}
        self.client = client
        self.max_steps = int(config.get("max_steps") or 0)
        self.max_time_ms = int(config.get("max_time_ms") or 0)
        base = config.get("policy")
        self.base_policy = base if type(base) is dict else {}
        changed = config.get("files_changed")
        self.files_changed = changed if type(changed) is int else 0
        self.halt_on_loop = config.get("halt_on_loop") is True
        self.max_llm_calls = config.get("max_llm_calls")
        self.max_cost = config.get("max_cost")
        self.llm_calls = config.get("llm_calls") if type(config.get("llm_calls")) is int else 0
        self.cost = config.get("cost") if type(config.get("cost")) in (int, float) else 0
        self.last_search: dict | None = None  # the last apply SEARCH's {total, truncated, skipped, ...}
        self.started = time.monotonic()
        self.steps = 0
        self.deadlines: list[Deadline] = []
        self.scopes: list[dict] = []
        self.critical = 0
        self.due = False  # an interrupt waits for the next safe point
        self.ended = False
        self.check_at = 0  # ps_step's next slow path: a report, the step budget or `due`
        self.plan_check(0)
        if self.max_time_ms:
            self.deadlines.append(Deadline(self.started + self.max_time_ms / 1000, self.max_time_ms, 0, budget=True))
        signal.signal(signal.SIGALRM, self.on_alarm)
        self.rearm()

    def policy(self) -> dict:
        return self.scopes[-1] if self.scopes else self.base_policy

    # -- critical sections: no interrupt while talking to the broker --

    def enter_critical(self) -> None:
        self.critical += 1

    def leave_critical(self) -> None:
        self.critical -= 1

    def call(self, op: str, **args):
        self.enter_critical()
        try:
            return self.client.call(op, **args)
        finally:
            self.leave_critical()

    def output(self, text: str) -> None:
        self.enter_critical()
        try:
            self.client.output(text)
        finally:
            self.leave_critical()

    def action_call(self, op: str, **args):
        """ps.action / ps.parallel, with the time left in the earliest pending `timeout` block:
        the broker stops its work there and answers TimeoutError, which becomes that block's
        timeout here."""
        entry = None
        for e in self.deadlines:
            if not e.budget and not e.fired and (entry is None or e.at < entry.at):
                entry = e
        left_ms = 0 if entry is None else max(1, math.ceil((entry.at - time.monotonic()) * 1000))
        try:
            return self.call(op, deadline_ms=left_ms, **args)
        except ScriptFailure as exc:
            if exc.kind != "TimeoutError":
                raise
            if entry is None or entry not in self.deadlines:
                raise PSError(exc.message) from None
            self.fire(force=entry)
            raise

    # -- deadlines --

    def on_alarm(self, signum, frame) -> None:
        if self.ended:
            return
        if self.critical or not _interruptible(frame):
            self.defer()
            return
        self.fire()

    def defer(self) -> None:
        """The next statement (or a retry's next backoff) takes the interrupt."""
        self.due = True
        self.check_at = 0

    def safe_point(self) -> None:
        if self.due and not self.critical:
            self.due = False
            self.plan_check(self.steps)
            self.fire()

    def fire(self, force: Deadline | None = None) -> None:
        now = time.monotonic()
        for entry in self.deadlines:  # outermost first: it wins
            if not entry.fired and (entry.at <= now or entry is force):
                entry.fired = True
                if entry.budget:
                    self.budget_spent(f"budget exceeded: --max-time {self.max_time_ms} ms "
                                      f"(the script ran for {int((now - self.started) * 1000)} ms)")
                raise TimeoutInterrupt(entry)
        self.rearm()

    def budget_spent(self, message: str):
        """The run's log gets its `budget` event (the broker marks the budget spent), then stop."""
        try:
            self.call("ps.event", kind="budget", line=0, data={"message": message})
        except ScriptFailure:
            pass
        raise BudgetExceeded(message)

    def rearm(self) -> None:
        pending = [e.at for e in self.deadlines if not e.fired]
        if not pending or self.ended:
            signal.setitimer(signal.ITIMER_REAL, 0)
            return
        signal.setitimer(signal.ITIMER_REAL, max(min(pending) - time.monotonic(), 1e-5))

    # -- steps --

    @property
    def steps(self) -> int:
        return self.globals["ps_n"]

    @steps.setter
    def steps(self, n: int) -> None:
        self.globals["ps_n"] = n

    @property
    def check_at(self) -> int:
        return self.globals["ps_at"]

    @check_at.setter
    def check_at(self, n: int) -> None:
        self.globals["ps_at"] = n

    def step_hook(self):
        """``ps_step()``: count one statement (the emitter's per-statement form)."""
        counters, slow = self.globals, self.slow_step

        def ps_step():
            n = counters["ps_n"] + 1
            counters["ps_n"] = n
            if n >= counters["ps_at"]:
                slow(n)

        return ps_step

    def check_hook(self):
        """``ps_check()``: the generated code has counted one statement itself
        (``if (ps_n := ps_n + 1) >= ps_at: ps_check()``) and reached ``check_at``."""
        counters, slow = self.globals, self.slow_step

        def ps_check():
            slow(counters["ps_n"])

        return ps_check

    def run_hook(self):
        """``@ps_run(table)`` on the generated ``def ps_script()``: keep the table of charged
        statements (see ``unwind``) and run the script (as a function: its variables are fast
        locals, not a dict)."""
        runtime = self

        def ps_run(lines):
            def run(script):
                runtime.lines = lines if type(lines) is dict else {}
                script()

            return run

        return ps_run

    def unwind(self, tb) -> None:
        """An exception left the runs it went through: the statements of those runs after the
        one that raised were counted when their run started and never ran. Called where an
        exception stops (a retry attempt that catches it, a timeout block that words its
        interrupt, the run's end), with its traceback: each script frame's line says how many."""
        back = 0
        lines = self.lines
        while tb is not None:
            code = tb.tb_frame.f_code
            # a guard's lambda stands on its guard's line: that frame is counted once, below it
            if code.co_filename == SCRIPT_FILENAME and code.co_name != "<lambda>":
                back += lines.get(tb.tb_lineno, 0)
            tb = tb.tb_next
        if back:
            self.steps -= back

    def plan_check(self, n: int) -> None:
        """ps_step's next slow path: the next report of the counter, or the step past the budget."""
        if self.due:
            self.check_at = 0
            return
        self.check_at = (n // STEP_REPORT_EVERY + 1) * STEP_REPORT_EVERY
        if self.max_steps:
            self.check_at = min(self.check_at, self.max_steps + 1)

    def slow_step(self, n: int) -> None:
        """Step n is due a check: a deferred interrupt, a report of the counter, or the budget."""
        self.safe_point()
        if self.max_steps and n > self.max_steps:
            self.steps -= 1
            self.call("ps.steps", count=n)  # the broker logs the budget and refuses (LimitError)
            raise BudgetExceeded(f"budget exceeded: --max-steps {self.max_steps} "
                                 f"(the script executed {self.max_steps} statements)")
        if n % STEP_REPORT_EVERY == 0:
            self.call("ps.steps", count=n)
        self.plan_check(n)

    def event(self, kind: str, line: int, **data) -> None:
        self.call("ps.event", kind=kind, line=line, data=data)
