"""docs/security.md is generated from the corpus headers: the committed page must be current."""

from __future__ import annotations

from fuzz.report import render
from tests.support import REPO


def test_security_page_matches_its_generator():
    page = REPO / "docs" / "security.md"
    assert page.read_text(encoding="utf-8") == render(), "run: python -m fuzz.report > docs/security.md"
