"""A document corpus for end-to-end runs, built once per session."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from tests.support import CANARY


def make_pdf(path: Path, pages: list[str], toc: list | None = None) -> None:
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        page.insert_text((72, 72), text)
    if toc:
        doc.set_toc(toc)
    doc.save(path)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("corpus")
    root = base / "root"
    (root / "docs" / "sub").mkdir(parents=True)
    (root / "docs" / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 201)))  # 3 pages
    (root / "docs" / "guide.md").write_text("# Guide\n\nIntro text.\n\n## Install\n\nsteps\n\n### Linux\n\napt\n")
    (root / "docs" / "toc.txt").write_text(
        "Contents\n1. Overview ........ 1\n1.1 Scope ........ 2\n2. Methods ........ 3\n\nbody\n"
    )
    (root / "docs" / "numbered.txt").write_text("Contents\n1 Overview    1\n1.1 Scope    2\n\nbody\n")
    (root / "docs" / "plain.txt").write_text("no headings here\njust text about a language model\n")
    (root / "docs" / "empty.txt").write_text("")
    (root / "docs" / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (root / "docs" / "sub" / "deep.md").write_text("# Deep\nlanguage model inside\n")
    make_pdf(
        root / "docs" / "paper.pdf",
        ["Abstract: a language model", "Methods section", "Results: language model wins"],
        toc=[[1, "Abstract", 1], [1, "Methods", 2], [2, "Setup", 2], [1, "Results", 3]],
    )
    make_pdf(root / "docs" / "flat.pdf", ["only one page"])
    (base / "canary.txt").write_text(CANARY)
    (root / "docs" / "escape").symlink_to(base / "canary.txt")
    (root / "docs" / "escape_dir").symlink_to(base)
    return root
