"""parallel(): read-only actions run side by side in the broker, in windows of threads."""

from __future__ import annotations

import time

from runtime.errors import LimitError, ScriptError
from runtime.promptscript.deadline import BlockDeadline
from runtime.promptscript.policy import ActionError
from runtime.promptscript.search import Found
from wire import protocol


def parallel_items(session, batch: list, max: int, fail_fast: bool) -> list[tuple[str, dict]]:
    """(action, args) of each item, every item checked (wire.protocol.check_parallel, as the
    worker checked them) before any runs."""
    try:
        protocol.check_parallel(batch, {"max": max, "fail_fast": fail_fast})
    except ValueError as exc:
        raise ActionError(str(exc)) from None
    return [(item["action"], session.parse_action(item["action"], item["args"])) for item in batch]


def run_parallel(session, batch: list, max: int, fail_fast: bool):
    """parallel(): READ_FILE / SEARCH items, run in windows of ``max`` threads, in input order.

    Each window's items are counted (budget, loop detector) before it starts, so with
    fail_fast the items after a failing window are neither run nor counted. fail_fast:
    the first failing item's error is raised; otherwise each item gives {ok, value} or
    {ok, error}. A spent budget always stops the run.
    """
    from concurrent.futures import ThreadPoolExecutor

    session.check_budgets()
    parsed = parallel_items(session, batch, max, fail_fast)
    policy = session.policies.current
    if session.files is not None:
        for mount in session.files.sandbox.mounts:  # open the mount fds before the threads share them
            session.files.sandbox.mount_fd(mount)

    def run_one(name, values):
        started = time.monotonic()
        try:
            value, printed = session.dispatch(name, values, policy)
            return True, (value, printed), started
        except (LimitError, BlockDeadline):
            raise  # a spent budget or the block's deadline stops the whole batch
        except ScriptError as exc:
            return False, exc, started

    results: list[dict] = []
    notices: list[str] = []
    with ThreadPoolExecutor(max_workers=max) as pool:
        for low in range(0, len(parsed), max):
            window = parsed[low: low + max]
            session.deadline.check("parallel")
            for name, values in window:
                session.check_budgets()
                session.admit(name, values)
            done = [pool.submit(run_one, name, values) for name, values in window]
            failure = None
            for (name, values), future in zip(window, done):
                ok, value, started = future.result()
                if ok:
                    value, printed = value
                    if printed:
                        notices.append(printed)
                    session.trace(name, values, "ok", started)
                    item = {"ok": True, "value": value}
                    if isinstance(value, Found):
                        item["search"] = value.info
                    session.log_action(name, values, True, parallel=True, **{k: v for k, v in item.items() if k != "ok"})
                    results.append(item)
                else:
                    session.trace(name, values, f"error: {value}", started)
                    session.log_action(name, values, False, error=str(value), parallel=True)
                    results.append({"ok": False, "error": str(value)})
                    if failure is None:
                        failure = (len(results), value)
            if failure is not None and fail_fast:
                index, exc = failure
                raise type(exc)(f"parallel item {index}: {exc}")
    return {"results": results, "print": "".join(notices) or None}
