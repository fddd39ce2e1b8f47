"""The file actions, RUN_CMD and parallel(), end to end in a temporary project."""

from __future__ import annotations

import io
import json
import os
import socket
import sys
import time

import pytest

from runtime.api import run_script
from runtime.broker import MAX_STRING_CHARS, RequestDenied, validate_call
from runtime.terminal import TerminalApprover
from tests.support.net import loopback_listener
from wire import protocol


@pytest.fixture
def project(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def main():\n    # TODO: greet\n    print('hi')\n")
    (tmp_path / "src" / "util.py").write_text("X = 1  # TODO later\n")
    (tmp_path / "README.md").write_text("# Demo\nTODO: write docs\n")
    (tmp_path / "notes.txt").write_text("nothing here\n")
    return tmp_path


def ps(source: str, project, *, approve=lambda description: True, **options):
    options.setdefault("max_steps", 0)
    return run_script(source, lang="ps", approve=approve,
                      options={"project": project, **options}, timeout=30)


def logged(result) -> list[str]:
    assert result.exit_code == 0, result.error
    return [line.removeprefix("[ps] ") for line in result.output.splitlines()]


# ---- READ_FILE ----------------------------------------------------------------------------

def test_read_file_reads_and_truncates_at_max_bytes(project):
    (project / "u.txt").write_text("héllo wörld")
    r = ps('log(apply("READ_FILE", { path: "src/util.py" }))\n'
           'log(apply("READ_FILE", { path: "/u.txt", maxBytes: 2 }))\n', project)
    assert logged(r) == ["X = 1  # TODO later", "", "h"]  # the cut "é" is left out, not mangled


def test_read_file_errors_are_clear(project):
    for args, message in [
        ('{ path: "missing.txt" }', "READ_FILE: no such file: missing.txt"),
        ('{ path: "src" }', "READ_FILE: src is a directory"),
        ('{ path: "../etc/passwd" }', "climbs above the root"),
        ('{ }', "READ_FILE: the 'path' argument"),
        ('{ path: "a", bytes: 3 }', "READ_FILE: unknown argument 'bytes' (arguments: path, maxBytes)"),
        ('{ path: "README.md", maxBytes: "10" }', "READ_FILE: maxBytes must be"),
    ]:
        r = ps(f'apply("READ_FILE", {args})\n', project)
        assert r.exit_code == 1 and message in r.error, (args, r.error)
        assert "Traceback" not in r.error


def test_max_file_bytes_refuses_reads_and_writes(project):
    r = ps('with policy { maxFileBytes: 10 }:\n  apply("READ_FILE", { path: "README.md" })\n', project)
    assert r.exit_code == 1 and "README.md is 24 bytes; the policy's maxFileBytes is 10" in r.error
    r = ps('with policy { maxFileBytes: 10 }:\n  apply("WRITE_FILE", { path: "big.txt", content: "0123456789A" })\n', project)
    assert r.exit_code == 1 and "11 bytes for big.txt; the policy's maxFileBytes is 10" in r.error
    assert not (project / "big.txt").exists()


# ---- WRITE_FILE ---------------------------------------------------------------------------

def test_write_file_overwrite_and_create_only(project):
    r = ps('log(apply("WRITE_FILE", { path: "out/new.txt", content: "one" }).created)\n'
           'log(apply("WRITE_FILE", { path: "out/new.txt", content: "two", mode: "overwrite" }).created)\n'
           'apply("WRITE_FILE", { path: "out/new.txt", content: "three", mode: "create_only" })\n', project)
    assert r.exit_code == 1 and r.output.splitlines() == ["[ps] true", "[ps] false"]
    assert "out/new.txt already exists (mode create_only)" in r.error
    assert (project / "out" / "new.txt").read_text() == "two"
    r = ps('apply("WRITE_FILE", { path: "x.txt", content: "a", mode: "append" })\n', project)
    assert r.exit_code == 1 and 'mode must be "overwrite" or "create_only"' in r.error


def test_write_approvals_denied_and_granted(project):
    asked = []
    r = ps('apply("WRITE_FILE", { path: "a.txt", content: "hi" })\n', project,
           approve=lambda d: asked.append(d) or False)
    assert r.exit_code == 1 and r.error_kind == "SandboxError" and "not approved" in r.error
    assert asked == ["Write 2 chars to /a.txt"] and not (project / "a.txt").exists()
    # the command line's approver with no terminal: refused at once, pointing at --yes
    r = ps('apply("WRITE_FILE", { path: "a.txt", content: "hi" })\n', project,
           approve=TerminalApprover(tty_in=io.StringIO(), tty_out=io.StringIO()))
    assert r.exit_code == 1 and "no terminal is attached" in r.error and "--yes" in r.error
    r = ps('apply("WRITE_FILE", { path: "a.txt", content: "hi" })\n', project, approve=None)
    assert r.exit_code == 1 and "needs approval" in r.error
    # granted (--yes), and remembered for the run: asked once for two identical writes
    asked.clear()
    r = ps('apply("WRITE_FILE", { path: "a.txt", content: "hi" })\napply("WRITE_FILE", { path: "a.txt", content: "hi" })\n',
           project, approve=lambda d: asked.append(d) or True)
    assert r.exit_code == 0 and (project / "a.txt").read_text() == "hi" and len(asked) == 1
    assert ps('apply("WRITE_FILE", { path: "b.txt", content: "x" })\n', project,
              approve=None, write_approval=False).exit_code == 0


def test_write_content_larger_than_a_wire_string(project):
    big = "x" * (MAX_STRING_CHARS * 3)
    r = ps(f'apply("WRITE_FILE", {{ path: "big.txt", content: "{big}" }})\n', project)
    assert r.exit_code == 0, r.error
    assert (project / "big.txt").stat().st_size == len(big)
    # ... while every other string argument keeps the 64 KiB cap
    with pytest.raises(RequestDenied, match="at most 65536 characters"):
        validate_call({"op": "ps.scope", "a": {"change": "x" * (MAX_STRING_CHARS + 1), "policy": {}, "line": 1}},
                      protocol.PS_OPS)
    # policies and action arguments travel as objects, never as text to be parsed again
    with pytest.raises(RequestDenied, match="'policy' must be an object"):
        validate_call({"op": "ps.scope", "a": {"change": "enter", "policy": "{}", "line": 1}}, protocol.PS_OPS)
    with pytest.raises(RequestDenied, match="'args' must be an object"):
        validate_call({"op": "ps.action", "a": {"name": "READ_FILE", "args": "{}", "deadline_ms": 0}}, protocol.PS_OPS)
    with pytest.raises(RequestDenied, match="'items' must be a list of objects"):
        validate_call({"op": "ps.parallel", "a": {"items": ["{}"], "max": 1, "fail_fast": True, "deadline_ms": 0}},
                      protocol.PS_OPS)


def test_run_log_directory_is_not_writable(project):
    r = ps('apply("WRITE_FILE", { path: ".ps-runs/x/events.jsonl", content: "forged" })\n', project)
    assert r.exit_code == 1 and ".ps-runs/ holds the run logs" in r.error


# ---- PATCH_FILE ---------------------------------------------------------------------------

APP = "def main():\n    # TODO: greet\n    print('hi')\n"


@pytest.mark.parametrize("args, expected", [
    ('{ path: "src/app.py", patch: "REPLACE:\\nprint(1)\\n" }', "print(1)\n"),
    ('{ path: "src/app.py", patch: "--- a/src/app.py\\n+++ b/src/app.py\\n@@ -2,2 +2,2 @@\\n     # TODO: greet\\n-    print(\'hi\')\\n+    print(\'hello\')\\n" }',
     "def main():\n    # TODO: greet\n    print('hello')\n"),
    ('{ path: "src/app.py", patch: "@@ -1,1 +1,2 @@\\n+import sys\\n def main():\\n" }',
     "import sys\n" + APP),
    ('{ path: "src/app.py", old: "hi", new: "bye" }', APP.replace("hi", "bye")),
    ('{ path: "src/app.py", edits: [{ old: "main", new: "run" }, { old: "    # TODO: greet\\n", new: "" }] }',
     "def run():\n    print('hi')\n"),
])
def test_patch_formats(project, args, expected):
    r = ps(f'apply("PATCH_FILE", {args})\n', project)
    assert r.exit_code == 0, r.error
    assert (project / "src" / "app.py").read_text() == expected


@pytest.mark.parametrize("args, message", [
    ('{ path: "src/app.py", patch: "@@ -2,1 +2,1 @@\\n-    print(\'nope\')\\n+    x\\n" }', "hunk 1 (diff line 1) does not apply"),
    ('{ path: "src/app.py", patch: "@@ -1,2 +1,2 @@\\n def main():\\n" }', "cut short"),
    ('{ path: "src/app.py", edits: [{ old: "main", new: "run" }, { old: "absent", new: "x" }] }', "edit 2: old text 'absent' was not found"),
    ('{ path: "src/app.py", old: "    ", new: "\\t" }', "occurs 2 times"),
    ('{ path: "src/app.py", patch: "just text" }', "a patch is 'REPLACE:"),
    ('{ path: "src/app.py", old: "x" }', "old and new go together"),
    ('{ path: "src/app.py", patch: "REPLACE:\\n", old: "a", new: "b" }', "exactly one of"),
    ('{ path: "missing.py", patch: "REPLACE:\\n" }', "no such file"),
])
def test_failed_patch_leaves_the_file_untouched(project, args, message):
    target = project / "src" / "app.py"
    before = target.stat()
    r = ps(f'apply("PATCH_FILE", {args})\n', project)
    assert r.exit_code == 1 and message in r.error, r.error
    assert target.read_text() == APP
    assert target.stat().st_mtime_ns == before.st_mtime_ns and target.stat().st_ino == before.st_ino


# ---- SEARCH -------------------------------------------------------------------------------

def test_search_is_sorted_with_path_line_text(project):
    r = ps('for h in apply("SEARCH", { query: "TODO" }):\n  log(h.path + ":" + h.line + ": " + h.text)\n', project)
    assert logged(r) == ["README.md:2: TODO: write docs", "src/app.py:2: # TODO: greet",
                         "src/util.py:1: X = 1  # TODO later"]
    r = ps('for h in apply("SEARCH", { query: "TODO", globs: ["src/**/*.py"], maxResults: 1 }):\n  log(h.path)\n', project)
    assert logged(r) == ["SEARCH 'TODO': showing 1 of 2 matching lines (maxResults 1, at most 10000; "
                         "or narrow the query or globs)", "src/app.py"]


def test_a_cut_or_incomplete_search_says_so_visibly_and_in_last_search(project):
    (project / "src" / "blob.bin").write_bytes(b"TODO\x00\x01")
    (project / "big.txt").write_text("x" * 600 + "\nTODO\n")
    script = ('hits = apply("SEARCH", { query: "TODO", maxResults: 2 })\n'
              'log(len(hits), last_search.total, last_search.truncated, last_search.skipped_count)\n'
              'for s in last_search.skipped:\n  log(s.path + ": " + s.reason)\n')
    r = ps(script, project, max_file_bytes=500)
    lines = logged(r)
    assert lines[0] == ("SEARCH 'TODO': showing 2 of 3 matching lines (maxResults 2, at most 10000; or narrow the "
                        "query or globs); skipped 2 files it could not read: big.txt (larger than maxFileBytes 500); "
                        "src/blob.bin (a binary file)")
    assert lines[1:] == ["2 3 true 2", "big.txt: larger than maxFileBytes 500", "src/blob.bin: a binary file"]
    r = ps('hits = apply("SEARCH", { query: "greet" })\nlog(len(hits), last_search.total, last_search.truncated)\n', project)
    assert logged(r) == ["SEARCH 'greet': skipped 1 file it could not read: src/blob.bin (a binary file)", "1 1 false"]


def test_parallel_search_items_say_what_they_left_out(project):
    script = ('r = parallel([{ action: "SEARCH", args: { query: "TODO", maxResults: 1 } },'
              ' { action: "SEARCH", args: { query: "greet" } }])\n'
              'log(r[0].search.total, r[0].search.truncated, r[1].search.truncated, len(r[1].value))\n')
    assert logged(ps(script, project)) == [
        "SEARCH 'TODO': showing 1 of 3 matching lines (maxResults 1, at most 10000; or narrow the query or globs)",
        "3 true false 1"]


def test_last_search_is_null_before_any_search_and_read_only(project):
    assert logged(ps('log(last_search)\n', project)) == ["null"]
    r = ps('last_search = 1\n', project)
    assert r.exit_code == 1 and "last_search" in r.error


def test_empty_query_lists_files(project):
    ps('apply("REPORT", { message: "x" })\n', project)  # leaves a run log, which SEARCH skips
    r = ps('for h in apply("SEARCH", {}):\n  log(h.path)\n', project)
    assert logged(r) == ["README.md", "notes.txt", "src/app.py", "src/util.py"]
    r = ps('for h in apply("SEARCH", { query: "", globs: ["*.md", "**/util.py"] }):\n  log(h.path)\n', project)
    assert logged(r) == ["README.md", "src/util.py"]
    r = ps('apply("SEARCH", { maxResults: 0 })\n', project)
    assert r.exit_code == 1 and "maxResults must be an integer from 1 to" in r.error


# ---- policies -----------------------------------------------------------------------------

def test_path_allowlists_narrow_and_inner_cannot_widen(project):
    script = '''
with policy { allowRead: ["src"], allowWrite: [] }:
  log(len(apply("SEARCH", {})))
  with policy { allowRead: ["."], allowWrite: ["."] }:
    log(len(apply("SEARCH", {})))
    apply("READ_FILE", { path: "README.md" })
'''
    r = ps(script, project)
    assert r.exit_code == 1 and r.output.splitlines() == ["[ps] 2", "[ps] 2"]
    assert r.error_kind == "SandboxError"
    assert ("READ_FILE: path '/README.md' is not in the sandbox. Readable: /src. "
            "Writable: nothing (read-only).\n") in r.error
    r = ps('with policy { allowWrite: ["out"] }:\n  apply("WRITE_FILE", { path: "src/x.py", content: "" })\n', project)
    assert r.exit_code == 1 and "it is read-only here. Readable: /. Writable: /out.\n" in r.error
    r = ps('with policy { allowWrite: ["out"] }:\n  apply("WRITE_FILE", { path: "out/x.py", content: "" })\n'
           'apply("WRITE_FILE", { path: "src/x.py", content: "" })\n', project)
    assert r.exit_code == 0, r.error  # the outer scope is back after the block
    r = ps('with policy { allowRead: ["src"] }:\n  log(len(apply("SEARCH", {})))\n'
           '  apply("WRITE_FILE", { path: "src/ok.py", content: "" })\n'
           '  apply("WRITE_FILE", { path: "notes.txt", content: "" })\n', project)
    assert r.exit_code == 1 and r.output.splitlines() == ["[ps] 3"]  # app.py, util.py, x.py
    # exact: each path once, and the writes really allowed (allowWrite "." within allowRead "src")
    assert "Readable: /src. Writable: /src.\n" in r.error
    assert (project / "notes.txt").read_text() == "nothing here\n"
    r = ps('with policy { allowRead: ["src", "src/a", "README.md"], allowWrite: ["src/a", "out"] }:\n'
           '  apply("READ_FILE", { path: "notes.txt" })\n', project)
    assert "Readable: /README.md, /src. Writable: /src/a.\n" in r.error


@pytest.mark.parametrize("action, args", [
    ("READ_FILE", '{ path: "README.md" }'), ("WRITE_FILE", '{ path: "a", content: "" }'),
    ("PATCH_FILE", '{ path: "README.md", old: "a", new: "b" }'), ("SEARCH", "{}"),
    ("RUN_CMD", '{ cmd: "echo" }'), ("ASK_USER", '{ question: "?" }'), ("REPORT", '{ message: "m" }'),
])
def test_each_action_refused_outside_its_policy(project, action, args):
    other = "REPORT" if action != "REPORT" else "SEARCH"
    r = ps(f'with policy {{ allowActions: ["{other}"] }}:\n  apply("{action}", {args})\n', project, allow_commands=("echo",))
    assert r.exit_code == 1 and f"policy denies action {action} (allowed here: {other})" in r.error, r.error


# ---- RUN_CMD ------------------------------------------------------------------------------

def test_command_not_in_allowlist_is_refused_naming_the_allowed(project):
    r = ps('apply("RUN_CMD", { cmd: "rm", args: ["-rf", "."] })\n', project, allow_commands=("echo", "git"))
    assert r.exit_code == 1 and "policy denies command 'rm' (allowCommands here: echo, git)" in r.error
    r = ps('with policy { allowCommands: ["git"] }:\n  apply("RUN_CMD", { cmd: "echo" })\n', project, allow_commands=("echo", "git"))
    assert r.exit_code == 1 and "(allowCommands here: git)" in r.error
    r = ps('apply("RUN_CMD", { cmd: "echo" })\n', project)
    assert r.exit_code == 1 and "(allowCommands here: none)" in r.error
    assert sorted(os.listdir(project)) == [".ps-runs", "README.md", "notes.txt", "src"]


def test_allowed_command_runs_without_a_shell_in_the_project(project):
    r = ps('r = apply("RUN_CMD", { cmd: "echo", args: ["$HOME", "; ls", "*"] })\nlog(r.exitCode)\nlog(r.stdout)\n'
           'r = apply("RUN_CMD", { cmd: "sh", args: ["-c", "pwd; echo oops >&2; exit 3"] })\n'
           'log(r.exitCode)\nlog(r.stdout)\nlog(r.stderr)\n', project, allow_commands=("echo", "sh"))
    # The command's jail shows it the project at /project, its working directory.
    assert logged(r) == ["0", "$HOME ; ls *", "", "3", "/project", "", "oops", ""]


def test_command_has_no_network(project):
    with loopback_listener(timeout=3) as (port, accepted):
        probe = (f"import socket\ntry:\n socket.create_connection(('127.0.0.1', {port}), timeout=2)\n print('connected')\n"
                 f"except OSError as e:\n print('refused', type(e).__name__)\n")
        r = ps(f'r = apply("RUN_CMD", {{ cmd: "{os.path.basename(sys.executable)}", args: ["-c", {json.dumps(probe)}] }})\n'
               'log(r.stdout)\n', project, allow_commands=(os.path.basename(sys.executable),))
        # the same probe from the broker's namespace does connect: the listener is reachable
        control = socket.create_connection(("127.0.0.1", port), timeout=2)
        control.close()
    assert r.exit_code == 0, r.error
    assert r.output.startswith("[ps] refused"), r.output
    assert len(accepted) == 1  # only the control connection arrived


def test_command_that_times_out_is_killed_with_its_group(project):
    marker = project / "late.txt"
    started = time.monotonic()
    r = ps('apply("RUN_CMD", { cmd: "sh", args: ["-c", "(sleep 1; echo late > late.txt) & sleep 30"], timeoutMs: 300 })\n',
           project, allow_commands=("sh",))
    elapsed = time.monotonic() - started
    assert r.exit_code == 1 and "RUN_CMD: sh -c" in r.error
    assert "timed out after 300 ms and was killed (its whole process group)" in r.error
    assert elapsed < 5
    time.sleep(1.5)
    assert not marker.exists()  # the background child died with the group


def test_command_output_is_capped(project):
    r = ps('r = apply("RUN_CMD", { cmd: "sh", args: ["-c", "yes | head -c 300000"] })\n'
           'log(len(r.stdout), r.truncated)\n', project, allow_commands=("sh",), output_cap=1000)
    assert logged(r) == ["1000 true"]


def test_timeout_block_bounds_a_command(project):
    started = time.monotonic()
    r = ps('timeout 300:\n  apply("RUN_CMD", { cmd: "sleep", args: ["20"] })\n', project, allow_commands=("sleep",))
    assert r.exit_code == 1 and ("did not finish within 300 ms" in r.error or "timed out" in r.error), r.error
    assert time.monotonic() - started < 5


# ---- ASK_USER -------------------------------------------------------------------------------

def test_ask_user_without_a_terminal_fails_at_once(project):
    started = time.monotonic()
    r = ps('apply("ASK_USER", { question: "Go on?" })\n', project)
    assert r.exit_code == 1 and "ASK_USER needs a terminal" in r.error
    assert time.monotonic() - started < 10


# ---- parallel -------------------------------------------------------------------------------

def test_parallel_keeps_input_order_and_fail_fast(project):
    r = ps('''
rs = parallel([
  { action: "READ_FILE", args: { path: "notes.txt" } },
  { action: "READ_FILE", args: { path: "missing.txt" } },
  { action: "SEARCH", args: { query: "TODO", globs: ["*.md"] } },
  { action: "READ_FILE", args: { path: "src/util.py" } },
], { max: 3, fail_fast: false })
for r in rs:
  if r.ok:
    log("ok", r.value)
  else:
    log("error", r.error)
''', project)
    assert logged(r) == ["ok nothing here", "", "error READ_FILE: no such file: missing.txt",
                         'ok [{path: "README.md", line: 2, text: "TODO: write docs"}]', "ok X = 1  # TODO later", ""]
    r = ps('parallel([{ action: "READ_FILE", args: { path: "notes.txt" } }, { action: "READ_FILE", args: { path: "nope" } },'
           ' { action: "READ_FILE", args: { path: "x" } }, { action: "READ_FILE", args: { path: "y" } }], { max: 1 })\n',
           project, max_tool_calls=0)
    assert r.exit_code == 1 and "parallel item 2: READ_FILE: no such file: nope" in r.error
    log = next(d / "events.jsonl" for d in (project / ".ps-runs").iterdir() if "nope" in (d / "events.jsonl").read_text())
    actions = [e for e in map(json.loads, log.read_text().splitlines()) if e["event"] == "action"]
    assert [a["args"]["path"] for a in actions] == ["notes.txt", "nope"]  # fail_fast: y and x never ran


def test_parallel_refuses_writes_and_bad_options(project):
    for call, message in [
        ('parallel([{ action: "WRITE_FILE", args: { path: "a", content: "" } }])',
         "runs only the read-only actions READ_FILE, SEARCH, not \"WRITE_FILE\""),
        ('parallel([{ action: "READ_FILE" }])', "parallel item 1 must be an object {action, args}"),
        ('parallel([], { max: 0 })', "max must be a whole number from 1 to 16"),
        ('parallel([], { order: 1 })', "unknown option 'order'"),
        ('parallel("x")', "needs an array"),
    ]:
        r = ps(call + "\n", project)
        assert r.exit_code == 1 and message in r.error, (call, r.error)
    assert not (project / "a").exists()


def test_parallel_respects_the_policy(project):
    r = ps('with policy { allowRead: ["src"] }:\n'
           '  rs = parallel([{ action: "READ_FILE", args: { path: "README.md" } }, { action: "SEARCH", args: {} }], { fail_fast: false })\n'
           '  log(rs[0].ok, len(rs[1].value))\n'
           'with policy { allowActions: ["SEARCH"] }:\n'
           '  parallel([{ action: "READ_FILE", args: { path: "src/app.py" } }])\n', project)
    assert r.exit_code == 1 and r.output.splitlines() == ["[ps] false 2"]
    assert "policy denies action READ_FILE (allowed here: SEARCH)" in r.error


def test_tool_call_budget_counts_file_actions_and_parallel_items(project):
    r = ps('apply("READ_FILE", { path: "notes.txt" })\napply("SEARCH", {})\n'
           'parallel([{ action: "SEARCH", args: {} }, { action: "SEARCH", args: { query: "x" } }], { max: 1 })\n',
           project, max_tool_calls=3)
    assert r.exit_code == 1 and r.error_kind == "LimitError"
    assert "budget exceeded: --max-tool-calls 3 (action 4, SEARCH, refused)" in r.error


def test_files_example_runs_on_a_scratch_copy(tmp_path):
    import shutil
    import subprocess

    from tests.support.ps import REPO

    work = tmp_path / "greeter"
    shutil.copytree(REPO / "examples" / "project", work)
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "run", str(REPO / "examples" / "files.ps"),
                           "--project", str(work), "--yes", "--allow-command", "python3"],
                          cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert "[ps] exit 0 stdout: Hola, mundo" in proc.stdout.splitlines()
    assert "[ps] REPORT: greeter speaks Spanish" in proc.stdout.splitlines()
    status = subprocess.run(["git", "status", "--porcelain", "examples"], cwd=REPO, capture_output=True, text=True)
    assert status.stdout == ""  # the example never touches the repository's copy


