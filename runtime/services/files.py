"""FilesService: the broker's handlers for the FilesDSL ops of wire.protocol.OPS.

One method per op, named after it ("dir.search" -> `dir_search`) with the op table's argument
names; `dispatch(op, args)` calls it. Arguments arrive type-validated; values are checked here.
Every result is JSON-compatible and names files by canonical virtual path ("data/a.txt").
Errors are runtime.errors classes whose messages name virtual paths only.

Decisions (beyond docs/DESIGN.md §3):
- FileInfo = {"path", "name", "suffix", "size", "modified"}; `modified` is UTC ISO-8601 to the
  second ("2026-11-22T14:09:35Z"). Listing results are sorted by path (find, files, search)
  or by name (list).
- A listing or search walking more than `max_entries` (default 200,000) items is a LimitError
  telling how to narrow it; what one reply returns is bounded by the reply budget (16 MiB),
  whose error says how to page: `dir_files` and `dir_list` take `offset`/`limit`. `dir_grep` returns at most `max_results` matches (default 100, as
  in memexfs; at most 10,000), the first ones in (path, line) order, and says whether it cut
  them: `{"hits", "total", "truncated"}`, `total` counting every matching line.
- Searches over many files (`dir_search` with content, `dir_grep`) skip a file they cannot read
  as a document (binary, a damaged PDF, over a size limit: UnreadableFile, FileTooLargeError)
  and say so: `"skipped"` holds the first 10 `{path, reason}`, `"skipped_count"` all of them.
  Reading that file directly raises the error.
- Globs (`dir_find`, `dir_grep`) match the path relative to the searched directory, with
  "/" separators: `*` and `?` never cross "/", `**` spans directories ("**/" also matches
  no directory), `[...]` is a character class (`[!...]` negated). "*.txt" therefore matches
  only top-level files; "**/*.txt" matches at any depth. Matching is case-sensitive.
- scope="name" searches the regex in the file's name and in its path relative to the searched
  directory; "content" in the file's text (a PDF's is its pages joined by a blank line);
  "both" either.
- `dir_grep` reports each line at most once (the first match on it), with the full line; a
  match spanning lines is reported on the line where it starts. Lines are str.splitlines lines.
- The `file.*` ops: runtime/services/fileops.py.
- Directory symlinks are listed (as symlink entries) but never descended into; file symlinks
  that stay inside the mount count as files in files()/search()/grep().
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from runtime.budget import DEFAULT_MAX_REPLY_BYTES, ReplyBudget, check_limit
from runtime.errors import DeadlineExceeded, LimitError, ScriptError
from runtime.fs import paths
from runtime.fs.entries import Resolved, WalkEntry
from runtime.fs.vfs import VirtualFS
from runtime.services.documents import (
    Document,
    DocumentStore,
    binary_file,
    decode_text,
    is_binary,
    is_pdf_name,
)
from runtime.services.fileops import FileOps
from runtime.services.globs import compile_glob
from runtime.services.indexed import IndexedSearches
from runtime.services.searching import DEFAULT_GREP_RESULTS, MAX_GREP_RESULTS, SKIPPABLE, Skipped, matching_lines
from runtime.services.textsearch import Pattern, Searcher, compile_pattern

if TYPE_CHECKING:
    from runtime.index.prefilter import Query, RunIndex
    from runtime.services.listing import FileSystemEntry

SCOPES = ("name", "content", "both")
MAX_ENTRIES = 200_000  # entries one listing or search walks; what a reply returns is bounded by its budget
MAX_PAGES_PER_READ = 10_000


def iso_utc(mtime: float) -> str:
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(mtime)))
    except (OverflowError, OSError, ValueError):
        return datetime.fromtimestamp(0, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class FilesService(FileOps, IndexedSearches):
    def __init__(
        self,
        vfs: VirtualFS,
        store: DocumentStore | None = None,
        deadline: float | None = None,
        *,
        max_entries: int = MAX_ENTRIES,
        max_pages_per_read: int = MAX_PAGES_PER_READ,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        index: RunIndex | None = None,
    ) -> None:
        self.vfs = vfs
        # The run's index (runtime/index/prefilter.py): content searches skip what it rules out.
        self.index = index
        # The broker's reply budget: each piece of a large reply is charged as it is added.
        self.max_reply_bytes = check_limit(max_reply_bytes)
        self.store = store if store is not None else DocumentStore(deadline=deadline)
        self.deadline = deadline  # a time.monotonic() value, or None
        self.max_entries = max_entries
        self.max_pages_per_read = max_pages_per_read
        # The last files() listing paged past its first page, so iterating a large directory
        # (one page per call) walks it once: ((vpath, recursive), sorted files); dropped at its end.
        self._listing: tuple[tuple, list] | None = None

    # ------------------------------------------------------------------ plumbing

    def budget(self, what: str) -> ReplyBudget:
        """The budget of the reply being built (runtime/budget.py)."""
        return ReplyBudget(self.max_reply_bytes, what)

    @property
    def searcher(self) -> Searcher:
        return Searcher(self.deadline)

    def check_deadline(self, doing: str = "walking the directory") -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise DeadlineExceeded(f"the run's time limit was reached while {doing}")

    def dispatch(self, op: str, args: dict):
        from wire.protocol import OPS

        if op not in OPS or not op.startswith(("dir.", "file.")):
            raise ScriptError(f"unknown operation {op!r}")
        missing = [name for name in OPS[op] if name not in args]
        if missing:
            raise ScriptError(f"{op} is missing the argument {missing[0]!r}")
        method = getattr(self, op.replace(".", "_"))
        return method(**{name: args[name] for name in OPS[op]})

    def _doc(self, path: str) -> Document:
        res, st = self.vfs.resolve_file(path)
        return self.store.get(self.vfs, res, st)

    def _file_info(self, vpath: str, name: str, st) -> dict:
        return {
            "path": vpath,
            "name": name,
            "suffix": paths.suffix(name),
            "size": st.st_size,
            "modified": iso_utc(st.st_mtime),
        }

    def entry_json(self, e: WalkEntry) -> dict:
        """The structured entry (runtime/services/listing.py) with FilesDSL's paths ("docs/a.md") and
        two extra fields the DSL shows: "type" (file, directory, symlink, other) and "modified"."""
        from runtime.services.listing import entry_of  # pydantic: loaded only when listing

        out = entry_of(e, "relative").to_json()
        out["type"] = e.kind
        out["modified"] = iso_utc(e.lst.st_mtime)
        return out

    def _too_many(self, what: str, vpath: str) -> LimitError:
        return LimitError(
            f"{what} in {vpath} returned more than {self.max_entries} entries; "
            "narrow it with a glob, a more specific pattern or a subdirectory"
        )

    def regular_files(self, dir_res: Resolved, recursive: bool):
        """(WalkEntry, stat) for regular files (incl. file symlinks staying inside)."""
        for e in self.vfs.walk(dir_res, recursive, check=self.check_deadline):
            if e.st is None or e.real is None or e.loc is None:
                continue
            if e.kind == "file" or (e.kind == "symlink" and e.st.st_mode & 0o170000 == 0o100000):
                yield e, e.st

    def list_entries(self, path: str, what: str = "list()") -> tuple[Resolved, list[WalkEntry]]:
        """One directory's entries, sorted by name (FilesDSL list(), fdsl ls, list_directory)."""
        res, _ = self.vfs.resolve_dir(path)
        entries = self.vfs.list_dir(res, self.check_deadline)
        if len(entries) > self.max_entries:
            raise self._too_many(what, res.vpath)
        return res, entries

    def find_entries(self, path: str, glob: str, recursive: bool = True) -> list[WalkEntry]:
        """Entries under `path` whose path relative to it matches `glob`, sorted by path
        (FilesDSL find(), fdsl find, find_files). Symlinks leaving the sandbox are listed
        with the target "(outside the sandbox)", as list() shows them."""
        rx = compile_glob(glob)
        res, _ = self.vfs.resolve_dir(path)
        out = []
        for e in self.vfs.walk(res, recursive, check=self.check_deadline):
            if rx.match(e.rel):
                out.append(e)
                if len(out) > self.max_entries:
                    raise self._too_many(f"find({glob!r})", res.vpath)
        out.sort(key=lambda e: e.vpath)
        return out

    def _content_matches(self, pattern: Pattern, e: WalkEntry, searcher: Searcher, query: Query | None = None) -> bool:
        """Does this file's text contain a match? A text file not parsed yet is tested on its
        raw bytes when the pattern allows it, else on its decoded text: no pages are built
        and nothing is cached just to know whether a file matches. With an index, a file it
        rules out is not read, and one read is learned."""
        if self._excluded(query, e.loc, e.vpath, e.st):
            return False
        read_ns = time.time_ns()
        doc = self.store.cached(e.real, e.vpath, e.st)
        if doc is not None or is_pdf_name(e.name):
            text = doc.text if doc is not None else self.store.get_entry(self.vfs, e).text
            self._learn(e.loc, e.st, text, read_ns)
            return searcher.text_matches(pattern, text)
        data = self.store.read_entry(self.vfs, e)
        if is_binary(data):
            raise binary_file(e.vpath)
        if pattern.literal is not None and (query is None or not self.index.learning or query.knows(e.loc, e.st)):
            verdict = pattern.bytes_verdict(data)
            if verdict is not None:
                return verdict
        text = decode_text(data)
        self._learn(e.loc, e.st, text, read_ns)
        return searcher.text_matches(pattern, text)

    # ------------------------------------------------------------------ dir.*

    def dir_open(self, path: str) -> str:
        res, _ = self.vfs.resolve_dir(path)
        return res.vpath

    def _sorted_files(self, res, recursive: bool, offset: int, more: bool) -> list[tuple]:
        """(vpath, name, stat) of the files, sorted by path. A listing read past its first page
        is walked once: the last one is kept while `more` pages of it are to come."""
        key = (res.vpath, recursive)
        if offset and self._listing is not None and self._listing[0] == key:
            found = self._listing[1]
        else:
            found = []
            for e, st in self.regular_files(res, recursive):
                found.append((e.vpath, e.name, st))
                if len(found) > self.max_entries:
                    raise self._too_many("files()", res.vpath)
            found.sort(key=lambda f: f[0])
        self._listing = (key, found) if more(found) else None
        return found

    def dir_files(self, path: str, recursive: bool, offset: int = 0, limit: int = 0) -> list[dict]:
        """The files, sorted by path; `offset`/`limit` (0: all) pick one page of them."""
        res, _ = self.vfs.resolve_dir(path)
        found = self._sorted_files(res, recursive, offset, lambda found: limit and offset + limit < len(found))
        budget = self.budget(f"files() of {res.vpath}, {len(found):,} files: files(offset=, limit=) pages them")
        return [budget.charge(self._file_info(*f)) for f in page(found, offset, limit)]

    def dir_iter(self, path: str, recursive: bool, offset: int) -> dict:
        """`for f in dir`, one reply at a time: the files from `offset` that fit in the reply
        (at most ITER_PAGE), and the offset of the next reply (None at the end)."""
        if offset < 0:
            raise ScriptError(f"offset must be 0 or more, not {offset}")
        res, _ = self.vfs.resolve_dir(path)
        found = self._sorted_files(res, recursive, offset, lambda found: offset + ITER_PAGE < len(found))
        budget = self.budget(f"one file of {res.vpath} while iterating it")
        budget.charge({"files": [], "next": len(found)})
        out = []
        for f in found[offset: offset + ITER_PAGE]:
            info = self._file_info(*f)
            if not budget.fits(info):
                if not out:
                    budget.charge(info)  # not even one file fits: the budget's own error
                self._listing = ((res.vpath, recursive), found)
                break
            out.append(info)
        end = offset + len(out)
        return {"files": out, "next": end if end < len(found) else None}

    def dir_search(self, path: str, pattern: str, scope: str, recursive: bool, ignore_case: bool) -> dict:
        if scope not in SCOPES:
            raise ScriptError(f"invalid scope {scope!r}: expected one of 'name', 'content', 'both'")
        pat = compile_pattern(pattern, ignore_case)
        res, _ = self.vfs.resolve_dir(path)
        searcher = self.searcher
        query = self._query(pattern, ignore_case) if scope != "name" else None
        out = []
        skipped = Skipped()
        budget = self.budget(f"search() in {res.vpath}")
        for e, st in self.regular_files(res, recursive):
            hit = False
            if scope in ("name", "both"):
                hit = searcher.search(pat, e.name) is not None or searcher.search(pat, e.rel) is not None
            if not hit and scope in ("content", "both"):
                try:
                    hit = self._content_matches(pat, e, searcher, query)
                except SKIPPABLE as exc:
                    skipped.add(e.vpath, exc)
            if hit:
                out.append(budget.charge(self._file_info(e.vpath, e.name, st)))
                if len(out) > self.max_entries:
                    raise self._too_many("search()", res.vpath)
        out.sort(key=lambda f: f["path"])
        return {"files": out, **skipped.reply()}

    def dir_list(self, path: str, offset: int = 0, limit: int = 0) -> list[dict]:
        """The directory's entries, sorted by name; `offset`/`limit` (0: all) pick one page."""
        res, entries = self.list_entries(path)
        budget = self.budget(f"list() of {res.vpath}, {len(entries):,} entries: list(offset=, limit=) pages them")
        return [budget.charge(self.entry_json(e)) for e in page(entries, offset, limit)]

    def dir_find(self, path: str, glob: str) -> list[dict]:
        budget = self.budget(f"find({glob!r})")
        return [budget.charge(self.entry_json(e)) for e in self.find_entries(path, glob)]

    def dir_grep(self, path: str, pattern: str, glob: str | None, ignore_case: bool,
                 max_results: int = DEFAULT_GREP_RESULTS) -> dict:
        return self.grep(path, pattern, glob, ignore_case, max_results)

    def grep(self, path: str, pattern: str, glob: str | None, ignore_case: bool, max_results: int = DEFAULT_GREP_RESULTS,
             *, max_line_chars: int | None = None, partial: bool = False) -> dict:
        """grep's answer: {hits [{path, line, content}], total, truncated, skipped, skipped_count}.
        `max_line_chars`: a longer line is cut (and says so) before it is charged to the reply;
        `partial`: at the deadline, what was found so far with "complete": false (the agent tools,
        whose calls each have one) instead of the run's TimeoutError."""
        if not 1 <= max_results <= MAX_GREP_RESULTS:
            raise ScriptError(f"grep(): max_results must be from 1 to {MAX_GREP_RESULTS}, not {max_results}")
        pat = compile_pattern(pattern, ignore_case)
        rx = compile_glob(glob) if glob is not None else None
        res, _ = self.vfs.resolve_dir(path)
        searcher = self.searcher
        query = self._query(pattern, ignore_case)
        hits: list[dict] = []
        total = 0
        skipped = Skipped()
        budget = self.budget(f"grep in {res.vpath}")
        try:
            files = [(e, st) for e, st in self.regular_files(res, True) if rx is None or rx.match(e.rel)]
            files.sort(key=lambda f: f[0].vpath)
            for e, _st in files:
                self.check_deadline("searching the files")
                try:
                    if not self._content_matches(pat, e, searcher, query):
                        continue
                    doc = self.store.get_entry(self.vfs, e)
                except SKIPPABLE as exc:
                    skipped.add(e.vpath, exc)
                    continue
                for idx in matching_lines(pat, doc, searcher):
                    total += 1  # past the cap, matches are counted, not kept
                    if len(hits) < max_results:
                        hits.append(budget.charge({"path": e.vpath, "line": idx + 1,
                                                   "content": cut_line(doc.lines[idx], max_line_chars)}))
        except DeadlineExceeded:
            if not partial:
                raise
            return {"hits": hits, "total": total, "truncated": True, "complete": False, **skipped.reply()}
        return {"hits": hits, "total": total, "truncated": total > len(hits), **skipped.reply()}


