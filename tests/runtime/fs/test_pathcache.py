"""Attacks on the path cache (runtime/fs/pathcache.py): a path is resolved and cached by one call
of a run, the filesystem is changed under it, and the next call of the same run must answer
exactly as a run with nothing cached does (refused, or the fresh data), with either opener."""

from __future__ import annotations

import os
import stat as statmod

import pytest

from runtime.api import file_handlers
from runtime.broker import Broker
from runtime.fs import pathcache
from runtime.fs.config import Mount, SandboxConfig
from runtime.fs.sandbox import Sandbox
from runtime.fs.vfs import VirtualFS
from runtime.services.files import FilesService
from tests.runtime.fs.test_escapes import flipping_component
from tests.support import CANARY


class Run:
    """One run's broker over a sandbox, answering calls as the worker would see them."""

    def __init__(self, sb: Sandbox) -> None:
        self.vfs = VirtualFS(sb)
        self.broker = Broker(file_handlers(FilesService(self.vfs)))

    def call(self, op: str, **args) -> dict:
        defaults = {"file.read": {"pages": None}, "dir.list": {"offset": 0, "limit": 0}}
        return self.broker.reply({"t": "call", "op": op, "a": {**defaults.get(op, {}), **args}})

    def prime(self, op: str, path: str) -> dict:
        """Resolve `path` and use the cached resolution once (a hit), as a run's loop would."""
        first = self.call(op, path=path)
        assert self.cached(path) and self.call(op, path=path) == first
        return first

    def cached(self, path: str) -> bool:
        return path in self.vfs.path_cache.entries


def outside(reply: dict) -> bool:
    return reply["t"] == "err" and reply["kind"] == "SandboxError" and "leads outside the sandbox" in reply["msg"]


def same_as_uncached(sb: Sandbox, run: Run, op: str, path: str, tmp) -> dict:
    """The run's answer, checked against a fresh run's (nothing cached, no document kept)."""
    got = run.call(op, path=path)
    fresh = Run(sb).call(op, path=path)
    assert got == fresh
    assert CANARY not in str(got) and str(tmp) not in str(got)
    return got


@pytest.fixture
def docs(world):
    sb, tmp = world
    d = tmp / "docs" / "d"
    d.mkdir()
    (d / "f.md").write_text("inside\n")
    (tmp / "outside" / "f.md").write_text(CANARY + "\n")
    return sb, tmp, d


def test_a_directory_swapped_for_a_symlink_to_outside_is_refused(docs, opener):
    sb, tmp, d = docs
    run = Run(sb)
    assert run.prime("file.read", "docs/d/f.md") == {"t": "ok", "v": "inside\n"}
    os.rename(d, d.with_name("d.real"))
    os.symlink(tmp / "outside", d)
    got = same_as_uncached(sb, run, "file.read", "docs/d/f.md", tmp)
    assert outside(got)
    assert same_as_uncached(sb, run, "file.open", "docs/d/f.md", tmp)["t"] == "err"
    assert not run.cached("docs/d/f.md")


def test_a_directory_swapped_for_a_symlink_inside_reads_the_new_target(docs, opener):
    sb, tmp, d = docs
    other = tmp / "docs" / "other"
    other.mkdir()
    (other / "f.md").write_text("the other one, longer\n")
    run = Run(sb)
    run.prime("file.read", "docs/d/f.md")
    assert run.cached("docs/d/f.md")
    os.rename(d, d.with_name("d.real"))
    os.symlink("other", d)
    got = same_as_uncached(sb, run, "file.read", "docs/d/f.md", tmp)
    assert got == {"t": "ok", "v": "the other one, longer\n"}
    assert not run.cached("docs/d/f.md")  # a path through a symlink is resolved at each call


