"""The fuzz targets. Each is `target(budget_s, seed) -> Stats` and never raises: a property
that fails is recorded in `Stats.failures` (with the input) and the run goes on.

Hypothesis runs in batches of seeded examples (no example database, no shrinking: the budget
is wall-clock time) until the budget is spent.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

CANARY = "CANARY-fuzz-5d1e-do-not-leak"
TRACEBACK = "Traceback (most recent call last)"


@dataclass
class Stats:
    name: str
    unit: str
    count: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    notes: dict = field(default_factory=dict)

    def fail(self, message: str) -> None:
        if len(self.failures) < 50:
            self.failures.append(message[:2000])

    def note(self, key: str, amount: int = 1) -> None:
        self.notes[key] = self.notes.get(key, 0) + amount

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0


class Sandbox:
    """A temporary root with documents, symlinks leading out, and a canary beside it."""

    def __init__(self, extra_files=()) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="fdsl-fuzz-")).resolve()
        self.root = self.base / "root"
        (self.root / "data" / "sub").mkdir(parents=True)
        (self.root / "data" / "a.txt").write_text("alpha\nlanguage model\n" + "filler\n" * 100)
        (self.root / "data" / "b.md").write_text("# Title\n\n## Part one\ntext\n")
        (self.root / "data" / "sub" / "c.txt").write_text("gamma\n")
        self.canary = self.base / "canary.txt"
        self.canary.write_text(CANARY)
        (self.root / "link_out").symlink_to("../canary.txt")
        (self.root / "dir_out").symlink_to("..")
        (self.root / "abs_out").symlink_to(self.canary)
        (self.root / "link_in").symlink_to("data/a.txt")
        for relative, content in extra_files:
            (self.root / relative).parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                (self.root / relative).write_bytes(content)
            else:
                (self.root / relative).write_text(content)
        self.host_strings = [str(self.base), str(self.root), str(self.canary)]

    def leaks(self, text: str, source: str = "") -> str | None:
        """What of the outside world `text` shows (a host path quoted from `source` is not a leak)."""
        if CANARY in text:
            return "the canary outside the root was read"
        for host in self.host_strings:
            if host in text and host not in source:
                return f"a host path appeared: {host}"
        return None

    def outside_snapshot(self) -> list[str]:
        return sorted(p.name for p in self.base.iterdir())

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def run_batches(stats: Stats, strategy, check, budget_s: float, seed: int, batch: int = 20) -> Stats:
    """Run `check` over examples of `strategy` until the budget is spent."""
    rng = random.Random(seed)
    started = time.monotonic()
    deadline = started + budget_s

    def one(value) -> None:
        if time.monotonic() >= deadline:
            return
        stats.count += 1
        try:
            check(value)
        except AssertionError as exc:
            stats.fail(f"{exc} | input: {value!r}"[:2000])
        except Exception as exc:  # noqa: BLE001 - a crash of the code under test is a finding
            stats.fail(f"crash {type(exc).__name__}: {exc} | input: {value!r}"[:2000])

    warnings.filterwarnings("ignore", message="Generating overly large repr")
    while time.monotonic() < deadline:
        runner = settings(max_examples=batch, deadline=None, database=None, phases=(Phase.generate,),
                          suppress_health_check=list(HealthCheck))(given(strategy)(one))
        try:
            hypothesis_seed(rng.randrange(1 << 32))(runner)()
        except Exception as exc:  # noqa: BLE001 - hypothesis itself (e.g. generation) failing
            stats.fail(f"hypothesis: {type(exc).__name__}: {exc}")
    stats.seconds = time.monotonic() - started
    return stats


# ------------------------------------------------------------------ (a) programs


def program_checker(stats: Stats, box, lang: str, run_every: int, timeout: float, after_run=None, **options):
    """The check of a generated program, for both languages: parsing and emitting never crash
    (a refusal is a located DSLError); the emitted code compiles under RestrictedPython; every
    `run_every`-th program also runs in the real worker: no canary or host path shown, no
    Python traceback, no internal error, no run past its timeout; then `after_run(source)`.
    Every other run goes through one Session (a worker forked from its zygote, the broker's
    state kept between runs) rather than run_script. Returns (check, close)."""
    from RestrictedPython import compile_restricted_exec

    from runtime.api import run_script
    from runtime.session import Session
    from transpiler import DSLError, compile_script

    compiled = [0]
    limits = dict(timeout=timeout, memory_mb=256, max_output=100_000, **options)
    session: Session | None = None

    def check(source: str) -> None:
        nonlocal session
        try:
            emitted = compile_script(source, lang=lang)
        except DSLError as exc:
            assert exc.line is not None, f"unlocated {exc.kind}: {exc}"
            stats.note("refused by the checker")
            return
        result = compile_restricted_exec(emitted.python, filename="<script>")
        assert result.errors == (), f"RestrictedPython refused emitted code: {result.errors}\n{source}"
        compiled[0] += 1
        if compiled[0] % run_every:
            return
        stats.note("run in the worker")
        started = time.monotonic()
        if compiled[0] // run_every % 2:
            session = session or Session(root=box.root, workers=1, **limits)
            stats.note("run in a session")
            run = session.run(source, lang=lang)
        else:
            run = run_script(source, lang=lang, root=box.root, **limits)
        elapsed = time.monotonic() - started
        text = run.output + (run.error or "")
        leak = box.leaks(text, source)
        assert leak is None, f"{leak}\n{source}"
        assert TRACEBACK not in text, f"a Python traceback was shown\n{source}\n{text[-1000:]}"
        assert elapsed < timeout + 3, f"ran {elapsed:.1f} s past a {timeout} s timeout\n{source}"
        assert run.exit_code in (0, 1, 124), run.exit_code
        assert run.error_kind != "InternalError", f"internal error: {run.error}\n{source}"
        if after_run is not None:
            after_run(source)
        stats.note(f"exit {run.exit_code}")

    def close() -> None:
        if session is not None:
            session.close()

    return check, close


def fuzz_programs(budget_s: float, seed: int, run_every: int = 8, timeout: float = 3.0) -> Stats:
    """FilesDSL programs generated from its grammar's shapes (fuzz.strategies.programs),
    rendered by the project's printer; see program_checker."""
    from fuzz.strategies import programs
    from transpiler.fdsl.printer import render

    stats = Stats("programs", "programs")
    box = Sandbox()
    check, close = program_checker(stats, box, "fdsl", run_every, timeout)
    try:
        return run_batches(stats, programs(box.host_strings), lambda module: check(render(module)), budget_s, seed)
    finally:
        close()
        box.close()


