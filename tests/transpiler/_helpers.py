"""Shared bits for the transpiler tests."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
DATA = TESTS / "testdata" / "transpiler"
if str(TESTS) not in sys.path:  # for `chunked` (tests/ has no __init__.py)
    sys.path.insert(0, str(TESTS))

from chunked import Chunk, load_chunks  # noqa: E402

__all__ = ["DATA", "Chunk", "load_chunks", "body_of"]


def body_of(python: str) -> list[str]:
    """Generated code lines without comments."""
    return [ln for ln in python.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
