"""Sandbox methods and properties (seed), derive's narrowing and its escalation attempts."""

from __future__ import annotations

import os

import pytest

from runtime.errors import (
    FileTooLargeError,
    InvalidPathError,
    PathNotInSandboxError,
    PathNotWritableError,
    SandboxError,
    ScriptError,
    SuffixNotAllowedError,
)
from runtime.fs.config import Mount, SandboxConfig
from runtime.fs.sandbox import Sandbox


def test_resolve_returns_host_paths(world):
    sb, tmp = world
    assert sb.resolve("/docs/a.md") == tmp / "docs" / "a.md"
    assert sb.resolve("docs/sub/../a.md") == tmp / "docs" / "a.md"
    assert sb.resolve("/out/new/file.txt") == tmp / "out" / "new" / "file.txt"  # may not exist yet


def test_outside_every_mount_says_what_is_allowed(world):
    sb, _ = world
    with pytest.raises(PathNotInSandboxError) as err:
        sb.resolve("/etc/passwd")
    assert str(err.value) == ("path '/etc/passwd' is outside every mount. Readable: /docs, /out, /cfg. "
                              "Writable: /out, /cfg.")


def test_can_read_and_can_write(world):
    sb, _ = world
    assert sb.can_read("/docs/a.md") and not sb.can_write("/docs/a.md")
    assert sb.can_read("/out/x") and sb.can_write("/out/x")
    assert not sb.can_read("/nope") and not sb.can_write("/nope")


def test_roots(world):
    sb, _ = world
    assert sb.readable_roots == ["/docs", "/out", "/cfg"]
    assert sb.writable_roots == ["/out", "/cfg"]


def test_approval_flags(world):
    sb, _ = world
    assert not sb.needs_read_approval("/docs/a.md") and sb.needs_read_approval("/cfg/settings.json")
    assert not sb.needs_write_approval("/out/x") and sb.needs_write_approval("/cfg/x")


def test_get_path_config(world):
    sb, tmp = world
    point, host, mount = sb.get_path_config("/out/x.txt", op="write")
    assert (point, host, mount.mode) == ("/out", tmp / "out" / "x.txt", "rw")
    with pytest.raises(PathNotWritableError) as err:
        sb.get_path_config("/docs/a.md", op="write")
    assert str(err.value) == "cannot write '/docs/a.md': it is read-only here. Writable: /out, /cfg."


def test_check_suffix_and_size(tmp_path):
    m = Mount(host_path=tmp_path, mount_point="/d", suffixes=[".md", ".txt"], max_file_bytes=5)
    sb = Sandbox(SandboxConfig(mounts=[m]))
    (tmp_path / "big.md").write_text("0123456789")
    sb.check_suffix(tmp_path / "a.MD", m, virtual_path="/d/a.MD")
    with pytest.raises(SuffixNotAllowedError) as err:
        sb.check_suffix(tmp_path / "x.exe", m, virtual_path="/d/x.exe")
    assert str(err.value) == "'/d/x.exe' has suffix '.exe', not allowed in /d. Allowed suffixes there: .md, .txt."
    with pytest.raises(FileTooLargeError) as err:
        sb.check_size(tmp_path / "big.md", m, virtual_path="/d/big.md")
    assert "10 bytes, over the limit of 5 bytes for files in /d" in str(err.value)
    assert str(tmp_path) not in str(err.value)


def test_nested_mounts_most_specific_wins(tmp_path):
    (tmp_path / "data" / "special").mkdir(parents=True)
    (tmp_path / "special").mkdir()
    (tmp_path / "special" / "s.txt").write_text("special")
    sb = Sandbox(SandboxConfig(mounts=[
        Mount(host_path=tmp_path / "data", mount_point="/data", mode="rw"),
        Mount(host_path=tmp_path / "special", mount_point="/data/special", mode="ro"),
    ]))
    assert sb.resolve("/data/special/s.txt") == tmp_path / "special" / "s.txt"
    assert sb.can_write("/data/x") and not sb.can_write("/data/special/s.txt")


# ---------------------------------------------------------------- derive


def test_derive_default_is_empty(world):
    sb, _ = world
    child = sb.derive()
    assert child.readable_roots == [] and child.writable_roots == []
    assert not child.can_read("/docs/a.md") and not child.can_write("/out/x")
    with pytest.raises(PathNotInSandboxError):
        child.resolve("/docs/a.md")


def test_derive_allow_read_narrows(world):
    sb, _ = world
    child = sb.derive(allow_read="/docs/public")
    assert child.can_read("/docs/public/p.md") and not child.can_read("/docs/a.md")
    assert child.readable_roots == ["/docs/public"] and child.writable_roots == []
    with pytest.raises(PathNotInSandboxError) as err:
        child.resolve("/docs/a.md")
    assert "Readable: /docs/public. Writable: nothing (read-only)." in str(err.value)