def test_a_directory_swapped_between_stat_and_read_is_never_followed(docs, opener):
    """file.open caches, then every other call flips the directory: no call reads outside."""
    sb, tmp, d = docs
    run = Run(sb)
    for i in range(20):
        if i % 2:
            os.rename(d, d.with_name("d.real"))
            os.symlink(tmp / "outside", d)
        for op in ("file.open", "file.read", "file.head", "file.lines"):
            args = {"offset": 1, "limit": 5} if op == "file.lines" else {}
            got = run.call(op, path="docs/d/f.md", **args)
            assert CANARY not in str(got)
            assert (got["t"] == "err") == bool(i % 2)
        if i % 2:
            os.unlink(d)
            os.rename(d.with_name("d.real"), d)


def test_a_replaced_file_is_read_afresh(docs, opener):
    sb, tmp, d = docs
    run = Run(sb)
    run.prime("file.read", "docs/d/f.md")
    new = d / "new.tmp"
    new.write_text("replaced, and longer\n")
    os.replace(new, d / "f.md")
    assert same_as_uncached(sb, run, "file.read", "docs/d/f.md", tmp) == {"t": "ok", "v": "replaced, and longer\n"}
    assert run.cached("docs/d/f.md")


def test_a_file_replaced_by_a_symlink_to_outside_is_refused(docs, opener):
    sb, tmp, d = docs
    run = Run(sb)
    run.prime("file.open", "docs/d/f.md")
    os.unlink(d / "f.md")
    os.symlink(tmp / "outside" / "f.md", d / "f.md")
    for op in ("file.open", "file.read"):
        got = same_as_uncached(sb, run, op, "docs/d/f.md", tmp)
        assert outside(got)


def test_a_file_replaced_by_a_symlink_inside_reads_its_target(docs, opener):
    sb, tmp, d = docs
    (d / "g.md").write_text("the target\n")
    run = Run(sb)
    run.prime("file.read", "docs/d/f.md")
    os.unlink(d / "f.md")
    os.symlink("g.md", d / "f.md")
    assert same_as_uncached(sb, run, "file.read", "docs/d/f.md", tmp) == {"t": "ok", "v": "the target\n"}
    info = same_as_uncached(sb, run, "file.open", "docs/d/f.md", tmp)
    assert info["v"]["size"] == len("the target\n")


def test_a_deleted_file_is_no_such_file(docs, opener):
    sb, tmp, d = docs
    run = Run(sb)
    run.prime("file.read", "docs/d/f.md")
    os.unlink(d / "f.md")
    for op in ("file.read", "file.open"):
        got = same_as_uncached(sb, run, op, "docs/d/f.md", tmp)
        assert got["t"] == "err" and "no such file" in got["msg"]
    assert not run.cached("docs/d/f.md")
    (d / "f.md").write_text("back again, longer\n")
    assert same_as_uncached(sb, run, "file.read", "docs/d/f.md", tmp)["v"] == "back again, longer\n"


def test_a_renamed_parent_is_not_followed_to_its_new_name(docs, opener):
    sb, tmp, d = docs
    run = Run(sb)
    run.prime("file.read", "docs/d/f.md")
    run.prime("file.open", "docs/d/f.md")
    os.rename(d, d.with_name("renamed"))
    for op in ("file.open", "file.read"):
        assert "no such file" in same_as_uncached(sb, run, op, "docs/d/f.md", tmp)["msg"]
    assert same_as_uncached(sb, run, "file.read", "docs/renamed/f.md", tmp)["v"] == "inside\n"
    d.mkdir()  # a new directory of the old name: its own file, not the renamed one's
    (d / "f.md").write_text("a new directory's file\n")
    assert same_as_uncached(sb, run, "file.read", "docs/d/f.md", tmp)["v"] == "a new directory's file\n"


def test_a_parent_moved_out_of_the_mount_is_not_read_through(docs, opener):
    """A directory descriptor kept from an earlier call would follow the directory out of the
    sandbox; the cache keeps none."""
    sb, tmp, d = docs
    run = Run(sb)
    run.prime("file.open", "docs/d/f.md")
    (d / "f.md").write_text(CANARY + " moved out\n")
    os.rename(d, tmp / "outside" / "moved")
    for op in ("file.open", "file.read"):  # not even the size of what moved out
        got = same_as_uncached(sb, run, op, "docs/d/f.md", tmp)
        assert got["t"] == "err" and "no such file" in got["msg"]


