"""The warm Python API (runtime/session.py): the same results as run_script, broker state kept
between runs, and never a worker reused or left behind."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time

import psutil
import pytest

from runtime.api import EXIT_TIMEOUT, EXIT_USAGE, run_script
from runtime.errors import RunSetupError
from runtime.session import Session


@pytest.fixture
def docs(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    (tmp_path / "b.md").write_text("# Title\nalpha again\n")
    return tmp_path


def gone(pid: int, within: float = 5.0) -> bool:
    """The process has ended (waiting `within` seconds at most: a worker discarded from a pool is killed first)."""
    deadline = time.monotonic() + within
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def waiting(session: Session, count: int = 1) -> list:
    """The pool's ready workers once it holds `count` (its Upkeep thread makes them after the
    session is made)."""
    deadline = time.monotonic() + 30
    while len(session.pool.ready) < count:
        assert time.monotonic() < deadline, f"the pool holds {len(session.pool.ready)} of {count} workers after 30 s"
        time.sleep(0.01)
    return list(session.pool.ready)


SCRIPTS = [
    'print(len(Directory("/").files()))\n',
    'for h in Directory("/").grep("alpha"):\n    print(h.path, h.line)\n',
    'print(File("/nope.txt").read())\n',
    'x = 1\nprint(x +)\n',
]


@pytest.mark.parametrize("source", SCRIPTS)
def test_a_session_run_gives_what_run_script_gives(docs, source):
    expected = run_script(source, root=str(docs), timeout=30)
    with Session(root=str(docs), timeout=30) as session:
        got = session.run(source)
    assert (got.exit_code, got.output, got.error, got.error_line, got.error_column) == \
        (expected.exit_code, expected.output, expected.error, expected.error_line, expected.error_column)


def test_no_state_crosses_scripts(docs):
    with Session(root=str(docs), timeout=30, workers=2) as session:
        assert session.run("secret = 42\nprint(secret)\n").output == "42\n"
        second = session.run("print(secret)\n")
        assert second.exit_code == 1 and "secret" in second.error


def test_each_run_takes_a_new_worker_and_ends_it(docs):
    with Session(root=str(docs), timeout=30, workers=1) as session:
        pids, take = [], session.pool.take

        def recorded():
            proc = take()
            pids.append(proc.pid)
            return proc

        session.pool.take = recorded
        for _ in range(3):
            assert session.run("print(1)\n").output == "1\n"
            assert all(gone(pid) for pid in pids)
        assert len(set(pids)) == 3


def test_close_ends_the_waiting_workers(docs):
    session = Session(root=str(docs), timeout=30, workers=3)
    pids = [p.pid for p in waiting(session, 3)]
    zygote = session.pool.zygote.proc.pid
    assert len(pids) == 3 and not any(gone(pid, within=0) for pid in pids + [zygote])
    session.close()
    assert all(gone(pid) for pid in pids + [zygote])
    with pytest.raises(RunSetupError, match="closed"):
        session.run("print(1)\n")


def test_a_worker_this_process_started_ahead_is_the_first_runs(docs):
    """A server runner starts its worker before its request (runtime/runner.py): a Session made
    for that request has it waiting at once, not behind the zygote's start."""
    from runtime.supervisor import PRESTARTED, start_worker

    ahead = start_worker(preload=True)
    PRESTARTED.append(ahead)
    with Session(root=str(docs), timeout=30, workers=2) as session:
        assert session.pool.ready[:1] == [ahead] and not PRESTARTED
        taken, take = [], session.pool.take

        def recorded():
            taken.append(take())
            return taken[-1]

        session.pool.take = recorded
        assert session.run("print(1)\n").output == "1\n" and taken == [ahead]


def test_a_waiting_worker_killed_from_outside_is_replaced(docs):
    with Session(root=str(docs), timeout=30, workers=1) as session:
        victim = waiting(session)[0]
        os.kill(victim.pid, 9)
        assert gone(victim.pid)  # a zombie: the pool, not the test, reaps it (after killing its group)
        assert session.run("print(2)\n").output == "2\n"
        with pytest.raises(ChildProcessError):
            os.waitpid(victim.pid, os.WNOHANG)


