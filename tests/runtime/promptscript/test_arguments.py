"""Every PromptScript action's arguments are checked against the one table in wire/, after the
budgets and the policy: the same three refusals, worded the same way, for all seven actions."""

from __future__ import annotations

import pytest

from runtime.errors import SandboxError, ScriptError
from runtime.promptscript.arguments import ActionArgError, check_action_args
from runtime.promptscript.session import PSOptions, PSSession
from wire import protocol

SAMPLE = {"str": "x", "int": 1, "bool": True, "strs": ["a"], "list": []}
WRONG = {"str": 1, "int": "1", "bool": 1, "strs": ["a", 2], "list": "[]"}


def required(action: str) -> dict:
    return {k: SAMPLE[kind] for k, (kind, needed, _) in protocol.PS_ACTION_ARGS[action].items() if needed}


@pytest.mark.parametrize("action", sorted(protocol.PS_ACTION_ARGS))
def test_every_action_refuses_unknown_missing_and_mistyped_arguments(action):
    spec = protocol.PS_ACTION_ARGS[action]
    assert check_action_args(action, required(action)) == required(action)
    with pytest.raises(ActionArgError, match=rf"^{action}: unknown argument 'nope' \(arguments: {', '.join(spec)}\)$"):
        check_action_args(action, {**required(action), "nope": 1})
    for key, (kind, needed, what) in spec.items():
        if needed:
            args = {k: v for k, v in required(action).items() if k != key}
            with pytest.raises(ActionArgError, match=rf"^{action}: the '{key}' argument \(.+\) is required$"):
                check_action_args(action, args)
        with pytest.raises(ActionArgError) as caught:
            check_action_args(action, {**required(action), key: WRONG[kind]})
        assert str(caught.value) == f"{action}: {key} must be {what}"


def test_the_table_covers_exactly_the_actions():
    assert set(protocol.PS_ACTION_ARGS) == set(protocol.PS_ACTIONS)


def test_the_policy_is_decided_before_the_arguments_and_a_bad_call_is_counted():
    session = PSSession(PSOptions(max_tool_calls=2))
    session.op_scope("enter", {"allowActions": ["REPORT"]}, 1)
    with pytest.raises(SandboxError, match="policy denies action ASK_USER"):
        session.op_action("ASK_USER", {"question": 1})  # bad arguments, but denied by the policy first
    with pytest.raises(ScriptError, match="REPORT: message must be a string"):
        session.op_action("REPORT", {"message": 1})
    assert session.tool_calls == 2  # both refused calls spent the budget
    with pytest.raises(ScriptError, match="--max-tool-calls 2"):
        session.op_action("REPORT", {"message": "ok"})


@pytest.mark.parametrize("items,most,message", [
    ([{"action": "WRITE_FILE", "args": {}}], 4, "parallel item 1: parallel() runs only the read-only actions READ_FILE, "
                                                "SEARCH, not 'WRITE_FILE'"),
    ([{"action": "READ_FILE"}], 4, "parallel item 1 must be an object {action, args}"),
    ([{"action": "READ_FILE", "args": []}], 4, "parallel item 1: args must be an object, not list"),
    ([], 17, "parallel(): max must be a whole number from 1 to 16"),
    ([{"action": "SEARCH", "args": {}}] * 1001, 4, "parallel() takes at most 1000 items, not 1001"),
])
def test_the_broker_checks_a_parallel_batch_as_the_worker_does(items, most, message):
    """A worker that skipped its own check (wire.protocol.check_parallel) meets the same one here."""
    session = PSSession(PSOptions())
    with pytest.raises(ScriptError) as caught:
        session.op_parallel(items, most, True)
    assert str(caught.value) == message
    assert session.tool_calls == 0  # nothing ran, nothing was counted
