"""A `with policy` object is checked by one function (wire.protocol.check_policy) on both sides
of the pipe: the worker's early, located message and the broker's refusal say the same."""

from __future__ import annotations

import pytest

from runtime.promptscript.policy import ActionError, validate_policy
from sandbox_worker.lang.ps.blocks import validate_policy as worker_validate_policy
from sandbox_worker.lang.ps.errors import PSError

BAD = [
    ({"allowWrites": ["src"]}, "unknown policy key 'allowWrites' (known: allowActions, allowCommands, "
                               "maxFileBytes, maxFilesChanged, allowRead, allowWrite)"),
    ({"maxFileBytes": -1}, "policy maxFileBytes must be a non-negative integer"),
    ({"maxFilesChanged": True}, "policy maxFilesChanged must be a non-negative integer"),
    ({"allowRead": "src"}, "policy allowRead must be an array of project paths"),
    ({"allowCommands": ["ls", 1]}, "policy allowCommands must be an array of command names"),
    ({"allowActions": ["FLY"]}, "policy allowActions: unknown action 'FLY'"),
    ({"allowRead": ["x"] * 1001}, "policy allowRead has 1001 items (at most 1000)"),
]


@pytest.mark.parametrize("policy, message", BAD)
def test_both_sides_refuse_a_policy_with_the_same_words(policy, message):
    with pytest.raises(PSError) as worker:
        worker_validate_policy(policy, 7)
    with pytest.raises(ActionError) as broker:
        validate_policy(policy)
    assert worker.value.message.startswith(message) and worker.value.message.endswith("(line 7)")
    assert str(broker.value).startswith(message)


def test_a_good_policy_is_kept_and_its_paths_are_normalised_by_the_broker():
    policy = {"allowActions": ["READ_FILE"], "allowRead": ["./src/", "docs"], "maxFileBytes": 10}
    assert worker_validate_policy(policy, 1) == policy
    assert validate_policy(policy) == {"allowActions": ["READ_FILE"], "allowRead": ["src", "docs"], "maxFileBytes": 10}


def test_a_scope_whose_sandbox_cannot_be_made_is_not_entered():
    from runtime.errors import SandboxError
    from runtime.promptscript.policy import PolicyStack

    stack = PolicyStack()

    def derive(parent, effective):
        assert parent == "root" and effective["allowRead"] == ["src"]
        raise SandboxError("policy: cannot allow reading '/src'")

    stack.attach("root", derive)
    with pytest.raises(SandboxError, match="cannot allow reading"):
        stack.enter({"allowRead": ["src"]})
    assert stack.sandbox == "root" and len(stack.scopes) == 1  # neither the policy nor a Sandbox pushed
