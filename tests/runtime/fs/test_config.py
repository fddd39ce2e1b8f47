"""SandboxConfig and Mount: every rule of the seed, one test each, and the TOML file."""

from __future__ import annotations

import pytest

from runtime.errors import SandboxConfigError
from runtime.fs.config import Mount, SandboxConfig, config_from_data, load_config
from runtime.fs.sandbox import Sandbox


def cfg(tmp_path, *mounts):
    return config_from_data({"mounts": list(mounts)})


def test_public_imports_are_lazy_and_complete():
    import subprocess
    import sys
    code = ("import sys, runtime\n"
            "from runtime import Sandbox, SandboxConfig, Mount, SandboxError, PathNotInSandboxError, "
            "PathNotWritableError, SuffixNotAllowedError, FileTooLargeError, EditError, FileSystemToolset, ReadResult\n"
            "assert 'pymupdf' not in sys.modules\n"
            "assert issubclass(EditError, SandboxError) and EditError.kind == 'RuntimeError'\n"
            "assert SandboxError.kind == 'SandboxError' and PathNotWritableError.kind == 'SandboxError'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_at_least_one_mount():
    with pytest.raises(SandboxConfigError, match=r"^mounts: List should have at least 1 item"):
        config_from_data({"mounts": []})


def test_mount_point_must_start_with_slash(tmp_path):
    with pytest.raises(SandboxConfigError, match=r"mounts\[0\]\.mount_point: must start with '/'"):
        cfg(tmp_path, {"host_path": str(tmp_path), "mount_point": "docs"})


def test_mount_point_cannot_end_with_slash(tmp_path):
    with pytest.raises(SandboxConfigError, match=r"mounts\[0\]\.mount_point: cannot end with '/'"):
        cfg(tmp_path, {"host_path": str(tmp_path), "mount_point": "/docs/"})
    assert cfg(tmp_path, {"host_path": str(tmp_path), "mount_point": "/"}).mounts[0].mount_point == "/"


@pytest.mark.parametrize("point", ["/a//b", "/a/./b", "/a/../b", "/a\\b", "/a\x00"])
def test_mount_point_must_be_normalized(tmp_path, point):
    with pytest.raises(SandboxConfigError, match=r"mounts\[0\]\.mount_point"):
        cfg(tmp_path, {"host_path": str(tmp_path), "mount_point": point})


def test_duplicate_mount_points_rejected(tmp_path):
    (tmp_path / "a").mkdir(); (tmp_path / "b").mkdir()
    with pytest.raises(SandboxConfigError, match=r"mounts\[1\]\.mount_point: duplicate mount point '/x'"):
        cfg(tmp_path, {"host_path": str(tmp_path / "a"), "mount_point": "/x"},
            {"host_path": str(tmp_path / "b"), "mount_point": "/x"})


def test_overlapping_host_paths_rejected(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    with pytest.raises(SandboxConfigError, match=r"mounts\[1\]\.host_path: overlaps mounts\[0\]\.host_path"):
        cfg(tmp_path, {"host_path": str(tmp_path / "a"), "mount_point": "/x"},
            {"host_path": str(tmp_path / "a" / "b"), "mount_point": "/y"})
    with pytest.raises(SandboxConfigError, match=r"mounts\[1\]\.host_path: the same directory"):
        cfg(tmp_path, {"host_path": str(tmp_path / "a"), "mount_point": "/x"},
            {"host_path": str(tmp_path / "a"), "mount_point": "/y"})


def test_overlap_through_a_symlink_is_caught_by_sandbox(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "a" / "b")
    config = SandboxConfig(mounts=[Mount(host_path=tmp_path / "a", mount_point="/x"),
                                   Mount(host_path=tmp_path / "alias", mount_point="/y")])
    with pytest.raises(SandboxConfigError, match=r"mounts\[1\]\.host_path: overlaps"):
        Sandbox(config)


def test_relative_host_paths_use_base_path(tmp_path):
    (tmp_path / "d").mkdir()
    sb = Sandbox(SandboxConfig(mounts=[Mount(host_path="d", mount_point="/d")]), base_path=tmp_path)
    assert sb.resolve("/d/x") == (tmp_path / "d" / "x").resolve()


def test_missing_host_directory(tmp_path):
    with pytest.raises(SandboxConfigError, match=r"mounts\[0\]\.host_path: .* is not an existing directory"):
        Sandbox(SandboxConfig(mounts=[Mount(host_path=tmp_path / "nope", mount_point="/d")]))


def test_mode_and_defaults(tmp_path):
    m = Mount(host_path=tmp_path, mount_point="/d")
    assert (m.mode, m.suffixes, m.max_file_bytes, m.write_approval, m.read_approval) == ("ro", None, None, True, False)
    with pytest.raises(SandboxConfigError, match=r"mounts\[0\]\.mode: Input should be 'ro' or 'rw'"):
        cfg(tmp_path, {"host_path": str(tmp_path), "mount_point": "/d", "mode": "wx"})


def test_suffixes_and_size_validation(tmp_path):
    with pytest.raises(SandboxConfigError, match=r"mounts\[0\]\.suffixes: each suffix must look like '.md'"):
        cfg(tmp_path, {"host_path": str(tmp_path), "mount_point": "/d", "suffixes": ["md"]})
    with pytest.raises(SandboxConfigError, match=r"mounts\[0\]\.max_file_bytes"):
        cfg(tmp_path, {"host_path": str(tmp_path), "mount_point": "/d", "max_file_bytes": -1})
    with pytest.raises(SandboxConfigError, match=r"mounts\[0\]\.colour: Extra inputs are not permitted"):
        cfg(tmp_path, {"host_path": str(tmp_path), "mount_point": "/d", "colour": "red"})


def test_toml_file(tmp_path):
    (tmp_path / "docs").mkdir()
    f = tmp_path / "sandbox.toml"
    f.write_text('[[mounts]]\nhost_path = "docs"\nmount_point = "/docs"\nsuffixes = [".MD"]\nmax_file_bytes = 10\n')
    config, base = load_config(f)
    assert base == tmp_path and config.mounts[0].suffixes == [".md"]
    f.write_text('[[mounts]]\nhost_path = "docs"\n')
    with pytest.raises(SandboxConfigError, match=r"sandbox.toml: mounts\[0\]\.mount_point: Field required"):
        load_config(f)
    f.write_text("[[mounts]\n")
    with pytest.raises(SandboxConfigError, match="invalid TOML"):
        load_config(f)
    with pytest.raises(SandboxConfigError, match="no such configuration file"):
        load_config(tmp_path / "nope.toml")


def test_cli_config_errors_are_one_line_usage_errors(tmp_path, capsys):
    from runtime.cli import main

    f = tmp_path / "sandbox.toml"
    f.write_text('[[mounts]]\nhost_path = "."\nmount_point = "docs"\n')
    assert main(["ls", "/", "--config", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mounts[0].mount_point: must start with '/'" in err


def test_base_path_defaults_to_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    monkeypatch.chdir(tmp_path)
    sb = Sandbox(SandboxConfig(mounts=[Mount(host_path="d", mount_point="/d")]))
    assert sb.resolve("/d/x") == (tmp_path / "d" / "x").resolve()


def test_mounts_without_root_mount_no_current_directory(tmp_path, monkeypatch, capsys):
    """--mount alone gives those mounts: the current directory is the root only when nothing
    else is named (else mounting one of its subdirectories would overlap it)."""
    from runtime.cli import main

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.txt").write_text("a")
    (tmp_path / "secret.txt").write_text("s")
    monkeypatch.chdir(tmp_path)
    assert main(["ls", "/", "--mount", "out:/out:rw"]) == 0
    assert capsys.readouterr().out == "directory /out\n"
    assert main(["ls", "/"]) == 0
    assert "file /secret.txt (1 bytes)" in capsys.readouterr().out


def test_cli_errors_name_the_option_or_file_entry_at_fault(tmp_path, monkeypatch, capsys):
    from runtime.cli import main

    (tmp_path / "out").mkdir()
    (tmp_path / "r").mkdir()
    (tmp_path / "s.toml").write_text('[[mounts]]\nhost_path = "out"\nmount_point = "/x"\n')
    monkeypatch.chdir(tmp_path)
    cases = [
        (["--root", ".", "--mount", "out:/out:rw"], "--mount out:/out:rw host_path: overlaps --root . host_path"),
        (["--config", "s.toml", "--mount", "out:/y"], "--mount out:/y host_path: the same directory as s.toml: mounts[0] host_path"),
        (["--config", "s.toml", "--root", "r", "--mount", "r:/x"], "--mount r:/x mount_point: duplicate mount point '/x' (also s.toml: mounts[0])"),
    ]
    for options, message in cases:
        assert main(["ls", "/", *options]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