def test_a_script_that_does_not_compile_leaves_the_worker_waiting(docs):
    """A run takes its worker (and has it warm its compile path) before compiling: one whose
    script does not compile gives it back unused, and the next run's script runs in it."""
    with Session(root=str(docs), timeout=30, workers=1) as session:
        first = waiting(session)[0].pid
        assert session.run("print(\n").exit_code == 1
        assert session.run("print(\n").exit_code == 1
        assert session.pool.ready[0].pid == first
        taken, take = [], session.pool.take

        def recorded():
            taken.append(take())
            return taken[-1]

        session.pool.take = recorded
        assert session.run("print(3)\n").output == "3\n" and [p.pid for p in taken] == [first]


def test_a_worker_sent_its_script_is_never_given_back(docs):
    """A compiled script goes to its worker before the run's broker is built (supervisor.send_ahead):
    when that then fails (here an unknown PromptScript option), the worker holds a script, so it is
    ended, not given back, and the next run takes another."""
    with Session(root=str(docs), options={"bogus": 1}, timeout=30, workers=1) as session:
        first = waiting(session)[0]
        refused = session.run("log(1)\n", lang="ps")
        assert refused.exit_code == EXIT_USAGE and "unknown PromptScript option(s) bogus" in refused.error
        assert first not in session.pool.ready
        with pytest.raises(ChildProcessError):  # killed and reaped before the run returned
            os.waitpid(first.pid, os.WNOHANG)
        taken, take = [], session.pool.take

        def recorded():
            taken.append(take())
            return taken[-1]

        session.pool.take = recorded
        assert session.run("print(4)\n").output == "4\n" and taken and taken[0].pid != first.pid


def test_an_interrupt_as_the_script_is_sent_never_gives_its_worker_back(docs, monkeypatch):
    """Ctrl-C may land just after the code frame's write: the worker may hold the script then,
    so it is ended, and the next run's script is the one that runs."""
    from runtime import supervisor

    class Interrupted:  # supervisor's os (send_ahead's write), with the write interrupted once done
        def __getattr__(self, name):
            return getattr(os, name)

        def write(self, fd, data):
            written = os.write(fd, data)
            monkeypatch.setattr(supervisor, "os", os)
            assert b'"code"' in data and written == len(data)
            raise KeyboardInterrupt

    with Session(root=str(docs), timeout=30, workers=1) as session:
        first = waiting(session)[0]
        monkeypatch.setattr(supervisor, "os", Interrupted())
        with pytest.raises(KeyboardInterrupt):
            session.run('print("FIRST")\n')
        assert first not in session.pool.ready
        after = session.run('print("SECOND")\n')
        assert (after.exit_code, after.output) == (0, "SECOND\n")


def test_a_waiting_worker_has_applied_the_sessions_limits_before_any_run(docs):
    import select

    with Session(root=str(docs), timeout=30, workers=1) as session:
        worker = waiting(session)[0]
        assert select.select([worker.stdout], [], [], 20)[0]  # its ready frame, written before a run took it
        first = session.run("print(1)\n")
        assert first.output == "1\n" and first.layers["rlimits"] == "active"


def test_limits_hold_in_a_session_and_the_next_run_is_unaffected(docs):
    with Session(root=str(docs), timeout=1, workers=1) as session:
        started = time.monotonic()
        r = session.run("x = 0\nfor i in [1:1000000]:\n    for j in [1:1000000]:\n        x += 1\n")
        assert r.exit_code == EXIT_TIMEOUT and time.monotonic() - started < 5
        assert session.run('print("next")\n').output == "next\n"
    with Session(root=str(docs), timeout=30, memory_mb=64, workers=1) as session:
        r = session.run('x = "a" * 100000000\nprint(len(x))\n')
        assert r.exit_code == 1 and "memory limit" in r.error


def test_a_run_may_ask_for_a_shorter_timeout_than_its_sessions_and_no_longer(docs):
    loop = "x = 0\nfor i in [1:1000000]:\n    for j in [1:1000000]:\n        x += 1\n"
    with Session(root=str(docs), timeout=120, workers=1) as session:
        started = time.monotonic()
        r = session.run(loop, timeout=1)
        assert r.exit_code == EXIT_TIMEOUT and "within 1 s" in r.error and time.monotonic() - started < 10
        assert session.run("print(1)\n", timeout=120).output == "1\n"
        for bad in (121, 0, -1, float("nan"), True, "5"):
            r = session.run("print(1)\n", timeout=bad)
            assert r.exit_code == EXIT_USAGE and "timeout must be a number of seconds" in r.error, bad
        assert session.run("print(2)\n").output == "2\n"  # None: the session's


