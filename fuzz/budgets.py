"""Fuzz targets for what a request or a document can cost the broker.

- replies: FilesDSL ops with generated arguments (repeated pages, huge max_results and
  context_chars, lines limits, listings, greps) straight into a Broker with a small reply
  budget. Property: every reply frame fits the budget plus its envelope, and a refusal is the
  budget's LimitError (or another script error), never an InternalError.
- documents: generated and mutated text and PDF bytes (a seed PDF with bytes flipped, cut or
  spliced, PDF bombs) read through a DocumentStore with a small memory budget and a small PDF
  extractor. Property: every op ends with a result or a script error (never a traceback or an
  InternalError), within the deadline plus a margin, and the store stays within its budget.
"""

from __future__ import annotations

import time

from hypothesis import strategies as st

from fuzz.hostile import pdf_bomb, pdf_with_content
from fuzz.targets import Sandbox, Stats, run_batches

REPLY_BUDGET = 32 << 10
WIDE_PAGE = ("w" * 700 + "\n") * 80

_sizes = st.one_of(st.integers(-5, 50), st.integers(0, 10 ** 7))
_patterns = st.sampled_from(["w", "alpha", "", "w+", "(w)", "^", "$", "language model", "[a-z]"])
_paths = st.sampled_from(["data/a.txt", "data/b.md", "wide.txt", "doc.pdf", "data/sub/c.txt"])


def _reply_calls():
    pages = st.one_of(st.none(), st.integers(-2, 5), st.lists(st.integers(-1, 5), max_size=3000))
    return st.one_of(
        st.builds(lambda p, pg: ("file.read", {"path": p, "pages": pg}), _paths, pages),
        st.builds(lambda p, pat, n, c, i: ("file.snippets", {"path": p, "pattern": pat, "max_results": n,
                                                             "context_chars": c, "ignore_case": i}),
                  _paths, _patterns, _sizes, _sizes, st.booleans()),
        st.builds(lambda p, o, n: ("file.lines", {"path": p, "offset": o, "limit": n}), _paths, _sizes, _sizes),
        st.builds(lambda p, n: ("file.table", {"path": p, "max_items": n}), _paths, _sizes),
        st.builds(lambda p: ("file.head", {"path": p}), _paths),
        st.builds(lambda pat, i: ("dir.grep", {"path": "/", "pattern": pat, "glob": None, "ignore_case": i, "max_results": 100}),
                  _patterns, st.booleans()),
        st.builds(lambda r: ("dir.files", {"path": "/", "recursive": r, "offset": 0, "limit": 0}), st.booleans()),
        st.builds(lambda r, o: ("dir.iter", {"path": "/", "recursive": r, "offset": o}), st.booleans(), _sizes),
        st.builds(lambda g: ("dir.find", {"path": "/", "glob": g}), st.sampled_from(["**", "*", "**/*.txt", "?"])),
        st.builds(lambda pat, s: ("dir.search", {"path": "/", "pattern": pat, "scope": s, "recursive": True,
                                                 "ignore_case": False}), _patterns,
                  st.sampled_from(["name", "content", "both"])),
    )


def fuzz_replies(budget_s: float, seed: int) -> Stats:
    from runtime.api import file_handlers
    from runtime.broker import Broker
    from runtime.fs.vfs import VirtualFS
    from runtime.services.files import FilesService
    from wire import protocol

    stats = Stats("replies", "requests")
    box = Sandbox([("wide.txt", WIDE_PAGE * 3), ("doc.pdf", pdf_with_content(b"BT /F1 12 Tf 72 700 Td (alpha w) Tj ET")),
                   *[(f"many/f{i:03}.txt", "w\n" * 50) for i in range(200)]])
    service = FilesService(VirtualFS([("/", box.root, False)]), deadline=None, max_reply_bytes=REPLY_BUDGET)
    broker = Broker(file_handlers(service), REPLY_BUDGET)
    limit = REPLY_BUDGET + protocol.REPLY_ENVELOPE_BYTES

    def check(call) -> None:
        op, args = call
        frame = broker.reply_frame({"t": "call", "op": op, "a": args})
        assert len(frame) - protocol.HEADER.size <= limit, f"{op}: a reply of {len(frame)} bytes"
        reply = protocol.decode(frame[protocol.HEADER.size:])
        if reply["t"] == "err":
            assert reply["kind"] != "InternalError", f"{op}: {reply['msg']}"
            if "reply would exceed" in reply["msg"]:
                stats.note("refused by the reply budget")
            else:
                stats.note("replied err")
        else:
            stats.note("replied ok")

    try:
        run_batches(stats, _reply_calls(), check, budget_s, seed)
    finally:
        service.store.close()
        box.close()
    return stats


