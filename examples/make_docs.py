"""Regenerate the binary members of examples/docs/ (run from anywhere):

    python examples/make_docs.py

- reports/annual-report.pdf: a 4-page PDF with an outline (bookmarks), made with pymupdf.
- notes/legacy-export.txt: a text file with a few invalid UTF-8 bytes (Latin-1 leftovers).

The text and markdown files of the collection are written by hand and committed as they are.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

DOCS = Path(__file__).resolve().parent / "docs"

PAGES = [
    (
        "Lumen Evaluation - Annual Report 2026",
        [
            "1 Introduction",
            "This report summarizes a year of evaluating the Lumen transformer",
            "language model. We ran three suites: reading comprehension,",
            "summarization and code completion, on two checkpoints.",
            "",
            "1.1 Scope",
            "The evaluation covers English tasks only. Multilingual results",
            "will be published separately next year.",
        ],
    ),
    (
        "2 Methods",
        [
            "2.1 Datasets",
            "Three public datasets and one internal set of support tickets.",
            "Each is split into a development part and a held-out test part.",
            "",
            "2.2 Metrics",
            "Exact match for short answers, ROUGE-L for summaries, prompt",
            "stability under paraphrase, and cost in GPU-hours per 1k examples.",
        ],
    ),
    (
        "3 Results",
        [
            "The new language model checkpoint improves accuracy by 2.1 points",
            "on the core suite and costs 12% less to run than the previous one.",
            "Stability is unchanged: 7% of answers flip under paraphrase.",
            "Code completion regressed on files longer than 400 lines.",
        ],
    ),
    (
        "4 Recommendations",
        [
            "Ship the new checkpoint for reading comprehension and summarization.",
            "Keep the previous checkpoint for code completion until the",
            "long-file regression is understood.",
            "Add a second summarization metric that does not reward length.",
        ],
    ),
]

TOC = [
    [1, "1 Introduction", 1],
    [2, "1.1 Scope", 1],
    [1, "2 Methods", 2],
    [2, "2.1 Datasets", 2],
    [2, "2.2 Metrics", 2],
    [1, "3 Results", 3],
    [1, "4 Recommendations", 4],
]


def make_pdf(path: Path) -> None:
    doc = pymupdf.open()
    for title, lines in PAGES:
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 90), title, fontsize=16)
        y = 130
        for line in lines:
            page.insert_text((72, y), line, fontsize=11)
            y += 18
    doc.set_toc(TOC)
    doc.set_metadata({"title": "Lumen Evaluation - Annual Report 2026", "author": "Lumen evaluation team"})
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path, garbage=4, deflate=True)
    doc.close()


def make_legacy(path: Path) -> None:
    text = (
        "Legacy export from the 2025 evaluation tracker\n"
        "Owner: J\xe9r\xf4me (exported as Latin-1, not UTF-8)\n"
        "Status: the language model baseline was re-run in d\xe9cembre\n"
        "End of export\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("latin-1"))


def main() -> None:
    make_pdf(DOCS / "reports" / "annual-report.pdf")
    make_legacy(DOCS / "notes" / "legacy-export.txt")


if __name__ == "__main__":
    main()
