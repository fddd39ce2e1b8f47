"""Virtual path normalization, mounts and symlink following (runtime/fs/vfs.py)."""

from __future__ import annotations

import os

import pytest

from runtime.errors import PathNotInSandboxError, ScriptError
from runtime.fs.paths import relative
from runtime.fs.vfs import VirtualFS
from runtime.services.files import FilesService


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    (root / "data" / "sub").mkdir(parents=True)
    (root / "data" / "a.txt").write_text("alpha\n")
    (root / "data" / "sub" / "c.txt").write_text("gamma\n")
    return root


@pytest.fixture
def svc(root):
    return FilesService(VirtualFS([("/", root, False)]))


@pytest.mark.parametrize(
    "path, canonical",
    [
        ("data", "data"),
        ("/data", "data"),
        ("./data/a.txt", "data/a.txt"),
        ("data/../data", "data"),
        ("//data//a.txt", "data/a.txt"),
        ("data/./sub/..", "data"),
        ("data/sub/../../data/a.txt", "data/a.txt"),
        ("", "."),
        ("/", "."),
        (".", "."),
        ("./", "."),
        ("data/", "data"),
        ("a\\b", "a\\b"),  # a backslash is an ordinary character
        ("/etc/passwd", "etc/passwd"),  # virtual, under the root
    ],
)
def test_normalization_table(path, canonical):
    assert relative(VirtualFS.normalize(path)) == canonical


@pytest.mark.parametrize("path", ["..", "../x", "/..", "/../x", "data/../../x", "./../etc", "data/sub/../../../a"])
def test_climbing_above_root_is_refused(svc, path):
    with pytest.raises(PathNotInSandboxError) as err:
        svc.file_read(path, None)
    # issue 3 item 4: a denial also says what IS allowed
    assert str(err.value) == f"path {path!r} climbs above the root. Readable: /. Writable: nothing (read-only)."


@pytest.mark.parametrize("path", ["a\x00b", "data/\nx", "x\x7f", "\tdata"])
def test_control_characters_are_script_errors(svc, path):
    with pytest.raises(ScriptError) as err:
        svc.dir_open(path)
    assert not isinstance(err.value, PathNotInSandboxError)
    assert "control character" in str(err.value)


def test_absolute_host_path_is_a_virtual_path(svc):
    # ... and the message says so, with what the sandbox's root holds (issue 14, item 8)
    with pytest.raises(ScriptError, match=r'^no such file: etc/passwd \(paths are inside the sandbox: "/" is its '
                                          r"root, not the machine's; the root holds: data\)$"):
        svc.file_read("/etc/passwd", None)


def test_open_returns_canonical_paths(svc):
    assert svc.dir_open("/data/sub/..") == "data"
    assert svc.dir_open("/") == "."
    assert svc.file_open("./data//a.txt")["path"] == "data/a.txt"


def test_dir_and_file_kind_errors(svc):
    with pytest.raises(ScriptError, match=r"^data is a directory, not a file$"):
        svc.file_read("data", None)
    with pytest.raises(ScriptError, match=r"^data/a.txt is a file, not a directory$"):
        svc.dir_open("data/a.txt")
    with pytest.raises(ScriptError, match=r"^no such directory: nope \(paths are inside the sandbox: .*the root holds: data\)$"):
        svc.dir_files("nope", True)
    with pytest.raises(ScriptError, match=r"^no such file: data/nope.txt$"):
        svc.file_open("data/nope.txt")
    with pytest.raises(ScriptError, match=r"^no such file: data/a.txt/x$"):
        svc.file_open("data/a.txt/x")


def test_most_specific_mount_wins(tmp_path, root):
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("from the docs mount\n")
    (root / "docs").mkdir()
    (root / "docs" / "x.txt").write_text("shadowed\n")
    svc = FilesService(VirtualFS([("/", root, False), ("/docs", other, False)]))
    assert svc.file_read("/docs/x.txt", None) == "from the docs mount\n"
    assert svc.file_read("data/../docs/x.txt", None) == "from the docs mount\n"
    names = [e["name"] for e in svc.dir_list(".")]
    assert names.count("docs") == 1
    paths = [f["path"] for f in svc.dir_files(".", True)]
    assert "docs/x.txt" in paths
    assert svc.dir_grep(".", "shadowed", None, False)["hits"] == []


def test_path_outside_every_mount(tmp_path, root):
    svc = FilesService(VirtualFS([("/docs", root, False)]))
    assert svc.file_read("/docs/data/a.txt", None) == "alpha\n"
    with pytest.raises(PathNotInSandboxError, match="outside every mount"):
        svc.file_read("/data/a.txt", None)


def test_symlinks_inside_the_root_are_followed(svc, root):
    os.symlink("a.txt", root / "data" / "alias.txt")
    os.symlink("sub", root / "data" / "subalias")
    assert svc.file_read("data/alias.txt", None) == "alpha\n"
    assert svc.file_read("data/subalias/c.txt", None) == "gamma\n"
    entries = {e["name"]: e for e in svc.dir_list("data")}
    assert entries["alias.txt"]["@type"] == "SymbolicLinkEntry"
    assert entries["alias.txt"]["target"] == "data/a.txt"
    assert entries["subalias"]["target"] == "data/sub"
    # file symlinks count as files; directory symlinks are not descended into
    paths = [f["path"] for f in svc.dir_files("data", True)]
    assert paths == ["data/a.txt", "data/alias.txt", "data/sub/c.txt"]


def test_symlink_cycles_terminate(svc, root):
    os.symlink("..", root / "data" / "sub" / "up")
    os.symlink(".", root / "data" / "self")
    files = svc.dir_files(".", True)
    assert [f["path"] for f in files] == ["data/a.txt", "data/sub/c.txt"]
    found = [e["path"] for e in svc.dir_find(".", "**")]
    assert "data/sub/up" in found and "data/self" in found
    assert len(found) == len(set(found))
    assert svc.dir_grep(".", "a", None, False)["hits"][0]["path"] == "data/a.txt"


def test_mount_validation(tmp_path):
    with pytest.raises(ValueError):
        VirtualFS([])
    with pytest.raises(ValueError):
        VirtualFS([("docs", tmp_path, False)])
    with pytest.raises(ValueError):
        VirtualFS([("/", tmp_path, False), ("/", tmp_path, False)])
