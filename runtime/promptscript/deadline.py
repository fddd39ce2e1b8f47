"""When the op the broker serves for a PromptScript worker must stop, and the error that
names which limit stopped it."""

from __future__ import annotations

import math
import time

from runtime.errors import DeadlineExceeded, ScriptError


class BlockDeadline(ScriptError):
    """The worker's pending `timeout` block ran out while the broker worked for it: the worker
    turns this into that block's own (catchable) timeout error."""

    kind = "TimeoutError"


class OpDeadline:
    """When the op being served must stop: the earliest of the run's --max-time, the worker's
    earliest pending `timeout` block (``block_at``, set per op) and the run's wall-clock
    deadline (--timeout: the supervisor cannot end the run while the broker is busy). The
    handlers ask ``left()`` and raise ``expired(what)``: a spent --max-time budget
    (LimitError), a BlockDeadline (TimeoutError, the block's timeout in the worker) or
    DeadlineExceeded (the run's time limit; the supervisor then ends the run with 124)."""

    def __init__(self, session) -> None:
        self.session = session
        self.block_at: float | None = None

    def _earliest(self) -> tuple[float | None, str | None]:
        o = self.session.options
        candidates = []
        if o.max_time_ms:
            candidates.append((self.session.started + o.max_time_ms / 1000, "budget"))
        if self.block_at is not None:
            candidates.append((self.block_at, "block"))
        run_at = self.session.run_deadline
        if run_at is not None and math.isfinite(run_at):
            candidates.append((run_at, "run"))
        return min(candidates) if candidates else (None, None)

    def left(self) -> float | None:
        """Seconds left (None: no deadline)."""
        at, _ = self._earliest()
        return None if at is None else at - time.monotonic()

    def check(self, what: str) -> None:
        left = self.left()
        if left is not None and left <= 0:
            raise self.expired(what)

    def expired(self, what: str) -> ScriptError:
        _, which = self._earliest()
        if which == "budget":
            self.session.stop_for_time(what)
        if which == "run":
            return DeadlineExceeded(f"{what}: stopped at the run's time limit (--timeout)")
        return BlockDeadline(f"{what}: stopped at the deadline of the enclosing timeout block")
