"""run_script's sandbox: one way to build it for both languages, and its option errors."""

from __future__ import annotations

import pytest

from runtime.api import EXIT_USAGE, MountSpec, run_script
from runtime.fs.config import Mount, SandboxConfig
from runtime.fs.sandbox import Sandbox


def test_a_promptscript_run_writes_through_its_mounts_under_their_approval(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "root").mkdir()
    asked = []

    def approve(description):
        asked.append(description)
        return True

    r = run_script('apply("WRITE_FILE", { path: "/out/a.txt", content: "a" })\n'
                   'apply("WRITE_FILE", { path: "/out/a.txt", content: "a" })\n',
                   lang="ps", root=str(tmp_path / "root"), mounts=[MountSpec(tmp_path / "out", "/out", writable=True)],
                   approve=approve, timeout=30)
    assert r.ok, r.error
    assert (tmp_path / "out" / "a.txt").read_text() == "a"
    assert asked == ["Write 1 chars to /out/a.txt"]  # the same write is asked once per run


def test_a_read_approval_mount_asks_promptscript_reads_once_per_file(tmp_path):
    (tmp_path / "a.txt").write_text("TODO a\n")
    config = SandboxConfig(mounts=[Mount(host_path=tmp_path, mount_point="/cfg", mode="ro", read_approval=True)])
    asked = []

    def approve(description):
        asked.append(description)
        return True

    r = run_script('log(apply("READ_FILE", { path: "/cfg/a.txt" }))\nlog(apply("READ_FILE", { path: "/cfg/a.txt" }))\n'
                   'log(apply("SEARCH", { query: "TODO" }))\n',
                   lang="ps", sandbox=Sandbox(config), approve=approve, timeout=30)
    assert r.ok, r.error
    assert asked == ["Read from /cfg/a.txt", "List files in /"]
    assert r.output.splitlines()[-1] == '[ps] [{path: "cfg/a.txt", line: 1, text: "TODO a"}]'


def test_root_and_project_cannot_both_be_the_root(tmp_path):
    r = run_script("log(1)\n", lang="ps", root=str(tmp_path), options={"project": tmp_path})
    assert r.exit_code == EXIT_USAGE and r.output == ""
    assert r.error == ("UsageError: root and the option project both name the directory at /: give one "
                       "(project mounts it read-write, root read-only)")


def test_a_project_must_be_the_sandboxs_writable_root(tmp_path):
    config = SandboxConfig(mounts=[Mount(host_path=tmp_path, mount_point="/", mode="ro")])
    r = run_script("log(1)\n", lang="ps", sandbox=Sandbox(config), options={"project": tmp_path})
    assert r.exit_code == EXIT_USAGE
    assert "must be the directory mounted read-write at / of the run's sandbox" in r.error
    assert not (tmp_path / ".ps-runs").exists()


def test_unknown_or_misplaced_language_options_are_usage_errors(tmp_path):
    r = run_script("log(1)\n", lang="ps", root=str(tmp_path), options={"max_step": 5})
    assert r.exit_code == EXIT_USAGE and "unknown PromptScript option(s) max_step (known: " in r.error
    r = run_script("print(1)\n", root=str(tmp_path), options={"max_steps": 5})
    assert r.exit_code == EXIT_USAGE and r.error == "UsageError: option(s) max_steps: FilesDSL has no language options"


@pytest.mark.parametrize("arguments,message", [
    ({"lang": "python"}, "lang must be one of 'fdsl', 'ps', not 'python'"),
    ({"isolation": "max"}, "isolation must be one of 'best', 'strict', not 'max'"),
    ({"options": ["project"]}, "options must be a dict of the language's options, not list"),
    ({"timeout": 0}, "timeout must be a number of seconds from 0.001, not 0"),
    ({"timeout": "60"}, "timeout must be a number of seconds from 0.001, not '60'"),
    ({"timeout": 10 ** 400}, "timeout must be a number of seconds from 0.001, not an integer of 1329 bits"),
    ({"memory_mb": 10 ** 5000}, "memory_mb must be a number of MiB from 16 to 1048576, not an integer of 16610 bits"),
    ({"memory_mb": 2.5}, "memory_mb must be a number of MiB from 16 to 1048576, not 2.5"),
    ({"max_output": -1}, "max_output must be a number of bytes from 0 to 1099511627776, not -1"),
    ({"pdf_memory_mb": 64}, "pdf_memory_mb must be a number of MiB from 128 to 1048576, not 64"),
    ({"max_pdf_pages": True}, "max_pdf_pages must be a number of pages from 1 to 10000000, not True"),
])
def test_every_bad_argument_is_a_usage_error_naming_it(tmp_path, arguments, message):
    r = run_script("print(1)\n", root=str(tmp_path), **arguments)
    assert (r.exit_code, r.error_kind, r.output) == (EXIT_USAGE, "UsageError", "")
    assert r.error == f"UsageError: {message}"


@pytest.mark.parametrize("source, kind", [("print(\n", "SyntaxError"), ("print(1)\n", None)])
def test_a_one_shot_runs_worker_started_while_it_compiles_is_gone_when_it_returns(tmp_path, source, kind):
    """The worker starts (imports, hardens) on another core while the script compiles; when the
    script does not compile it is ended and reaped before the result returns, as after a run."""
    import psutil

    result = run_script(source, root=str(tmp_path), timeout=30)
    assert result.error_kind == kind and result.output == ("1\n" if kind is None else "")
    assert [p for p in psutil.Process().children(recursive=True) if p.name() == "fdsl-worker"] == []
