"""Shared bits for the transpiler tests."""

from __future__ import annotations

from tests.support import TESTDATA
from tests.support.chunked import Chunk, load_chunks

DATA = TESTDATA / "transpiler"

__all__ = ["DATA", "Chunk", "load_chunks", "body_of"]


def body_of(python: str) -> list[str]:
    """Generated code lines without comments."""
    return [ln for ln in python.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
