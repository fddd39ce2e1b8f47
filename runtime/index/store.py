"""The index on disk: one SQLite file (stdlib sqlite3, no server), written whole and renamed
into place, read as untrusted input.

Schema (FORMAT names it): meta(k, v); docs(id, path, size, mtime_ns, ino, ctime_ns, kind, text)
where size, mtime, inode and ctime are the file's when it was read (a document is current while
all four are: runtime/index/tokens.py change_of) and text is the document's text,
zlib-compressed UTF-8 (surrogatepass); postings(token, docs) where docs is the bitmap of the ids
holding the token (little-endian bytes); meta holds the format and the digest of the case
fold the tokens were made with (runtime/index/fold.py fold_digest: another Python or `regex`
release may fold otherwise). Format 1 kept size and mtime only; such a file, or one of
another fold, is refused, and rebuilt by `fdsl index build` or the next index opened over its
directory.

Opening checks everything it will rely on and refuses the file otherwise (StoreError): the
schema must be exactly ours (no trigger, view or extra table), the format current, every
value of the expected type and range (ids below MAX_DOCS, paths canonical relative paths,
bitmaps no longer than the ids need), a text no larger than MAX_TEXT_BYTES once inflated.
SQLite's own errors on a damaged file are StoreErrors too. A file at the default location
(default_path) is also refused unless it is a regular file owned by this user that no one
else may write (as the parser cache, docs/architecture.md).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat as statmod
import zlib
from pathlib import Path

from runtime.errors import SandboxError
from runtime.fs import paths
from runtime.index.fold import fold_digest
from runtime.index.tokens import TokenIndex

FORMAT = "fdsl-index 2"
MAX_DOCS = 1_000_000
MAX_TEXT_BYTES = 256 << 20
SCHEMA = (
    "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE docs(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, size INTEGER NOT NULL, "
    "mtime_ns INTEGER NOT NULL, ino INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, kind TEXT NOT NULL, text BLOB NOT NULL)",
    "CREATE TABLE postings(token TEXT PRIMARY KEY, docs BLOB NOT NULL) WITHOUT ROWID",
)


class StoreError(Exception):
    """The file is not an index this version can trust (the message names no host path)."""


def default_path(host_dir: str) -> Path:
    """Where `fdsl index build DIR` writes, and runs look: the user's cache, one file per
    directory (named by its real path's hash), never inside the tree a script sees."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(os.path.realpath(host_dir).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return Path(base) / "filesdsl" / "index" / f"{digest}.sqlite"


def present(path: Path) -> bool:
    """Is there a file at `path`? An unreadable cache directory counts as none."""
    try:
        return path.exists()
    except OSError:
        return False


def check_owned(path: Path) -> None:
    """A file at the default location is trusted only if no one else could have written it."""
    st = os.lstat(path)
    if not statmod.S_ISREG(st.st_mode):
        raise StoreError("the index file is not a regular file")
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise StoreError("the index file belongs to another user or others may write it")


def _inflate(blob: bytes) -> str:
    d = zlib.decompressobj()
    data = d.decompress(blob, MAX_TEXT_BYTES)
    if d.unconsumed_tail:
        raise StoreError(f"a document of the index is over {MAX_TEXT_BYTES} bytes")
    return data.decode("utf-8", "surrogatepass")


def _deflate(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8", "surrogatepass"), 1)


def save(path: Path, tokens: TokenIndex, texts: dict[str, tuple[str, str]]) -> None:
    """Write the index (live documents only) to `path`, atomically (a temporary file renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    con = sqlite3.connect(tmp)
    try:
        with con:
            for sql in SCHEMA:
                con.execute(sql)
            con.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
            con.execute("INSERT INTO meta VALUES ('fold', ?)", (fold_digest(),))
            con.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (
                (rec.id, key, rec.size, rec.mtime_ns, *(rec.change or (-1, -1)), texts[key][0], _deflate(texts[key][1]))
                for key, rec in sorted(tokens.docs.items())))
            live, width = tokens.live, (tokens.next_id + 7) // 8
            con.executemany("INSERT INTO postings VALUES (?, ?)", (
                (token, (bits & live).to_bytes(width, "little"))
                for token, bits in tokens.postings.items() if bits & live))
        con.execute("VACUUM")
    finally:
        con.close()
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _connect(path: Path) -> sqlite3.Connection:
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        con.execute("PRAGMA trusted_schema=OFF")
        con.execute("PRAGMA cell_size_check=ON")
        return con
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the index: {exc}") from None


def _check_schema(con: sqlite3.Connection) -> None:
    rows = sorted(con.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_autoindex_%'"))
    expected = sorted(("table", sql.split("(")[0].split()[-1], sql) for sql in SCHEMA)
    if rows != expected:
        raise StoreError("the file is not an index of this version (its tables differ)")
    meta = dict(con.execute("SELECT k, v FROM meta"))
    if meta.get("format") != FORMAT:
        raise StoreError(f"the index is in another format ({str(meta.get('format'))[:40]!r}, expected {FORMAT!r})")
    if meta.get("fold") != fold_digest():
        raise StoreError("the index was built with other case tables (another Python or `regex` release): "
                         "`fdsl index build` makes it again")
    bad = con.execute(
        "SELECT count(*) FROM docs WHERE typeof(id) != 'integer' OR id < 0 OR id >= ? OR typeof(path) != 'text' "
        "OR typeof(size) != 'integer' OR size < 0 OR typeof(mtime_ns) != 'integer' OR typeof(ino) != 'integer' "
        "OR typeof(ctime_ns) != 'integer' OR kind NOT IN ('text', 'pdf') "
        "OR typeof(text) != 'blob'", (MAX_DOCS,)).fetchone()[0]
    if bad:
        raise StoreError("the index holds malformed documents")


def _checked_path(path: str) -> str:
    try:
        parts = paths.split(path)
    except (SandboxError, ValueError):
        parts = ()
    if not parts or paths.relative(parts) != path:
        raise StoreError("the index holds a path that is not a canonical relative path")
    return path


def load(path: Path, *, with_texts: bool, owned: bool = False) -> tuple[TokenIndex, dict[str, tuple[str, str]]]:
    """The index in `path`: its tokens, and (with_texts) each document's (kind, text)."""
    try:
        if owned:
            check_owned(path)
        con = _connect(path)
        try:
            _check_schema(con)
            return _read(con, with_texts)
        finally:
            con.close()
    except (sqlite3.Error, UnicodeDecodeError, zlib.error, OverflowError, MemoryError) as exc:
        raise StoreError(f"the index is damaged ({type(exc).__name__}: {str(exc)[:80]})") from None
    except OSError as exc:
        raise StoreError(f"cannot open the index: {exc.strerror or exc}") from None


def _read(con: sqlite3.Connection, with_texts: bool) -> tuple[TokenIndex, dict[str, tuple[str, str]]]:
    tokens = TokenIndex()
    texts: dict[str, tuple[str, str]] = {}
    columns = "id, path, size, mtime_ns, ino, ctime_ns, kind" + (", text" if with_texts else "")
    records = []
    for row in con.execute(f"SELECT {columns} FROM docs ORDER BY id"):
        doc_id, key, size, mtime_ns, ino, ctime_ns, kind = row[:7]
        records.append((doc_id, _checked_path(key), size, mtime_ns, ino, ctime_ns))
        if with_texts:
            texts[key] = (kind, _inflate(row[7]))
    tokens.load(records)
    width = (tokens.next_id + 7) // 8
    bad = con.execute("SELECT count(*) FROM postings WHERE typeof(token) != 'text' OR typeof(docs) != 'blob' "
                      "OR length(docs) > ?", (width,)).fetchone()[0]
    if bad:
        raise StoreError("the index holds malformed postings")
    from_bytes = int.from_bytes
    tokens.postings.update((token, from_bytes(blob, "little")) for token, blob in con.execute("SELECT token, docs FROM postings"))
    return tokens, texts