def test_derive_allow_write_implies_read(world):
    sb, _ = world
    child = sb.derive(allow_write="/out/reports")
    assert child.can_read("/out/reports/r.md") and child.can_write("/out/reports/r.md")
    assert not child.can_write("/out/other.md") and not child.can_read("/docs/a.md")


def test_derive_write_on_read_only_parent_raises(world):
    sb, _ = world
    with pytest.raises(PathNotWritableError, match="read-only in the parent"):
        sb.derive(allow_write="/docs")


def test_derive_read_outside_parent_raises(world):
    sb, _ = world
    child = sb.derive(allow_read="/docs/public")
    with pytest.raises(PathNotInSandboxError, match="not readable in the parent"):
        child.derive(allow_read="/docs")
    with pytest.raises(PathNotInSandboxError):
        child.derive(allow_write="/out")


def test_derive_cannot_regain_write_after_readonly(world):
    sb, _ = world
    ro = sb.derive(inherit=True, readonly=True)
    assert ro.writable_roots == [] and not ro.can_write("/out/x")
    with pytest.raises(PathNotWritableError):
        ro.derive(inherit=True, readonly=False)
    with pytest.raises(PathNotWritableError):
        ro.derive(allow_write="/out")
    assert not ro.derive(inherit=True).can_write("/out/x")


def test_derive_inherit(world):
    sb, _ = world
    child = sb.derive(inherit=True)
    assert child.readable_roots == sb.readable_roots and child.writable_roots == sb.writable_roots
    assert child.can_write("/out/x") and child.can_read("/docs/a.md")
    narrowed = sb.derive(inherit=True, allow_write="/out/only")
    assert narrowed.can_read("/docs/a.md") and not narrowed.can_write("/out/x") and narrowed.can_write("/out/only/x")


def test_derive_contradiction(world):
    sb, _ = world
    with pytest.raises(SandboxError, match="contradicts"):
        sb.derive(allow_write="/out", readonly=True)


def test_derive_chain_only_narrows_however_deep(world):
    sb, _ = world
    s = sb.derive(allow_write="/out/a")
    for depth in range(30):
        s = s.derive(inherit=True)
        with pytest.raises(SandboxError):
            s.derive(allow_write="/out")
        with pytest.raises(SandboxError):
            s.derive(allow_read="/docs")
    assert s.can_write("/out/a/x") and not s.can_write("/out/b") and not s.can_read("/docs/a.md")
    deeper = s.derive(allow_read="/out/a/sub")
    assert deeper.can_read("/out/a/sub/x") and not deeper.can_read("/out/a/x")


def test_derive_in_mount_symlink_cannot_widen_the_allowlist(world):
    sb, tmp = world
    os.symlink("../secret.md", tmp / "docs" / "public" / "sneaky.md")
    os.symlink("..", tmp / "docs" / "public" / "up")
    assert sb.can_read("/docs/public/sneaky.md")  # fine for the parent: inside /docs
    child = sb.derive(allow_read="/docs/public")
    assert not child.can_read("/docs/public/sneaky.md")
    assert not child.can_read("/docs/public/up/secret.md")
    with pytest.raises(PathNotInSandboxError, match="leads outside the sandbox"):
        child.resolve("/docs/public/sneaky.md")


def test_every_refusal_of_a_path_says_what_is_allowed(world):
    sb, tmp = world
    allowed = "Readable: /docs, /out, /cfg. Writable: /out, /cfg."
    for bad in ("/docs/a\x00b", "/docs/\x1b[31m", "/docs/" + "x" * 5000):
        with pytest.raises(InvalidPathError) as exc:
            sb.resolve(bad)
        assert str(exc.value).endswith(allowed) and str(tmp) not in str(exc.value)
    with pytest.raises(PathNotInSandboxError, match=r"^derive: allow_read: path '/\.\.' climbs above the root\. Readable: /docs"):
        sb.derive(allow_read="/..")


def test_a_file_path_cannot_end_with_a_slash(world):
    from runtime.fs.vfs import VirtualFS
    from runtime.services.toolset import FileSystemToolset

    sb, tmp = world
    ts = FileSystemToolset(sb)
    message = "ends with '/', so it names a directory; a file path cannot end with '/'"
    with pytest.raises(ScriptError, match=message):
        ts.write("/out/new/", "x")
    assert not (tmp / "out" / "new").exists()
    with pytest.raises(ScriptError, match=message):
        ts.read("/docs/a.md/")
    with pytest.raises(ScriptError, match=message):
        VirtualFS(sb).resolve_file("/docs/a.md/")
    assert ts.read("/docs/a.md").content == "# A\nalpha\n"
    assert [e["path"] for e in ts.list_directory("/docs/sub/")] == ["/docs/sub/b.txt"]  # directories may