def test_documents_are_parsed_once_per_session(docs):
    with Session(root=str(docs), timeout=30) as session:
        for _ in range(3):
            assert session.run('print(File("/a.txt").lines(1, 1))\n').ok
        assert session.shared["store"].parse_count == 1


def test_promptscript_runs_in_a_session_over_its_project(tmp_path):
    with Session(options={"project": tmp_path, "max_steps": 0}, timeout=30, approve=lambda d: True) as session:
        assert session.run('apply("WRITE_FILE", { path: "n.txt", content: "hi" })\n', lang="ps").ok
        r = session.run('log(apply("READ_FILE", { path: "n.txt" }))\n', lang="ps")
        assert r.output == "[ps] hi\n"
        assert session.run('print(len(Directory("/").files()))\n').output.strip() != ""  # FilesDSL too
    assert (tmp_path / "n.txt").read_text() == "hi"


@pytest.mark.parametrize("kwargs, message", [
    ({"workers": -1}, "workers must be an integer from 0 to 16"),
    ({"timeout": 0}, "timeout"),
    ({"isolation": "loose"}, "isolation must be one of"),
    ({"options": 3}, "options must be a dict"),
])
def test_bad_arguments_are_named(docs, kwargs, message):
    with pytest.raises(RunSetupError, match=message):
        Session(root=str(docs), **kwargs)


def test_an_unknown_language_is_a_usage_error(docs):
    with Session(root=str(docs), workers=0) as session:
        r = session.run("print(1)\n", lang="py")
        assert r.exit_code == 2 and "lang must be one of" in r.error


def test_the_pdf_extractor_serves_many_runs_and_is_renewed_when_its_cpu_is_spent(docs):
    import pymupdf

    doc = pymupdf.open()
    for i in range(20):
        doc.new_page().insert_text((72, 72), f"page {i}")
    doc.save(docs / "a.pdf")
    with Session(root=str(docs), timeout=5) as session:
        for _ in range(3):
            assert session.run('print(File("/a.pdf").page_count)\n').output == "20\n"
            os.utime(docs / "a.pdf")  # changed: parsed again, by the same extractor
        extractor = session.shared["store"].extractor
        assert extractor.started == 1
        extractor.cpu_limit = 1  # as if spent: too little left for a run of 5 s
        assert session.run('print(File("/a.pdf").page_count)\n').output == "20\n"
        assert extractor.started == 2


def test_a_sessions_runs_share_an_index_that_learns_and_a_one_shot_run_does_not_learn(docs):
    from runtime.fs.vfs import VirtualFS
    from runtime.index.prefilter import RunIndex
    from runtime.services.files import FilesService

    for name in ("a.txt", "b.md"):  # files changed in the last 2 s are never learned (runtime/index)
        os.utime(docs / name, (time.time() - 60, time.time() - 60))
    one_shot = RunIndex(learning=False)
    FilesService(VirtualFS([("/", docs, False)]), index=one_shot).dir_grep("/", "alpha", None, False)
    assert one_shot.learned == 0  # its first search costs a plain scan, nothing more
    with Session(root=str(docs), timeout=30) as session:
        index, learners = session.shared["index"], []
        learn = index._learn
        index._learn = lambda *a: learners.append(threading.current_thread().name) or learn(*a)
        assert session.run('print(len(Directory("/").grep("alpha")))\n').output == "2\n"
        deadline = time.monotonic() + 10  # between runs, the session's learner teaches the index
        while session.shared["index"].learned < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert session.shared["index"].learned == 2 and not session.shared["index"].pending
        assert learners == ["fdsl-session-upkeep"] * 2  # learned between runs, never by the search
        assert session.run('print(len(Directory("/").grep("zzz")))\n').output == "0\n"



