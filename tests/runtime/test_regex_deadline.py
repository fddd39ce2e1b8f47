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
