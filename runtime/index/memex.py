"""Index: the memexfs seed's API (shared/seeds/memexfs-api.md) over a directory or a sandbox,
in the broker (trusted side), fed only through VirtualFS.

- `open_index(root_or_sandbox)`: every regular file under "/" that reads as a document (text,
  markdown, PDF text; binary files and files over the size limit are left out and counted in
  `skipped`). Its persistent file (runtime/index/store.py, default_path) is loaded when it is
  present and trusted, and refreshed in memory (the tree walked, what changed re-read).
- Freshness: on open (or `refresh()`) every file, then per query every document answered
  from: its (size, mtime_ns) is compared with what was indexed and a changed file is re-read
  before it is searched or read (a file modified less than RACY_NS before it was read is
  re-read every time, as its time cannot tell a later change). A file added since the last
  walk, or changed so that it now matches where it could not before, is seen after
  `refresh()`; FilesDSL's own searches (runtime/index/prefilter.py) walk at every query.
- `Index.from_blob(path)`: a packed index (`pack(path)`, `fdsl index pack DIR -o FILE`): a
  snapshot with its texts, no directory behind it.
- `grep(pattern, glob=None, max_results=100, ignore_case=True)` -> {"hits": [{path, line,
  content}], "total", "truncated"}: the glob is applied first, then the token index keeps the
  candidate documents (runtime/index/tokens.py), whose text the regex engine searches
  (runtime/services/searching.matching_lines: the lines FilesDSL's grep reports).
- `read(path, offset=1, limit=2000)`: lines numbered as FilesDSL's `lines()`; "" past the end.
- `stats()`: documents, lines, bytes, unique tokens, estimated memory.
Errors are MemexError with the seed's messages, naming virtual paths only.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from runtime.budget import mib
from runtime.errors import LimitError, ScriptError
from runtime.fs import paths
from runtime.fs.entries import WalkEntry
from runtime.fs.vfs import VirtualFS
from runtime.index import store
from runtime.index.tokens import TokenIndex, change_of, tokens_of
from runtime.services.documents import DEFAULT_MEMORY_BYTES, Document, DocumentStore, parse_pdf, text_of
from runtime.services.globs import compile_glob
from runtime.services.searching import DEFAULT_GREP_RESULTS, MAX_GREP_RESULTS, SKIPPABLE, line_starts, matching_lines, numbered
from runtime.services.textsearch import Searcher, compile_pattern

RACY_NS = 2_000_000_000
DEFAULT_READ_LINES = 2000


class MemexError(Exception):
    """The seed's errors: path not found, no documents, document not found, invalid regex,
    unknown tool."""


def unknown_tool(name: str) -> MemexError:
    return MemexError(f"unknown tool: {name}")


def trusted_mtime(mtime_ns: int, read_ns: int) -> int:
    """The mtime to record for a file read at `read_ns`: -1 (never fresh) when it is so recent
    that a later change could keep the same (size, mtime_ns)."""
    return mtime_ns if mtime_ns <= read_ns - RACY_NS else -1


class Index:
    def __init__(self, tokens: TokenIndex, texts: dict[str, tuple[str, str]], vfs: VirtualFS | None = None,
                 deadline: float | None = None, memory_bytes: int = DEFAULT_MEMORY_BYTES) -> None:
        self.tokens = tokens
        self.texts = texts  # key -> (kind, text)
        self.memory_bytes = memory_bytes  # what the texts may take: the index keeps them in memory
        self.chars = sum(len(text) for _, text in texts.values())
        self.vfs = vfs
        self.deadline = deadline
        self.skipped: dict[str, tuple[tuple, str]] = {}  # key -> ((size, mtime, change_of) as read, why)
        self._store = DocumentStore(deadline=deadline) if vfs is not None else None
        self._sorted: list[str] | None = None
        self._parsed: dict[str, tuple[Document, list[int]]] = {}  # key -> its lines and their offsets

    # ------------------------------------------------------------------ building

    @classmethod
    def from_blob(cls, path: str | os.PathLike) -> Index:
        try:
            tokens, texts = store.load(Path(path), with_texts=True)
        except store.StoreError as exc:
            raise MemexError(f"cannot load the index blob: {exc}") from None
        return cls(tokens, texts)

    def pack(self, path: str | os.PathLike) -> None:
        store.save(Path(path), self.tokens, self.texts)

    def close(self) -> None:
        """End the PDF extractor, if one was started."""
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            from runtime.errors import DeadlineExceeded
            raise DeadlineExceeded("the run's time limit was reached while indexing")

    def refresh(self, progress=None) -> int:
        """Re-read what changed since it was indexed, drop what is gone; how many were read."""
        if self.vfs is None:
            return 0
        root, _ = self.vfs.resolve_dir("/")
        seen, stale = set(), []
        for e in self.vfs.walk(root, True, check=self._check):
            st = e.st
            if st is None or e.loc is None or (st.st_mode & 0o170000) != 0o100000:
                continue
            seen.add(e.rel)
            change = change_of(st)
            if self.tokens.fresh(e.rel, st.st_size, st.st_mtime_ns, change) is None and \
                    self.skipped.get(e.rel, ("",))[0] != (st.st_size, st.st_mtime_ns, change):
                stale.append(e)
        for key in [k for k in self.tokens.docs if k not in seen]:
            self._drop(key)
        for done, e in enumerate(stale, start=1):
            self._check()
            self._learn(e)
            if progress is not None:
                progress(done, len(stale), e.st.st_size)
        return len(stale)

    def _drop(self, key: str) -> None:
        self.tokens.remove(key)
        old = self.texts.pop(key, None)
        if old is not None:
            self.chars -= len(old[1])
        self._parsed.pop(key, None)
        self._sorted = None

    def _learn(self, e) -> None:
        read_ns = time.time_ns()
        st = e.st
        try:
            data = self._store.read_entry(self.vfs, e)
            if e.name.lower().endswith(".pdf"):
                kind, text = "pdf", parse_pdf(e.rel, data, self._store.extractor, self.deadline).text
            else:
                kind, text = "text", text_of(e.rel, data)
        except SKIPPABLE as exc:
            self._drop(e.rel)
            self.skipped[e.rel] = ((st.st_size, trusted_mtime(st.st_mtime_ns, read_ns), change_of(st)), str(exc))
            return
        self.skipped.pop(e.rel, None)
        self._drop(e.rel)
        if 2 * (self.chars + len(text)) > self.memory_bytes:
            raise MemexError(f"the documents need more than {mib(self.memory_bytes)} of memory (at {e.rel}): "
                             "index a subdirectory")
        self.tokens.add(e.rel, st.st_size, trusted_mtime(st.st_mtime_ns, read_ns), tokens_of(text), change=change_of(st))
        self.texts[e.rel] = (kind, text)
        self.chars += len(text)
        self._parsed.pop(e.rel, None)
        self._sorted = None

    # ------------------------------------------------------------------ the seed's operations

    def grep(self, pattern: str, glob: str | None = None, max_results: int = DEFAULT_GREP_RESULTS,
             ignore_case: bool = True) -> dict:
        if isinstance(max_results, bool) or not isinstance(max_results, int) or not 1 <= max_results <= MAX_GREP_RESULTS:
            raise MemexError(f"max_results must be from 1 to {MAX_GREP_RESULTS}, not {max_results!r}")
        try:
            pat = compile_pattern(pattern, ignore_case)
        except ScriptError as exc:
            reason = str(exc).split(": ", 1)[-1]
            raise MemexError(f"invalid regex: {pattern} ({reason})") from None
        try:
            rx = compile_glob(glob) if glob is not None else None
        except ScriptError as exc:
            raise MemexError(str(exc)) from None
        bitmap = self.tokens.candidates(pattern, ignore_case)
        if bitmap is None:
            keys = self._keys()
        else:
            keys = sorted(self.tokens.keys[i] for i in self.tokens.ids(bitmap))
        searcher = Searcher(self.deadline)
        hits: list[dict] = []
        total = 0
        for key in keys:
            if rx is not None and not rx.match(key):
                continue
            if not self._current(key):
                continue
            doc, starts = self._doc(key)
            for idx in matching_lines(pat, doc, searcher, starts):
                total += 1
                if len(hits) < max_results:
                    hits.append({"path": key, "line": idx + 1, "content": doc.lines[idx]})
        return {"hits": hits, "total": total, "truncated": total > len(hits)}

    def _doc(self, key: str) -> tuple[Document, list[int]]:
        parsed = self._parsed.get(key)
        if parsed is None:
            kind, text = self.texts[key]
            parsed = self._parsed[key] = (Document(key, kind, [], text), line_starts(text))
        return parsed

    def _keys(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self.texts)
        return self._sorted

    def read(self, path: str, offset: int = 1, limit: int = DEFAULT_READ_LINES) -> str:
        for name, value in (("offset", offset), ("limit", limit)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise MemexError(f"{name} must be an integer of 1 or more, not {value!r}")
        key = self._document(path)
        lines = self._doc(key)[0].lines
        return "\n".join(numbered(lines[offset - 1: offset - 1 + limit], offset))

    def _document(self, path: str) -> str:
        """The key of the document at `path`, re-read first if its file changed."""
        try:
            key = paths.relative(paths.split(path))
        except ScriptError:
            raise MemexError(f"document not found: {path}") from None
        if not self._current(key):
            raise MemexError(f"document not found: {key}")
        return key

    def _current(self, key: str) -> bool:
        """Is `key` a document now? Its file is checked, and re-read if it changed."""
        if self.vfs is None:
            return key in self.texts
        try:
            res, st = self.vfs.resolve_file(key)
        except ScriptError:
            self._drop(key)
            return False
        if self.tokens.fresh(key, st.st_size, st.st_mtime_ns, change_of(st)) is None:
            self._learn(WalkEntry(res.vpath, key, res.parts[-1], "file", st, st, res.real, None, res.loc))
        return key in self.texts

    def stats(self) -> dict:
        texts = self.texts
        live = self.tokens.live
        size = sum(self.tokens.docs[k].size for k in texts)
        chars = sum(len(t) for _, t in texts.values())
        tokens = sum(1 for bits in self.tokens.postings.values() if bits & live)
        return {"documents": len(texts), "lines": sum(len(t.splitlines()) for _, t in texts.values()),
                "bytes": size, "unique_tokens": tokens, "skipped": len(self.skipped),
                "memory_bytes": sys.getsizeof("") * len(texts) + 2 * chars + 100 * tokens}


def open_index(root_or_sandbox, *, persistent: bool = True, deadline: float | None = None, progress=None,
               memory_bytes: int = DEFAULT_MEMORY_BYTES) -> Index:
    """The Index of a directory (a host path) or of a sandbox (runtime.fs.sandbox.Sandbox or a
    VirtualFS): loaded from its persistent file when there is a trusted one, then refreshed.
    Its texts are kept in memory, at most `memory_bytes` (2 bytes a character)."""
    vfs, host = _vfs_of(root_or_sandbox)
    tokens, texts = TokenIndex(), {}
    if persistent and host is not None:
        tokens, texts = load_default(host)
    index = Index(tokens, texts, vfs, deadline, memory_bytes)
    try:
        index.refresh(progress)
    except (LimitError, MemexError):
        index.close()
        raise
    if not index.texts:
        index.close()
        raise MemexError(f"no documents found in {shown_name(root_or_sandbox)}")
    return index


def load_default(host: str) -> tuple[TokenIndex, dict]:
    """The trusted index at the default location of `host`, else an empty one."""
    path = store.default_path(host)
    if not store.present(path):
        return TokenIndex(), {}
    try:
        return store.load(path, with_texts=True, owned=True)
    except store.StoreError as exc:
        print(f"fdsl: warning: the index of this directory was not used and will be rebuilt: {exc}", file=sys.stderr)
        return TokenIndex(), {}


def shown_name(root) -> str:
    if isinstance(root, (str, os.PathLike)):
        return os.path.basename(os.path.normpath(os.fspath(root))) or "/"
    return "/"


def _vfs_of(root) -> tuple[VirtualFS, str | None]:
    """A VirtualFS over `root` and the host directory mounted at "/" (None: not one directory)."""
    from runtime.fs.sandbox import Sandbox

    if isinstance(root, VirtualFS):
        vfs = root
    elif isinstance(root, Sandbox):
        vfs = VirtualFS(root)
    else:
        if not isinstance(root, (str, os.PathLike)) or not os.path.isdir(root):
            shown = shown_name(root) if isinstance(root, (str, os.PathLike)) else repr(root)[:80]
            raise MemexError(f"path not found: {shown}")
        vfs = VirtualFS([("/", os.path.abspath(root), False)])
    top = vfs.mount_for(())
    host = top.host if top is not None and top.point == () and len(vfs.sandbox.mounts) == 1 else None
    return vfs, host