def tree_snapshot(path: Path) -> list:
    """Names, sizes and mtimes under `path` (symlinks not followed): what a write would change."""
    found = []
    for item in sorted(path.rglob("*")):
        info = item.lstat()
        found.append((str(item.relative_to(path)), info.st_size, info.st_mtime_ns))
    return found


def fuzz_ps_programs(budget_s: float, seed: int, run_every: int = 6, timeout: float = 3.0) -> Stats:
    """PromptScript programs generated from its grammar's shapes (fuzz.strategies.ps_programs),
    with the file actions pointed at hostile paths; see program_checker. Besides: nothing
    inside or outside the project is written."""
    from fuzz.strategies import ps_programs

    stats = Stats("ps_programs", "programs")
    box = Sandbox()
    before = (box.outside_snapshot(), tree_snapshot(box.base))

    def unchanged(source: str) -> None:
        assert (box.outside_snapshot(), tree_snapshot(box.base)) == before, f"a run changed files\n{source}"

    check, close = program_checker(stats, box, "ps", run_every, timeout, unchanged, options={"max_steps": 5000})
    try:
        return run_batches(stats, ps_programs(box.host_strings), check, budget_s, seed)
    finally:
        close()
        box.close()


# ------------------------------------------------------------------ (b) paths

PATH_ARGS = ("path", "source", "destination")
DEFAULTS = {"str": "a", "int": 1, "bool": False, "str|null": None, "pages": None}
ARG_DEFAULTS = {"scope": "both", "glob": "*", "pattern": "a", "max_chars": 1000, "offset": 1, "limit": 10, "max_items": 10}


def path_ops() -> dict[str, dict]:
    from wire import protocol

    ops = {}
    for op, spec in protocol.OPS.items():
        if not any(name in PATH_ARGS for name in spec):
            continue
        if any(kind not in DEFAULTS for kind in spec.values()):
            continue
        ops[op] = spec
    return ops


