"""What tests share beyond fixtures: the repository's places, annotated test data, runners."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
TESTDATA = TESTS / "testdata"

# What every escape test plants outside the sandbox: finding it in any output is a leak.
CANARY = "CANARY-7f3a-do-not-leak"
