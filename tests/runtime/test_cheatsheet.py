"""The one-screen sheets `fdsl --help` shows: their examples run, their names exist."""

from __future__ import annotations

import re

from runtime.api import run_script
from runtime.cheatsheet import SHEETS, reference
from tests.support import REPO
from transpiler.fdsl import surface


def example(sheet: str) -> str:
    lines = sheet.split("example:\n", 1)[1].splitlines()
    return "\n".join(line[2:] for line in lines) + "\n"


def test_the_filesdsl_example_runs_and_every_method_named_exists():
    r = run_script(example(SHEETS["fdsl"]), root=str(REPO / "examples" / "docs"), timeout=60)
    assert r.ok and r.output.strip(), r.error
    named = set(re.findall(r"\b[df]\.(\w+)", SHEETS["fdsl"]))
    assert named <= surface.DIRECTORY_ATTRS | surface.FILE_ATTRS, named - surface.DIRECTORY_ATTRS - surface.FILE_ATTRS
    builtins = SHEETS["fdsl"].split("built-ins", 1)[1].splitlines()[0].split()
    assert {b.split("(")[0] for b in builtins} <= surface.BUILTINS


def test_the_promptscript_example_runs(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("# TODO: one\n")
    r = run_script(example(SHEETS["ps"]), lang="ps", options={"project": tmp_path}, timeout=60)
    assert r.ok and "found 1" in r.output, r.error


def test_the_full_references_are_the_docs():
    assert reference("filesdsl") == (REPO / "docs" / "filesdsl.md").read_text(encoding="utf-8")
    assert reference("promptscript").startswith("# PromptScript")
