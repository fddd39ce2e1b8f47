"""table() of a long PDF with an outline: answered from the outline alone, against the same
table() once the PDF's text has been extracted (what it cost before), in one run.

    python bench/pdf_table.py [--pages 1000] [--runs 5]

Nothing here is a test; read the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runtime.api import run_script  # noqa: E402


def make_manual(path: Path, pages: int) -> None:
    import pymupdf

    doc = pymupdf.open()
    toc = []
    for i in range(pages):
        page = doc.new_page()
        page.insert_text((72, 72), f"Section {i + 1}")
        page.insert_text((72, 100), "body text of the manual " * 12)
        if i % 10 == 0:
            toc.append([1, f"Chapter {i // 10 + 1}", i + 1])
    doc.set_toc(toc)
    doc.save(path)


def run_s(source: str, root: Path) -> float:
    result = run_script(source, root=root, timeout=120)
    assert result.ok, result.error
    return result.figures["run_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp())
    make_manual(root / "manual.pdf", args.pages)
    outline, extracted = [], []
    for _ in range(args.runs):  # interleaved: the machine's drift hits both alike
        outline.append(run_s('print(File("/manual.pdf").table())\n', root))
        extracted.append(run_s('x = File("/manual.pdf").read(1)\nprint(File("/manual.pdf").table())\n', root))
    a, b = statistics.median(outline) * 1000, statistics.median(extracted) * 1000
    print(f"table() of a {args.pages}-page PDF with an outline (median of {args.runs}):")
    print(f"  from the outline alone:       {a:8.1f} ms")
    print(f"  after extracting its text:    {b:8.1f} ms")
    print(f"  ratio: {b / a:.1f}x faster")


if __name__ == "__main__":
    main()
