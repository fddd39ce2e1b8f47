"""A kernel without Landlock and without namespaces, simulated: the CLI runs under an outer
seccomp filter, installed by a wrapper before it execs `python -m runtime.cli`, that answers
ENOSYS to landlock_create_ruleset and EPERM to unshare. The broker and its worker inherit it.

The contract: `fdsl doctor` names both layers MISSING with the reason and exits nonzero;
`fdsl run --isolation strict` refuses (exit 1) and says why; the default run still runs, and
`--verbose` names the missing layers.
"""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from tests.support import CANARY, REPO

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="the wrapper's filter uses x86_64 syscall numbers")

# Stdlib only: seccomp_data.nr == 444 -> ENOSYS, == 272 -> EPERM, else allow; then exec.
WRAPPER = r"""
import ctypes, os, struct, sys
def insn(code, jt, jf, k):
    return struct.pack("<HBBI", code, jt, jf, k)
LD_NR, JEQ, RET, ERRNO, ALLOW = 0x20, 0x15, 0x06, 0x00050000, 0x7FFF0000
program = b"".join([
    insn(LD_NR, 0, 0, 0),
    insn(JEQ, 0, 1, 444), insn(RET, 0, 0, ERRNO | 38),  # landlock_create_ruleset: ENOSYS
    insn(JEQ, 0, 1, 272), insn(RET, 0, 0, ERRNO | 1),   # unshare: EPERM
    insn(RET, 0, 0, ALLOW),
])
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
code = ctypes.create_string_buffer(program, len(program))
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS"
fprog = Fprog(len(program) // 8, ctypes.cast(code, ctypes.c_void_p))
assert libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0, os.strerror(ctypes.get_errno())
os.execv(sys.executable, [sys.executable, "-m", "runtime.cli"] + sys.argv[1:])
"""


@pytest.fixture
def fdsl(tmp_path):
    wrapper = tmp_path / "degrade.py"
    wrapper.write_text(WRAPPER)

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(wrapper), *argv], cwd=REPO, capture_output=True, text=True, timeout=60)

    return run


@pytest.fixture
def script(sandbox, tmp_path):
    root, _ = sandbox
    path = tmp_path / "s.fdsl"
    path.write_text('print(len(Directory("data").files()))\n')
    return str(path), str(root)


LANDLOCK_REASON = "missing: Landlock not available (Function not implemented)"
NETNS_REASON = "missing: unshare("  # the exact call depends on root (CLONE_NEWNET) or not (CLONE_NEWUSER|CLONE_NEWNET)


def test_doctor_reports_the_hidden_layers_missing_with_their_reason(fdsl):
    done = fdsl("doctor")
    assert done.returncode == 1, done
    worker, command = done.stdout.split("PromptScript's RUN_CMD jail")
    lines = {line.split()[0]: line for line in worker.splitlines()[1:] if line.startswith("  ")}
    assert "MISSING" in lines["landlock"] and LANDLOCK_REASON in lines["landlock"], done.stdout
    for name in ("netns", "ipcns", "utsns", "pidns"):  # every namespace needs unshare
        assert "MISSING" in lines[name] and NETNS_REASON in lines[name] and "Operation not permitted" in lines[name], done.stdout
    for name in ("no_new_privs", "seccomp", "rlimits", "uid"):
        assert "MISSING" not in lines[name], done.stdout
    assert "5 layer(s) missing" in done.stdout and "--isolation strict` will refuse" in done.stdout
    # The command jail needs unshare too: as root it never runs (never as root), unprivileged
    # its namespaces are missing.
    assert "MISSING" in command and "RUN_CMD" in command.splitlines()[-1], command


def test_strict_isolation_refuses_to_run(fdsl, script):
    path, root = script
    done = fdsl("run", path, "--root", root, "--isolation", "strict")
    assert done.returncode == 1, done
    assert done.stdout == ""
    assert "isolation strict: layers not in force" in done.stderr, done.stderr
    assert "netns: " + NETNS_REASON in done.stderr and "landlock: " + LANDLOCK_REASON in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_default_run_still_runs_and_verbose_names_the_missing_layers(fdsl, script):
    path, root = script
    done = fdsl("run", path, "--root", root, "--verbose")
    assert done.returncode == 0, done
    assert done.stdout == "3\n"  # data/a.txt, data/b.md, data/sub/c.txt
    layers = next(line for line in done.stderr.splitlines() if line.startswith("[fdsl] layers: "))
    assert "netns=" + NETNS_REASON in layers and "landlock=" + LANDLOCK_REASON in layers, layers
    assert "seccomp=active" in layers and "rlimits=active" in layers, layers


def test_without_landlock_the_filesystem_stays_closed(fdsl, sandbox, tmp_path):
    """Plain Python (transpiler and RestrictedPython bypassed) in a worker whose kernel has no
    Landlock: seccomp refuses the open itself, so the canary outside the root is not read.
    Closing fd 2 first frees a descriptor, so RLIMIT_NOFILE is no wall here."""
    root, canary = sandbox
    attack = tmp_path / "read.py"
    attack.write_text(f"import os\nos.close(2)\nprint(open({str(canary)!r}).read())\n")
    done = fdsl("audit", str(attack), "--mode", "os", "--root", str(root))
    assert done.returncode == 1, done
    assert CANARY not in done.stdout + done.stderr
    assert "[Errno 1] Operation not permitted" in done.stdout + done.stderr, done
