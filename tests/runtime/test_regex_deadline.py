"""Script regexes stop at the run's deadline instead of stalling the broker."""

from __future__ import annotations

import time

import pytest

from runtime.errors import DeadlineExceeded
from runtime.files import FilesService
from runtime.vfs import VirtualFS

EVIL = r"(a+)+$"


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    (root / "data" / "aaa.txt").write_text("a" * 5000 + "!")
    return root


CALLS = {
    "file.search": lambda s: s.file_search("data/aaa.txt", EVIL, False),
    "file.contains": lambda s: s.file_contains("data/aaa.txt", EVIL, False),
    "file.snippets": lambda s: s.file_snippets("data/aaa.txt", EVIL, 5, 10, False),
    "dir.search": lambda s: s.dir_search("data", EVIL, "content", True, False),
    "dir.search name": lambda s: s.dir_search("data", r"(a|aa)+$", "name", True, False),
    "dir.grep": lambda s: s.dir_grep("data", EVIL, None, False),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_pathological_regex_stops_at_the_deadline(root, name):
    if name == "dir.search name":
        (root / "data" / ("a" * 200 + "!")).write_text("x")
    svc = FilesService(VirtualFS([("/", root, False)]))
    svc.file_page_count("data/aaa.txt")  # parse outside the timed part
    start = time.monotonic()
    svc.deadline = start + 0.5
    with pytest.raises(DeadlineExceeded) as err:
        CALLS[name](svc)
    elapsed = time.monotonic() - start
    assert 0.4 < elapsed < 1.5, elapsed
    assert str(err.value) == "regex search exceeded the run's time limit"
    assert err.value.kind == "TimeoutError"


def test_a_passed_deadline_stops_walks_at_once(root):
    for i in range(50):
        (root / "data" / f"d{i}").mkdir()
    svc = FilesService(VirtualFS([("/", root, False)]), deadline=time.monotonic() - 1)
    for call in (
        lambda: svc.dir_files(".", True),
        lambda: svc.dir_find(".", "**"),
        lambda: svc.dir_search(".", "zzz", "name", True, False),
        lambda: svc.file_search("data/aaa.txt", "a", False),
    ):
        with pytest.raises(DeadlineExceeded):
            call()


def test_no_deadline_means_no_timeout(root):
    svc = FilesService(VirtualFS([("/", root, False)]))
    assert svc.file_search("data/aaa.txt", "a+!", False) == [1]


def test_the_wall_clock_timer_leaves_a_callers_timer_armed():
    import signal

    from runtime.textsearch import Searcher, compile_pattern

    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(time.monotonic()))
    try:
        started = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, 0.6)
        with pytest.raises(DeadlineExceeded):
            Searcher(time.monotonic() + 0.2).search(compile_pattern("(a|aa)+$"), "a" * 40 + "!")
        assert 0.15 < time.monotonic() - started < 0.5  # the search's own 0.2 s, on the wall clock
        assert 0.2 < signal.getitimer(signal.ITIMER_REAL)[0] <= 0.45  # the caller's timer, still running
        assert Searcher(time.monotonic() + 5).search(compile_pattern("b+"), "abbbc").group() == "bbb"
        time.sleep(0.6)
        assert len(fired) == 1 and fired[0] - started == pytest.approx(0.6, abs=0.15)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_outside_the_main_thread_the_cpu_time_bound_still_stops_a_search():
    import threading

    from runtime.textsearch import Searcher, compile_pattern

    outcome = []

    def run():
        try:
            Searcher(time.monotonic() + 0.3).search(compile_pattern("(a|aa)+$"), "a" * 40 + "!")
        except DeadlineExceeded as exc:
            outcome.append(str(exc))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert outcome == ["regex search exceeded the run's time limit"]