def test_a_file_replaced_by_a_directory_or_a_fifo(docs, opener):
    sb, tmp, d = docs
    run = Run(sb)
    run.prime("file.read", "docs/d/f.md")
    os.unlink(d / "f.md")
    (d / "f.md").mkdir()
    got = same_as_uncached(sb, run, "file.read", "docs/d/f.md", tmp)
    assert "is a directory" in got["msg"]
    os.rmdir(d / "f.md")
    os.mkfifo(d / "f.md")
    got = same_as_uncached(sb, run, "file.read", "docs/d/f.md", tmp)  # never blocks
    assert "not a regular file" in got["msg"]


def test_permissions_changed_between_calls(docs, opener):
    sb, tmp, d = docs
    run = Run(sb)
    run.prime("file.read", "docs/d/f.md")
    (d / "f.md").write_text("changed, and longer\n")
    try:
        os.chmod(d / "f.md", 0)
        same_as_uncached(sb, run, "file.read", "docs/d/f.md", tmp)
        os.chmod(d / "f.md", 0o644)
        os.chmod(d, 0)
        same_as_uncached(sb, run, "file.read", "docs/d/f.md", tmp)
        same_as_uncached(sb, run, "file.open", "docs/d/f.md", tmp)
    finally:
        os.chmod(d, 0o755)
        os.chmod(d / "f.md", 0o644)
    if os.geteuid() != 0:
        assert not run.cached("docs/d/f.md")


def test_a_listed_directory_swapped_for_a_symlink_to_outside(docs, opener):
    sb, tmp, d = docs
    run = Run(sb)
    assert [e["name"] for e in run.prime("dir.list", "docs/d")["v"]] == ["f.md"]
    os.rename(d, d.with_name("d.real"))
    os.symlink(tmp / "outside", d)
    for op in ("dir.list", "dir.open"):
        got = same_as_uncached(sb, run, op, "docs/d", tmp)
        assert outside(got)


def test_a_directory_replaced_by_a_file(docs, opener):
    sb, tmp, d = docs
    run = Run(sb)
    run.prime("dir.open", "docs/d")
    os.rename(d, d.with_name("d.real"))
    d.write_text("now a file\n")
    assert "is a file, not a directory" in same_as_uncached(sb, run, "dir.list", "docs/d", tmp)["msg"]
    assert same_as_uncached(sb, run, "file.read", "docs/d", tmp)["v"] == "now a file\n"


def test_per_call_policy_on_mounts_with_rules(tmp_path, opener):
    """A file that grows over its mount's max_file_bytes after being cached is refused; the
    suffix rule holds for every spelling of a path."""
    ruled = tmp_path / "ruled"
    ruled.mkdir()
    (ruled / "a.md").write_text("small\n")
    (ruled / "b.txt").write_text("not allowed\n")
    sb = Sandbox(SandboxConfig(mounts=[Mount(host_path=ruled, mount_point="/r", suffixes=[".md"], max_file_bytes=64)]))
    run = Run(sb)
    assert run.prime("file.read", "r/a.md")["v"] == "small\n"
    (ruled / "a.md").write_text("x" * 100)
    got = same_as_uncached(sb, run, "file.read", "r/a.md", tmp_path)
    assert got["kind"] == "SandboxError" and "over the limit of 64 bytes" in got["msg"]
    for path in ("r/b.txt", "/r/b.txt", "r/./b.txt"):
        assert "not allowed in /r" in same_as_uncached(sb, run, "file.read", path, tmp_path)["msg"]
    os.replace(ruled / "b.txt", ruled / "a.md")  # a now-allowed name holds the other's bytes: fresh
    assert same_as_uncached(sb, run, "file.read", "r/a.md", tmp_path)["v"] == "not allowed\n"


