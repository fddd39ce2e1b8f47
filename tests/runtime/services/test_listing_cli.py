"""fdsl ls / fdsl find and FilesDSL's structured entries."""

from __future__ import annotations

import json
import os

import pytest

from runtime.cli import main
from runtime.errors import ApprovalDeniedError, SandboxError


def test_ls_text_json_and_recursive(tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.md").write_text("hello")
    os.symlink("/etc/passwd", tmp_path / "out_link")
    os.symlink("a.md", tmp_path / "in_link")
    assert main(["ls", "/", "--root", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "file /a.md (5 bytes)", "symlink /in_link -> /a.md", "symlink /out_link -> (outside the sandbox)", "directory /sub"]
    assert main(["ls", "/", "--root", str(tmp_path), "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert entries[0]["@type"] == "FileEntry" and set(entries[0]) == {"@type", "name", "path", "size", "lastModified"}
    assert entries[2]["target"] == "(outside the sandbox)"
    (tmp_path / "sub" / "c.txt").write_text("c")
    assert main(["ls", "/sub/..", "--recursive", "--root", str(tmp_path)]) == 0
    assert "file /sub/c.txt (1 bytes)" in capsys.readouterr().out


def test_find_with_mounts_and_refusals(tmp_path, capsys):
    (tmp_path / "r" / "d").mkdir(parents=True)
    (tmp_path / "m").mkdir()
    (tmp_path / "r" / "d" / "x.md").write_text("x")
    (tmp_path / "m" / "y.md").write_text("y")
    assert main(["find", "/", "**/*.md", "--root", str(tmp_path / "r"), "--mount", f"{tmp_path / 'm'}:/m"]) == 0
    assert capsys.readouterr().out.splitlines() == ["file /d/x.md (1 bytes)", "file /m/y.md (1 bytes)"]
    assert main(["find", "/../", "*", "--root", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("SandboxError: path '/../' climbs above the root. Readable: /.") and str(tmp_path) not in err


def test_filesdsl_list_keeps_its_format(tmp_path):
    from runtime import run_script

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("x" * 56)
    result = run_script('for e in Directory("docs").list():\n    print(e)', root=tmp_path, timeout=20)
    assert result.output == "file docs/guide.md (56 bytes)\n", result.error


# ---------------------------------------------------------------------------- virtual directories


def write_config(tmp_path, mounts: str):
    path = tmp_path / "sandbox.toml"
    path.write_text(mounts)
    return str(path)


def two_mounts(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "docs" / "a.md").write_text("alpha")
    return write_config(tmp_path, '[[mounts]]\nhost_path = "docs"\nmount_point = "/docs"\n'
                                  '[[mounts]]\nhost_path = "out"\nmount_point = "/lib/out"\nmode = "rw"\n')


def test_the_root_lists_the_mounts_when_none_is_at_root(tmp_path, capsys):
    config = two_mounts(tmp_path)
    assert main(["ls", "--config", config]) == 0
    assert capsys.readouterr().out.splitlines() == ["directory /docs", "directory /lib"]
    assert main(["ls", "/lib", "--config", config, "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["@type"] == "DirectoryEntry" and entry["path"] == "/lib/out" and entry["lastModified"] > 0
    assert main(["ls", "/", "--recursive", "--config", config]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "directory /docs", "file /docs/a.md (5 bytes)", "directory /lib", "directory /lib/out"]
    assert main(["find", "/", "**/*.md", "--config", config]) == 0
    assert capsys.readouterr().out.splitlines() == ["file /docs/a.md (5 bytes)"]
    assert main(["ls", "/nowhere", "--config", config]) == 1
    assert "outside every mount. Readable: /docs, /lib/out." in capsys.readouterr().err


def test_filesdsl_walks_the_virtual_root(tmp_path):
    from runtime import run_script
    from runtime.fs.options import sandbox_from_options

    two_mounts(tmp_path)
    (tmp_path / "out" / "b.txt").write_text("beta")
    sandbox = sandbox_from_options(config_path=tmp_path / "sandbox.toml")
    result = run_script('print(Directory("/").files())\nfor e in Directory("/").list():\n    print(e)',
                        sandbox=sandbox, timeout=20)
    assert result.exit_code == 0, result.error
    assert result.output == "[docs/a.md, lib/out/b.txt]\ndirectory docs\ndirectory lib\n"


def test_toolset_lists_a_virtual_root_and_a_derived_sandboxs_way_to_its_roots(world):
    from runtime.services.toolset import FileSystemToolset

    sb, tmp = world
    ts = FileSystemToolset(sb, approve=lambda d: True)
    assert ts.list_files() == ["/cfg/settings.json", "/docs/a.md", "/docs/public/p.md", "/docs/secret.md",
                               "/docs/sub/b.txt"]
    child = FileSystemToolset(sb.derive(allow_read="/docs/public"))
    assert [(e["@type"], e["path"]) for e in child.list_directory("/")] == [("DirectoryEntry", "/docs")]
    assert [e["path"] for e in child.list_directory("/docs")] == ["/docs/public"]  # not a.md, secret.md, sub
    assert child.list_files("/") == ["/docs/public/p.md"]
    with pytest.raises(SandboxError, match="not in the sandbox"):
        child.read("/docs/secret.md")


# ---------------------------------------------------------------------------- listing policy


def test_listings_ask_before_covering_a_read_approval_mount(world, capsys, tmp_path):
    from runtime.fs.vfs import VirtualFS
    from runtime.services.files import find_files, list_directory

    sb, _ = world
    asked = []
    vfs = VirtualFS(sb, approve=lambda d: asked.append(d) or False)
    assert [e.path for e in list_directory(vfs, "/docs")] == ["/docs/a.md", "/docs/public", "/docs/secret.md", "/docs/sub"]
    with pytest.raises(ApprovalDeniedError, match=r"^List files in /cfg: not approved\.$"):
        list_directory(vfs, "/cfg")
    with pytest.raises(ApprovalDeniedError, match=r"^List files in /: not approved\.$"):
        find_files(vfs, "/", True, "**")  # covers /cfg
    assert [e.path for e in list_directory(vfs, "/")] == ["/cfg", "/docs", "/out"]  # names only: not asked
    assert asked == ["List files in /cfg", "List files in /"]
    vfs = VirtualFS(sb, approve=None)
    with pytest.raises(ApprovalDeniedError, match="needs approval and no one can approve it"):
        list_directory(vfs, "/cfg")


def test_fdsl_ls_without_a_terminal_refuses_a_read_approval_mount(tmp_path, capsys):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "s.json").write_text("{}")
    config = write_config(tmp_path, '[[mounts]]\nhost_path = "cfg"\nmount_point = "/cfg"\nread_approval = true\n')
    assert main(["ls", "/cfg", "--config", config]) == 1
    assert "List files in /cfg: needs approval, but no terminal is attached to ask; run with --yes" in capsys.readouterr().err
    assert main(["ls", "/cfg", "--config", config, "--yes"]) == 0
    assert capsys.readouterr().out == "file /cfg/s.json (2 bytes)\n"


def test_listings_skip_files_the_suffixes_refuse(tmp_path, capsys):
    from runtime import run_script
    from runtime.fs.options import sandbox_from_options

    (tmp_path / "cfg" / "sub").mkdir(parents=True)
    for name in ("a.json", "t.txt", "sub/b.json", "sub/c.yaml"):
        (tmp_path / "cfg" / name).write_text("{}")
    os.symlink("t.txt", tmp_path / "cfg" / "link.json")  # reading it would read t.txt: refused
    os.symlink("a.json", tmp_path / "cfg" / "ok.txt")  # reading it reads a.json: allowed
    config = write_config(tmp_path, '[[mounts]]\nhost_path = "cfg"\nmount_point = "/cfg"\nsuffixes = [".json"]\n')
    assert main(["ls", "/cfg", "--config", config]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "file /cfg/a.json (2 bytes)", "symlink /cfg/ok.txt -> /cfg/a.json", "directory /cfg/sub"]
    assert main(["find", "/cfg", "**", "--config", config]) == 0
    assert "c.yaml" not in capsys.readouterr().out
    sandbox = sandbox_from_options(config_path=config)
    result = run_script('print(Directory("/cfg").find("**"))\nprint(Directory("/cfg").files())', sandbox=sandbox, timeout=20)
    assert result.output == ("[file cfg/a.json (2 bytes), symlink cfg/ok.txt -> cfg/a.json, directory cfg/sub, "
                             "file cfg/sub/b.json (2 bytes)]\n"
                             "[cfg/a.json, cfg/ok.txt, cfg/sub/b.json]\n"), result.error


def test_symlinks_report_the_length_of_what_they_show(tmp_path, capsys):
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.md").write_text("x")
    os.symlink(tmp_path / "elsewhere" / "a-long-host-path" / "canary.txt", tmp_path / "root" / "out")
    os.symlink(tmp_path / "root" / "a.md", tmp_path / "root" / "abs")  # absolute host text, inside
    assert main(["ls", "/", "--root", str(tmp_path / "root"), "--json"]) == 0
    entries = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert entries["out"]["target"] == "(outside the sandbox)" and entries["out"]["size"] == len("(outside the sandbox)")
    assert entries["abs"]["target"] == "/a.md" and entries["abs"]["size"] == len("/a.md")


def test_ls_recursive_and_find_show_links_leaving_the_sandbox_as_ls_does(tmp_path, capsys):
    (tmp_path / "root" / "d").mkdir(parents=True)
    os.symlink("/etc/passwd", tmp_path / "root" / "d" / "away")
    assert main(["ls", "/d", "--root", str(tmp_path / "root")]) == 0
    flat = capsys.readouterr().out
    assert main(["ls", "/", "--recursive", "--root", str(tmp_path / "root")]) == 0
    deep = capsys.readouterr().out
    assert flat == "symlink /d/away -> (outside the sandbox)\n"
    assert deep == "directory /d\nsymlink /d/away -> (outside the sandbox)\n"


def test_filesdsl_entries_have_the_seeds_fields(tmp_path):
    from runtime import run_script

    (tmp_path / "a.md").write_text("x")
    os.utime(tmp_path / "a.md", ns=(1762473883050_000_000, 1762473883050_000_000))
    result = run_script('e = Directory("/").list()[0]\nprint(e.type, e.name, e.path, e.size, e.lastModified, e.modified)',
                        root=tmp_path, timeout=20)
    assert result.output == "file a.md a.md 1 1762473883050 2025-11-07T00:04:43Z\n", result.error
