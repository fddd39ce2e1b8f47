"""The broker's budgets: one reply budget charged while a reply is built, a document cache
bounded in bytes, PDFs parsed by a jailed extractor bounded in memory, pages and time.

Each of these once let a valid script or a hostile document take the trusted broker down
(a reply encoded whole before any check grew past 20 GB; a 1 MB PDF drove it to ~10 GB)."""

from __future__ import annotations

import time

import pymupdf
import pytest

from fuzz.hostile import pdf_bomb
from runtime import run_script
from runtime.broker import Broker
from runtime.budget import ReplyBudget, check_limit, json_size
from runtime.errors import LimitError
from runtime.fs.vfs import VirtualFS
from runtime.services.documents import DocumentStore, memory_cost
from runtime.services.files import FilesService
from runtime.services.pdf import PdfExtractor
from wire import protocol

WIDE_LINE = "w" * 1000 + "\n"


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "wide.txt").write_text(WIDE_LINE * 80)  # one page of 80 KB
    (root / "small.txt").write_text("needle\n" * 200)
    return root


def run(source: str, root, **kwargs):
    kwargs.setdefault("timeout", 60)
    return run_script(source, root=str(root), **kwargs)


# ---------------------------------------------------------------- the reply budget


def test_a_page_repeated_stops_at_the_reply_budget_not_at_the_protocol(root):
    # 1,000 copies of an 80 KB page is an 80 MB reply: over the worker's frame limit, which
    # once ended the run as "the worker broke the protocol".
    r = run('x = File("wide.txt").read(pages=[1] * 1000)\nprint(len(x))\n', root)
    assert r.exit_code == 1 and r.error_kind == "LimitError", r.error
    assert "reply would exceed 16 MiB (read of 1,000 pages of wide.txt); narrow the request" in r.error
    assert "protocol" not in r.error and r.error_line == 1


def test_the_reply_budget_is_a_run_argument(root):
    r = run('x = File("wide.txt").read(pages=[1, 1])\nprint(len(x))\n', root, max_reply_bytes=100_000)
    assert r.exit_code == 1 and "reply would exceed 97.7 KiB (read of 2 pages of wide.txt)" in r.error
    r = run('x = File("wide.txt").read(pages=[1])\nprint(len(x))\n', root, max_reply_bytes=100_000)
    assert r.ok and r.output == "1\n"


@pytest.mark.parametrize("source, what", [
    ('print(len(File("small.txt").snippets("needle", max_results=1000000, context_chars=1000000)))',
     "snippets of small.txt"),
    ('print(len(File("wide.txt").lines(offset=1, limit=1000000000)))', "lines() of wide.txt"),
    ('print(len(Directory("/").grep("w")))', "grep in ."),
    ('print(len(File("wide.txt").read()))', "read of all of wide.txt"),
    ('print(len(File("wide.txt").head()))', "head() of wide.txt"),
])
def test_every_large_reply_is_charged_while_it_is_built(root, source, what):
    (root / "more.txt").write_text(WIDE_LINE * 200)
    r = run(source + "\n", root, max_reply_bytes=64 << 10)
    assert r.exit_code == 1 and r.error_kind == "LimitError", r.error
    assert f"({what}); narrow the request" in r.error


def test_listings_are_charged_too(root):
    for i in range(300):
        (root / f"file-with-a-rather-long-name-{i:04}.txt").write_text("x")
    for call in ("files()", "list()", 'find("*.txt")', 'search("name", scope="name")'):
        r = run(f'print(len(Directory("/").{call}))\n', root, max_reply_bytes=8 << 10)
        assert r.exit_code == 1 and "reply would exceed 8 KiB" in r.error, (call, r.error)


def test_the_budget_stops_at_the_first_piece_over_it():
    budget = ReplyBudget(10_000, "read of 1,000 pages")
    pieces = iter(["x" * 3000] * 1000)
    taken = []
    with pytest.raises(LimitError, match=r"reply would exceed 9.8 KiB \(read of 1,000 pages\)"):
        for piece in pieces:
            taken.append(budget.charge(piece))
    assert len(taken) == 3  # the fourth piece was refused: nothing more was built
    assert json_size("é\n") == len('"é\\n"'.encode())  # exact JSON size, UTF-8, escapes


def test_a_reply_no_handler_charged_is_cut_by_the_broker_backstop():
    broker = Broker({"ping": lambda: "x" * 200_000}, 16 << 10)
    frame = broker.reply_frame({"t": "call", "op": "ping", "a": {}})
    reply = protocol.decode(frame[protocol.HEADER.size:])
    assert reply["t"] == "err" and reply["kind"] == "LimitError"
    assert "reply would exceed 16 KiB (ping" in reply["msg"]


def test_memory_error_in_a_handler_is_a_limit_error_not_a_traceback():
    def hungry():
        raise MemoryError

    reply = Broker({"ping": hungry}).reply({"t": "call", "op": "ping", "a": {}})
    assert reply == {"t": "err", "kind": "LimitError",
                     "msg": "ping: the broker ran out of memory serving this request; narrow it"}


def test_the_budget_cannot_pass_the_workers_frame_limit():
    with pytest.raises(ValueError, match="reply budget must be from"):
        check_limit(protocol.MAX_REPLY_VALUE_BYTES + 1)
    assert protocol.MAX_REPLY_BYTES >= protocol.MAX_REPLY_VALUE_BYTES + protocol.REPLY_ENVELOPE_BYTES