def test_mounts_with_different_policies_keep_their_own(tmp_path, opener):
    """/docs and /docs/special (suffix-restricted) are different mounts: a path is cached with
    its own mount, whose rules are checked at each read, and a symlink leaving its mount is
    refused at each call (never cached)."""
    outer, special = tmp_path / "outer", tmp_path / "special"
    outer.mkdir()
    special.mkdir()
    (outer / "x.txt").write_text("outer\n")
    (special / "x.txt").write_text("special\n")
    os.symlink(outer / "x.txt", special / "link.md")  # leaves its own mount
    sb = Sandbox(SandboxConfig(mounts=[Mount(host_path=outer, mount_point="/docs"),
                                       Mount(host_path=special, mount_point="/docs/special", suffixes=[".md"])]))
    run = Run(sb)
    assert run.call("file.read", path="docs/x.txt")["v"] == "outer\n"
    for _ in range(2):  # resolved (and cached) in its own mount, refused by its rule at each read
        assert "not allowed in /docs/special" in same_as_uncached(sb, run, "file.read", "docs/special/x.txt",
                                                                   tmp_path)["msg"]
        assert outside(same_as_uncached(sb, run, "file.read", "docs/special/link.md", tmp_path))
    assert not run.cached("docs/special/link.md")


def test_a_derived_sandbox_is_checked_for_its_own_rules(world):
    sb, tmp = world
    child = sb.derive(allow_read="/docs/public")
    vfs = VirtualFS(sb)
    vfs.resolve_file("/docs/a.md")
    vfs.sandbox = child  # a VirtualFS never changes sandbox; if it did, nothing cached would be used
    with pytest.raises(Exception, match="not in the sandbox"):
        vfs.resolve_file("/docs/a.md")


def test_a_hit_skips_resolution_and_a_flipping_component_never_leaks(world, opener, monkeypatch):
    sb, tmp = world
    calls = []
    real_locate = Sandbox.locate
    monkeypatch.setattr(Sandbox, "locate", lambda self, path, **kw: calls.append(path) or real_locate(self, path, **kw))
    run = Run(sb)
    run.prime("file.read", "docs/a.md")
    run.prime("file.open", "docs/a.md")
    run.prime("file.read", "docs/a.md")
    assert calls == ["docs/a.md"]  # resolved once; the later calls opened the cached components
    seen = set()
    with flipping_component(tmp):
        for _ in range(2000):
            got = run.call("file.read", path="docs/flip/canary.txt")
            seen.add(got.get("v") or got["kind"])
            assert str(tmp) not in str(got)
    assert CANARY not in "".join(seen)
    assert run.call("file.read", path="docs/flip/canary.txt")["v"] == "inside\n"


def test_the_cache_is_bounded(world, monkeypatch):
    sb, tmp = world
    monkeypatch.setattr(pathcache, "MAX_ENTRIES", 3)
    vfs = VirtualFS(sb)
    for i in range(5):
        (tmp / "docs" / f"n{i}.md").write_text("n\n")
        vfs.resolve_file(f"docs/n{i}.md")
    assert 1 <= len(vfs.path_cache.entries) <= 3
    long = "docs/" + "./" * 600 + "a.md"
    vfs.resolve_file(long)
    assert long not in vfs.path_cache.entries


def test_what_is_not_cached(docs):
    sb, tmp, d = docs
    vfs = VirtualFS(sb)
    os.symlink("f.md", d / "link.md")
    vfs.resolve_file("docs/d/link.md")
    for missing in ("docs/d/missing.md", "docs/d/f.md/"):
        with pytest.raises(Exception):
            vfs.resolve_file(missing)
    res, st = vfs.resolve_file("docs/d/f.md")
    assert statmod.S_ISREG(st.st_mode)
    assert set(vfs.path_cache.entries) == {"docs/d/f.md"}
