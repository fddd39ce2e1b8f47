"""RunIndex: the index a FilesDSL run's FilesService consults, so that content searches
(`search(scope="content")`, `grep`, `file.search`, `contains`) skip documents that provably
hold no match, never reading them.

One TokenIndex per mount of the run's sandbox, made on the mount's first search: the trusted
persistent index of the mount's directory (`fdsl index build`, runtime/index/store.py) when
there is one, else empty; either way it learns every document the run reads while searching
(in memory: a run never writes the index file). A document is excluded only when the index
holds it at the (size, mtime_ns) its file has now (and, learned in memory, the same inode
and ctime) and the pattern's candidates leave it out;
anything else (unknown, changed, too recent to trust, a pattern without literals) is searched
as without an index. An index file that cannot be trusted is not used, and the run warns.
"""

from __future__ import annotations

import os

from runtime.fs.mounts import Location, MountState
from runtime.index import store
from runtime.index.memex import trusted_mtime
from runtime.index.tokens import TokenIndex, change_of, tokens_of
from runtime.services.documents import is_pdf_name

MAX_TOKENS = 1_000_000  # distinct tokens one mount's index may hold; past it, documents are not learned
# A larger text is not learned during a run (tokenizing it would hold up the reply, ~1 s per 16 MB,
# without a deadline check); it is searched every time, as without an index.
MAX_LEARNED_CHARS = 16 << 20
# Deferred learning (a kept server runner, between its runs): the texts waiting, and the largest
# text learned while idle (tokenizing it must not keep the next run waiting long: ~60 ms per M).
MAX_PENDING_CHARS = 32 << 20
MAX_IDLE_LEARNED_CHARS = 1 << 20


def key_of(loc: Location) -> str:
    return "/".join(loc.parts[len(loc.mount.point):])  # loc.rel, joined


def same_kind(loc: Location) -> bool:
    """Is the file read as its own name says (text or PDF)? A file symlink named with the other
    kind ("a.txt" to "b.pdf") is read as its own name says, but keyed by its target's path: no
    record of that key is its text, so the index neither learns it nor rules it out."""
    asked, parts = loc.requested, loc.parts
    return not asked or not parts or asked[-1] == parts[-1] or is_pdf_name(asked[-1]) == is_pdf_name(parts[-1])


class Query:
    """One pattern's candidates, per mount, computed on first need."""

    def __init__(self, run: RunIndex, pattern: str, ignore_case: bool) -> None:
        self.run, self.pattern, self.ignore_case = run, pattern, ignore_case
        # per mount: (its index, the candidates, the first id they know nothing of: a document
        # learned later in the same search, under a key met twice, as a file symlink's, is not
        # ruled out; -1 until the candidates are computed)
        self._by_mount: dict[int, tuple[TokenIndex, int | None, int]] = {}

    def knows(self, loc: Location | None, st: os.stat_result | None) -> bool:
        """Does the index hold this file as it is now (so reading it teaches nothing)?"""
        if loc is None or st is None or not same_kind(loc):
            return False
        return self.run.tokens(loc.mount).fresh(key_of(loc), st.st_size, st.st_mtime_ns, change_of(st)) is not None

    def excludes(self, loc: Location | None, st: os.stat_result | None) -> bool:
        """Does the index prove that this file, as it is now, holds no match? (Asked of every
        file a content search meets: each mount's index and candidates are kept at hand.)"""
        if loc is None or st is None or not same_kind(loc):
            return False
        mount = loc.mount
        known = self._by_mount.get(mount.index)
        if known is None:
            known = self._by_mount[mount.index] = (self.run.tokens(mount), None, -1)
        tokens, bitmap, known_below = known
        rec = tokens.fresh(key_of(loc), st.st_size, st.st_mtime_ns, change_of(st))
        if rec is None:
            return False
        if known_below < 0:  # the candidates, on the first file the index holds
            bitmap, known_below = tokens.candidates(self.pattern, self.ignore_case), tokens.next_id
            self._by_mount[mount.index] = (tokens, bitmap, known_below)
        return bitmap is not None and rec.id < known_below and not bitmap >> rec.id & 1


