"""`fdsl run` through the per-user server (runtime/client.py, runtime/server.py): the same
results as in process, limits and signals included; only this user is served; a killed or
stale server is replaced; CI and --no-server run in process."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.support import REPO

SERVER_ENV_DROP = ("CI", "FDSL_NO_SERVER", "FDSL_SERVER_DIR")


@pytest.fixture
def server_dir(tmp_path):
    directory = tmp_path / "srv"
    yield directory
    subprocess.run([sys.executable, "-m", "runtime.client", "server", "stop"], cwd=REPO, env=env_for(directory),
                   capture_output=True, timeout=60)
    signal_server(directory, signal.SIGKILL)


def signal_server(directory, signum) -> None:
    """Signal the server its pid file names, if any (a test's clean-up)."""
    pid_file = directory / "server.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text().split()[0]), signum)
        except (OSError, ValueError):
            pass


def env_for(directory, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SERVER_ENV_DROP}
    env["FDSL_SERVER_DIR"] = str(directory)
    env["PYTHONPATH"] = str(REPO)  # this checkout's client, whatever the directory it runs in
    env.update(extra)
    return env


def fdsl(directory, *args, cwd=REPO, stdin=None, **extra):
    return subprocess.run([sys.executable, "-m", "runtime.client", *map(str, args)], cwd=cwd, input=stdin,
                          env=env_for(directory, **extra), capture_output=True, text=True, timeout=120)


def in_process(*args, cwd=REPO, stdin=None):
    return subprocess.run([sys.executable, "-m", "runtime.cli", *map(str, args)], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=120)


def server_pid(directory) -> int:
    return int((directory / "server.pid").read_text().split()[0])


CASES = {
    "ok": ("print(len(Directory(\"/\").files()))\n", []),
    "error": ("x = 1\nprint(File(\"/nope.txt\").read())\n", []),
    "syntax": ("print(1 +)\n", []),
    "timeout": ("x = 0\nfor i in [1:1000000]:\n    for j in [1:1000000]:\n        x += 1\n", ["--timeout", "1"]),
    "memory": ("x = \"a\" * 500000000\nprint(len(x))\n", ["--memory", "64"]),
    "output": ("for i in [1:100000]:\n    print(\"line\", i)\n", ["--max-output", "1000"]),
    "usage": ("print(1)\n", ["--memory", "0"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_run_through_the_server_is_the_run_in_process(server_dir, tmp_path, case):
    source, options = CASES[case]
    script = tmp_path / "s.fdsl"
    script.write_text(source)
    (tmp_path / "a.txt").write_text("a\n")
    served = fdsl(server_dir, "run", script, "--root", tmp_path, *options)
    local = in_process("run", script, "--root", tmp_path, *options)

    def seen(proc):  # where a timeout finds the loop varies from run to run: its first line only
        return proc.returncode, proc.stdout, proc.stderr.splitlines()[0] if case == "timeout" else proc.stderr

    assert seen(served) == seen(local)
    assert (server_dir / "server.sock").exists()  # it did go through the server


@pytest.mark.parametrize("case", ["ok", "error", "usage"])
def test_the_installed_fdsl_script_is_the_client(server_dir, tmp_path, case):
    source, options = CASES[case]
    script = tmp_path / "s.fdsl"
    script.write_text(source)
    (tmp_path / "a.txt").write_text("a\n")
    served = subprocess.run([sys.executable, str(REPO / "bin" / "fdsl"), "run", str(script), "--root", str(tmp_path), *options],
                            cwd=REPO, env=env_for(server_dir), capture_output=True, text=True, timeout=120)
    local = in_process("run", script, "--root", tmp_path, *options)
    assert (served.returncode, served.stdout, served.stderr) == (local.returncode, local.stdout, local.stderr)
    assert (server_dir / "server.sock").exists()


def test_relative_paths_stdin_and_the_environment_are_the_clients(server_dir, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n")
    served = fdsl(server_dir, "run", "-", "--root", "docs", cwd=tmp_path, stdin='print(Directory("/").files())\n')
    assert served.returncode == 0 and served.stdout == "[a.md]\n", served.stderr
    status = fdsl(server_dir, "server", "status")
    assert status.returncode == 0 and "runs served" in status.stdout


def _the_running_worker(directory) -> psutil.Process:
    server = psutil.Process(server_pid(directory))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for proc in server.children(recursive=True):
            try:
                if proc.name() == "fdsl-worker" and proc.cpu_times().user > 0.3:
                    return proc
            except psutil.Error:
                continue
        time.sleep(0.05)
    raise AssertionError("no worker ran the script")


def _spinning(server_dir, tmp_path) -> tuple[subprocess.Popen, psutil.Process]:
    """A client whose script spins through the server, and the worker running it."""
    script = tmp_path / "spin.fdsl"
    script.write_text(CASES["timeout"][0])
    fdsl(server_dir, "server", "start")
    client = subprocess.Popen([sys.executable, "-m", "runtime.client", "run", str(script), "--root", str(tmp_path),
                               "--timeout", "60"], cwd=REPO, env=env_for(server_dir), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    return client, _the_running_worker(server_dir)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_to_the_client_ends_the_script_and_its_worker(server_dir, tmp_path, signum, code):
    client, worker = _spinning(server_dir, tmp_path)
    group = os.getpgid(worker.pid)
    client.send_signal(signum)
    _, err = client.communicate(timeout=30)
    assert client.returncode == code
    assert err == f"fdsl: stopped by {signal.Signals(signum).name}; the script's worker and every process it started were ended\n"
    gone, alive = psutil.wait_procs([worker], timeout=10)
    assert not alive
    assert not [p for p in psutil.process_iter() if _group(p) == group]


def _group(proc) -> int | None:
    try:
        return os.getpgid(proc.pid)
    except OSError:
        return None


@pytest.fixture
def reachable_server_dir():
    """A server directory another user can reach (its parents too): pytest's tmp is root's only."""
    import shutil
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="fdsl-srv-", dir="/tmp")) / "srv"
    yield directory
    # the test opened the directory to others, so the client will not use it to stop the server
    signal_server(directory, signal.SIGTERM)
    shutil.rmtree(directory.parent, ignore_errors=True)


def test_another_users_connection_is_refused(reachable_server_dir):
    if os.getuid() != 0:
        pytest.skip("needs root to connect as another user")
    server_dir = reachable_server_dir
    fdsl(server_dir, "server", "start")
    os.chmod(server_dir.parent, 0o711)
    os.chmod(server_dir, 0o711)  # let the other user reach the socket: the peer check must refuse it
    os.chmod(server_dir / "server.sock", 0o666)
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(server_dir / "server.sock"))
            data = sock.recv(4096)
            code = 0 if b"this server serves only its own user" in data else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_killed_server_is_started_again(server_dir, tmp_path):
    (tmp_path / "s.fdsl").write_text("print(7)\n")
    assert fdsl(server_dir, "run", tmp_path / "s.fdsl", "--root", tmp_path).stdout == "7\n"
    first = server_pid(server_dir)
    os.kill(first, signal.SIGKILL)
    again = fdsl(server_dir, "run", tmp_path / "s.fdsl", "--root", tmp_path)
    assert again.returncode == 0 and again.stdout == "7\n", again.stderr
    assert server_pid(server_dir) != first


def test_a_stale_server_is_replaced(server_dir, tmp_path):
    server_dir.mkdir(mode=0o700)
    old = subprocess.Popen([sys.executable, "-m", "runtime.server", "--dir", str(server_dir), "--build", "another"],
                           cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (server_dir / "server.sock").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    (tmp_path / "s.fdsl").write_text("print(8)\n")
    served = fdsl(server_dir, "run", tmp_path / "s.fdsl", "--root", tmp_path)
    assert served.returncode == 0 and served.stdout == "8\n", served.stderr
    assert old.wait(timeout=30) == 0  # the stale one stopped
    assert server_pid(server_dir) != old.pid


def test_a_server_whose_code_changed_on_disk_is_replaced(server_dir, tmp_path):
    """The server watches its own packages (runtime/staleness.py): a checkout edited while it
    runs is served by a new server at the next run, never by the old code."""
    checkout = tmp_path / "checkout"
    for package in ("runtime", "transpiler", "sandbox_worker", "wire"):
        shutil.copytree(REPO / package, checkout / package, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "s.fdsl").write_text("print(5)\n")

    def run():
        return subprocess.run([sys.executable, "-m", "runtime.client", "run", str(tmp_path / "s.fdsl"), "--root", str(tmp_path)],
                              cwd=checkout, env=env_for(server_dir, PYTHONPATH=str(checkout)),
                              capture_output=True, text=True, timeout=120)

    first = run()
    assert first.returncode == 0 and first.stdout == "5\n", first.stderr
    old = server_pid(server_dir)
    assert run().stdout == "5\n" and server_pid(server_dir) == old  # unchanged: the same server
    with open(checkout / "transpiler" / "errors.py", "a") as source:
        source.write("\n# edited\n")
    again = run()
    assert again.returncode == 0 and again.stdout == "5\n", again.stderr
    assert server_pid(server_dir) != old
    deadline = time.monotonic() + 20  # the stale server stops once it has answered
    while not ended(old) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ended(old)


def ended(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_an_unsafe_server_directory_means_in_process_with_a_note(tmp_path):
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o755)
    os.chmod(open_dir, 0o755)
    (tmp_path / "s.fdsl").write_text("print(9)\n")
    served = fdsl(open_dir, "run", tmp_path / "s.fdsl", "--root", tmp_path)
    assert served.returncode == 0 and served.stdout == "9\n"
    assert "fdsl: running in process:" in served.stderr and "closed to others" in served.stderr
    assert not (open_dir / "server.sock").exists()


@pytest.mark.parametrize("how", [["--no-server"], "CI", "FDSL_NO_SERVER"])
def test_no_server_and_ci_run_in_process(server_dir, tmp_path, how):
    (tmp_path / "s.fdsl").write_text("print(10)\n")
    args = ["run", tmp_path / "s.fdsl", "--root", tmp_path] + (how if isinstance(how, list) else [])
    extra = {} if isinstance(how, list) else {how: "1"}
    served = fdsl(server_dir, *args, **extra)
    assert served.returncode == 0 and served.stdout == "10\n"
    assert not (server_dir / "server.sock").exists()


# -- kept runners: a FilesDSL command line served again by the runner (and Session) that ran it

def runners(directory) -> list[psutil.Process]:
    """The server's runners (its children that are not script workers)."""
    return [p for p in psutil.Process(server_pid(directory)).children()
            if "runtime.server" in " ".join(p.cmdline())]


@pytest.mark.parametrize("case", list(CASES))
def test_a_run_again_through_a_kept_runner_is_the_run_in_process(server_dir, tmp_path, case):
    source, options = CASES[case]
    script = tmp_path / "s.fdsl"
    script.write_text(source)
    (tmp_path / "a.txt").write_text("a\n")

    def seen(proc):
        return proc.returncode, proc.stdout, proc.stderr.splitlines()[0] if case == "timeout" else proc.stderr

    # the first run leaves its runner kept (when the run allows), the next ones use it
    runs = [seen(fdsl(server_dir, "run", script, "--root", tmp_path, *options)) for _ in range(3)]
    local = in_process("run", script, "--root", tmp_path, *options)  # after: the server's files are in the root too
    assert runs == [seen(local)] * 3


def test_a_kept_runner_serves_the_same_command_line_and_sees_what_changed(server_dir, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("alpha\n")
    script = tmp_path / "s.fdsl"
    script.write_text('for h in Directory("/").grep("alpha"):\n    print(h.path, h.content)\n')
    first = fdsl(server_dir, "run", script, "--root", docs, "--verbose")
    assert first.stdout == "a.txt alpha\n", first.stderr
    assert "[fdsl] compile_reused: 0" in first.stderr  # compiled
    (docs / "a.txt").write_text("beta\n")  # a change between runs
    (docs / "b.txt").write_text("alpha again\n")
    second = fdsl(server_dir, "run", script, "--root", docs, "--verbose")
    assert second.stdout == "b.txt alpha again\n", second.stderr
    assert "[fdsl] compile_reused: 1" in second.stderr  # the kept Session had compiled it
    assert "1 runners kept" in fdsl(server_dir, "server", "status").stdout
    # the root replaced by another directory at the same path: another sandbox, never the old one's state
    os.rename(docs, tmp_path / "old")
    docs.mkdir()
    (docs / "c.txt").write_text("alpha at last\n")
    third = fdsl(server_dir, "run", script, "--root", docs, "--verbose")
    assert third.stdout == "c.txt alpha at last\n", third.stderr
    # a new Session (the old one would list the moved directory's files), on the compile the
    # runner kept: compiling is pure, so a process's sessions share what they compiled
    assert "[fdsl] compile_reused: 1" in third.stderr


def test_a_kept_runner_lets_go_of_the_clients_output(server_dir, tmp_path):
    """A pipe the output went into ends when the client exits (the runner, kept, holds no end of it)."""
    script = tmp_path / "s.fdsl"
    script.write_text("print(1)\n")
    for _ in range(2):
        client = subprocess.Popen([sys.executable, "-m", "runtime.client", "run", str(script), "--root", str(tmp_path)],
                                  cwd=REPO, env=env_for(server_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, _ = client.communicate(timeout=60)  # reads to EOF: would hang while the runner kept the pipe
        assert (client.returncode, out) == (0, b"1\n")


def test_only_filesdsl_runs_are_kept_and_only_a_few(server_dir, tmp_path):
    (tmp_path / "p.ps").write_text('log("hi")\n')
    served = fdsl(server_dir, "run", tmp_path / "p.ps", "--max-steps", "0")
    assert served.returncode == 0, served.stderr
    assert "0 runners kept" in fdsl(server_dir, "server", "status").stdout
    (tmp_path / "s.fdsl").write_text("print(1)\n")
    for timeout in ("5", "6", "7", "8"):  # four command lines: the two newest are kept
        assert fdsl(server_dir, "run", tmp_path / "s.fdsl", "--root", tmp_path, "--timeout", timeout).returncode == 0
    assert "2 runners kept" in fdsl(server_dir, "server", "status").stdout
    deadline = time.monotonic() + 30
    while len(runners(server_dir)) > 2 + 2 and time.monotonic() < deadline:  # kept + ready ones
        time.sleep(0.05)
    assert len(runners(server_dir)) <= 4


def test_a_kept_runner_stopped_by_a_signal_is_not_kept(server_dir, tmp_path):
    script = tmp_path / "spin.fdsl"
    script.write_text(CASES["timeout"][0])
    args = [sys.executable, "-m", "runtime.client", "run", str(script), "--root", str(tmp_path), "--timeout", "60"]
    assert fdsl(server_dir, "run", tmp_path / "missing.fdsl", "--root", tmp_path).returncode == 2  # starts the server
    (tmp_path / "ok.fdsl").write_text("print(1)\n")
    client = subprocess.Popen(args, cwd=REPO, env=env_for(server_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    worker = _the_running_worker(server_dir)
    client.send_signal(signal.SIGINT)
    client.communicate(timeout=30)
    assert client.returncode == 130
    assert not psutil.wait_procs([worker], timeout=10)[1]
    assert "0 runners kept" in fdsl(server_dir, "server", "status").stdout


def test_a_kept_runner_leaves_when_unused(server_dir, tmp_path):
    (tmp_path / "s.fdsl").write_text("print(1)\n")
    assert fdsl(server_dir, "run", tmp_path / "s.fdsl", "--root", tmp_path, FDSL_SERVER_KEEP_SECONDS="1").returncode == 0
    assert "1 runners kept" in fdsl(server_dir, "server", "status").stdout
    deadline = time.monotonic() + 30
    while "0 runners kept" not in fdsl(server_dir, "server", "status").stdout and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "0 runners kept" in fdsl(server_dir, "server", "status").stdout


def test_one_environment_is_one_origin_whichever_name_its_python_is_called_by(tmp_path):
    """`fdsl` runs the venv's python3, `python -m runtime.client` its python: the same server
    serves both, instead of each replacing the other's as stale."""
    bindir = Path(sys.executable).parent
    names = [n for n in ("python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}") if (bindir / n).exists()]
    origins = {subprocess.run([str(bindir / n), "-c", "from runtime.serverctl import origin; print(origin())"], cwd=REPO,
                              capture_output=True, text=True, timeout=60).stdout for n in names}
    assert len(names) >= 2 and len(origins) == 1, (names, origins)


def voluntary_switches(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches")


def test_an_idle_server_sleeps_and_sigterm_still_stops_it(server_dir, tmp_path):
    script = tmp_path / "s.fdsl"
    script.write_text("print(1)\n")
    assert fdsl(server_dir, "run", script, "--root", tmp_path).stdout == "1\n"
    pid = server_pid(server_dir)
    time.sleep(1.0)  # its runners started, its kept runner waiting
    before = voluntary_switches(pid)
    time.sleep(2.0)
    assert voluntary_switches(pid) - before <= 3  # no periodic wake-up (a 50 ms tick made about 40)
    os.kill(pid, signal.SIGTERM)  # it wakes for the signal, though nothing else would wake it
    deadline = time.monotonic() + 20
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the server did not stop on SIGTERM"
        time.sleep(0.05)
    assert not (server_dir / "server.sock").exists()


def test_keep_seconds_are_bounded_and_nan_is_the_default():
    from runtime.server import WARM_IDLE_SECONDS, keep_seconds

    assert [keep_seconds(v) for v in ("2", "0", "-5", "1e9", "inf")] == [2.0, 0.1, 0.1, 3600.0, 3600.0]
    assert [keep_seconds(v) for v in (None, "abc", "nan", "-nan")] == [WARM_IDLE_SECONDS] * 4


def _connect(directory) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(directory / "server.sock"))
    return sock


def test_a_request_the_server_cannot_read_leaves_none_of_its_descriptors_open(server_dir, tmp_path):
    import json

    from runtime.serverctl import origin

    (tmp_path / "s.fdsl").write_text("print(7)\n")
    assert fdsl(server_dir, "run", tmp_path / "s.fdsl", "--root", tmp_path).stdout == "7\n"
    pid = server_pid(server_dir)
    r, w = os.pipe()
    ours = f"pipe:[{os.fstat(r).st_ino}]"  # what /proc shows for a descriptor of this pipe
    try:
        for payload, fds in ((b"garbage", [r, w, r, w]), (b"\x00\x00\x00\x05\xff\xfe{}}", [r, w, r]),
                             (b"\x00\x00\x00\x10{\"t\":", [r, w, r, w]),  # cut short: the client closes
                             (b"\x00\x00\x00\x0b{\"t\":\"run\"}", [r, w, r, w, r])):  # more than four
            sock = _connect(server_dir)
            socket.send_fds(sock, [payload], fds)
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(30)
            while sock.recv(4096):
                pass
            sock.close()
        run = _connect(server_dir)  # a run that passes no streams is refused, its one descriptor closed
        body = json.dumps({"t": "run", "argv": ["run", "x.fdsl"], "build": origin()}).encode()
        socket.send_fds(run, [len(body).to_bytes(4, "big") + body], [r])
        run.settimeout(30)
        assert b"refused" in run.recv(4096)
        run.close()
        assert fdsl(server_dir, "run", tmp_path / "s.fdsl", "--root", tmp_path).stdout == "7\n"
        held = [n for n in os.listdir(f"/proc/{pid}/fd") if _link(f"/proc/{pid}/fd/{n}") == ours]
        assert held == [] and server_pid(server_dir) == pid
    finally:
        os.close(r)
        os.close(w)


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def test_an_environment_the_server_cannot_read_runs_in_process_with_a_note(server_dir, tmp_path):
    (tmp_path / "s.fdsl").write_text("print(7)\n")
    env = {os.fsencode(k): os.fsencode(v) for k, v in env_for(server_dir).items()}
    for extra in ({b"X": b"caf\xe9"}, {f"BIG{i}".encode(): b"x" * 120_000 for i in range(10)}):
        proc = subprocess.run([sys.executable, "-m", "runtime.client", "run", str(tmp_path / "s.fdsl"), "--root",
                               str(tmp_path)], cwd=REPO, env={**env, **extra}, capture_output=True, timeout=120)
        assert proc.returncode == 0 and proc.stdout == b"7\n", proc.stderr
        assert proc.stderr.startswith(b"fdsl: running in process: the "), proc.stderr


def test_a_stalled_connection_holds_up_no_other_client(server_dir, tmp_path):
    (tmp_path / "s.fdsl").write_text("print(7)\n")
    fdsl(server_dir, "server", "start")
    stalled = _connect(server_dir)
    stalled.sendall(b"\x00\x00\x00\x10{\"t\":")  # a request begun, never finished
    proc = fdsl(server_dir, "run", tmp_path / "s.fdsl", "--root", tmp_path)
    assert proc.returncode == 0 and proc.stdout == "7\n", proc.stderr
    stalled.settimeout(30)
    assert b'"refused"' in stalled.recv(4096)  # and the server let it go, saying so (its client runs in process)
    stalled.close()


@pytest.mark.parametrize("signals", [1, 2])
def test_a_client_whose_server_never_answers_stops_waiting_after_a_signal(tmp_path, signals):
    """A second signal stops waiting at once; one alone, SIGNAL_GRACE_S later."""
    directory = tmp_path / "srv"
    directory.mkdir(mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(directory / "server.sock"))
    listener.listen()
    (tmp_path / "s.fdsl").write_text("print(7)\n")
    client = subprocess.Popen([sys.executable, "-m", "runtime.client", "run", str(tmp_path / "s.fdsl"), "--root",
                               str(tmp_path)], cwd=REPO, env=env_for(directory), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        listener.settimeout(30)
        conn, _ = listener.accept()
        conn.settimeout(30)
        assert conn.recv(4)  # its request came: it waits for the answer that never comes
        time.sleep(0.5)
        for _ in range(signals):
            client.send_signal(signal.SIGINT)
            time.sleep(0.2)
        _, err = client.communicate(timeout=30)
        assert client.returncode == 130
        assert err.startswith("fdsl: stopped waiting for the server's answer to SIGINT"), err
    finally:
        client.kill()
        client.wait()
        listener.close()


def test_a_closed_standard_input_runs_as_in_process(server_dir, tmp_path):
    (tmp_path / "s.fdsl").write_text("print(7)\n")
    for _ in range(2):  # the first starts the server, the second finds it running
        proc = subprocess.run([sys.executable, "-m", "runtime.client", "run", str(tmp_path / "s.fdsl"), "--root",
                               str(tmp_path)], cwd=REPO, env=env_for(server_dir), capture_output=True, text=True,
                              timeout=60, preexec_fn=lambda: os.close(0))
        assert proc.returncode == 0 and proc.stdout == "7\n" and proc.stderr == "", proc.stderr


def test_a_run_ends_with_its_server(server_dir, tmp_path):
    """The server killed mid-run (SIGKILL): its runner is told (PR_SET_PDEATHSIG) and stops the
    run as on SIGTERM, so nothing goes on writing to a client told the server stopped."""
    client, worker = _spinning(server_dir, tmp_path)
    server = psutil.Process(server_pid(server_dir))
    runner = [p for p in server.children() if worker.pid in {c.pid for c in p.children(recursive=True)}]
    assert len(runner) == 1
    server.kill()
    _, err = client.communicate(timeout=30)
    assert client.returncode == 1 and "the server stopped during the run" in err
    gone, alive = psutil.wait_procs([worker, runner[0]], timeout=15)
    assert not alive, alive


def _client(directory, *args, confine=None, **extra):
    return subprocess.run([sys.executable, "-m", "runtime.client", *map(str, args)], cwd=REPO, preexec_fn=confine,
                          env=env_for(directory, **extra), capture_output=True, text=True, timeout=120)


def test_a_client_confined_otherwise_than_the_server_runs_in_process(server_dir, tmp_path):
    """A served run is a fork of the server: a client under no_new_privs (an agent's sandbox:
    Landlock needs it, and cannot be read from /proc) had its script run outside it."""
    import ctypes

    script = tmp_path / "s.fdsl"
    script.write_text('print(len(Directory("/").files()))\n')
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    assert _client(server_dir, "run", script, "--root", root).stderr == ""  # served: no note

    def no_new_privs():
        ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS

    proc = _client(server_dir, "run", script, "--root", root, confine=no_new_privs)
    assert (proc.returncode, proc.stdout) == (0, "1\n"), proc.stderr
    assert "fdsl: running in process: the client is confined otherwise than the server (NoNewPrivs)" in proc.stderr
    assert _client(server_dir, "run", script, "--root", root).stderr == ""  # the server still serves the others


def test_a_served_run_takes_the_clients_resource_limits(server_dir, tmp_path):
    """Other limits than the server's once refused every such client (a terminal with another
    `ulimit -n`); now the runner takes the client's, as /proc shows them: a file size limit
    fails a served PromptScript run exactly as it fails the run in process."""
    import re
    import resource

    project = tmp_path / "p"
    project.mkdir()
    script = tmp_path / "w.ps"
    script.write_text('apply("WRITE_FILE", { path: "x.txt", content: "' + "a" * 100 + '" })\nlog("wrote")\n')
    fdsl(server_dir, "server", "start")

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (10, 10))

    served = _client(server_dir, "run", script, "--project", project, "--yes", confine=small_files)
    local = subprocess.run([sys.executable, "-m", "runtime.cli", "run", str(script), "--project", str(project), "--yes"],
                           cwd=REPO, preexec_fn=small_files, capture_output=True, text=True, timeout=120)

    def seen(proc):
        return proc.returncode, proc.stdout, re.sub(r"\d{8}-\d{6}-[0-9a-f]{6}", "RUN", proc.stderr)

    assert seen(served) == seen(local) and served.returncode == 2 and "File too large" in served.stderr, served.stderr
    assert not (project / "x.txt").exists()
    ok = _client(server_dir, "run", script, "--project", project, "--yes")  # the next client's own limits
    assert ok.returncode == 0 and ok.stdout == "[ps] wrote\n" and ok.stderr == "", ok.stderr
    # A kept FilesDSL runner took its first client's limits, hard ones included: it serves only
    # a client with the same, so the next one, with its own, is not run under them (nor fails)
    listing = tmp_path / "l.fdsl"
    listing.write_text('print(len(Directory("/").files()))\n')
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def fewer_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 400), min(hard, 400)))

    for confine in (fewer_files, None, fewer_files):
        proc = _client(server_dir, "run", listing, "--root", root, confine=confine)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "1\n", ""), proc.stderr


def test_a_served_run_takes_the_clients_umask_and_time_zone(server_dir, tmp_path):
    import datetime

    project = tmp_path / "p"
    project.mkdir()
    script = tmp_path / "w.ps"
    script.write_text('apply("WRITE_FILE", { path: "x.txt", content: "hi" })\n')
    started = _client(server_dir, "server", "start", confine=lambda: os.umask(0o022), TZ="UTC")
    assert started.returncode == 0, started.stderr
    proc = _client(server_dir, "run", script, "--project", project, "--yes", confine=lambda: os.umask(0o077),
                   TZ="Etc/GMT-14")  # UTC+14
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert (project / "x.txt").stat().st_mode & 0o777 == 0o600
    (run,) = [d.name for d in (project / ".ps-runs").iterdir() if d.name != "memory"]
    named = datetime.datetime.strptime(run[:15], "%Y%m%d-%H%M%S")
    utc = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    assert abs(named - (utc + datetime.timedelta(hours=14))) < datetime.timedelta(minutes=5), (run, utc)


def test_a_server_that_cannot_start_is_not_waited_for(tmp_path):
    """A server that could not start cost every run the whole start timeout (20 s): a socket
    path too long for AF_UNIX, or a server dying as it starts."""
    from runtime.serverctl import START_TIMEOUT_S

    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    script = tmp_path / "s.fdsl"
    script.write_text('print(len(Directory("/").files()))\n')
    long_dir = tmp_path / ("d" * max(1, 110 - len(str(tmp_path))))
    long_dir.mkdir(mode=0o700)
    proc = fdsl(long_dir, "run", script, "--root", root)
    assert (proc.returncode, proc.stdout) == (0, "1\n"), proc.stderr
    assert "fdsl: running in process: the server's socket path" in proc.stderr and "shorter directory" in proc.stderr
    site = tmp_path / "site"
    site.mkdir()  # every interpreter imports it: the server's exits at once
    (site / "sitecustomize.py").write_text('import sys\nif "runtime.server" in sys.orig_argv:\n    sys.exit(3)\n')
    started = time.monotonic()
    proc = fdsl(tmp_path / "srv", "run", script, "--root", root, PYTHONPATH=f"{REPO}:{site}")
    assert (proc.returncode, proc.stdout) == (0, "1\n"), proc.stderr
    assert "fdsl: running in process: the server exited as it started" in proc.stderr
    assert time.monotonic() - started < START_TIMEOUT_S  # not the start timeout's wait


def test_a_trickling_connection_holds_up_no_other_client(server_dir, tmp_path):
    """Each byte a connection sent reset its 2 s wait, and the server read one connection at a
    time: a client sending a byte a second held every other client up as long as it liked."""
    import threading

    (tmp_path / "s.fdsl").write_text("print(7)\n")
    fdsl(server_dir, "server", "start")
    trickling = _connect(server_dir)
    stop = threading.Event()

    def trickle():
        trickling.sendall(b"\x00\x00\x00\x40")  # a request of 64 bytes announced
        for _ in range(40):  # 12 s of a byte every 0.3 s, unless the server lets go
            if stop.wait(0.3):
                return
            try:
                trickling.sendall(b" ")
            except OSError:
                return

    thread = threading.Thread(target=trickle)
    thread.start()
    try:
        time.sleep(0.5)
        started = time.monotonic()
        proc = fdsl(server_dir, "run", tmp_path / "s.fdsl", "--root", tmp_path)
        assert proc.returncode == 0 and proc.stdout == "7\n", proc.stderr
        assert time.monotonic() - started < 10  # not after the trickle's 12 s (the old server's way)
        trickling.settimeout(30)
        assert b'"refused"' in trickling.recv(4096)  # let go after its 2 s, trickle as it may
    finally:
        stop.set()
        thread.join()
        trickling.close()


def test_a_connection_made_as_the_server_stops_is_told_to_try_again(server_dir, tmp_path):
    """Connections the server had not read when it stopped were dropped: their runs failed with
    "the server stopped during the run", nothing run. They are told to try again (stale), and
    a stopped server's socket goes at once, so the next run starts a new server."""
    (tmp_path / "s.fdsl").write_text("print(7)\n")
    fdsl(server_dir, "server", "start")
    old = server_pid(server_dir)
    from runtime.serverctl import ask, origin, reply

    waiting = _connect(server_dir)  # connected, its request not sent yet (it has 2 s)
    try:
        stopping = _connect(server_dir)
        ask(stopping, {"t": "stop", "build": origin()})  # from here: no interpreter's start to wait for
        assert (reply(stopping) or {}).get("t") == "stopping"
        stopping.close()
        waiting.settimeout(30)
        assert b'"stale"' in waiting.recv(4096)
        deadline = time.monotonic() + 30
        while (server_dir / "server.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not (server_dir / "server.sock").exists()
    finally:
        waiting.close()
    proc = fdsl(server_dir, "run", tmp_path / "s.fdsl", "--root", tmp_path)
    assert proc.returncode == 0 and proc.stdout == "7\n" and proc.stderr == "", proc.stderr
    assert server_pid(server_dir) != old


def test_a_usage_error_is_the_clients_alone(server_dir, tmp_path):
    """The server parsed each command line to pick a kept runner, and argparse wrote every
    usage error and --help into server.log too, which only grows."""
    (tmp_path / "s.fdsl").write_text("print(7)\n")
    fdsl(server_dir, "server", "start")
    logged = (server_dir / "server.log").read_bytes()
    for args in (("--bogus",), ("--help",)):
        proc = fdsl(server_dir, "run", *args, tmp_path / "s.fdsl")
        assert proc.returncode in (0, 2) and (proc.stderr or proc.stdout), proc
    assert (server_dir / "server.log").read_bytes() == logged
