"""Policy gaps an attacker found: each refused now, each reproduced deterministically.

- copy and move read their source: a read_approval source asks first (copying a secret to a
  mount without approval, then reading the copy, once returned it);
- the approval gate and the operation decide on one resolution: a path the gate cannot
  classify is refused (a component swapped for an outside link at the gate's look and back
  before the write once let the write through unasked);
- create_only is decided beneath the parent's descriptor (it was an existence oracle for host
  paths under a swap race);
- the run logs are protected by the identity of their directory, not by the spelling of a path
  (a `self -> .` link once reached them).
"""

from __future__ import annotations

import io
import os

import pytest

from runtime.api import run_script
from runtime.errors import ApprovalDeniedError, SandboxError
from runtime.fs.sandbox import Sandbox
from runtime.promptscript.session import PSOptions, PSSession
from runtime.services.toolset import FileSystemToolset


def test_copy_of_a_read_approval_file_asks_first(world):
    sb, tmp = world
    (tmp / "cfg" / "token.txt").write_text("s3cret")
    ts = FileSystemToolset(sb, approve=None)
    with pytest.raises(ApprovalDeniedError, match="Copy /cfg/token.txt to /out/t.txt: needs approval"):
        ts.copy("/cfg/token.txt", "/out/t.txt")
    assert not (tmp / "out" / "t.txt").exists()
    asked = []
    ts = FileSystemToolset(sb, approve=lambda d: asked.append(d) or False)
    with pytest.raises(ApprovalDeniedError, match="not approved"):
        ts.move("/cfg/token.txt", "/out/t.txt")
    assert asked == ["Move /cfg/token.txt to /out/t.txt"] and (tmp / "cfg" / "token.txt").exists()


def test_the_gate_refuses_what_it_cannot_classify(world, monkeypatch):
    sb, tmp = world
    cfg = tmp / "cfg"
    (cfg / "sub").mkdir()
    os.rename(cfg / "sub", cfg / "sub.real")
    os.symlink(tmp / "outside", cfg / "sub")  # leads outside when the gate looks
    real_locate = Sandbox.locate
    calls = []

    def swap_back(self, path, **kwargs):
        try:
            return real_locate(self, path, **kwargs)
        finally:
            calls.append(path)
            if len(calls) == 1:  # right after the gate's look: the component is a directory again
                os.unlink(cfg / "sub")
                os.rename(cfg / "sub.real", cfg / "sub")

    monkeypatch.setattr(Sandbox, "locate", swap_back)
    ts = FileSystemToolset(sb, approve=None)  # nobody can approve: a write to /cfg must be refused
    with pytest.raises(SandboxError):
        ts.write("/cfg/sub/planted.txt", "x")
    assert not (cfg / "sub" / "planted.txt").exists()


def test_create_only_is_no_existence_oracle_for_host_paths(tmp_path, monkeypatch):
    from runtime.promptscript import actions as ps_actions

    project = tmp_path / "project"
    (project / "d").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "exists.txt").write_text("x")
    real_check = ps_actions.ProjectActions._check_writable

    def swap_after_check(self, action, sb, path, policy):
        rel = real_check(self, action, sb, path, policy)
        os.rename(project / "d", project / "d.real")
        os.symlink(outside, project / "d")  # swapped right after the policy check
        return rel

    monkeypatch.setattr(ps_actions.ProjectActions, "_check_writable", swap_after_check)
    errors = []
    for name in ("exists.txt", "missing.txt"):
        if os.path.islink(project / "d"):
            os.unlink(project / "d")
            os.rename(project / "d.real", project / "d")
        r = run_script(f'apply("WRITE_FILE", {{ path: "d/{name}", content: "y", mode: "create_only" }})\n',
                       lang="ps", approve=lambda d: True,
                       options={"project": project, "max_steps": 0}, timeout=60)
        assert r.exit_code == 1
        errors.append(r.error.split("\n")[0].replace(name, "NAME"))
    assert errors[0] == errors[1], errors  # the same answer whether or not the outside file exists
    assert (outside / "exists.txt").read_text() == "x" and not (outside / "missing.txt").exists()


def test_create_only_refuses_an_existing_file(tmp_path):
    (tmp_path / "a.txt").write_text("old")
    r = run_script('apply("WRITE_FILE", { path: "a.txt", content: "new", mode: "create_only" })\n', lang="ps",
                   approve=lambda d: True, options={"project": tmp_path, "max_steps": 0})
    assert r.exit_code == 1 and "a.txt already exists (mode create_only)" in r.error
    assert (tmp_path / "a.txt").read_text() == "old"
    r = run_script('log(apply("WRITE_FILE", { path: "b.txt", content: "new", mode: "create_only" }))\n', lang="ps",
                   approve=lambda d: True, options={"project": tmp_path, "max_steps": 0})
    assert r.ok and '"created": true' not in r.output and "created: true" in r.output


def test_the_run_logs_are_protected_by_identity_not_spelling(tmp_path):
    (tmp_path / "self").symlink_to(".")
    source = ('for run in ["a"]:\n'
              '  apply("WRITE_FILE", { path: "self/.ps-runs/forged.jsonl", content: "{}" })\n')
    r = run_script(source, lang="ps", approve=lambda d: True,
                   options={"project": tmp_path, "max_steps": 0})
    assert r.exit_code == 1 and "holds the run logs; it is not writable" in r.error
    assert not (tmp_path / ".ps-runs" / "forged.jsonl").exists()
    run_dir = next((tmp_path / ".ps-runs").iterdir())
    r = run_script(f'apply("PATCH_FILE", {{ path: "self/.ps-runs/{run_dir.name}/events.jsonl", patch: "REPLACE:\\nPLANTED" }})\n',
                   lang="ps", approve=lambda d: True, options={"project": tmp_path, "max_steps": 0})
    assert r.exit_code == 1 and "holds the run logs" in r.error
    assert (run_dir / "events.jsonl").read_text().startswith('{"t_ms"')  # not replaced by PLANTED


def test_ask_user_shows_control_characters_escaped():
    master, slave = os.openpty()
    stdin = os.fdopen(slave, "r", encoding="utf-8")
    try:
        os.write(master, b"2\n")
        stderr = io.StringIO()
        session = PSSession(PSOptions(), stdin=stdin, stderr=stderr)
        answer, _ = session.actions["ASK_USER"]({"question": "ok?\x1b[8m hidden", "choices": ["keep", "\x1b[2Jwipe"]}, {})
    finally:
        stdin.close()
        os.close(master)
    shown = stderr.getvalue()
    assert answer == "\x1b[2Jwipe"  # the answer is the choice itself; only what is shown is escaped
    assert "\x1b" not in shown
    assert "[ps] ASK_USER: ok?\\u001b[8m hidden" in shown and "2. \\u001b[2Jwipe" in shown