# ---------------------------------------------------------------- the document cache


def test_the_document_cache_stays_within_its_memory_budget(tmp_path):
    for i in range(12):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}\n" + "y" * 200_000)
    store = DocumentStore(memory_bytes=1 << 20)
    svc = FilesService(VirtualFS([("/", tmp_path, False)]), store)
    for i in range(12):
        assert svc.file_read(f"f{i}.txt", 1).startswith(f"file {i}")
        assert store.used <= store.memory_bytes
    assert store.evictions > 0 and len(store._cache) < 12
    assert store.used == sum(cost for _, _, cost in store._cache.values())
    # The most recently used stay; an evicted file is parsed again when asked for.
    parsed = store.parse_count
    svc.file_read("f11.txt", 1)
    assert store.parse_count == parsed
    svc.file_read("f0.txt", 1)
    assert store.parse_count == parsed + 1


def test_a_document_larger_than_the_memory_budget_is_refused(tmp_path):
    (tmp_path / "big.txt").write_text("z" * 600_000)
    svc = FilesService(VirtualFS([("/", tmp_path, False)]), DocumentStore(memory_bytes=1 << 20))
    with pytest.raises(LimitError, match=r"big.txt needs about .* of broker memory once parsed, over the "
                                         r"broker's memory budget of 1 MiB \(--broker-memory\)"):
        svc.file_read("big.txt", None)


def test_memory_cost_counts_text_pages_and_lines():
    from runtime.services.documents import parse_text

    doc = parse_text("a.txt", b"abc\n" * 10_000)
    assert memory_cost(doc) >= 3 * len(doc.text)


# ---------------------------------------------------------------- PDFs


def test_a_pdf_bomb_meets_the_extractors_memory_limit_not_the_brokers(tmp_path):
    data = pdf_bomb(1_000_000)
    assert len(data) < 100_000
    (tmp_path / "bomb.pdf").write_bytes(data)
    started = time.monotonic()
    r = run('print(File("bomb.pdf").page_count)\n', tmp_path, pdf_memory_mb=256)
    assert r.exit_code == 1 and r.error_kind == "LimitError", r.error
    assert "cannot read PDF bomb.pdf" in r.error and "--pdf-memory" in r.error
    assert time.monotonic() - started < 30


def test_a_pdf_bomb_stops_at_the_runs_deadline(tmp_path):
    (tmp_path / "bomb.pdf").write_bytes(pdf_bomb(3_000_000))
    r = run('print(File("bomb.pdf").page_count)\n', tmp_path, timeout=1.5, pdf_memory_mb=4096)
    assert r.exit_code == 124, r.error
    assert "reading the PDF bomb.pdf" in r.error or "did not finish within" in r.error
    assert r.figures["wall_s"] < 1.5 + 3


def test_a_pdf_with_too_many_pages_is_refused_before_extraction(tmp_path):
    doc = pymupdf.open()
    for _ in range(30):
        doc.new_page()
    (tmp_path / "long.pdf").write_bytes(doc.tobytes())
    r = run('print(File("long.pdf").page_count)\n', tmp_path, max_pdf_pages=20)
    assert r.exit_code == 1 and r.error_kind == "LimitError"
    assert "it has 30 pages, over the limit of 20 pages per PDF (--max-pdf-pages)" in r.error


def test_pdf_text_is_bounded_in_bytes(tmp_path):
    doc = pymupdf.open()
    for i in range(20):
        doc.new_page().insert_text((72, 72), f"page {i} " + "lorem ipsum " * 40)
    extractor = PdfExtractor(max_text_bytes=2000)
    try:
        with pytest.raises(LimitError, match="its text passes the limit of 2000 bytes per document"):
            extractor.extract("t.pdf", doc.tobytes(), None)
        # The extractor survives a refused document and serves the next one.
        pages, outline, repaired = extractor.extract("ok.pdf", _one_page(), None)
        assert pages == ["hello\n"] and outline == [] and repaired is False
    finally:
        extractor.close()


def _one_page() -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "hello")
    return doc.tobytes()


def test_the_extractor_is_jailed_like_the_worker():
    extractor = PdfExtractor()
    try:
        extractor.extract("a.pdf", _one_page(), None)
        assert extractor.layers is not None
        assert all(status.startswith(("active", "not needed")) for status in extractor.layers.values()), extractor.layers
    finally:
        extractor.close()


def test_the_broker_never_imports_pymupdf(root):
    import subprocess
    import sys

    (root / "a.pdf").write_bytes(_one_page())
    code = ("import sys\nfrom runtime import run_script\n"
            f"r = run_script('print(File(\"a.pdf\").read())', root={str(root)!r})\n"
            "assert r.ok, r.error\nprint('pymupdf' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_each_reply_has_a_budget_of_its_own(tmp_path):
    # Budgets are per reply: many calls whose replies add up past the budget all succeed.
    (tmp_path / "page.txt").write_text("p" * 30_000)
    svc = FilesService(VirtualFS([("/", tmp_path, False)]), max_reply_bytes=64 << 10)
    for _ in range(100):
        assert len(svc.file_read("page.txt", [1, 1])) == 2