def test_a_run_waits_for_at_most_one_text_of_the_learning(tmp_path):
    """The learner gives way to a run at its next text: a lock is not fair, and a learner that
    took it again at once kept a run waiting until its last text (1 s for 2,000 files)."""
    old = time.time() - 60  # files changed in the last 2 s are never learned (runtime/index)
    for i in range(40):
        (tmp_path / f"f{i:02d}.txt").write_text(f"alpha {i}\n")
        os.utime(tmp_path / f"f{i:02d}.txt", (old, old))
    with Session(root=str(tmp_path), timeout=30) as session:
        index, events = session.shared["index"], []
        learn = index._learn

        def slow_learn(*args):  # a long text's tokenizing
            events.append("learn")
            time.sleep(0.02)
            return learn(*args)

        index._learn = slow_learn
        assert session.run('print(len(Directory("/").grep("alpha")))\n').output == "40\n"
        deadline = time.monotonic() + 10
        while "learn" not in events and time.monotonic() < deadline:
            time.sleep(0.001)
        events.append("run")
        assert session.run("print(1)\n").output == "1\n"
        events.append("ran")
        assert events[events.index("run"):events.index("ran")].count("learn") <= 1
        assert index.pending  # the rest is learned after the run
        deadline = time.monotonic() + 10
        while index.learned < 40 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not index.pending and index.learned == 40

# Python run as the worker itself (mode "os", as an attacker who got past RestrictedPython),
# leaving every trap it can: signals ignored, threads spinning, a forked process in a session
# of its own, patched modules and builtins, a file in /tmp. The next script of the session
# must see none of it.
TRAPS = r'''
import _thread, builtins, os, signal, sys, time
set_ = []
for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGINT):
    signal.signal(sig, signal.SIG_IGN)
set_.append("signals")
def spin():
    while True:
        time.sleep(0.001)
try:
    _thread.start_new_thread(spin, ())  # threading cannot be imported any more (Landlock)
    set_.append("thread")
except RuntimeError:
    pass
sys.modules["json"].loads = lambda *a, **k: {"t": "reply", "ok": True, "v": "poisoned"}
builtins.sorted = lambda *a, **k: "poisoned"
os.getcwd = lambda: "/poisoned"
set_.append("patches")
try:
    if os.fork() == 0:
        try:
            os.setsid()
        except OSError:
            pass
        while True:
            time.sleep(0.01)
    set_.append("process")
except OSError:
    pass
try:
    with open(TRAP_FILE, "w") as f:
        f.write("left for the next script")
    set_.append("file")
except OSError:
    pass
print(" ".join(set_))
'''


NEXT = 'print(len(File("/a.txt").read()))\nprint(Directory("/").grep("alpha")[0].path)\nprint(File("/b.md").lines(1, 1))\n'


def descendants() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_traps_a_worker_leaves_do_not_reach_the_next_script(docs, tmp_path):
    from runtime.audit import broker_for
    from runtime.supervisor import Limits, run_worker

    trap_file = f"/tmp/fdsl-trap-{os.getpid()}-{time.monotonic_ns()}"
    untouched = run_script(NEXT, root=str(docs), timeout=30)
    assert untouched.ok and untouched.output.count("\n") == 3
    with Session(root=str(docs), timeout=30, workers=1) as session:
        worker = session.pool.take()
        trapped_tree = {worker.pid} | {p.pid for p in psutil.Process(worker.pid).children(recursive=True)}
        out: list[str] = []
        deadline = time.monotonic() + 20
        result = run_worker(TRAPS.replace("TRAP_FILE", repr(trap_file)), broker_for(str(docs), deadline),
                            Limits(timeout=20), deadline, out.append, mode="os", proc=worker, retire=session.pool.retire,
                            primed=True)
        assert result.status == "ok", result.error
        # What the layers let it set (the rest they refuse: threads and processes by the
        # process limit, files by Landlock); whatever it set must not reach the next script.
        traps = "".join(out).split()
        assert traps[0] == "signals" and "patches" in traps, traps
        trapped_tree |= {p.pid for p in psutil.Process(worker.pid).children(recursive=True)} if not gone(worker.pid, 0) else set()
        session.upkeep.after_run()  # as session.run does: reap it, start the next
        assert all(gone(pid) for pid in trapped_tree)
        assert not os.path.exists(trap_file)  # Landlock: the worker cannot create files
        after = session.run(NEXT)
        assert (after.exit_code, after.output) == (0, untouched.output), after.error
        assert not descendants() & trapped_tree


