"""The committed example collection (examples/docs) behaves as the examples expect."""

from __future__ import annotations

import pytest

from runtime.fs.vfs import VirtualFS
from runtime.services.files import FilesService
from tests.support import REPO

DOCS = REPO / "examples" / "docs"


@pytest.fixture
def svc():
    return FilesService(VirtualFS([("/", DOCS, False)]))


def test_collection_layout(svc):
    assert [f["path"] for f in svc.dir_files(".", True)] == [
        "guides/install.md",
        "guides/intro.md",
        "notes/legacy-export.txt",
        "notes/meeting-2026-11.txt",
        "reports/annual-report.pdf",
        "reports/summary.txt",
    ]
    assert (DOCS / "reports" / "annual-report.pdf").stat().st_size < 50_000


def test_language_model_hits_several_files(svc):
    hits = [f["path"] for f in svc.dir_search(".", "language model", "content", True, True)["files"]]
    assert "reports/annual-report.pdf" in hits and "guides/intro.md" in hits and len(hits) >= 4


def test_tables(svc):
    assert svc.file_table("reports/annual-report.pdf", 50).startswith("1 Introduction (p.1)\n  1.1 Scope (p.1)\n2 Methods (p.2)")
    assert svc.file_table("reports/summary.txt", 3) == "1. Overview (p.1)\n  1.1 Scope (p.1)\n  1.2 Models evaluated (p.2)\n... (5 more entries)"
    assert "Installing the Evaluation Harness (p.1)" in svc.file_table("guides/install.md", 50)
    assert "not a heading" not in svc.file_table("guides/install.md", 50)
    assert svc.file_table("notes/meeting-2026-11.txt", 50) == "No table of contents detected for notes/meeting-2026-11.txt"


def test_pages_and_decoding(svc):
    assert svc.file_page_count("guides/intro.md") >= 2
    assert svc.file_page_count("reports/annual-report.pdf") >= 3
    assert "\ufffd" in svc.file_read("notes/legacy-export.txt", None)