def fuzz_paths(budget_s: float, seed: int) -> Stats:
    from fuzz.strategies import hostile_paths
    from runtime.audit import broker_for
    from wire import protocol

    stats = Stats("paths", "paths")
    box = Sandbox()
    ops = path_ops()
    outside_before = box.outside_snapshot()

    def check(path: str) -> None:
        broker = broker_for(box.root, time.monotonic() + 30)
        for op, spec in ops.items():
            args = {}
            for name, kind in spec.items():
                args[name] = path if name in PATH_ARGS else ARG_DEFAULTS.get(name, DEFAULTS[kind])
            reply = broker.reply({"t": "call", "op": op, "a": args})
            assert isinstance(reply, dict) and reply.get("t") in ("ok", "err"), f"{op}: bad reply {reply!r}"
            text = json.dumps(reply, ensure_ascii=False)
            leak = box.leaks(text)
            assert leak is None, f"{op}({path!r}): {leak}: {text[:300]}"
            if reply["t"] == "err":
                assert reply.get("kind") in protocol.ERROR_KINDS, f"{op}: unknown error kind {reply.get('kind')!r}"
                stats.note(f"err {reply['kind']}")
                if reply["kind"] == "InternalError":
                    stats.note(f"internal error in {op}: {reply.get('msg', '')[:60]}")
            else:
                stats.note("ok")
        assert box.outside_snapshot() == outside_before, "something was written outside the root"

    try:
        stats = run_batches(stats, hostile_paths(box.host_strings), check, budget_s, seed, batch=25)
        stats.notes["ops per path"] = len(ops)
        return stats
    finally:
        box.close()


# ------------------------------------------------------------------ (c) protocol


def fuzz_protocol(budget_s: float, seed: int, worker_share: float = 0.5) -> Stats:
    """Messages straight into Broker.reply and bytes into the frame parser (fast), then fake
    workers sending hostile frame sequences through the real supervisor (slow)."""
    from fuzz.strategies import any_messages, call_messages
    from runtime.audit import broker_for
    from wire import protocol

    stats = Stats("protocol", "messages")
    box = Sandbox()
    ops = sorted(protocol.OPS)
    broker = broker_for(box.root, time.monotonic() + budget_s + 60)

    def check_reply(message) -> None:
        reply = broker.reply(message)
        assert isinstance(reply, dict) and reply.get("t") in ("ok", "err"), f"bad reply {reply!r}"
        json.dumps(reply)  # always encodable
        assert box.leaks(json.dumps(reply, ensure_ascii=False)) is None, f"leak in {reply!r}"[:500]
        stats.note("replied " + reply["t"])

    def check_frames(data: bytes) -> None:
        frames = protocol.FrameBuffer(protocol.MAX_REQUEST_BYTES)
        try:
            frames.feed(data)
        except protocol.ProtocolError:
            stats.note("frame refused")

    direct = st.one_of(call_messages(ops), any_messages(ops).filter(lambda m: m.get("t") == "call"))
    frame_bytes = st.one_of(st.binary(max_size=64), st.builds(lambda n, body: protocol.HEADER.pack(n) + body,
                                                              st.integers(0, 2**32 - 1), st.binary(max_size=32)))
    started = time.monotonic()
    fast_budget = budget_s * (1 - worker_share)
    run_batches(stats, direct, check_reply, fast_budget * 0.7, seed, batch=100)
    frames_stats = run_batches(Stats("frames", "frames"), frame_bytes, check_frames, fast_budget * 0.3, seed + 1, batch=200)
    stats.count += frames_stats.count
    stats.failures += frames_stats.failures
    workers = fake_workers(budget_s - (time.monotonic() - started), seed + 2, box)
    stats.count += workers.count
    stats.failures += workers.failures
    stats.notes.update(workers.notes)
    stats.seconds = time.monotonic() - started
    box.close()
    return stats


def hostile_frame_sequences(ops: list[str]):
    from fuzz.strategies import any_messages, call_messages
    from wire import protocol

    def encoded(message) -> bytes:
        return protocol.encode(message)

    chunk = st.one_of(
        call_messages(ops).map(encoded),
        any_messages(ops).map(encoded),
        st.binary(min_size=1, max_size=40),
        st.just(protocol.HEADER.pack(2**31) + b"{}"),  # a huge declared frame
        st.just(protocol.HEADER.pack(protocol.MAX_REQUEST_BYTES + 1)),
        st.just(protocol.HEADER.pack(9) + b"\xff\xfe{}[]\x00\x01\x02"),  # not UTF-8
        st.just(protocol.HEADER.pack(6) + b"[1, 2]"),  # JSON, not an object
        st.just(encoded({"t": "call", "op": "ping", "a": {}}) * 3000),  # a flood of calls
        st.just(encoded({"t": "call", "op": "file.read", "a": {"path": "data/a.txt", "pages": None}}) * 2000),
        st.just(encoded({"t": "out", "s": "x" * 60_000}) * 40),  # an output flood past the cap
        st.just(protocol.HEADER.pack(200_000) + b"[" * 200_000),  # nesting bomb
    )
    return st.lists(chunk, min_size=1, max_size=5)


