"""fdsl ls / fdsl find and FilesDSL's structured entries."""

from __future__ import annotations

import json
import os

from runtime.cli import main


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
