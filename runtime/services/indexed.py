"""FilesService's use of the run's index (runtime/index/prefilter.py): a content search asks
it which files it rules out, makes for those the checks a read would make, and teaches it
the texts it reads. A mixin of FilesService: it uses its vfs, store and index."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from runtime.services.documents import Document

if TYPE_CHECKING:
    from runtime.index.prefilter import Query


class IndexedSearches:
    def _query(self, pattern: str, ignore_case: bool) -> Query | None:
        return self.index.query(pattern, ignore_case) if self.index is not None else None

    def _excluded(self, query: Query | None, loc, vpath: str, st) -> bool:
        """Does the index rule this file out? Then the checks a read would make are made
        (size limit, the mount's policy and approval), so that the outcome is the same."""
        if query is None or not query.excludes(loc, st):
            return False
        if st.st_size > self.store.max_bytes:
            raise self.store.too_big(vpath, st.st_size)
        self.vfs.check_readable(loc, vpath, st.st_size)
        return True

    def _learn(self, loc, st, text: str, read_ns: int) -> None:
        if self.index is not None:
            self.index.learn(loc, st, text, read_ns)

    def _searched_doc(self, path: str, pattern: str, ignore_case: bool) -> Document | None:
        """The document to search for `pattern`, or None when the index rules it out."""
        res, st = self.vfs.resolve_file(path)
        if self._excluded(self._query(pattern, ignore_case), res.loc, res.vpath, st):
            return None
        read_ns = time.time_ns()
        doc = self.store.get(self.vfs, res, st)
        self._learn(res.loc, st, doc.text, read_ns)
        return doc
