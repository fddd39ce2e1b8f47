"""PromptScript's errors in the worker, and which of them `retry` may catch."""

from __future__ import annotations

from sandbox_worker.client import ScriptFailure
from wire import protocol

ACTIONS = protocol.PS_ACTIONS
PLAN_KEYS = ("action", "args", "done", "confidence", "reason")
MAX_RETRY_ATTEMPTS = 1000
MAX_BLOCK_MS = 24 * 3600 * 1000
STEP_REPORT_EVERY = 1 << 14  # steps between two reports of the counter to the broker
MAX_COMPARE_DEPTH = 100
MAX_RANGE_ITEMS = 1_000_000  # range(...) as an array value (a `for` over range builds none)
MAX_REPEAT_ITEMS = 10_000_000  # "ab" * n, [x] * n
SCRIPT_FILENAME = "<script>"


class PSError(ScriptFailure):
    """A PromptScript runtime error a `retry` block may catch."""

    def __init__(self, message: str, kind: str = "RuntimeError") -> None:
        super().__init__(kind, message)


class NullOrdering(PSError):
    """An ordering comparison (< <= > >=) with null: an error, and inside a guard a failed guard."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


class BudgetExceeded(ScriptFailure):
    """A budget ran out: ends the script; never caught by `retry`."""

    def __init__(self, message: str) -> None:
        super().__init__("LimitError", message)


class TimeoutInterrupt(BaseException):
    """Raised (at a safe point) inside the block whose deadline passed. BaseException so that
    no handler but the owning `timeout` block (which turns it into a PSError) stops it."""

    def __init__(self, entry) -> None:
        super().__init__("timeout")
        self.entry = entry


CATCHABLE_PYTHON = (TypeError, ValueError, ZeroDivisionError, KeyError, IndexError, NameError,
                    OverflowError, AttributeError)


def catchable(exc: BaseException) -> bool:
    """What `retry` may catch: script errors; never policy denials, budgets, limits, internal errors."""
    if isinstance(exc, ScriptFailure):
        return exc.kind == "RuntimeError"  # not a policy denial, a budget or a limit
    return isinstance(exc, CATCHABLE_PYTHON)
