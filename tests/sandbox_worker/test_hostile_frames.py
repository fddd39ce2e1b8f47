"""A worker past the language layers writes any frame it likes: none crashes the parent, and
only the supervisor's clock (or the broker's own deadline) makes a run a timeout."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from runtime.broker import Broker
from runtime.supervisor import end_outcome

WRITE = "from wire import protocol\nprotocol.write_frame(1, {frame})\nimport time\ntime.sleep(5)\n"


def frame_run(run_worker_code, frame: str):
    return run_worker_code(WRITE.format(frame=frame), mode="os")


@pytest.mark.parametrize("error", [
    "{'kind': 'RuntimeError', 'msg': 'x', 'line': '7', 'col': None}",
    "{'kind': 'RuntimeError', 'msg': 'x', 'line': 1.5, 'col': None}",
    "{'kind': 'RuntimeError', 'msg': ['x'], 'line': 1, 'col': 1}",
    "{'kind': 'ExecError', 'msg': 'x', 'line': 1, 'col': 1}",
    "'a string'",
])
def test_a_malformed_end_frame_is_a_protocol_error(run_worker_code, error):
    result, _ = frame_run(run_worker_code, "{'t': 'end', 'ok': False, 'error': " + error + "}")
    assert result.status == "crash" and result.error["kind"] == "InternalError"
    assert result.error["msg"] == "the worker broke the protocol (a malformed end message); it was stopped"


def test_a_worker_cannot_claim_a_timeout(run_worker_code):
    frame = "{'t': 'end', 'ok': False, 'error': {'kind': 'TimeoutError', 'msg': 'the script did not finish', 'line': None, 'col': None}}"
    result, _ = frame_run(run_worker_code, frame)
    assert result.status == "crash"
    assert "it reported a timeout that did not happen" in result.error["msg"]


def test_a_timeout_the_broker_raised_is_a_timeout():
    broker = Broker({"ping": lambda: None})
    message = {"t": "end", "ok": False, "error": {"kind": "TimeoutError", "msg": "m", "line": 3, "col": 1}}
    assert end_outcome(message, broker, time.monotonic() + 60)[0] == "crash"
    broker.deadline_replies = 1
    assert end_outcome(message, broker, time.monotonic() + 60) == ("timeout", message["error"])
    broker.deadline_replies = 0
    assert end_outcome(message, broker, time.monotonic() - 1)[0] == "timeout"  # the clock passed


def test_an_error_message_is_cut_and_made_writable():
    message = {"t": "end", "ok": False, "error": {"kind": "RuntimeError", "msg": "\ud800" + "m" * 100_000,
                                                    "line": None, "col": None}}
    status, error = end_outcome(message, Broker({}), time.monotonic() + 60)
    assert status == "error" and len(error["msg"]) == 8192
    error["msg"].encode("utf-8")  # no lone surrogate left


# A frame whose JSON escapes a lone surrogate: valid UTF-8, decoded to a str Python cannot encode.
RAW_OUT = ("import os, struct\npayload = rb'{\"t\":\"out\",\"s\":\"%s\"}'\n"
           "os.write(1, struct.pack('>I', len(payload)) + payload)\n")


def test_a_lone_surrogate_in_output_reaches_the_output_replaced(run_worker_code):
    result, output = run_worker_code(
        RAW_OUT % "a\\ud800b" + "from wire import protocol\nprotocol.write_frame(1, {'t': 'end', 'ok': True})\n",
        mode="os")
    assert result.status == "ok"
    assert output == "a?b"
    output.encode("utf-8")


def test_the_command_line_survives_hostile_frames(tmp_path):
    script = tmp_path / "hostile.py"
    script.write_text(RAW_OUT % "x\\udcff\\n" + "from wire import protocol\n"
                      "protocol.write_frame(1, {'t': 'end', 'ok': False, 'error': {'kind': 'RuntimeError', "
                      "'msg': 'm', 'line': 'one', 'col': None}})\n"
                      "import time\ntime.sleep(5)\n")
    done = subprocess.run([sys.executable, "-m", "runtime.cli", "audit", str(script), "--mode", "os"],
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1 and "malformed end message" in done.stdout + done.stderr
    assert "x?" in done.stdout



def test_a_timeout_names_the_generated_line_the_script_was_at(run_worker_code):
    result, _ = run_worker_code("x = 0\nwhile True:\n    x = x + 1\n", mode="os", timeout=1)
    assert result.status == "timeout"
    assert result.error["msg"] == "the script did not finish within 1 s"
    assert result.error["line"] in (2, 3)


def test_a_worker_that_ignores_the_stop_signal_is_killed_after_the_grace(run_worker_code):
    started = time.monotonic()
    result, _ = run_worker_code("import signal\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)\nwhile True:\n    pass\n",
                                mode="os", timeout=1)
    assert result.status == "timeout" and result.error.get("line") is None
    assert time.monotonic() - started < 1 + 0.5 + 1.5


def test_a_worker_answering_the_stop_signal_with_success_is_still_a_timeout(run_worker_code):
    code = ("import signal, time\nfrom wire import protocol\n"
            "signal.signal(signal.SIGUSR1, lambda *a: protocol.write_frame(1, {'t': 'end', 'ok': True}))\n"
            "time.sleep(5)\n")
    result, _ = run_worker_code(code, mode="os", timeout=1)
    assert result.status == "timeout" and result.error["kind"] == "TimeoutError"


def test_a_timeout_while_printing_does_not_break_the_pipe(run_worker_code):
    # The stop signal lands while output frames are being written: each frame is finished.
    code = "import time\nwhile True:\n    broker.output('x' * 70_000)\n    time.sleep(0.002)\n"
    result, _ = run_worker_code(code, mode="os", timeout=1, max_output=10**9)
    assert result.status == "timeout", result.error
