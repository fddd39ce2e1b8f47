"""TokenIndex: the in-memory inverted index of folded word tokens, and the candidate documents
of a regex.

- Tokens: the maximal runs of `\\w` characters (Python's Unicode `\\w`) of the folded text
  (runtime/index/fold.py). A document's postings are the bit of its id in each token's bitmap
  (a Python int); a removed or changed document's id is dropped from `live`, never reused.
- Candidates of a pattern: for each folded literal it requires (fold.required_literals), the
  word runs of the literal. A run with a non-word character on both sides inside the literal
  is a whole token of any text holding the literal: its postings. A run at the literal's edge
  may be part of a longer token: the documents of every token containing it, found by a
  substring scan of the vocabulary (a run found in more than MAX_VOCAB_HITS tokens adds no
  constraint). The candidates are the intersection; a literal without a word character, or a
  pattern without literals, gives None: every document.
- A token over MAX_TOKEN_CHARS is not kept (a hostile document could hold one of megabytes):
  its document is filed under WILD instead, a candidate of every pattern.
- So a document left out provably holds no match; one kept is only a candidate, and the
  caller searches its text with the regex engine.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from runtime.index.fold import complete_for_case, fold, required_literals

WORD = re.compile(r"\w+")
MAX_TOKEN_CHARS = 64
WILD = ""  # never a token: the documents with a token too long to keep
MAX_VOCAB_HITS = 20_000
_CACHED_RUNS = 256


@dataclass(slots=True)
class DocRecord:
    """What the index knows of one document: its id, and the file it was read from."""

    id: int
    size: int
    mtime_ns: int
    change: tuple[int, int] | None = None  # (inode, ctime_ns) of the file read (change_of)


def change_of(st) -> tuple[int, int]:
    """What a file must still have besides its size and mtime for a document read from it to be
    current, as git's index checks: its inode (a file renamed over it is another one) and its
    ctime (a rewrite of the same size with its mtime set back, as `tar x` or `cp -p` leave it,
    still moves the ctime, which no one can set)."""
    return st.st_ino, st.st_ctime_ns


def tokens_of(text: str) -> set[str]:
    return set(WORD.findall(fold(text)))


class TokenIndex:
    def __init__(self) -> None:
        self.docs: dict[str, DocRecord] = {}  # key (a path) -> record
        self.keys: dict[int, str] = {}  # id -> key, live documents only
        self.postings: dict[str, int] = {}
        self.live = 0  # bitmap of the live ids
        self.next_id = 0
        self._vocab: tuple[str, list[int], list[str]] | None = None  # joined tokens, starts, tokens
        self._runs: dict[str, list[str] | None] = {}  # vocabulary scans, while no token is added
        self._run_docs: dict[str, int | None] = {}  # their documents, while no document is added

    # ---------------------------------------------------------------- updates

    def fresh(self, key: str, size: int, mtime_ns: int, change: tuple[int, int] | None = None) -> DocRecord | None:
        """The record of `key` if the file is as it was: the same size, mtime, inode and ctime
        (change_of)."""
        rec = self.docs.get(key)
        if rec is not None and rec.size == size and rec.mtime_ns == mtime_ns and rec.change == change:
            return rec
        return None

    def add(self, key: str, size: int, mtime_ns: int, tokens: set[str] | list[str], doc_id: int | None = None,
            change: tuple[int, int] | None = None) -> int:
        """Index a document's tokens under `key` (replacing what it held); its id."""
        self.remove(key)
        if doc_id is None:
            doc_id = self.next_id
        self.next_id = max(self.next_id, doc_id + 1)
        bit = 1 << doc_id
        postings = self.postings
        added = False
        if any(len(token) > MAX_TOKEN_CHARS for token in tokens):
            tokens = [token for token in tokens if len(token) <= MAX_TOKEN_CHARS] + [WILD]
        for token in tokens:
            old = postings.get(token)
            if old is None:
                postings[token] = bit
                added = True
            else:
                postings[token] = old | bit
        if added:
            self._vocab = None
            self._runs.clear()
        self._run_docs.clear()
        self.docs[key] = DocRecord(doc_id, size, mtime_ns, change)
        self.keys[doc_id] = key
        self.live |= bit
        return doc_id

    def load(self, records: list[tuple[int, str, int, int, int, int]]) -> None:
        """Documents (id, key, size, mtime_ns, inode, ctime_ns) of a stored index, before its postings."""
        live = 0
        for doc_id, key, size, mtime_ns, ino, ctime_ns in records:
            self.docs[key] = DocRecord(doc_id, size, mtime_ns, (ino, ctime_ns))
            self.keys[doc_id] = key
            live |= 1 << doc_id
        self.live |= live
        self.next_id = max(self.next_id, max((r[0] for r in records), default=-1) + 1)
        self._vocab = None
        self._runs.clear()
        self._run_docs.clear()

    def remove(self, key: str) -> None:
        rec = self.docs.pop(key, None)
        if rec is not None:
            del self.keys[rec.id]
            self.live &= ~(1 << rec.id)

    # ---------------------------------------------------------------- queries

    def candidates(self, pattern: str, ignore_case: bool = True) -> int | None:
        """Bitmap of the live documents that may hold a match; None: any may."""
        if not complete_for_case():  # the fold may not equate what the engine does
            return None
        literals = required_literals(pattern, ignore_case)
        if literals is None:
            return None
        result = None
        for literal in literals:
            docs = self._literal_docs(literal)
            if docs is not None:
                result = docs if result is None else result & docs
        if result is None:
            return None
        return (result | self.postings.get(WILD, 0)) & self.live

    def _literal_docs(self, literal: str) -> int | None:
        result = None
        for m in WORD.finditer(literal):
            whole = m.start() > 0 and m.end() < len(literal)
            docs = self.postings.get(m.group(), 0) if whole else self._containing(m.group())
            if docs is not None:
                result = docs if result is None else result & docs
        return result

    def _containing(self, run: str) -> int | None:
        """The documents of every token containing `run` (None: too many tokens do)."""
        if run in self._run_docs:
            return self._run_docs[run]
        found = self._tokens_containing(run)
        docs = None
        if found is not None:
            docs = 0
            for token in found:
                docs |= self.postings[token]
        if len(self._run_docs) >= _CACHED_RUNS:
            self._run_docs.clear()
        self._run_docs[run] = docs
        return docs

    def _tokens_containing(self, run: str) -> list[str] | None:
        if run in self._runs:
            return self._runs[run]
        joined, starts, tokens = self._vocabulary()
        found: list[str] | None = []
        last = -1
        pos = joined.find(run)
        while pos >= 0:
            i = bisect.bisect_right(starts, pos) - 1
            if i != last:
                found.append(tokens[i])
                last = i
                if len(found) > MAX_VOCAB_HITS:
                    found = None
                    break
            pos = joined.find(run, pos + 1)
        if len(self._runs) >= _CACHED_RUNS:
            self._runs.clear()
        self._runs[run] = found
        return found

    def _vocabulary(self) -> tuple[str, list[int], list[str]]:
        if self._vocab is None:
            tokens = sorted(token for token in self.postings if token != WILD)
            starts, pos = [], 0
            for token in tokens:
                starts.append(pos)
                pos += len(token) + 1
            self._vocab = ("\n".join(tokens), starts, tokens)
        return self._vocab

    def ids(self, bitmap: int) -> list[int]:
        """The ids set in a bitmap, ascending."""
        out = []
        while bitmap:
            low = bitmap & -bitmap
            out.append(low.bit_length() - 1)
            bitmap ^= low
        return out
