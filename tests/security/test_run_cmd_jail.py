"""RUN_CMD's jail (sandbox_worker/cmd_jail.py), attacked as an allowlisted command would: as root
and as an unprivileged broker. Each test names the capability the command must not have, and
each failed on the jail this one replaced (a network namespace, no_new_privs and rlimits)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from runtime import jail
from runtime.promptscript.command import run_command
from tests.support import CANARY, REPO
from tests.support.net import loopback_listener

ROOT = os.geteuid() == 0
NOBODY = 65534
# A Python every user can run (the tests' own may live under /root, closed to nobody).
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


@pytest.fixture(params=["root", "unprivileged"] if ROOT else ["unprivileged"])
def broker(request, monkeypatch):
    """Who runs the broker. As root, "unprivileged" starts the launcher as root and drops it to
    nobody before its main(): it then takes the unprivileged path (a user namespace)."""
    if request.param == "unprivileged" and ROOT:
        real = jail.jailed_command

        def dropped(entry, packages):
            command = real(entry, packages)
            tail = f"from {entry} import main; main()"
            drop = (f"from {entry} import main; import os; os.setgroups([]); os.setresgid({NOBODY}, {NOBODY}, {NOBODY}); "
                    f"os.setresuid({NOBODY}, {NOBODY}, {NOBODY}); main()")
            return command[:-1] + [command[-1][: -len(tail)] + drop]

        monkeypatch.setattr(jail, "jailed_command", dropped)
    return request.param


@pytest.fixture
def world():
    """(project, outside): a project any user can write, and a canary beside it, outside."""
    base = Path(tempfile.mkdtemp(prefix="fdsl-cmd-", dir="/tmp"))
    os.chmod(base, 0o755)
    project = base / "project"
    project.mkdir()
    os.chmod(project, 0o777)
    (project / "notes.txt").write_text("notes\n")
    outside = base / "outside"
    outside.mkdir()
    (outside / "canary.txt").write_text(CANARY)
    os.chmod(outside / "canary.txt", 0o644)
    yield project, outside
    shutil.rmtree(base, ignore_errors=True)


def cmd(project: Path, program: str, *args: str, timeout_s: float = 20, **kwargs) -> dict:
    return run_command(shutil.which(program) or program, list(args), cwd=str(project), timeout_s=timeout_s,
                       shown=program, **kwargs)


def py(project: Path, code: str, **kwargs) -> dict:
    return cmd(project, PYTHON, "-c", code, **kwargs)


def test_cmd_never_runs_as_root_nor_with_a_capability(broker, world):
    project, _ = world
    result = py(project, "import os\nprint(os.getuid(), os.getgid(), os.getgroups())\n"
                         "print([l for l in open('/proc/self/status').read().splitlines() if l.startswith('Cap')])")
    uid_line, caps_line = result["stdout"].splitlines()
    assert uid_line.split()[0] != "0", uid_line
    caps = dict(entry.split(":\t") for entry in json.loads(caps_line.replace("'", '"')))
    assert all(int(value, 16) == 0 for value in caps.values()), caps
    assert result["exitCode"] == 0 and "jail" not in result, result


def test_cmd_cant_reach_the_host_network_nor_setns_back(broker, world):
    project, _ = world
    with loopback_listener() as (port, accepted):
        result = py(project, _network_probe(port))
    assert "CONNECTED" not in result["stdout"] and not accepted, result
    assert "setns 1" not in result["stdout"], result


def _network_probe(port: int) -> str:
    return (
        "import os, socket\n"
        "for pid in ('1', str(os.getppid()), 'self'):\n"
        "    try:\n"
        "        os.setns(os.open(f'/proc/{pid}/ns/net', os.O_RDONLY), 0)\n"
        "        print('setns', pid)\n"
        "    except OSError as e:\n"
        "        print('no setns', pid, e.errno)\n"
        f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('CONNECTED')\n"
        "except OSError as e:\n    print('refused', e.errno)\n"
    )


def test_cmd_cant_read_or_write_outside_the_project(broker, world):
    project, outside = world
    result = cmd(project, "sh", "-c", f"cat {outside}/canary.txt; echo planted > {outside}/planted.txt; "
                                      "echo in > /tmp/scratch && cat /tmp/scratch; echo ok > written.txt; ls /root /home 2>&1")
    assert CANARY not in result["stdout"] + result["stderr"]
    assert not (outside / "planted.txt").exists()
    assert (project / "written.txt").read_text() == "ok\n"  # the project is writable
    assert "in" in result["stdout"].split()  # a private /tmp works


def test_cmd_cant_reach_a_unix_socket_outside_the_project(broker, world):
    project, outside = world
    path = outside / "service.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o777)
    server.listen(1)
    server.settimeout(3)
    try:
        result = py(project, f"import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect({str(path)!r})\n"
                             "    print('CONNECTED')\nexcept OSError as e:\n    print('refused', e.errno)\n")
        with pytest.raises(OSError):
            server.accept()
    finally:
        server.close()
    assert result["stdout"].startswith("refused"), result


def test_no_grandchild_outlives_the_action(broker, world):
    project, _ = world
    marker = f"fdsl-late-{os.getpid()}-{time.monotonic_ns()}"
    result = cmd(project, "sh", "-c", f"(sleep 1.5; echo late > late.txt; : {marker}) & "
                                      f"(setsid sh -c 'sleep 1.5; echo late > late2.txt; : {marker}' &) ; echo started")
    assert result["stdout"] == "started\n"
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []
    time.sleep(2)
    assert not (project / "late.txt").exists() and not (project / "late2.txt").exists()


def test_an_allowlisted_git_is_as_harmless_as_ls(broker, world):
    project, outside = world
    env_home = {"HOME": "/project"}  # git reads its configuration there
    subprocess.run(["git", "init", "-q", str(project)], check=True, env={**os.environ, **env_home})
    os.system(f"chmod -R a+rwX {project}")
    alias = f"!cat {outside}/canary.txt; echo planted > {outside}/planted.txt; id -u"
    result = cmd(project, "git", "-c", f"alias.x={alias}", "x")
    assert CANARY not in result["stdout"] + result["stderr"] and not (outside / "planted.txt").exists(), result
    result = cmd(project, "git", "diff", "--no-index", f"{outside}/canary.txt", "notes.txt")
    assert CANARY not in result["stdout"] + result["stderr"], result
    assert result["exitCode"] != 0


# A kernel without Landlock, simulated: a child process installs a seccomp filter answering
# ENOSYS to landlock_create_ruleset (444), then runs the command through the jail; the
# launcher inherits the filter. Stdlib only, x86_64 numbers.
NO_LANDLOCK = r"""
import ctypes, json, os, struct, sys
sys.path.insert(0, sys.argv[1])
def insn(code, jt, jf, k):
    return struct.pack("<HBBI", code, jt, jf, k)