class RunIndex:
    def __init__(self, persistent: bool = True, learning: bool = True, deferred: bool = False) -> None:
        """`persistent`: use the stored index of a mount when `fdsl index build` made one.
        `learning`: index the texts searches read, for the searches after them. Worth it when
        more searches will come (a Session, the agent tools); a one-shot run does not learn, so
        its first search costs what a plain scan costs (tokenizing every file read would make
        it several times slower, for searches that never come). `deferred`: the texts wait
        (MAX_PENDING_CHARS at most) for `learn_pending()`, called when there is time (a kept
        server runner between its runs), so that no search pays for learning."""
        self.persistent = persistent
        self.learning = learning
        self.deferred = deferred
        self.pending: dict[tuple[int, str], tuple[Location, os.stat_result, str, int]] = {}
        self.pending_chars = 0
        self._mounts: dict[int, TokenIndex] = {}
        self.warnings: list[str] = []
        self.loaded = 0  # persistent indexes in use
        self.learned = 0

    def tokens(self, mount: MountState) -> TokenIndex:
        tokens = self._mounts.get(mount.index)
        if tokens is None:
            tokens = self._load(mount)
            self._mounts[mount.index] = tokens
        return tokens

    def _load(self, mount: MountState) -> TokenIndex:
        if not self.persistent:
            return TokenIndex()
        path = store.default_path(mount.host)
        if not store.present(path):
            return TokenIndex()
        try:
            tokens, _ = store.load(path, with_texts=False, owned=True)
        except store.StoreError as exc:
            self.warnings.append(f"the index of {mount.point_str} was not used: {exc}")
            return TokenIndex()
        self.loaded += 1
        return tokens

    def query(self, pattern: str, ignore_case: bool) -> Query:
        return Query(self, pattern, ignore_case)

    def learn(self, loc: Location | None, st: os.stat_result | None, text: str, read_ns: int) -> None:
        """Index a document the run has read (its text as the search sees it) unless known;
        with `deferred`, keep it for learn_pending()."""
        if loc is None or st is None or not self.learning or not same_kind(loc):
            return
        if self.deferred:
            key = (loc.mount.index, key_of(loc))
            if key in self.pending or len(text) > MAX_IDLE_LEARNED_CHARS:
                return
            if self.pending_chars + len(text) <= MAX_PENDING_CHARS and self.tokens(loc.mount).fresh(
                    key[1], st.st_size, st.st_mtime_ns, change_of(st)) is None:
                self.pending[key] = (loc, st, text, read_ns)
                self.pending_chars += len(text)
            return
        self._learn(loc, st, text, read_ns)

    def learn_pending(self, stop) -> int:
        """Learn the texts kept by a deferred index, one at a time until `stop()` says to;
        returns how many are left. What is learned is what `learn()` would have learned when
        the text was read: the file's size and mtime then, the text read then."""
        while self.pending and not stop():
            key = next(iter(self.pending))
            loc, st, text, read_ns = self.pending.pop(key)
            self.pending_chars -= len(text)
            self._learn(loc, st, text, read_ns)
        return len(self.pending)

    def _learn(self, loc: Location, st: os.stat_result, text: str, read_ns: int) -> None:
        tokens = self.tokens(loc.mount)
        key = key_of(loc)
        if len(text) > MAX_LEARNED_CHARS or tokens.fresh(key, st.st_size, st.st_mtime_ns, change_of(st)) is not None:
            return
        mtime_ns = trusted_mtime(st.st_mtime_ns, read_ns)
        if mtime_ns < 0:
            return  # too recent to be told from a later change: it is searched every time
        found = tokens_of(text)
        if len(tokens.postings) + len(found) > MAX_TOKENS:
            return  # the index is full: this document is searched every time
        tokens.add(key, st.st_size, mtime_ns, found, change=change_of(st))
        self.learned += 1
