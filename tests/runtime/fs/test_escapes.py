"""Traversal and symlink escapes against a canary outside the mounts; the hypothesis property;
the check-then-open race."""

from __future__ import annotations

import contextlib
import os
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.errors import SandboxError, ScriptError
from runtime.services.toolset import FileSystemToolset
from tests.support import CANARY


@pytest.fixture
def links(world):
    sb, tmp = world
    docs, out = tmp / "docs", tmp / "out"
    os.symlink(tmp / "canary.txt", docs / "abs.md")              # file, absolute
    os.symlink("../canary.txt", docs / "rel.md")                 # file, relative
    os.symlink(tmp / "outside", docs / "outdir")                 # directory
    os.symlink(tmp / "missing.md", docs / "dangling.md")         # dangling, outside
    os.symlink(out / "x.md", docs / "other_mount.md")            # into another mount
    os.symlink("sub/../../canary.txt", docs / "twisty.md")
    os.symlink(tmp / "canary.txt", out / "out_link.md")
    return sb, tmp


ESCAPES = ["/docs/abs.md", "/docs/rel.md", "/docs/outdir/canary.txt", "/docs/outdir", "/docs/dangling.md",
           "/docs/other_mount.md", "/docs/twisty.md", "/docs/../canary.txt", "/docs/sub/../../canary.txt",
           "/out/out_link.md"]


@pytest.mark.parametrize("path", ESCAPES)
def test_escape_refused_everywhere(links, path):
    sb, tmp = links
    ts = FileSystemToolset(sb, approve=lambda d: True)
    for call in (lambda: sb.resolve(path), lambda: ts.read(path), lambda: ts.copy(path, "/out/copy.md"),
                 lambda: ts.list_files(path)):
        with pytest.raises(SandboxError) as err:
            call()
        assert str(tmp) not in str(err.value) and CANARY not in str(err.value)
    assert not sb.can_read(path)
    assert not (tmp / "out" / "copy.md").exists()


@pytest.mark.parametrize("path", ["/docs/a\\..\\..\\canary.txt", "/docs/~/canary.txt", "C:\\canary.txt",
                                  "/docs/\uff0e\uff0e/canary.txt", "/docs/%2e%2e/canary.txt"])
def test_odd_spellings_are_ordinary_names(links, path):
    sb, tmp = links
    try:
        host = sb.resolve(path)
    except SandboxError:
        return
    assert str(host).startswith(str(tmp / "docs")) or str(host).startswith(str(tmp / "out"))
    assert not host.exists()


@pytest.mark.parametrize("path", ["/docs/a\x00b", "/docs/\n", "/docs/\udc80x", "/docs/" + "a" * 5000])
def test_invalid_strings_refused(links, path):
    sb, _ = links
    with pytest.raises(SandboxError):
        sb.resolve(path)


def test_writes_act_on_the_link_itself(links):
    sb, tmp = links
    ts = FileSystemToolset(sb, approve=lambda d: True)
    ts.write("/out/out_link.md", "replaced")
    assert (tmp / "canary.txt").read_text() == CANARY
    assert not (tmp / "out" / "out_link.md").is_symlink()
    os.symlink(tmp / "canary.txt", tmp / "out" / "l2.md")
    ts.delete("/out/l2.md")
    assert (tmp / "canary.txt").read_text() == CANARY and not os.path.lexists(tmp / "out" / "l2.md")
    os.symlink(tmp / "canary.txt", tmp / "out" / "l3.md")
    ts.move("/out/l3.md", "/out/moved.md")
    assert os.readlink(tmp / "out" / "moved.md") == str(tmp / "canary.txt")  # the link moved, untouched
    with pytest.raises(SandboxError):
        ts.read("/out/moved.md")
    os.symlink(tmp / "outside", tmp / "out" / "dirlink")
    with pytest.raises(SandboxError):
        ts.write("/out/dirlink/new.md", "x")
    assert not (tmp / "outside" / "new.md").exists()


def test_listing_hides_where_outside_links_point(links):
    from runtime.fs.vfs import VirtualFS
    from runtime.services.files import list_directory

    sb, tmp = links
    entries = {e.name: e.to_json() for e in list_directory(VirtualFS(sb), "/docs")}
    assert entries["abs.md"]["@type"] == "SymbolicLinkEntry"
    for name in ("abs.md", "rel.md", "outdir", "dangling.md", "other_mount.md"):
        assert entries[name]["target"] == "(outside the sandbox)"
    assert str(tmp) not in repr(entries)


# ---------------------------------------------------------------- property

PATH_ALPHABET = st.sampled_from(["..", ".", "", "docs", "out", "cfg", "sub", "a.md", "abs.md", "rel.md", "outdir",
                                 "twisty.md", "canary.txt", "\\", "~", "C:", "\x00", "\udc80", "é", "\uff0e\uff0e"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.lists(PATH_ALPHABET, max_size=8).map("/".join), st.text(max_size=40)),
       st.booleans())