def list_directory(vfs: VirtualFS, path: str, *, max_entries: int = MAX_ENTRIES, offset: int = 0,
                   limit: int = 0) -> list[FileSystemEntry]:
    """Entries of one directory, sorted by name (`offset`/`limit`: one page of them)."""
    from runtime.services.listing import entry_of

    return [entry_of(e) for e in page(FilesService(vfs, max_entries=max_entries).list_entries(path)[1], offset, limit)]


ITER_PAGE = 5000  # files in one reply while a directory is iterated


def cut_line(line: str, limit: int | None) -> str:
    """`line`, or its first `limit` characters and how long it was (a minified file is one line)."""
    if limit is None or len(line) <= limit:
        return line
    return f"{line[:limit]}... [line cut: {len(line)} characters]"


def page(items: list, offset: int, limit: int) -> list:
    """items[offset:offset + limit] (limit 0: to the end); negative values are refused."""
    if offset < 0 or limit < 0:
        raise ScriptError(f"offset and limit must be 0 or more, not {offset} and {limit}")
    return items[offset: offset + limit] if limit else items[offset:]


def find_files(vfs: VirtualFS, path: str, recursive: bool = True, glob: str = "**/*", *,
               max_entries: int = MAX_ENTRIES) -> list[FileSystemEntry]:
    """Entries under `path` whose relative path matches `glob`, sorted by path."""
    from runtime.services.listing import entry_of

    return [entry_of(e) for e in FilesService(vfs, max_entries=max_entries).find_entries(path, glob, recursive)]
