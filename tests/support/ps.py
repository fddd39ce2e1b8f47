"""Shared bits of the PromptScript tests."""

from __future__ import annotations

from tests.support import REPO, TESTDATA
from tests.support.chunked import load_chunks

DATA = TESTDATA / "promptscript"


def run_ps(source: str, tmp_path=None, **options):
    """Run a PromptScript source in a real worker over examples/ (read-only), or over
    ``project`` (read-write, with its run log) when given."""
    from runtime.api import run_script

    options.setdefault("max_steps", 0)
    root = None if "project" in options else str(REPO / "examples")
    return run_script(source, lang="ps", root=root, options=options, timeout=30)


def lines(result) -> list[str]:
    return result.output.splitlines()


__all__ = ["DATA", "REPO", "load_chunks", "run_ps", "lines"]
