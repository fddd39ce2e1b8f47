"""`fdsl doctor`, `fdsl audit` and `fdsl run --isolation`: outputs and exit codes."""

from __future__ import annotations

import pytest

from runtime import cli
from wire.layers import LAYERS


def run_cli(argv, capsys):
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_doctor_lists_every_layer(capsys):
    code, out, _ = run_cli(["doctor"], capsys)
    for name in LAYERS:
        assert name in out
    assert code in (0, 1)
    assert ("All layers in force" in out) == (code == 0)


@pytest.mark.parametrize(
    "source,mode,expected_code,outcome",
    [
        ("print('hello')", "restricted", 0, "completed"),
        ("import os", "restricted", 1, "failed"),
        ("print(open('/etc/passwd').read())", "os", 1, "failed"),
        ("import time\ntime.sleep(30)", "os", 124, "timeout"),
        ("import ctypes\nctypes.string_at(0)", "os", 1, "crash"),
    ],
    ids=["completed", "refused", "os-denied", "timeout", "crash"],
)
def test_audit_exit_codes_and_outcome(tmp_path, capsys, source, mode, expected_code, outcome):
    script = tmp_path / "payload.py"
    script.write_text(source)
    code, out, err = run_cli(["audit", str(script), "--mode", mode, "--timeout", "1.5"], capsys)
    assert code == expected_code
    assert f"[audit] outcome: {outcome}" in err
    if outcome == "crash":
        assert "THE WORKER CRASHED (not a success)" in err and "SIGSEGV" in err
    if outcome == "completed":
        assert out == "hello\n"
    assert "Traceback" not in out + err


def test_audit_layers_switch_runs_one_layer(tmp_path, capsys):
    script = tmp_path / "p.py"
    script.write_text("import os\nprint(os.getuid())")
    code, out, err = run_cli(["audit", str(script), "--mode", "os", "--layers", "seccomp"], capsys)
    assert code == 0
    assert "[audit] layer seccomp       ok" in err and "[audit] layer rlimits       off" in err


@pytest.mark.parametrize("argv,message", [
    (["audit", "/nonexistent/x.py"], "no such script"),
    (["audit", "{script}", "--layers", "seccomp,bogus"], "unknown layer(s) bogus"),
    (["audit", "{script}", "--root", "/nonexistent"], "not a directory"),
])
def test_audit_usage_errors(tmp_path, capsys, argv, message):
    script = tmp_path / "p.py"
    script.write_text("pass")
    code, _, err = run_cli([a.format(script=script) for a in argv], capsys)
    assert code == 2 and message in err and "Traceback" not in err


def test_run_verbose_states_the_layers_and_strict_runs_when_all_are_in_force(sandbox, tmp_path, capsys):
    root, _ = sandbox
    script = tmp_path / "s.fdsl"
    script.write_text('print(len(Directory("data").files()))\n')
    code, out, err = run_cli(["run", str(script), "--root", str(root), "--verbose", "--isolation", "strict"], capsys)
    from runtime.audit import probe_layers
    from wire.layers import missing_layers

    if missing_layers(probe_layers()):
        assert code == 1 and "isolation strict" in err
    else:
        assert code == 0 and out.strip().isdigit()
    assert "[fdsl] layers: netns=" in err
