"""A 3-mount world with a canary outside every mount."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.fs.sandbox import Mount, Sandbox, SandboxConfig

CANARY = "CANARY-5e1d-sandbox-must-not-leak"


@pytest.fixture
def world(tmp_path: Path):
    docs = tmp_path / "docs"
    out = tmp_path / "out"
    cfg = tmp_path / "cfg"
    for d in (docs / "sub", docs / "public", out, cfg):
        d.mkdir(parents=True)
    (docs / "a.md").write_text("# A\nalpha\n")
    (docs / "public" / "p.md").write_text("public\n")
    (docs / "sub" / "b.txt").write_text("beta\n")
    (docs / "secret.md").write_text("secret\n")
    (cfg / "settings.json").write_text("{}\n")
    (tmp_path / "canary.txt").write_text(CANARY)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "canary.txt").write_text(CANARY)
    config = SandboxConfig(mounts=[
        Mount(host_path=docs, mount_point="/docs", mode="ro"),
        Mount(host_path=out, mount_point="/out", mode="rw", write_approval=False),
        Mount(host_path=cfg, mount_point="/cfg", mode="rw", read_approval=True, write_approval=True),
    ])
    return Sandbox(config), tmp_path
