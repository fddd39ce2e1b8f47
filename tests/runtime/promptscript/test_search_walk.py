"""SEARCH walks the project beneath directory descriptors: a directory swapped for a symlink
while it walks is never entered, and its policy scope is the walk's."""

from __future__ import annotations

import contextlib
import os

from runtime.fs import safeio
from runtime.fs.options import sandbox_from_options
from runtime.fs.sandbox import Sandbox
from runtime.promptscript.actions import ProjectActions
from runtime.promptscript.policy import PolicyStack


def names(result) -> list[str]:
    return [hit["path"] for hit in result[0]]


@contextlib.contextmanager
def swapped_when_read(monkeypatch, project, outside):
    """Deterministic walk race: right before `sub` is read (listed by path, or opened beneath a
    descriptor) it is swapped for a symlink to `outside`; it is swapped back as soon as the
    broker checks a path again (Sandbox.locate), so that check finds the real directory."""
    real, moved = project / "sub", project / "sub.real"
    swaps = []

    def swap():
        if not real.is_symlink():
            os.rename(real, moved)
            os.symlink(outside, real)
            swaps.append(1)

    def restore():
        if real.is_symlink():
            os.unlink(real)
            os.rename(moved, real)

    scandir, open_beneath, locate = os.scandir, safeio.open_beneath, Sandbox.locate

    def scandir_hook(path="."):
        if isinstance(path, str) and path.endswith(os.sep + "sub"):
            swap()
        return scandir(path)

    def open_hook(dirfd, parts, flags, mode=0o666):
        if parts[-1:] == ("sub",):
            swap()
        return open_beneath(dirfd, parts, flags, mode)

    def locate_hook(self, path, **kw):
        restore()
        return locate(self, path, **kw)

    with monkeypatch.context() as patch:
        patch.setattr(os, "scandir", scandir_hook)
        patch.setattr(safeio, "open_beneath", open_hook)
        patch.setattr(Sandbox, "locate", locate_hook)
        try:
            yield swaps
        finally:
            restore()


def test_a_directory_swapped_for_a_symlink_mid_walk_is_never_entered(tmp_path, monkeypatch, opener):
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "inside.txt").write_text("TODO inside\n")
    (project / "top.txt").write_text("TODO top\n")
    outside.mkdir()
    (outside / "secret-name.txt").write_text("TODO CANARY\n")
    actions = ProjectActions(sandbox_from_options(project=project, write_approval=False), project=project)
    policy = PolicyStack().current
    with swapped_when_read(monkeypatch, project, outside) as swaps:
        listed = names(actions.search({}, policy))
        hits = actions.search({"query": "TODO"}, policy)[0]
    assert swaps
    assert "sub/secret-name.txt" not in listed and listed == ["top.txt"]
    assert all("CANARY" not in hit["text"] for hit in hits)
    assert names(actions.search({}, policy)) == ["sub/inside.txt", "top.txt"]  # once settled


def test_a_policy_that_allows_one_file_searches_that_file(tmp_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "README.md").write_text("TODO readme\n")
    (project / "src" / "a.py").write_text("TODO a\n")
    (project / "other.md").write_text("TODO other\n")
    actions = ProjectActions(sandbox_from_options(project=project, write_approval=False), project=project)
    policies = PolicyStack()
    actions.bind(policies)
    scope = policies.enter({"allowRead": ["README.md", "src"]})
    assert names(actions.search({}, scope)) == ["README.md", "src/a.py"]
    assert [h["path"] for h in actions.search({"query": "TODO"}, scope)[0]] == ["README.md", "src/a.py"]
