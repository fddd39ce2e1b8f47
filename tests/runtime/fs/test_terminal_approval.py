"""Approvals asked on a real terminal: `fdsl run` under a pseudo-terminal that is its
controlling tty, answered like a person would (the approver opens /dev/tty, not stdin)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import REPO

PROMPT = b"[y/N] "


def run_on_pty(args: list[str], answers: list[bytes], cwd: Path, timeout: float = 60.0, module: str = "runtime.cli",
               env: dict | None = None) -> tuple[int, str]:
    """Run `fdsl ARGS` (in process; `module` runtime.client: through the server) on a new pty;
    each time a prompt appears, type the next answer. Returns (exit status, everything the
    terminal showed)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session leader whose controlling terminal is the pty
        try:
            os.chdir(cwd)
            os.execve(sys.executable, [sys.executable, "-m", module, *args], os.environ if env is None else env)
        finally:
            os._exit(127)
    shown = b""
    pending = list(answers)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
            if shown.rstrip().endswith(PROMPT.rstrip()) and pending:
                os.write(fd, pending.pop(0))
        else:
            os.kill(pid, 9)
            raise AssertionError(f"fdsl did not finish in {timeout} s; it showed: {shown!r}")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), shown.decode("utf-8", "replace").replace("\r\n", "\n")


@pytest.fixture(params=["in process", "through the server"])
def fdsl_on_pty(request, tmp_path):
    """run_on_pty for `fdsl run` in process and through the per-user server, which asks on the
    terminal its client passed it (it once reopened it by path and refused every approval)."""
    if request.param == "in process":
        yield run_on_pty
        return
    server = tmp_path / "srv"
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "FDSL_NO_SERVER")}
    env.update(FDSL_SERVER_DIR=str(server), PYTHONPATH=str(REPO))

    def served(args, answers, cwd):
        code, shown = run_on_pty(args, answers, cwd, module="runtime.client", env=env)
        assert (server / "server.pid").exists() and "running in process" not in shown, shown
        return code, shown

    yield served
    subprocess.run([sys.executable, "-m", "runtime.client", "server", "stop"], cwd=REPO, env=env, capture_output=True,
                   timeout=60)


def approval_world(tmp_path: Path) -> Path:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "settings.json").write_text('{"token": "s3"}')
    (tmp_path / "sandbox.toml").write_text(
        '[[mounts]]\nhost_path = "cfg"\nmount_point = "/cfg"\nread_approval = true\n'
    )
    (tmp_path / "read.fdsl").write_text('print(File("/cfg/settings.json").read())\n')
    return tmp_path


def test_read_approved_on_the_terminal(tmp_path, fdsl_on_pty):
    world = approval_world(tmp_path)
    code, shown = fdsl_on_pty(["run", "read.fdsl", "--config", "sandbox.toml"], [b"y\n"], world)
    assert "Approve: Read from /cfg/settings.json? [y/N]" in shown
    assert code == 0, shown
    assert '{"token": "s3"}' in shown


def test_read_refused_on_the_terminal(tmp_path, fdsl_on_pty):
    world = approval_world(tmp_path)
    code, shown = fdsl_on_pty(["run", "read.fdsl", "--config", "sandbox.toml"], [b"n\n"], world)
    assert code == 1, shown
    assert "Read from /cfg/settings.json: not approved" in shown
    assert "s3" not in shown


def test_without_a_terminal_it_refuses_at_once(tmp_path):
    world = approval_world(tmp_path)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "run", "read.fdsl", "--config", "sandbox.toml"],
                          cwd=world, capture_output=True, text=True, timeout=60, start_new_session=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 1
    assert "needs approval, but no terminal is attached to ask; run with --yes" in proc.stderr
    assert "s3" not in proc.stdout
    assert time.monotonic() - started < 30


def test_promptscript_write_approved_on_the_terminal(tmp_path, fdsl_on_pty):
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "w.ps").write_text('apply("WRITE_FILE", { path: "notes.txt", content: "hello" })\nlog("done")\n')
    code, shown = fdsl_on_pty(["run", str(tmp_path / "w.ps"), "--project", str(project)], [b"yes\n"], tmp_path)
    assert "Approve: Write 5 chars to /notes.txt? [y/N]" in shown
    assert code == 0, shown
    assert (project / "notes.txt").read_text() == "hello"


def test_promptscript_write_refused_on_the_terminal(tmp_path, fdsl_on_pty):
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "w.ps").write_text('apply("WRITE_FILE", { path: "notes.txt", content: "hello" })\n')
    code, shown = fdsl_on_pty(["run", str(tmp_path / "w.ps"), "--project", str(project)], [b"\n"], tmp_path)
    assert code == 1, shown
    assert "not approved" in shown
    assert not (project / "notes.txt").exists()


def test_yes_pre_approves_without_a_terminal(tmp_path):
    world = approval_world(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "run", "read.fdsl", "--config", "sandbox.toml", "--yes"],
                          cwd=world, capture_output=True, text=True, timeout=60, start_new_session=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == '{"token": "s3"}\n'


def test_script_output_cannot_restyle_the_terminal_before_a_prompt(tmp_path):
    # Concealed text (ESC[8m), a carriage return and a fake prompt: the script would hide the
    # real question and show its own. On a terminal, its output's control characters are shown
    # escaped, and the prompt starts by resetting the terminal's attributes.
    world = approval_world(tmp_path)
    (world / "docs").mkdir()
    (world / "docs" / "fake.txt").write_text("\x1b[8m\rApprove: Read from /docs/harmless.md? [y/N] ")
    (world / "sandbox.toml").write_text((world / "sandbox.toml").read_text()
                                        + '[[mounts]]\nhost_path = "docs"\nmount_point = "/docs"\n')
    (world / "fake.fdsl").write_text('print(File("/docs/fake.txt").read())\n'
                                     'print(File("/cfg/settings.json").read())\n')
    code, shown = run_on_pty(["run", "fake.fdsl", "--config", "sandbox.toml"], [b"n\n"], world)
    assert "\x1b[8m" not in shown and "\\u001b[8m\\u000dApprove: Read from /docs/harmless.md" in shown
    assert "\x1b[0m" in shown.split("Approve: Read from /cfg/settings.json")[0].rsplit("harmless", 1)[1]
    assert code == 1 and "s3" not in shown


def test_output_to_a_pipe_is_left_as_printed(tmp_path):
    (tmp_path / "red.txt").write_text("\x1b[31mred\x1b[0m")
    (tmp_path / "color.fdsl").write_text('print(File("red.txt").read())\n')
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "run", "color.fdsl", "--root", "."],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "\x1b[31mred\x1b[0m\n"
