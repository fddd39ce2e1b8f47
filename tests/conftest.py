"""Shared fixtures: a one-mount sandbox root and a three-mount world, each with the canary
planted outside every mount, and a runner for hand-written worker code."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import transpiler
from runtime.fs.config import Mount, SandboxConfig
from runtime.fs.sandbox import Sandbox
from tests.support import CANARY

# The tests compile scripts in this process the way the runtime does (runtime/compile.py):
# with the recursion limit the deepest valid script needs.
sys.setrecursionlimit(max(sys.getrecursionlimit(), transpiler.STACK_FRAMES))


def plant_canary(folder: Path) -> Path:
    """``folder``/canary.txt holding the canary (the folder is made if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    canary = folder / "canary.txt"
    canary.write_text(CANARY)
    return canary


@pytest.fixture
def sandbox(tmp_path: Path):
    """(root, canary_path): root holds data/, the canary lives beside root, outside it."""
    root = tmp_path / "root"
    (root / "data" / "sub").mkdir(parents=True)
    (root / "data" / "a.txt").write_text("alpha\nlanguage model\n" + "filler\n" * 100)
    (root / "data" / "b.md").write_text("# Title\n\n## Part one\ntext\n")
    (root / "data" / "sub" / "c.txt").write_text("gamma\n")
    return root, plant_canary(tmp_path)


@pytest.fixture
def run_worker_code(sandbox):
    """Run already-generated Python in a real worker against the sandbox root (no transpiler)."""
    from runtime.api import file_handlers
    from runtime.broker import Broker
    from runtime.fs.vfs import VirtualFS
    from runtime.services.files import FilesService
    from runtime.supervisor import Limits, run_worker

    root, _ = sandbox

    def run(code: str, mode: str = "restricted", timeout: float = 10.0, memory_mb: int = 256, max_output: int = 100_000):
        deadline = time.monotonic() + timeout
        service = FilesService(VirtualFS([("/", root, False)]), deadline=deadline)
        handlers = file_handlers(service)
        output: list[str] = []
        limits = Limits(timeout=timeout, memory_mb=memory_mb, max_output=max_output)
        result = run_worker(code, Broker(handlers), limits, deadline, output.append, mode=mode)
        return result, "".join(output)

    return run


@pytest.fixture(params=["openat2", "walk"])
def opener(request, monkeypatch):
    """Each race test runs with openat2(RESOLVE_BENEATH) and with the O_NOFOLLOW walk."""
    from runtime.fs import safeio

    if request.param == "walk":
        monkeypatch.setitem(safeio._state, "openat2", False)
    elif not safeio.uses_openat2():
        pytest.skip("no openat2 on this kernel")
    return request.param


@pytest.fixture
def world(tmp_path: Path):
    """(Sandbox, tmp_path): /docs read-only, /out writable, /cfg writable with approvals; the
    canary beside them and in outside/."""
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
    plant_canary(tmp_path)
    plant_canary(tmp_path / "outside")
    config = SandboxConfig(mounts=[
        Mount(host_path=docs, mount_point="/docs", mode="ro"),
        Mount(host_path=out, mount_point="/out", mode="rw", write_approval=False),
        Mount(host_path=cfg, mount_point="/cfg", mode="rw", read_approval=True, write_approval=True),
    ])
    return Sandbox(config), tmp_path


@pytest.fixture
def fake_llm():
    """A fake LLM provider on loopback (tests/support/fake_llm.py); no test reaches the network."""
    from tests.support.fake_llm import FakeLLM

    server = FakeLLM()
    yield server
    server.close()
