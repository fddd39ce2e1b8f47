"""FilesService's handlers for the `file.*` ops (a mixin of FilesService, runtime/services/files.py:
it uses its vfs, store, reply budgets, deadline and index).

Decisions:
- `file_snippets`: max_results <= 0 returns []; context_chars < 0 is a ScriptError. Matches are
  taken per page, pages in order; an excerpt never crosses a page.
- `file_table`: max_items must be >= 1; more entries than that end with "... (N more entries)".
  A PDF with an outline is answered from it, without extracting its text.
- `file_lines`: numbers are right-aligned to max(3, digits of the last number shown), then two
  spaces and the line (an empty line is just its number). offset < 1 and limit < 1 are
  ScriptErrors; an offset past the end returns "".
"""

from __future__ import annotations

import re

from runtime.errors import LimitError, ScriptError
from runtime.services.documents import Document, format_toc, is_pdf_name
from runtime.services.searching import numbered
from runtime.services.textsearch import compile_pattern

_NEWLINES = re.compile(r"\r\n|\n|\r")


class FileOps:
    def file_open(self, path: str) -> dict:
        res, st = self.vfs.resolve_file(path)
        name = res.parts[-1]
        return self._file_info(res.vpath, name, st)

    def file_page_count(self, path: str) -> int:
        return self._doc(path).page_count

    def _page(self, doc: Document, n) -> str:
        if isinstance(n, bool) or not isinstance(n, int):
            raise ScriptError(f"a page number must be an integer, not {type(n).__name__}")
        if n < 1 or n > doc.page_count:
            count = doc.page_count
            raise ScriptError(
                f"page {n} is out of range: {doc.vpath} has {count} page{'s' if count != 1 else ''}"
            )
        return doc.pages[n - 1]

    def file_read(self, path: str, pages):
        doc = self._doc(path)
        if pages is None:
            return self.budget(f"read of all of {doc.vpath}").charge(doc.text)
        if isinstance(pages, list):
            if len(pages) > self.max_pages_per_read:
                raise LimitError(
                    f"read() asked for {len(pages)} pages, at most {self.max_pages_per_read} per call"
                )
            budget = self.budget(f"read of {len(pages):,} pages of {doc.vpath}")
            return [budget.charge(self._page(doc, n)) for n in pages]
        return self.budget(f"read of page {pages} of {doc.vpath}").charge(self._page(doc, pages))

    def file_search(self, path: str, pattern: str, ignore_case: bool) -> list[int]:
        pat = compile_pattern(pattern, ignore_case)
        doc = self._searched_doc(path, pattern, ignore_case)
        if doc is None:
            return []
        searcher = self.searcher
        return [i for i, page in enumerate(doc.pages, start=1) if searcher.text_matches(pat, page)]

    def file_contains(self, path: str, pattern: str, ignore_case: bool) -> bool:
        pat = compile_pattern(pattern, ignore_case)
        doc = self._searched_doc(path, pattern, ignore_case)
        if doc is None:
            return False
        searcher = self.searcher
        return any(searcher.text_matches(pat, page) for page in doc.pages)

    def file_head(self, path: str) -> str:
        doc = self._doc(path)
        return self.budget(f"head() of {doc.vpath}").charge(doc.pages[0])

    def file_tail(self, path: str) -> str:
        doc = self._doc(path)
        return self.budget(f"tail() of {doc.vpath}").charge(doc.pages[-1])

    def file_snippets(self, path: str, pattern: str, max_results: int, context_chars: int, ignore_case: bool) -> list[str]:
        if context_chars < 0:
            raise ScriptError(f"context_chars must be 0 or more, not {context_chars}")
        pat = compile_pattern(pattern, ignore_case)
        doc = self._doc(path)
        if max_results <= 0:
            return []
        searcher = self.searcher
        out: list[str] = []
        budget = self.budget(f"snippets of {doc.vpath}")
        for page_no, page in enumerate(doc.pages, start=1):
            for m in searcher.finditer(pat, page):
                start = max(0, m.start() - context_chars)
                excerpt = _NEWLINES.sub(" ", page[start:m.end() + context_chars]).strip()
                out.append(budget.charge(f"[page {page_no}] {excerpt}"))
                if len(out) >= max_results:
                    return out
        return out

    def file_table(self, path: str, max_items: int) -> str:
        if max_items < 1:
            raise ScriptError(f"max_items must be 1 or more, not {max_items}")
        res, st = self.vfs.resolve_file(path)
        if is_pdf_name(res.vpath):  # a PDF's outline, when it has one, without extracting its text
            outline = self.store.pdf_outline(self.vfs, res, st)
            if outline:
                return self.budget(f"table() of {res.vpath}").charge(format_toc(outline, max_items))
        doc = self.store.get(self.vfs, res, st)
        toc = doc.toc(lambda: self.check_deadline("looking for the table of contents"))
        if not toc:
            return f"No table of contents detected for {doc.vpath}"
        return self.budget(f"table() of {doc.vpath}").charge(format_toc(toc, max_items))

    def file_lines(self, path: str, offset: int, limit: int) -> str:
        if offset < 1:
            raise ScriptError(f"offset must be 1 or more (lines are numbered from 1), not {offset}")
        if limit < 1:
            raise ScriptError(f"limit must be 1 or more, not {limit}")
        doc = self._doc(path)
        chosen = doc.lines[offset - 1: offset - 1 + limit]
        if not chosen:
            return ""
        budget = self.budget(f"lines() of {doc.vpath}")
        return "\n".join(budget.charge(text) for text in numbered(chosen, offset))