program = b"".join([insn(0x20, 0, 0, 0), insn(0x15, 0, 1, 444), insn(0x06, 0, 0, 0x00050000 | 38),
                    insn(0x06, 0, 0, 0x7FFF0000)])
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
code = ctypes.create_string_buffer(program, len(program))
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0
assert libc.prctl(22, 2, ctypes.byref(Fprog(4, ctypes.cast(code, ctypes.c_void_p))), 0, 0) == 0
from runtime.errors import SandboxError
from runtime.promptscript.command import run_command
try:
    layers = {}
    result = run_command("/bin/echo", ["ran"], cwd=sys.argv[2], timeout_s=20, shown="echo",
                         isolation=sys.argv[3], layers=layers)
    print(json.dumps({"result": result, "layers": layers}))
except SandboxError as exc:
    print(json.dumps({"error": str(exc)}))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the filter uses x86_64 syscall numbers")
@pytest.mark.parametrize("isolation", ["strict", "best"])
def test_without_landlock_strict_refuses_and_the_default_says_what_is_missing(world, isolation):
    project, _ = world
    repo = str(REPO)
    done = subprocess.run([sys.executable, "-c", NO_LANDLOCK, repo, str(project), isolation],
                          capture_output=True, text=True, timeout=60)
    outcome = json.loads(done.stdout)
    if isolation == "strict":
        assert outcome == {"error": "RUN_CMD: the command jail could not be set up: isolation strict: the command's "
                                    "landlock layer is not in force (missing: Landlock not available)"}
    else:
        assert outcome["result"]["stdout"] == "ran\n"
        assert outcome["result"]["jail"] == {"missing": {"landlock": "missing: Landlock not available"}}
        assert all(v.startswith("active") for k, v in outcome["layers"].items() if k != "landlock"), outcome


def test_a_program_installed_under_tmp_runs_and_tmp_stays_private(broker, world):
    """A virtualenv under /tmp (a CI checkout there) is one of the command's read-only trees:
    it is placed inside the command's own /tmp, never in the way of it."""
    project, _outside = world
    prefix = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        (prefix / "bin").mkdir()
        tool = prefix / "bin" / "hello"
        tool.write_text("#!/bin/sh\necho hello from $0\nls /tmp | wc -l\n")
        tool.chmod(0o755)
        os.chmod(prefix, 0o755)
        result = cmd(project, str(tool))
        assert result["exitCode"] == 0, result
        lines = result["stdout"].splitlines()
        assert lines[0] == f"hello from {tool}"
        assert lines[1].strip() == "1"  # /tmp holds only the way to the tree, nothing of the host's
    finally:
        shutil.rmtree(prefix)