def test_a_script_run_again_in_a_session_is_not_compiled_again(docs, monkeypatch):
    import runtime.compile as compile_module

    compiled = []
    real = compile_module.compile_script

    def counted(source, filename="<script>", lang="fdsl", **limits):
        compiled.append((lang, filename, source))
        return real(source, filename, lang, **limits)

    monkeypatch.setattr(compile_module, "compile_script", counted)
    tag = id(compiled)  # sources new to this process, whose sessions share what they compiled
    one, two, bad = f'print("one {tag}")\n', f'print("two {tag}")\n', f'print("bad {tag}"\n'
    with Session(root=str(docs), timeout=30, workers=1) as session:
        for _ in range(3):
            assert session.run(one).ok
        assert session.run(one, filename="other.fdsl").ok  # its errors would name it
        assert session.run(two).ok
        for _ in range(2):  # a script that does not compile is not kept
            assert session.run(bad).exit_code == 1
        assert compiled == [("fdsl", "<script>", one), ("fdsl", "other.fdsl", one), ("fdsl", "<script>", two),
                            ("fdsl", "<script>", bad), ("fdsl", "<script>", bad)]
        # The process's other sessions have them compiled (compiling is pure: nothing of a
        # sandbox goes in), as a fleet's pool process, which makes a session per root, wants.
        other = docs / "other"
        other.mkdir()
        with Session(root=str(other), timeout=30, workers=1) as second:
            again = second.run(two)
            assert again.ok and again.figures["compile_reused"] == 1 and len(compiled) == 5


def test_what_the_sessions_compiled_is_let_go_with_the_last_of_them(docs):
    from runtime.compile import CompiledScripts
    from runtime.session import COMPILED, ProcessShared

    shared = ProcessShared(CompiledScripts, lambda compiled: None)
    kept = shared.acquire()
    assert shared.acquire() is kept
    kept.compile("print(1)\n", "<script>", "fdsl")
    shared.release(kept)
    assert shared.value is kept and len(kept.entries) == 1
    shared.release(kept)
    assert shared.value is None and not shared.acquire().entries  # the next session's starts empty
    gc.collect()  # sessions of other tests the collector frees are closed on threads of their own
    for thread in threading.enumerate():
        if thread.name == "fdsl-session-close":
            thread.join(30)
    before = COMPILED.users
    with Session(root=str(docs), timeout=30, workers=0) as session:
        assert COMPILED.users == before + 1 and session.shared["compiled"] is COMPILED.value
    assert COMPILED.users == before


def test_the_compiled_scripts_a_session_keeps_are_bounded():
    from runtime.compile import CompiledScripts

    kept = CompiledScripts(max_scripts=2, max_chars=100)
    for n in range(3):
        kept.compile(f"print({n})\n", "<script>", "fdsl")
    assert [key[2] for key in kept.entries] == ["print(1)\n", "print(2)\n"]
    kept.compile("x = " + "1" * 90 + "\n", "<script>", "fdsl")  # 95 characters: only it fits
    assert len(kept.entries) == 1 and kept.chars == 95


def test_a_worker_started_ahead_compiles_its_warm_up_cleanly():
    """The warm-up is compiled (never run) before the worker waits; one RestrictedPython refuses
    would only cost speed, silently."""
    from RestrictedPython import compile_restricted_exec

    from sandbox_worker.main import WARM_UP

    compiled = compile_restricted_exec(WARM_UP, filename="<script>")
    assert compiled.errors == () and compiled.code is not None


def test_the_memory_watch_reads_its_own_process_only():
    """The supervisor's resident-size watch is bound to the process it opened: once that process
    has ended and been reaped, it reads 0, never whichever process got the PID next."""
    from runtime.procfs import Resident

    child = subprocess.Popen([sys.executable, "-c", "x = bytearray(40 << 20); input()"], stdin=subprocess.PIPE)
    watch = Resident(child.pid)
    deadline = time.monotonic() + 20
    while watch.bytes() < 40 << 20 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert watch.bytes() >= 40 << 20
    child.communicate(b"\n", timeout=20)
    assert watch.bytes() == 0
    watch.close()
    assert Resident(child.pid).bytes() == 0  # opened after the end: nothing to read