# ---- files changed, trailing slashes, glob convention ---------------------------------------

def test_max_files_changed_policy_is_a_denial_and_the_cli_cap_a_budget(project):
    r = ps('''
with policy { maxFilesChanged: 1 }:
  apply("WRITE_FILE", { path: "out/a.txt", content: "1" })
  apply("WRITE_FILE", { path: "out/a.txt", content: "2" })
  log(files_changed, max_files_changed)
  retry 3:
    apply("PATCH_FILE", { path: "src/util.py", old: "X", new: "Y" })
''', project)
    assert r.exit_code == 1 and r.error_kind == "SandboxError" and r.output == "[ps] 1 1\n"
    assert ("PATCH_FILE: policy maxFilesChanged 1 denies changing src/util.py (PATCH_FILE src/util.py would be "
            "changed file 2; changed so far: out/a.txt)") in r.error
    assert (project / "src" / "util.py").read_text() == "X = 1  # TODO later\n"
    r = ps('''
with policy { maxFilesChanged: 1 }:
  apply("WRITE_FILE", { path: "a.txt", content: "1" })
apply("PATCH_FILE", { path: "a.txt", old: "1", new: "2" })
apply("WRITE_FILE", { path: "b.txt", content: "1" })
log(files_changed)
apply("WRITE_FILE", { path: "c.txt", content: "1" })
''', project, max_files_changed=2)
    assert r.exit_code == 1 and r.error_kind == "LimitError" and r.output == "[ps] 2\n"
    assert ("budget exceeded: --max-files-changed 2 (WRITE_FILE c.txt would be changed file 3; "
            "changed so far: a.txt, b.txt)") in r.error
    assert not (project / "c.txt").exists() and (project / "a.txt").read_text() == "2"


