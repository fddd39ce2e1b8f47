"""Start-up stays lean (issue 13, item 3): importing the API and running a script loads no
pydantic plugin, no PDF library and no LLM provider library, and leaves pydantic's plugin
switch as the application had it."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import REPO

PROBE = """
import json, os, sys
from runtime import run_script
import runtime.services.toolset, runtime.services.listing
r = run_script('print(len(Directory("/").files()))', root={root!r}, timeout=30)
assert r.ok, r.error
heavy = ("logfire", "pymupdf", "fitz", "openai", "anthropic", "pydantic_ai", "httpx")
print(json.dumps({{"loaded": sorted(m for m in sys.modules if m.split(".")[0] in heavy),
                  "switch": os.environ.get("PYDANTIC_DISABLE_PLUGINS")}}))
"""


def probe(tmp_path, env_extra=None) -> dict:
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-c", PROBE.format(root=str(tmp_path))], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_text_run_imports_nothing_heavy_and_restores_the_plugin_switch(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    assert probe(tmp_path) == {"loaded": [], "switch": None}


def test_an_applications_own_plugin_setting_is_kept(tmp_path):
    assert probe(tmp_path, {"PYDANTIC_DISABLE_PLUGINS": "some_plugin"})["switch"] == "some_plugin"


def test_the_fdsl_client_imports_only_what_it_frames_requests_with():
    """Every `fdsl run` starts an interpreter that imports runtime.client: of ours only the
    client, its server control and the wire's framing (not the op tables of wire.protocol),
    and nothing that would fingerprint the project's files (the server watches them)."""
    code = ("import sys; import runtime.client; print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('runtime', 'wire', 'transpiler', 'sandbox_worker', 'zlib', 'fcntl', 'socket', 'signal')))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.replace("'", '"')) == ["runtime", "runtime.client", "runtime.serverctl", "wire", "wire.frames"]
