"""The server's staleness watch (runtime/staleness.py): a source file of its packages changed in
any way makes it stale; bytecode and other files do not; without inotify, the fingerprint."""

from __future__ import annotations

import os
import time

import pytest

from runtime.staleness import SourceWatch


@pytest.fixture
def tree(tmp_path):
    for package in ("runtime", "wire"):
        (tmp_path / package / "sub").mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "sub" / "m.py").write_text("x = 1\n")
    (tmp_path / "runtime" / "grammar.lark").write_text("start: A\n")
    return tmp_path


def watch(tree, inotify: bool) -> SourceWatch:
    w = SourceWatch(str(tree), packages=("runtime", "wire"))
    if not inotify:
        w.close()  # as where inotify cannot be had: the fingerprint, taken again at each request
    assert not w.changed()
    return w


def rename_over(path):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("x = 2\n")
    os.replace(tmp, path)


def set_mtime_back(path):
    st = path.stat()
    path.write_text("x = 3\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


CHANGES = {
    "written": lambda t: (t / "wire" / "sub" / "m.py").write_text("x = 2\n"),
    "touched": lambda t: os.utime(t / "runtime" / "__init__.py", ns=(1, time.time_ns() + 10**9)),
    "grammar": lambda t: (t / "runtime" / "grammar.lark").write_text("start: B\n"),
    "created": lambda t: (t / "runtime" / "new.py").write_text(""),
    "removed": lambda t: (t / "wire" / "sub" / "m.py").unlink(),
    "renamed over": lambda t: rename_over(t / "wire" / "sub" / "m.py"),
    "new subpackage": lambda t: ((t / "runtime" / "more").mkdir(), (t / "runtime" / "more" / "__init__.py").write_text("")),
    "directory moved": lambda t: os.rename(t / "wire" / "sub", t / "elsewhere"),
}


@pytest.mark.parametrize("inotify", [True, False])
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_source_change_makes_it_stale(tree, change, inotify):
    w = watch(tree, inotify)
    CHANGES[change](tree)
    assert w.changed() and w.changed()  # and stays stale


def test_inotify_sees_a_change_the_fingerprint_misses(tree):
    """Rewritten with the same size and its mtime set back: only the watch sees it."""
    w = watch(tree, True)
    set_mtime_back(tree / "wire" / "sub" / "m.py")
    assert w.changed()


IGNORED = {
    "bytecode": lambda t: ((t / "runtime" / "__pycache__").mkdir(), (t / "runtime" / "__pycache__" / "m.pyc").write_bytes(b"")),
    "editor backup": lambda t: (t / "runtime" / "m.py~").write_text(""),
    "other file": lambda t: (t / "wire" / "notes.txt").write_text("x"),
    "read": lambda t: (t / "wire" / "sub" / "m.py").read_text(),
}


@pytest.mark.parametrize("inotify", [True, False])
@pytest.mark.parametrize("event", list(IGNORED))
def test_what_is_not_source_leaves_it_fresh(tree, event, inotify):
    w = watch(tree, inotify)
    IGNORED[event](tree)
    assert not w.changed()


def test_a_change_before_the_watch_began_but_after_the_server_started_counts(tree):
    since = time.time() - 5
    for path in tree.rglob("*"):
        os.utime(path, ns=(1, int((since - 60) * 1e9)))  # the checkout as it was before
    assert not SourceWatch(str(tree), packages=("runtime", "wire"), since=since).changed()
    (tree / "wire" / "sub" / "m.py").write_text("x = 2\n")  # while the server was still importing
    assert SourceWatch(str(tree), packages=("runtime", "wire"), since=since).changed()


def test_a_source_file_with_a_future_mtime_does_not_make_every_new_server_stale(tree):
    """An archive can leave an mtime in the future: that is no change made while the server
    was starting, or each server would be stale at once and every run would start another."""
    future = time.time_ns() + 3600 * 10**9
    for path in tree.rglob("*"):
        os.utime(path, ns=(future, future))
    assert not SourceWatch(str(tree), packages=("runtime", "wire"), since=time.time() - 5).changed()