def test_a_path_ending_in_a_slash_is_refused(project):
    for call in ('apply("WRITE_FILE", { path: "new/", content: "x" })',
                 'apply("PATCH_FILE", { path: "notes.txt/", old: "n", new: "N" })',
                 'apply("READ_FILE", { path: "notes.txt/" })'):
        r = ps(call + "\n", project)
        assert r.exit_code == 1 and r.error_kind == "RuntimeError", r.error
        assert "ends with '/', so it names a directory; a file path cannot end with '/'" in r.error
    assert not (project / "new").exists() and (project / "notes.txt").read_text() == "nothing here\n"


def test_a_glob_without_a_slash_matches_names_at_any_depth(project):
    (project / "src" / "deep").mkdir()
    (project / "src" / "deep" / "x.py").write_text("TODO deep\n")
    r = ps('for h in apply("SEARCH", { query: "TODO", globs: ["*.py"] }):\n  log(h.path)\n'
           'for h in apply("SEARCH", { globs: ["util.*", "src/*.py"] }):\n  log("b", h.path)\n'
           'for h in apply("SEARCH", { globs: ["/*.md", "deep/*.py"] }):\n  log("c", h.path)\n', project)
    assert logged(r) == ["src/app.py", "src/deep/x.py", "src/util.py",
                         "b src/app.py", "b src/util.py", "c README.md"]


