"""The PDF text extractor: a jailed process of its own, never the script's worker.

A PDF is hostile input, and MuPDF is a large C library: parsing one in the trusted broker let a
1 MB crafted file drive the broker to ~10 GB and 50 s. The broker (runtime/services/pdf.py) starts this
process on the run's first PDF and keeps it for the run. It imports PyMuPDF, then hardens
itself with every layer the script worker has (sandbox_worker/hardening.py: no files, no
network, no processes, an address-space and CPU limit), and serves one request at a time:

  broker -> extractor  {"t": "start", "limits": {...}, "max_pages": int, "max_text_bytes": int}
  extractor -> broker  {"t": "ready", "layers": {...}}
  broker -> extractor  {"t": "pdf", "size": int} followed by exactly `size` raw bytes
  extractor -> broker  {"t": "ok", "pages": [str], "outline": [[level, title, page]],
                        "repaired": bool}
                       {"t": "err", "msg": str}      the PDF cannot be read (no host path in it)

A PDF over `max_pages` pages or whose text passes `max_text_bytes` is refused before more is
extracted. The broker ends the process at the run's deadline, and reports its death (memory,
CPU) as the limit it hit.
"""

from __future__ import annotations

import os
import re

from wire import protocol

_ABS_PATH = re.compile(r"(?:[A-Za-z]:)?[/\\][^\s'\"]*")
# MuPDF reports an allocation its address-space limit refused as an error of the document.
_OUT_OF_MEMORY = re.compile(r"\b(?:m|re|c)alloc\b.*\bfailed|out of memory", re.IGNORECASE)
OUT_OF_MEMORY = "it needs more memory than the PDF extractor may use (--pdf-memory)"
# Titles of a hostile outline are cut: the table of contents shows one line per entry.
MAX_TITLE_CHARS = 1000
MAX_OUTLINE_ENTRIES = 10_000


def _reason(exc: BaseException) -> str:
    """A library message without anything that looks like a path."""
    return _ABS_PATH.sub("<path>", str(exc)).strip() or type(exc).__name__


def _failure(exc: BaseException) -> dict:
    if isinstance(exc, MemoryError) or _OUT_OF_MEMORY.search(str(exc)):
        return {"t": "err", "limit": True, "msg": OUT_OF_MEMORY}
    return {"t": "err", "msg": _reason(exc)}


def _opened(pymupdf, data: bytes, max_pages: int, answer) -> dict:
    """`answer(pdf)`'s reply for the PDF `data`, once it has opened, is not encrypted and is
    within the page limit; any failure as the document's error reply."""
    try:
        pdf = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # noqa: BLE001 - any parser failure is the document's
        return _failure(exc)
    try:
        if pdf.needs_pass or pdf.is_encrypted:
            return {"t": "err", "msg": "it is encrypted (password protected)"}
        count = pdf.page_count
        if count > max_pages:
            return {"t": "err", "msg": f"it has {count} pages, over the limit of {max_pages} pages per PDF (--max-pdf-pages)",
                    "limit": True}
        return answer(pdf)
    except Exception as exc:  # noqa: BLE001
        return _failure(exc)
    finally:
        pdf.close()


def _outline(pdf) -> dict:
    outline = [[int(level), str(title).strip()[:MAX_TITLE_CHARS], int(number)]
               for level, title, number, *_ in pdf.get_toc(simple=True)[:MAX_OUTLINE_ENTRIES]]
    return {"t": "ok", "outline": outline, "repaired": bool(getattr(pdf, "is_repaired", False))}


def extract(pymupdf, data: bytes, max_pages: int, max_text_bytes: int) -> dict:
    def pages_and_outline(pdf) -> dict:
        pages, used = [], 0
        for page in pdf:
            text = page.get_text()
            used += len(text.encode("utf-8", "surrogatepass"))
            if used > max_text_bytes:
                return {"t": "err", "limit": True,
                        "msg": f"its text passes the limit of {max_text_bytes} bytes per document (at page {page.number + 1})"}
            pages.append(text)
        return {**_outline(pdf), "pages": pages}

    return _opened(pymupdf, data, max_pages, pages_and_outline)


def outline_of(pymupdf, data: bytes, max_pages: int) -> dict:
    """The outline alone (table()): no page's text is extracted."""
    return _opened(pymupdf, data, max_pages, _outline)


def warm_up(pymupdf) -> None:
    """Extract a small PDF made here before hardening: PyMuPDF imports modules lazily (codecs
    among them), and after hardening nothing can be imported."""
    import encodings.raw_unicode_escape  # noqa: F401 - text extraction decodes with it
    import encodings.unicode_escape  # noqa: F401

    sample = pymupdf.open()
    page = sample.new_page()
    page.insert_text((72, 72), "warm-up \u00e9\u4e2d")
    sample.set_toc([[1, "Warm-up", 1]])
    data = sample.tobytes()
    sample.close()
    extract(pymupdf, data, 1, 1 << 20)
    outline_of(pymupdf, data, 1)


def main() -> None:
    import pymupdf

    from sandbox_worker.hardening import harden

    try:
        pymupdf.TOOLS.mupdf_display_errors(False)
        pymupdf.TOOLS.mupdf_display_warnings(False)
    except Exception:  # noqa: BLE001 - older PyMuPDF
        pass
    warm_up(pymupdf)
    start = protocol.read_frame(0, protocol.MAX_REQUEST_BYTES)
    if start.get("t") != "start":
        os._exit(3)
    layers = harden(start["limits"])
    protocol.write_frame(1, {"t": "ready", "layers": layers})
    max_pages, max_text = int(start["max_pages"]), int(start["max_text_bytes"])
    while True:
        try:
            request = protocol.read_frame(0, protocol.MAX_REQUEST_BYTES)
        except EOFError:
            os._exit(0)
        if request.get("t") != "pdf" or type(request.get("size")) is not int:
            os._exit(3)
        data = protocol.read_exact(0, request["size"])
        try:
            if request.get("only") == "outline":
                reply = outline_of(pymupdf, data, max_pages)
            else:
                reply = extract(pymupdf, data, max_pages, max_text)
        except MemoryError as exc:
            reply = _failure(exc)
        del data
        protocol.write_frame(1, reply)


if __name__ == "__main__":
    main()
