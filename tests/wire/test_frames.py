"""wire/frames.py's JSON is json.dumps(ensure_ascii=False, separators=(",", ":")) and json.loads,
called at _json's level: the same text out, the same values in, the same refusals (any text)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import REPO
from wire import frames

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=400, deadline=None)
@given(values)
def test_dumps_is_json_dumps_and_loads_reads_it_back(value):
    text = frames.dumps(value)
    assert text == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert same(frames.loads(text), json.loads(text))


def outcome(load, text):
    try:
        return "ok", load(text)
    except (ValueError, RecursionError) as exc:
        return "refused", type(exc).__name__


JSONISH = st.text(alphabet='{}[]":,.-+0123456789eEtrufalsnNIiy \t\n\r\\/abc\u00e9\ud800', max_size=40)


@settings(max_examples=2000, deadline=None)
@given(st.one_of(JSONISH, st.text(max_size=40), values.map(json.dumps).flatmap(
    lambda text: st.integers(0, len(text)).map(lambda cut: text[:cut]))))
def test_loads_accepts_and_refuses_what_json_loads_does(text):
    ours, theirs = outcome(frames.loads, text), outcome(json.loads, text)
    assert ours[0] == theirs[0], (text, ours, theirs)
    if ours[0] == "ok":
        assert same(ours[1], theirs[1])


def test_a_circular_value_is_refused_as_json_refuses_it_and_the_next_encode_works():
    loop: list = []
    loop.append(loop)
    for dumps in (frames.dumps, lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":"))):
        try:
            dumps(loop)
        except ValueError as exc:
            assert "Circular reference" in str(exc)
        else:
            raise AssertionError("a circular value was encoded")
    assert frames.dumps([[1], [1]]) == "[[1],[1]]"  # no mark left behind
    for bad in (object(), {1j: 1}):
        try:
            frames.dumps(bad)
        except TypeError:
            pass
        else:
            raise AssertionError(f"{bad!r} was encoded")


def test_a_process_that_never_imported_json_refuses_malformed_frames_as_protocol_errors():
    """_json raises its errors as json.decoder's, found among the loaded modules only: where json
    was never imported (the `fdsl` client, a jailed worker), a malformed frame must still be a
    ProtocolError, not a SystemError."""
    probe = ("import sys\nfrom wire import frames\nassert 'json' not in sys.modules\n"
             "for bad in (b'[1', b'{\"t\": }', b'{\"t\":\"a\"} x', b'', b'[' * 100000):\n"
             "    try:\n        frames.decode(bad)\n    except frames.ProtocolError:\n        continue\n"
             "    raise SystemExit(f'accepted {bad[:10]!r}')\n"
             "assert 'json' not in sys.modules\nprint('refused all')")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "refused all\n", proc.stderr