def test_a_denial_keeps_its_reason_whatever_the_path_says(project):
    """The refusal restates what the policy allows after the Sandbox's reason; a path that
    itself contains ' Readable: ' must not cut that reason short."""
    r = ps('apply("READ_FILE", { path: "../ Readable: everything" })\n', project)
    assert r.exit_code == 1
    assert "READ_FILE: path '/../ Readable: everything' climbs above the root. Readable: /. Writable: /." in r.error, r.error


def test_large_values_are_bounded_with_a_located_error_and_max_file_bytes_raises_the_cap(project):
    """Issue 14, item 7: a 1.1 MB write is a LimitError at its line (not a broken protocol);
    the base policy's maxFileBytes follows --max-file-bytes; maxBytes reads a large file's start."""
    r = ps('big = "x" * 1100000\napply("WRITE_FILE", { path: "big.txt", content: big })\n', project)
    assert r.exit_code == 1 and r.error_kind == "LimitError" and r.error_line == 2, r.error
    assert "over the limit of 1,048,576 bytes for one request" in r.error
    source = 'apply("WRITE_FILE", { path: "mid.txt", content: "y" * 600000 })\nlog(len(apply("READ_FILE", { path: "mid.txt" })))\n'
    r = ps(source, project)
    assert r.exit_code == 1 and "600000 bytes for mid.txt; the policy's maxFileBytes is 500000" in r.error
    r = ps(source, project, max_file_bytes=700_000)
    assert logged(r) == ["600000"]
    r = ps('log(len(apply("READ_FILE", { path: "mid.txt", maxBytes: 10 })))\napply("READ_FILE", { path: "mid.txt" })\n',
           project)
    assert r.output == "[ps] 10\n" and r.error_line == 2 and "mid.txt is 600000 bytes; the policy's maxFileBytes is 500000" in r.error
