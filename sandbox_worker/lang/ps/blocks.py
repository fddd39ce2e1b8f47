"""PromptScript's blocks: the run, timeout, retry and its attempts, policy scopes; plans."""

from __future__ import annotations

import signal
import time

from sandbox_worker.client import ScriptFailure
from wire import protocol

from .errors import (
    MAX_BLOCK_MS,
    MAX_RETRY_ATTEMPTS,
    PLAN_KEYS,
    PSError,
    TimeoutInterrupt,
    catchable,
)
from .runtime import MACHINERY, Deadline, Runtime
from .values import is_number, python_message, render, type_name

# ---- control blocks ----------------------------------------------------------------------------
# Their __enter__/__exit__ are MACHINERY: no interrupt is ever raised inside them.

def _number(value, what: str, line: int, low: float, high: float):
    if not is_number(value) or not (low <= value <= high):
        raise PSError(f"{what} must be a number from {low:g} to {high:g}, not {render(value, top=False)} (line {line})")
    return value


def _outcome(exc) -> dict:
    if exc is None:
        return {"outcome": "ok"}
    if isinstance(exc, TimeoutInterrupt):
        return {"outcome": "interrupted", "by_line": exc.entry.line}
    if isinstance(exc, ScriptFailure):
        return {"outcome": "error", "error_kind": exc.kind, "error": exc.message[:500]}
    return {"outcome": "error", "error": python_message(exc)[:500]}


