"""Nothing outside the root is readable or revealed; no host path in any result or error."""

from __future__ import annotations

import json
import os

import pytest

from runtime.errors import PathNotInSandboxError, ScriptError
from runtime.fs.vfs import VirtualFS
from runtime.services.files import FilesService
from tests.support import CANARY


@pytest.fixture
def world(tmp_path):
    root = tmp_path / "root"
    (root / "data" / "sub").mkdir(parents=True)
    (root / "data" / "a.txt").write_text("alpha\nlanguage model\n")
    (root / "data" / "sub" / "c.txt").write_text("gamma\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "canary.txt").write_text(CANARY + "\n")
    canary = tmp_path / "canary.txt"
    canary.write_text(CANARY + "\n")
    os.symlink(canary, root / "data" / "abs_link.txt")  # absolute target
    os.symlink("../../canary.txt", root / "data" / "rel_link.txt")  # relative target
    os.symlink(outside, root / "data" / "outdir")  # directory symlink
    os.symlink(tmp_path / "missing.txt", root / "data" / "dangling_out")
    os.symlink("nothing-here.txt", root / "data" / "dangling_in")
    svc = FilesService(VirtualFS([("/", root, False)]))
    return svc, tmp_path


ESCAPES = ["data/abs_link.txt", "data/rel_link.txt", "data/outdir/canary.txt", "data/outdir", "data/dangling_out"]


@pytest.mark.parametrize("path", ESCAPES)
def test_symlink_escapes_are_refused(world, path):
    svc, tmp_path = world
    calls = [
        lambda: svc.file_read(path, None),
        lambda: svc.file_open(path),
        lambda: svc.file_head(path),
        lambda: svc.file_lines(path, 1, 10),
        lambda: svc.file_page_count(path),
        lambda: svc.file_contains(path, "CANARY", False),
        lambda: svc.dir_open(path),
        lambda: svc.dir_files(path, True),
        lambda: svc.dir_list(path),
    ]
    for call in calls:
        with pytest.raises(PathNotInSandboxError) as err:
            call()
        msg = str(err.value)
        # issue 3 item 4: a denial also says what IS allowed
        assert msg == f"path {path!r} leads outside the sandbox. Readable: /. Writable: nothing (read-only)."
        assert str(tmp_path) not in msg and CANARY not in msg


def test_dangling_symlink_inside_is_no_such_file(world):
    svc, _ = world
    with pytest.raises(ScriptError, match=r"^no such file: data/dangling_in$"):
        svc.file_read("data/dangling_in", None)


def test_walks_never_show_or_search_outside(world):
    svc, tmp_path = world
    everything = json.dumps(
        [
            svc.dir_files(".", True),
            svc.dir_search(".", "CANARY", "both", True, False)["files"],
            svc.dir_search(".", ".", "name", True, False)["files"],
            svc.dir_grep(".", "CANARY", None, False)["hits"],
            svc.dir_grep(".", ".", None, False)["hits"],
            svc.dir_find(".", "**"),
        ]
    )
    assert CANARY not in everything
    assert str(tmp_path) not in everything
    assert "canary" not in everything  # not even the name of the outside file
    files = [f["path"] for f in svc.dir_files(".", True)]
    assert files == ["data/a.txt", "data/sub/c.txt"]


def test_listing_shows_links_without_their_host_target(world):
    svc, tmp_path = world
    entries = {e["name"]: e for e in svc.dir_list("data")}
    for name in ("abs_link.txt", "rel_link.txt", "outdir", "dangling_out"):
        assert entries[name]["@type"] == "SymbolicLinkEntry"
        assert entries[name]["type"] == "symlink"
        assert entries[name]["target"] == "(outside the sandbox)"
    assert entries["dangling_in"]["target"] == "data/nothing-here.txt"
    assert str(tmp_path) not in json.dumps(entries)


def test_fifo_is_refused_without_blocking(world):
    svc, tmp_path = world
    os.mkfifo(tmp_path / "root" / "data" / "pipe")
    with pytest.raises(ScriptError, match=r"^data/pipe is not a regular file$"):
        svc.file_read("data/pipe", None)
    entries = {e["name"]: e for e in svc.dir_list("data")}
    assert entries["pipe"]["@type"] == "OtherEntry"
    assert "data/pipe" not in [f["path"] for f in svc.dir_files("data", False)]


def test_no_host_path_in_any_error(world):
    svc, tmp_path = world
    root = tmp_path / "root"
    (root / "data" / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf " + str(root).encode())
    (root / "data" / "big.txt").write_text("x" * 2000)
    svc.store.max_bytes = 1000
    failing = [
        lambda: svc.file_read("data/nope.txt", None),
        lambda: svc.file_read("data", None),
        lambda: svc.file_read("data/a.txt", 7),
        lambda: svc.file_read("data/a.txt", [1, 0]),
        lambda: svc.file_read("../x", None),
        lambda: svc.file_read(str(root / "data" / "a.txt"), None),  # a host path is just a virtual name
        lambda: svc.file_read("data/broken.pdf", None),
        lambda: svc.file_read("data/big.txt", None),
        lambda: svc.dir_open("data/a.txt"),
        lambda: svc.dir_open("nope"),
        lambda: svc.dir_files("data/abs_link.txt", True),
        lambda: svc.dir_search(".", "[unclosed", "name", True, False)["files"],
        lambda: svc.dir_search(".", "x", "everywhere", True, False)["files"],
        lambda: svc.dir_grep(".", "(", None, False)["hits"],
        lambda: svc.dir_find(".", ""),
        lambda: svc.file_snippets("data/a.txt", "a", 1, -1, False),
        lambda: svc.file_table("data/a.txt", 0),
        lambda: svc.file_lines("data/a.txt", 0, 10),
        lambda: svc.file_lines("data/rel_link.txt", 1, 10),
        lambda: svc.file_search("data/outdir/canary.txt", "x", False),
        lambda: svc.file_open("data/dangling_in"),
        lambda: svc.file_open("data/dangling_out"),
        lambda: svc.dispatch("file.delete", {}),
    ]
    for call in failing:
        with pytest.raises(ScriptError) as err:
            call()
        assert str(tmp_path) not in str(err.value), str(err.value)
        assert CANARY not in str(err.value)