def fake_workers(budget_s: float, seed: int, box: Sandbox) -> Stats:
    """Fake workers: mode "os" scripts writing hostile frames straight to the broker's pipe."""
    import psutil

    from runtime.audit import broker_for
    from runtime.supervisor import Limits, run_worker
    from wire import protocol

    stats = Stats("fake workers", "messages")
    me = psutil.Process()
    ops = sorted(protocol.OPS)

    def check(chunks: list[bytes]) -> None:
        fds_before = me.num_fds()
        # processes this one had already (a test session's forkserver, a Ray cluster) are not the run's
        children_before = {p.pid for p in me.children(recursive=True)}
        payload = b"".join(chunks)
        code = (
            "import os\ndata = " + repr(payload) + "\n"
            "view = memoryview(data)\n"
            "while view:\n    view = view[os.write(1, view[:65536]):]\n"
            "from wire import protocol\nprotocol.write_frame(1, {'t': 'end', 'ok': True})\n"
        )
        timeout = 5.0
        deadline = time.monotonic() + timeout
        limits = Limits(timeout=timeout, memory_mb=256, max_output=1_000_000)
        started = time.monotonic()
        result = run_worker(code, broker_for(box.root, deadline), limits, deadline, lambda text: None, mode="os")
        elapsed = time.monotonic() - started
        stats.count += len(chunks) - 1  # run_batches counted the sequence as one
        stats.note(f"worker {result.status}")
        assert result.status in ("ok", "error", "crash", "timeout"), result.status
        assert elapsed < timeout + 2, f"the broker took {elapsed:.1f} s"
        if result.status == "crash":
            assert result.error and result.error["kind"] == "InternalError", result.error
        assert me.num_fds() == fds_before, f"descriptors leaked: {fds_before} -> {me.num_fds()}"
        left = [p.pid for p in me.children(recursive=True) if p.pid not in children_before]
        assert not left, f"a worker process outlived its run: {left}"

    return run_batches(stats, hostile_frame_sequences(ops), check, budget_s, seed, batch=5)


# ------------------------------------------------------------------ (d) corpus


def fuzz_corpus(budget_s: float = 0.0, seed: int = 0, jobs: int = 2, modes=("restricted", "os", "baseline"), on_report=None) -> Stats:
    """The whole escape corpus, every payload in every mode: a fixed set, so it always runs in
    full whatever the budget (the budget is for the generative targets). Failures are header
    claims that did not hold: an escape, a stop elsewhere or for another reason, a baseline
    that did not succeed."""
    from concurrent.futures import ThreadPoolExecutor

    from fuzz.corpus import CORPUS_FILES, check_entry, load_corpus

    stats = Stats("corpus", "payloads")
    box = Sandbox(CORPUS_FILES)
    started = time.monotonic()
    entries = load_corpus()
    random.Random(seed).shuffle(entries)  # the order varies with the seed; the set never does

    def check(entry):
        return check_entry(entry, box.root, box.host_strings, CANARY, modes)

    try:
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            for report in pool.map(check, entries):
                stats.count += 1
                for mode, run in report.runs.items():
                    stats.note(f"{mode} runs")
                    stopped = "completed" if run.layer == "none" else f"stopped by {run.layer}"
                    stats.note(f"{mode}: {run.verdict if mode == 'baseline' else stopped}")
                for problem in report.problems:
                    stats.fail(problem)
                if on_report is not None:
                    on_report(report)
    finally:
        box.close()
    stats.notes["payloads in the corpus"] = len(entries)
    stats.seconds = time.monotonic() - started
    return stats


TARGETS = {"corpus": fuzz_corpus, "programs": fuzz_programs, "ps_programs": fuzz_ps_programs, "paths": fuzz_paths,
           "protocol": fuzz_protocol}
