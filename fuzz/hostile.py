"""Hostile documents the fuzzer, the corpus, the tests and the benchmarks share."""

from __future__ import annotations

import zlib

# One text operator, repeated: MuPDF's text extraction grows by ~650 bytes per repeat (78 KB of
# PDF once drove an in-process parser to 682 MiB).
_SHOW = b"(abcdefghijklmnopqrstuvwxyz) Tj "


def pdf_with_content(content: bytes) -> bytes:
    """A one-page PDF (Helvetica as /F1) whose page content stream is `content`, deflated."""
    stream = zlib.compress(content, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 4 0 R >> >> "
        b"/Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def pdf_bomb(repeats: int) -> bytes:
    """A small PDF whose text extraction needs about 650 bytes of memory per repeat."""
    return pdf_with_content(b"BT /F1 1 Tf 72 770 Td " + _SHOW * repeats + b"ET")
