"""Layer 4 alone: the broker validates every request, whatever a worker sends."""

from __future__ import annotations

import pytest

from runtime.broker import MAX_LIST_ITEMS, MAX_STRING_CHARS, Broker
from runtime.errors import PathNotInSandboxError


def make_broker(calls: list):
    def handler(**args):
        calls.append(args)
        return "served"

    def leaky(path):
        raise OSError(2, "No such file or directory", "/home/secret/host/path")

    def refused(path):
        raise PathNotInSandboxError("path '../x' climbs above the root")

    return Broker({"file.open": handler, "file.read": handler, "dir.open": leaky, "file.head": refused})


HOSTILE = [
    ({"t": "call", "op": "os.system", "a": {"cmd": "id"}}, "unknown op 'os.system'"),
    ({"t": "call", "op": "dir.files", "a": {"path": ".", "recursive": True}}, "not allowed in this run"),
    ({"t": "call", "op": None, "a": {}}, "unknown op"),
    ({"t": "call", "op": "file.open", "a": ["x"]}, "arguments must be an object"),
    ({"t": "call", "op": "file.open"}, "arguments must be an object"),
    ({"t": "call", "op": "file.open", "a": {}}, "missing ['path']"),
    ({"t": "call", "op": "file.open", "a": {"path": "x", "mode": "w"}}, "unexpected ['mode']"),
    ({"t": "call", "op": "file.open", "a": {"path": 3}}, "'path' must be a string"),
    ({"t": "call", "op": "file.open", "a": {"path": "x" * (MAX_STRING_CHARS + 1)}}, "at most"),
    ({"t": "call", "op": "file.read", "a": {"path": "x", "pages": True}}, "'pages' must be null, an integer"),
    ({"t": "call", "op": "file.read", "a": {"path": "x", "pages": [1, "2"]}}, "'pages' must be null, an integer"),
    ({"t": "call", "op": "file.read", "a": {"path": "x", "pages": [1] * (MAX_LIST_ITEMS + 1)}}, "at most"),
    ({"t": "call", "op": "file.read", "a": {"path": "x", "pages": 1.5}}, "'pages' must be null, an integer"),
]


@pytest.mark.parametrize("message, reason", HOSTILE)
def test_hostile_requests_are_denied_before_any_handler_runs(message, reason):
    calls: list = []
    reply = make_broker(calls).reply(message)
    assert reply["t"] == "err"
    assert reply["kind"] == "SandboxError"
    assert reason in reply["msg"]
    assert calls == []


def test_valid_request_is_served():
    calls: list = []
    reply = make_broker(calls).reply({"t": "call", "op": "file.read", "a": {"path": "x", "pages": [1, 2]}})
    assert reply == {"t": "ok", "v": "served"}
    assert calls == [{"path": "x", "pages": [1, 2]}]


def test_os_errors_never_carry_host_paths_to_the_worker():
    reply = make_broker([]).reply({"t": "call", "op": "dir.open", "a": {"path": "x"}})
    assert reply["kind"] == "InternalError"
    assert "/home/secret" not in reply["msg"]


def test_policy_errors_keep_their_kind():
    reply = make_broker([]).reply({"t": "call", "op": "file.head", "a": {"path": "../x"}})
    assert reply == {"t": "err", "kind": "SandboxError", "msg": "path '../x' climbs above the root"}