def test_the_supervisor_reads_a_workers_child_and_its_peak_memory_from_proc():
    """script_process and peak_resident_kib read /proc in one read each: the one child of a
    process forked once, and the high-water mark its status file shows (None once it is gone)."""
    from runtime.procfs import peak_resident_kib, script_process

    parent = subprocess.Popen([sys.executable, "-c", "import os, sys; os.fork() or sys.stdin.read(); sys.stdin.read()"],
                              stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while script_process(parent.pid) == parent.pid:
            assert time.monotonic() < deadline, "no child forked"
            time.sleep(0.01)
        child = script_process(parent.pid)
        assert psutil.Process(child).ppid() == parent.pid
        while psutil.Process(child).status() != psutil.STATUS_SLEEPING:  # in its read: its peak stays put
            assert time.monotonic() < deadline, "the child never waited for input"
            time.sleep(0.01)
        with open(f"/proc/{child}/status") as status:
            shown = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
        assert peak_resident_kib(child) == shown > 0
    finally:
        parent.kill()
        parent.stdin.close()  # the child's end of input: it exits too
        parent.wait()
    assert peak_resident_kib(parent.pid) is None


def pinned(cpu: int, work):
    """`work()` on a thread of its own that may run on `cpu` only."""
    outcome = {}

    def run():
        os.sched_setaffinity(0, {cpu})  # (0: the calling thread)
        outcome["value"] = work()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def test_workers_are_kept_off_the_cpu_of_the_thread_that_wakes_them():
    """The kernel often wakes a process on its waker's CPU, to wait there for it: off_this_cpu
    gives the worker every CPU but the caller's (none changed when there is no other)."""
    from runtime.cpus import off_this_cpu

    cpus = os.sched_getaffinity(0)
    child = subprocess.Popen([sys.executable, "-c", "input()"], stdin=subprocess.PIPE)
    try:
        thread, outcome = pinned(max(cpus), lambda: off_this_cpu([child.pid]))
        thread.join()
        if len(cpus) > 1:
            assert outcome["value"] == max(cpus) and os.sched_getaffinity(child.pid) == cpus - {max(cpus)}
        else:
            assert outcome["value"] is None and os.sched_getaffinity(child.pid) == cpus
    finally:
        child.kill()
        child.stdin.close()  # now, not when the collector gets to it (a later test counts descriptors)
        child.wait()


def movable(pid: int) -> bool:
    """May this process move worker `pid` between CPUs (not with one CPU; nor a worker of another
    user without CAP_SYS_NICE)? Where it may not, off_this_cpu leaves it as it is."""
    try:
        os.sched_setaffinity(pid, os.sched_getaffinity(pid))
    except PermissionError:
        return False
    return len(os.sched_getaffinity(0)) > 1


def test_a_worker_warms_up_off_the_cpu_that_transpiles_its_script_then_runs_anywhere(docs):
    """Woken on the broker's CPU, a worker would wait there for the transpile (docs/scale.md):
    from the moment a run takes it until it runs its script, it may use every CPU but the one of
    the thread that runs it; its round trips with the broker then go wherever the kernel likes."""
    from runtime.procfs import script_process

    cpus = frozenset(os.sched_getaffinity(0))
    source = "".join(f"x{i} = {i}\n" for i in range(1500)) + "print(x1)\n"  # a transpile of 100 ms or more
    with Session(root=docs, workers=1) as session:
        worker = waiting(session)[0]
        expected = [cpus, cpus - {min(cpus)}, cpus] if movable(worker.pid) else [cpus]
        seen = [frozenset(os.sched_getaffinity(script_process(worker.pid)))]  # the script process's CPUs, each change once
        thread, outcome = pinned(min(cpus), lambda: session.run(source))
        while thread.is_alive():
            try:
                now = frozenset(os.sched_getaffinity(script_process(worker.pid)))
            except OSError:  # ended
                break
            if seen[-1] != now:
                seen.append(now)
            time.sleep(0.002)
        thread.join()
    assert outcome["value"].output == "1\n"
    assert seen[:3] == expected


def test_a_finished_worker_is_killed_off_the_cpu_of_the_thread_that_kills_it(docs):
    """A worker killed asleep is woken on its killer's CPU and tears itself down there first
    (1-2 ms of the run): the run moves it off that CPU before the kill."""
    cpus = frozenset(os.sched_getaffinity(0))
    with Session(root=docs, workers=1) as session:
        worker = waiting(session)[0]
        expected = cpus - {min(cpus)} if movable(worker.pid) else cpus
        retire, at_kill = session.pool.retire, []

        def recorded(proc):  # called once the group is killed, before it is reaped
            at_kill.append(frozenset(os.sched_getaffinity(proc.pid)))
            retire(proc)

        session.pool.retire = recorded
        thread, outcome = pinned(min(cpus), lambda: session.run('print("hi")\n'))
        thread.join()
    assert outcome["value"].output == "hi\n"
    assert at_kill == [expected]
