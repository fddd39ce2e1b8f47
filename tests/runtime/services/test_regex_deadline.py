"""Script regexes never stall the broker: RE2 runs them in linear time, and whatever may still
take long (a big RE2 search, a pattern only the fallback can run) stops at the run's deadline."""

from __future__ import annotations

import random
import signal
import threading
import time

import pytest

from runtime.errors import DeadlineExceeded
from runtime.fs.vfs import VirtualFS
from runtime.services.files import FilesService
from runtime.services.textsearch import RE2_MAX_WORK, Searcher, compile_pattern

EVIL = r"(a|aa)+$"  # exponential in a backtracking engine
EVIL_FALLBACK = r"(?=a)(a|aa)+$"  # the same behind a lookahead: only the fallback can run it


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    (root / "data" / "aaa.txt").write_text("a" * 5000 + "!")
    (root / "data" / ("a" * 200 + "!")).write_text("x")
    return root


def calls(pattern: str):
    return {
        "file.search": (lambda s: s.file_search("data/aaa.txt", pattern, False), []),
        "file.contains": (lambda s: s.file_contains("data/aaa.txt", pattern, False), False),
        "file.snippets": (lambda s: s.file_snippets("data/aaa.txt", pattern, 5, 10, False), []),
        "dir.search": (lambda s: s.dir_search("data", pattern, "content", True, False)["files"], []),
        "dir.search name": (lambda s: s.dir_search("data", pattern, "name", True, False)["files"], []),
        "dir.grep": (lambda s: s.dir_grep("data", pattern, None, False)["hits"], []),
    }


@pytest.mark.parametrize("name", list(calls(EVIL)))
def test_a_catastrophic_regex_is_answered_by_re2(root, name):
    call, expected = calls(EVIL)[name]
    svc = FilesService(VirtualFS([("/", root, False)]))
    svc.file_page_count("data/aaa.txt")
    svc.deadline = time.monotonic() + 2  # a backtracking engine would spend all of it and fail
    assert call(svc) == expected


@pytest.mark.parametrize("name", list(calls(EVIL_FALLBACK)))
def test_a_pattern_only_the_fallback_can_run_stops_at_the_deadline(root, name):
    call, _ = calls(EVIL_FALLBACK)[name]
    svc = FilesService(VirtualFS([("/", root, False)]))
    svc.file_page_count("data/aaa.txt")  # parse outside the timed part
    start = time.monotonic()
    svc.deadline = start + 0.5
    with pytest.raises(DeadlineExceeded) as err:
        call(svc)
    elapsed = time.monotonic() - start
    assert 0.4 < elapsed < 1.5, elapsed
    assert str(err.value) == "regex search exceeded the run's time limit"
    assert err.value.kind == "TimeoutError"


def test_a_long_re2_search_stops_at_the_deadline():
    # RE2's worst case (its NFA, once the DFA gives up) is linear but can still be long: about
    # 200 positions for each of 1.2 MB here. It runs beside the caller, who leaves at the deadline.
    rng = random.Random(1)
    text = "".join(rng.choice("ab") for _ in range(1_200_000))
    pattern = compile_pattern("[ab]*a[ab]{200}")
    assert pattern.re2 is not None and pattern.positions * len(text) <= RE2_MAX_WORK
    with pytest.raises(DeadlineExceeded):
        Searcher(time.monotonic() + 0.05).search(pattern, text)


def test_a_passed_deadline_stops_walks_listings_and_tables_at_once(root):
    for i in range(50):
        (root / "data" / f"d{i}").mkdir()
    (root / "data" / "long.md").write_text("# heading\n" * 1000)
    svc = FilesService(VirtualFS([("/", root, False)]), deadline=time.monotonic() - 1)
    for call in (
        lambda: svc.dir_files(".", True),
        lambda: svc.dir_find(".", "**"),
        lambda: svc.dir_search(".", "zzz", "name", True, False)["files"],
        lambda: svc.file_search("data/aaa.txt", "a", False),
        lambda: svc.dir_list("data"),
        lambda: svc.file_table("data/long.md", 50),
    ):
        with pytest.raises(DeadlineExceeded):
            call()
    with pytest.raises(DeadlineExceeded, match="while looking for the table of contents"):
        svc.file_table("data/long.md", 50)


def test_no_deadline_means_no_timeout(root):
    svc = FilesService(VirtualFS([("/", root, False)]))
    assert svc.file_search("data/aaa.txt", "a+!", False) == [1]
    assert svc.file_search("data/aaa.txt", "(?=a)a+!", False) == [1]


def test_a_search_leaves_the_callers_alarm_alone():
    # The deadline is the caller waiting on the wall clock: no signal, no timer is touched.
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(time.monotonic()))
    try:
        started = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, 0.6)
        with pytest.raises(DeadlineExceeded):
            Searcher(time.monotonic() + 0.2).search(compile_pattern(EVIL_FALLBACK), "a" * 40 + "!")
        assert 0.15 < time.monotonic() - started < 0.5  # the search's own 0.2 s, on the wall clock
        assert 0.2 < signal.getitimer(signal.ITIMER_REAL)[0] <= 0.45  # the caller's timer, still running
        assert Searcher(time.monotonic() + 5).search(compile_pattern("b+"), "abbbc").start() == 1
        time.sleep(0.6)
        assert len(fired) == 1 and fired[0] - started == pytest.approx(0.6, abs=0.15)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_outside_the_main_thread_a_search_stops_at_the_wall_clock_deadline():
    outcome = []

    def run():
        started = time.monotonic()
        try:
            Searcher(started + 0.3).search(compile_pattern(EVIL_FALLBACK), "a" * 40 + "!")
        except DeadlineExceeded as exc:
            outcome.append((str(exc), time.monotonic() - started))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert [message for message, _ in outcome] == ["regex search exceeded the run's time limit"]
    assert outcome[0][1] < 2.0  # the wall clock, not the CPU time the search got
