"""Valid scripts over hostile input cannot keep the broker past --timeout: a glob that a
backtracking engine never finishes (find() and SEARCH), a document that made the TOC patterns
backtrack cubically, a directory whose listing alone outlasts the deadline. Each through the
real `fdsl` command; the subprocess timeout is what a hang would meet."""

from __future__ import annotations

import os
import time

import pytest

from runtime.errors import DeadlineExceeded
from runtime.fs.vfs import VirtualFS
from runtime.services.files import FilesService
from tests.e2e.test_cli import fdsl, script

GLOB_BOMB = "**" * 40 + "Z"  # 40 ".*" in a row before a letter no path has
HANG = 60  # seconds: far past any deadline below


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "deep" / ("a" * 60 + ".py")).write_text("TODO here\n")
    (root / "README.md").write_text("TODO readme\n")
    return root


def test_a_glob_bomb_in_find_is_answered_at_once(tmp_path, tree):
    proc = fdsl("run", script(tmp_path, f'print(Directory("/").find("{GLOB_BOMB}"))\nprint("done")\n'),
                "--root", tree, "--timeout", "5", timeout=HANG)
    assert (proc.returncode, proc.stdout) == (0, "[]\ndone\n"), proc.stderr


def test_a_glob_bomb_in_search_is_answered_at_once(tmp_path, tree):
    source = (f'log(len(apply("SEARCH", {{ globs: ["{GLOB_BOMB}"] }})))\n'
              f'log(len(apply("SEARCH", {{ query: "TODO", globs: ["src/{GLOB_BOMB}"] }})))\n')
    proc = fdsl("run", script(tmp_path, source, "s.ps"), "--project", tree, "--timeout", "5", timeout=HANG)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == ["[ps] 0", "[ps] 0"]


def test_a_toc_bomb_document_is_read_at_once(tmp_path, tree):
    # A numbered-TOC look-alike whose run of blanks made NUMBERED_TOC try every split of it
    # for every end of the title: cubic in the line, ~50 ms a line before. 1,000 lines.
    (tree / "toc.txt").write_text(("1 a" + " " * 290 + "x1\n") * 1000 + "2 Results   14\n")
    proc = fdsl("run", script(tmp_path, 'print(File("toc.txt").table())\n'), "--root", tree, "--timeout", "5",
                timeout=HANG)
    assert (proc.returncode, proc.stdout) == (0, "2 Results (p.14)\n"), proc.stderr


@pytest.fixture(scope="module")
def flat(tmp_path_factory):
    """A directory of 30,000 entries, each a symlink resolved through a 30-link chain inside
    the root: the broker spends ~150 us on each (several seconds for the directory), and
    making it takes a fraction of a second."""
    root = tmp_path_factory.mktemp("flat") / "root"
    (root / "chain").mkdir(parents=True)
    for i in range(30):
        os.symlink(f"c{i + 1}" if i < 29 else "end.txt", root / "chain" / f"c{i}")
    (root / "chain" / "end.txt").write_text("x\n")
    (root / "flat").mkdir()
    for i in range(30_000):
        os.symlink("../chain/c0", root / "flat" / f"e{i:05d}")
    return root


def test_grep_over_a_huge_directory_stops_at_the_deadline(tmp_path, flat):
    started = time.monotonic()
    proc = fdsl("run", script(tmp_path, 'print(Directory("flat").grep("x"))\n'), "--root", flat, "--timeout", "1",
                timeout=HANG)
    elapsed = time.monotonic() - started
    assert proc.returncode == 124, proc.stderr
    # The broker's message, or the supervisor's when it saw the same deadline first.
    assert proc.stderr.startswith(("TimeoutError: the run's time limit was reached while ",
                                   "TimeoutError: the script did not finish within 1 s")), proc.stderr
    assert elapsed < 1 + 2, elapsed  # the deadline is checked for each entry, not per directory


@pytest.mark.parametrize("call", ["list", "files", "find"])
def test_every_listing_of_a_huge_directory_stops_at_the_deadline(flat, call):
    svc = FilesService(VirtualFS([("/", flat, False)]))
    run = {"list": lambda: svc.dir_list("flat"), "files": lambda: svc.dir_files("flat", False),
           "find": lambda: svc.dir_find("flat", "*")}[call]
    started = time.monotonic()
    svc.deadline = started + 0.3
    with pytest.raises(DeadlineExceeded):
        run()
    assert time.monotonic() - started < 0.3 + 2