def test_resolve_is_inside_a_mount_or_refused(links, path, absolute):
    sb, tmp = links
    path = ("/" + path) if absolute else path
    roots = [m.host for m in sb.mounts]
    try:
        host = str(sb.resolve(path))
    except SandboxError as exc:
        text = str(exc)
        assert str(tmp) not in text or str(tmp) in path
        assert CANARY not in text
        return
    except ScriptError as exc:  # e.g. a symlink loop: still a refusal without host paths
        assert str(tmp) not in str(exc)
        return
    assert any(host == r or host.startswith(r + "/") for r in roots)
    real = os.path.realpath(host)
    assert any(real == r or real.startswith(r + "/") for r in roots)


# ---------------------------------------------------------------- race


@contextlib.contextmanager
def flipping_component(tmp):
    """docs/flip swaps between a real directory and a symlink to the outside, in a loop."""
    docs = tmp / "docs"
    (docs / "flip").mkdir()
    (docs / "flip" / "canary.txt").write_text("inside\n")
    stop = threading.Event()

    def flipper():
        real, link = docs / "flip", docs / "flip.tmp"
        while not stop.is_set():
            os.rename(real, docs / "flip.dir")
            os.symlink(tmp / "outside", link)
            os.rename(link, real)           # now 'flip' points outside
            os.unlink(real)
            os.rename(docs / "flip.dir", real)  # back to the real directory

    t = threading.Thread(target=flipper, daemon=True)
    t.start()
    try:
        yield docs / "flip" / "canary.txt"
    finally:
        stop.set()
        t.join()


def test_the_race_is_real_for_a_naive_check_then_open(world):
    """Baseline: realpath, check, then open by name does leak the canary under the same flipping."""
    _, tmp = world
    root = os.path.realpath(tmp / "docs")
    leaked = False
    with flipping_component(tmp) as target:
        for _ in range(200_000):
            try:
                if os.path.commonpath([os.path.realpath(target), root]) != root:
                    continue
                with open(target) as f:
                    if CANARY in f.read():
                        leaked = True
                        break
            except OSError:
                pass
    assert leaked


def test_swapped_component_never_yields_the_outside_file(world, opener):
    sb, tmp = world
    ts = FileSystemToolset(sb)
    seen = set()
    with flipping_component(tmp):
        for _ in range(3000):
            try:
                seen.add(ts.read("/docs/flip/canary.txt").content)
            except (SandboxError, ScriptError) as exc:
                assert str(tmp) not in str(exc)
                seen.add(type(exc).__name__)
    assert CANARY not in "".join(seen)
    assert ts.read("/docs/flip/canary.txt").content == "inside\n"  # once settled, the file is read


@contextlib.contextmanager
def swap_after_every_check(monkeypatch, tmp, directory: str):
    """Deterministic check/open race: each time Sandbox.locate has checked a path through
    `directory` (a mount-relative host directory), that directory is swapped for a symlink to
    the outside before the caller opens anything. Restored on exit."""
    from runtime.fs.sandbox import Sandbox

    real = tmp / directory
    moved = tmp / (directory + ".real")
    original = Sandbox.locate
    swaps = []

    def locate(self, path, **kw):
        loc = original(self, path, **kw)
        if not real.is_symlink():
            os.rename(real, moved)
            os.symlink(tmp / "outside", real)
            swaps.append(path)
        return loc

    monkeypatch.setattr(Sandbox, "locate", locate)
    try:
        yield swaps
    finally:
        monkeypatch.setattr(Sandbox, "locate", original)
        if real.is_symlink():
            os.unlink(real)
            os.rename(moved, real)


def test_the_deterministic_swap_leaks_through_a_naive_open(world, monkeypatch):
    """Baseline for the test below: resolve (checked), then open the host path it returned."""
    sb, tmp = world
    (tmp / "docs" / "flip").mkdir()
    (tmp / "docs" / "flip" / "canary.txt").write_text("inside\n")
    with swap_after_every_check(monkeypatch, tmp, "docs/flip") as swaps:
        host = sb.resolve("/docs/flip/canary.txt")
        assert swaps and host.read_text() == CANARY


def test_a_component_swapped_right_after_the_check_is_never_followed(world, monkeypatch, opener):
    from runtime.fs.vfs import VirtualFS

    sb, tmp = world
    (tmp / "docs" / "flip").mkdir()
    (tmp / "docs" / "flip" / "canary.txt").write_text("inside\n")
    (tmp / "out" / "d").mkdir()
    ts = FileSystemToolset(sb)
    reads = [lambda: ts.read("/docs/flip/canary.txt").content,
             lambda: VirtualFS(sb).read_bytes(VirtualFS(sb).resolve("/docs/flip/canary.txt"))[0].decode()]
    for read in reads:
        with swap_after_every_check(monkeypatch, tmp, "docs/flip") as swaps:
            with pytest.raises((SandboxError, ScriptError)) as exc:
                read()
            assert swaps and str(tmp) not in str(exc.value)
    with swap_after_every_check(monkeypatch, tmp, "out/d") as swaps:
        with pytest.raises((SandboxError, ScriptError)) as exc:
            ts.write("/out/d/new.txt", "written")
        assert swaps and str(tmp) not in str(exc.value)
    assert sorted(os.listdir(tmp / "outside")) == ["canary.txt"]  # nothing written through the link
    assert (tmp / "outside" / "canary.txt").read_text() == CANARY
    assert not (tmp / "out" / "d" / "new.txt").exists()