def _mutated_pdfs():
    seed_pdf = pdf_with_content(b"BT /F1 12 Tf 72 700 Td (1 Introduction . . . . 3) Tj ET")
    flips = st.lists(st.tuples(st.integers(0, len(seed_pdf) - 1), st.integers(0, 255)), max_size=20)

    def flipped(changes):
        data = bytearray(seed_pdf)
        for at, value in changes:
            data[at] = value
        return bytes(data)

    return st.one_of(
        st.builds(flipped, flips),
        st.builds(lambda n: seed_pdf[:n], st.integers(0, len(seed_pdf))),
        st.builds(lambda n: pdf_bomb(n), st.integers(1, 400_000)),
        st.builds(lambda body: pdf_with_content(body), st.binary(max_size=2000)),
        st.binary(max_size=4000).map(lambda b: b"%PDF-1.4\n" + b),
    )


def _texts():
    toc_line = st.builds(lambda title, gap, page: f"{title}{gap}{page}\n",
                         st.text(alphabet="1. aZ\t#", max_size=60), st.text(alphabet=" .\t…", max_size=400),
                         st.integers(0, 99999))
    return st.one_of(
        st.binary(max_size=20_000),
        st.lists(toc_line, max_size=300).map(lambda lines: "".join(lines).encode()),
        st.text(max_size=5000).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )


def fuzz_documents(budget_s: float, seed: int, deadline_s: float = 2.0) -> Stats:
    from runtime.errors import ScriptError
    from runtime.fs.vfs import VirtualFS
    from runtime.services.documents import DocumentStore
    from runtime.services.files import FilesService
    from runtime.services.pdf import PdfExtractor

    stats = Stats("documents", "documents")
    box = Sandbox()
    store = DocumentStore(memory_bytes=8 << 20, extractor=PdfExtractor(memory_bytes=256 << 20, max_pages=50))

    def check(document) -> None:
        name, data = document
        (box.root / name).write_bytes(data)
        deadline = time.monotonic() + deadline_s
        store.deadline = deadline
        service = FilesService(VirtualFS([("/", box.root, False)]), store, deadline=deadline)
        for op, args in (("file_page_count", ()), ("file_table", (20,)), ("file_read", (1,)),
                         ("file_snippets", ("a", 5, 40, True)), ("file_search", ("[0-9]+", False))):
            try:
                getattr(service, op)(name, *args)
                stats.note("op ok")
            except ScriptError as exc:
                stats.note(f"refused: {exc.kind}")
        overrun = time.monotonic() - deadline
        assert overrun < 3.0, f"{name}: the ops ran {overrun:.1f} s past the deadline"
        assert store.used <= store.memory_bytes, f"the store holds {store.used} bytes"
        stats.note("pdf" if name.endswith(".pdf") else "text")

    documents = st.one_of(st.tuples(st.just("doc.pdf"), _mutated_pdfs()), st.tuples(st.just("doc.txt"), _texts()))
    try:
        run_batches(stats, documents, check, budget_s, seed, batch=10)
    finally:
        store.close()
        box.close()
    stats.notes["PDF extractor processes started"] = store.extractor.started
    return stats


TARGETS = {"replies": fuzz_replies, "documents": fuzz_documents}