class MainBlock:
    """``with ps_main():`` around the whole script: reports the final step count and words a
    Python error the PromptScript way (its traceback kept, so the error keeps its line)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        rt = self.runtime
        budget = next((e for e in rt.deadlines if e.budget and not e.fired), None)
        # One step: the script is over (no interrupt any more), and it was over budget or not.
        rt.ended, over = True, exc is None and budget is not None and budget.at <= time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, 0)
        if exc is not None:
            rt.unwind(tb)
        try:
            rt.event("end", 0, steps=rt.steps)
        except ScriptFailure:
            pass
        if over:  # --max-time passed while the last statement ran: the run is over budget
            rt.budget_spent(f"budget exceeded: --max-time {rt.max_time_ms} ms (the script ran for "
                            f"{int((time.monotonic() - rt.started) * 1000)} ms)")
        if exc is None or isinstance(exc, (ScriptFailure, MemoryError, RecursionError)):
            return False
        if isinstance(exc, TimeoutInterrupt):  # cannot happen: each block owns its interrupt
            message = f"timeout: the block at line {exc.entry.line} did not finish within {exc.entry.ms:g} ms"
        elif isinstance(exc, Exception):
            message = python_message(exc)
        else:
            return False
        raise PSError(message).with_traceback(tb) from None


class TimeoutBlock:
    def __init__(self, runtime: Runtime, ms, line: int) -> None:
        _number(ms, "timeout", line, 1, MAX_BLOCK_MS)
        self.runtime, self.ms, self.line = runtime, ms, line

    def __enter__(self):
        rt = self.runtime
        rt.event("block_start", self.line, block="timeout", ms=self.ms)
        self.started = time.monotonic()
        self.entry = Deadline(self.started + self.ms / 1000, self.ms, self.line)
        rt.deadlines.append(self.entry)
        rt.rearm()
        return None

    def __exit__(self, exc_type, exc, tb):
        rt = self.runtime
        if self.entry in rt.deadlines:
            rt.deadlines.remove(self.entry)
        rt.rearm()
        mine = isinstance(exc, TimeoutInterrupt) and exc.entry is self.entry
        elapsed = round((time.monotonic() - self.started) * 1000, 3)
        if mine:
            rt.unwind(tb)  # the interrupt stops here: the runs it cut short give their statements back
            rt.event("timeout", self.line, ms=self.ms)
            rt.event("block_end", self.line, block="timeout", outcome="timeout", elapsed_ms=elapsed)
            raise PSError(f"timeout: the block at line {self.line} did not finish within {self.ms:g} ms") from None
        rt.event("block_end", self.line, block="timeout", elapsed_ms=elapsed, **_outcome(exc))
        return False


class RetryBlock:
    """``with ps_retry(N, MS, line) as ps_attempts: for ps_attempt in ps_attempts:
    with ps_attempt: <body>``: the with logs the block's start and end; the loop yields one
    Attempt per try (sleeping the backoff before each but the first, interruptibly)."""

    def __init__(self, runtime: Runtime, attempts, backoff, line: int) -> None:
        if type(attempts) is not int or not 1 <= attempts <= MAX_RETRY_ATTEMPTS:
            raise PSError(f"retry needs a whole number of attempts from 1 to {MAX_RETRY_ATTEMPTS}, "
                          f"not {render(attempts, top=False)} (line {line})")
        _number(backoff, "backoff", line, 0, MAX_BLOCK_MS)
        self.runtime, self.attempts, self.backoff, self.line = runtime, attempts, backoff, line
        self.attempt = 0
        self.done = False
        self.try_ = Attempt(self)

    def __enter__(self):
        self.started = time.monotonic()
        self.runtime.event("block_start", self.line, block="retry", attempts=self.attempts, backoff_ms=self.backoff)
        return self

    def __exit__(self, exc_type, exc, tb):
        elapsed = round((time.monotonic() - self.started) * 1000, 3)
        self.runtime.event("block_end", self.line, block="retry", attempts_made=self.attempt,
                           elapsed_ms=elapsed, **_outcome(exc))
        return False

    def __iter__(self):
        return self

    def __next__(self):
        if self.done or self.attempt >= self.attempts:
            raise StopIteration
        if self.attempt and self.backoff:
            self.runtime.safe_point()
            time.sleep(self.backoff / 1000)  # a `timeout` around the retry interrupts it
        self.attempt += 1
        return self.try_


class Attempt:
    __slots__ = ("block",)

    def __init__(self, block: RetryBlock) -> None:
        self.block = block

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        block = self.block
        if exc is None:
            block.done = True
            return False
        if not catchable(exc) or block.attempt >= block.attempts:
            block.done = True
            return False  # the last error propagates as it is
        block.runtime.unwind(tb)  # caught: the runs the error cut short give their statements back
        message = exc.message if isinstance(exc, ScriptFailure) else python_message(exc)
        block.runtime.event("retry", block.line, attempt=block.attempt, of=block.attempts, error=message[:500])
        return True


class PolicyScope:
    def __init__(self, runtime: Runtime, policy, line: int) -> None:
        self.runtime, self.line = runtime, line
        self.policy = validate_policy(policy, line)

    def __enter__(self):
        rt = self.runtime
        effective = rt.call("ps.scope", change="enter", policy=self.policy, line=self.line)
        rt.scopes.append(effective if type(effective) is dict else {})
        return None

    def __exit__(self, exc_type, exc, tb):
        rt = self.runtime
        if rt.scopes:
            rt.scopes.pop()
        rt.call("ps.scope", change="exit", policy={}, line=self.line)
        return False


MACHINERY.update(f.__code__ for f in (
    MainBlock.__exit__, TimeoutBlock.__enter__, TimeoutBlock.__exit__, RetryBlock.__enter__,
    RetryBlock.__exit__, Attempt.__exit__, PolicyScope.__enter__, PolicyScope.__exit__,
))


def validate_policy(policy, line: int) -> dict:
    try:
        return protocol.check_policy(policy, type_name)
    except ValueError as exc:
        raise PSError(f"{exc} (line {line})") from None


def validate_plan(plan) -> tuple[str, dict]:
    if type(plan) is not dict:
        raise PSError(f"apply(plan) needs a plan object, not {type_name(plan)}")
    unknown = [k for k in plan if k not in PLAN_KEYS]
    if unknown:
        raise PSError(f"plan has an unknown field '{unknown[0]}' (fields: {', '.join(PLAN_KEYS)})")
    for key in ("action", "args", "done"):
        if key not in plan:
            raise PSError(f"plan is missing its '{key}' field")
    if type(plan["action"]) is not str:
        raise PSError(f"plan.action must be a string, not {type_name(plan['action'])}")
    if type(plan["args"]) is not dict:
        raise PSError(f"plan.args must be an object, not {type_name(plan['args'])}")
    if type(plan["done"]) is not bool:
        raise PSError(f"plan.done must be true or false, not {type_name(plan['done'])}")
    if "confidence" in plan:
        c = plan["confidence"]
        if not is_number(c) or not 0 <= c <= 1:
            raise PSError(f"plan.confidence must be a number from 0 to 1, not {render(c, top=False)}")
    if "reason" in plan and type(plan["reason"]) is not str:
        raise PSError(f"plan.reason must be a string, not {type_name(plan['reason'])}")
    return plan["action"], plan["args"]
