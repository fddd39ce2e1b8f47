"""The script-facing FilesDSL objects: thin proxies that only send requests to the broker.

They hold virtual paths and plain data, never a host path or a descriptor. Which of their
attributes a script may touch is decided by `guards.ALLOWED_ATTRIBUTES`, not by Python's
visibility rules: everything not listed there is unreachable.
"""

from __future__ import annotations

import re

from sandbox_worker.client import BrokerClient, ScriptFailure
from sandbox_worker.values import Vocabulary

TYPE_NAMES = {str: "string", int: "int", bool: "bool", list: "list"}  # FilesDSL's plain values


def quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return f'"{escaped}"'


def _own_name(value) -> str | None:
    if isinstance(value, ResultList):
        return "list"
    if isinstance(value, FileObject):
        return "file"
    if isinstance(value, DirectoryObject):
        return "directory"
    if isinstance(value, Record):
        return value.kind
    return None


def _own_form(value) -> str | None:
    return value.describe() if isinstance(value, (FileObject, DirectoryObject, Record, ResultList)) else None


def fail(message: str) -> ScriptFailure:
    return ScriptFailure("RuntimeError", message)


# FilesDSL's words for values; files, directories and records render by virtual path.
VALUES = Vocabulary(null="none", words=TYPE_NAMES, quote=quote, error=fail, own_name=_own_name, own_form=_own_form)
type_name = VALUES.type_name
render = VALUES.render


def expect(function: str, argument: str, value, *types: type, allow_none: bool = False):
    """Check one argument's type, naming the DSL call and argument when it is wrong."""
    if value is None and allow_none:
        return value
    ok = any(isinstance(value, t) and not (t is int and isinstance(value, bool)) for t in types)
    if not ok:
        wanted = " or ".join(TYPE_NAMES[t] for t in types)
        raise fail(f"{function}(): {argument} must be {wanted}, not {type_name(value)}")
    return value


def _limit(function: str, limit) -> int:
    """A page's size on the wire: None (everything) is 0."""
    if limit is None:
        return 0
    if limit < 1:
        raise fail(f"{function}(): limit must be 1 or more (or left out for everything), not {limit}")
    return limit


def checked(method):
    """Argument-count errors in the DSL's terms (Python's would count `self`)."""
    code = method.__code__
    names = code.co_varnames[1 : code.co_argcount]
    label = method.__name__

    def call(self, *args, **kwargs):
        if len(args) > len(names):
            raise fail(f"{label}() takes at most {len(names)} argument{'s' if len(names) != 1 else ''} ({len(args)} given)")
        for key in kwargs:
            if key not in names:
                allowed = ", ".join(names) if names else "no arguments"
                raise fail(f"{label}() has no argument '{key}' (it takes: {allowed})")
        return method(self, *args, **kwargs)

    call.__name__ = label
    return call


class Record:
    """A read-only bundle of named fields: a listing entry or a grep hit."""

    def __init__(self, kind: str, fields: dict) -> None:
        self._kind = kind
        self._fields = fields

    @property
    def kind(self) -> str:
        return self._kind

    def field(self, name: str):
        if name not in self._fields:
            raise fail(f"{self._kind} has no field '{name}'")
        return self._fields[name]

    def describe(self) -> str:
        f = self._fields
        if self._kind == "match":
            return f"{f['path']}:{f['line']}: {f['content']}"
        if self._kind == "skipped":
            return f["reason"]
        text = f"{f['type']} {f['path']}"
        if f["type"] == "symlink":
            text += f" -> {f.get('target', '')}"
        elif f["type"] == "file":
            text += f" ({f['size']} bytes)"
        return text

    def __repr__(self) -> str:  # what str(), format() and %r show: the DSL form, no Python internals
        return self.describe()

    def __eq__(self, other) -> bool:
        return isinstance(other, Record) and other._fields == self._fields

    def __hash__(self) -> int:
        return hash(self.describe())


class ResultList(list):
    """What a search over many files returned, and what it left out: `total` (how many there
    were in all), `truncated` (this list holds fewer), `skipped` (the files it could not read:
    a list of records {path, reason}, the first 10, whose own `total` counts them all).
    print() shows both after the items, so a cut or incomplete answer never looks whole."""

    def __init__(self, items, total: int | None = None, skipped=None, more: str = "") -> None:
        super().__init__(items)
        self.total = len(self) if total is None else total
        self.truncated = self.total > len(self)
        self.skipped = skipped if skipped is not None else []
        self._more = more  # how to get the rest, for the trailer

    @classmethod
    def of_skipped(cls, reply: dict) -> "ResultList":
        return cls([Record("skipped", row) for row in reply["skipped"]], reply["skipped_count"])

    def describe(self) -> str:
        text = VALUES.render(list(self), top=False)
        if self.truncated:
            text += f" (showing {len(self)} of {self.total}{'; ' + self._more if self._more else ''})"
        if self.skipped:
            count = self.skipped.total if isinstance(self.skipped, ResultList) else len(self.skipped)
            shown = "; ".join(record.describe() for record in self.skipped[:3])
            text += (f" (skipped {count} file{'s' if count != 1 else ''} it could not read: {shown}"
                     f"{'; ...' if count > 3 else ''})")
        return text

    def __repr__(self) -> str:
        return self.describe()


class FileObject:
    """A file in the sandbox, named by its virtual path."""

    def __init__(self, client: BrokerClient, info: dict) -> None:
        self._client = client
        self._info = info
        self._page_count = None

    # properties
    @property
    def path(self) -> str:
        return self._info["path"]

    @property
    def name(self) -> str:
        return self._info["name"]

    @property
    def suffix(self) -> str:
        return self._info["suffix"]

    @property
    def size(self) -> int:
        return self._info["size"]

    @property
    def modified(self) -> str:
        return self._info["modified"]

    @property
    def page_count(self) -> int:
        if self._page_count is None:
            self._page_count = self._client.call("file.page_count", path=self.path)
        return self._page_count

    # methods
    @checked
    def read(self, pages=None):
        if isinstance(pages, list):
            for page in pages:
                expect("read", "each page", page, int)
        else:
            expect("read", "pages", pages, int, list, allow_none=True)
        return self._client.call("file.read", path=self.path, pages=pages)

    @checked
    def search(self, pattern, ignore_case=False):
        expect("search", "pattern", pattern, str)
        expect("search", "ignore_case", ignore_case, bool)
        return self._client.call("file.search", path=self.path, pattern=pattern, ignore_case=ignore_case)

    @checked
    def contains(self, pattern, ignore_case=False):
        expect("contains", "pattern", pattern, str)
        expect("contains", "ignore_case", ignore_case, bool)
        return self._client.call("file.contains", path=self.path, pattern=pattern, ignore_case=ignore_case)

    @checked
    def head(self):
        return self._client.call("file.head", path=self.path)

    @checked
    def tail(self):
        return self._client.call("file.tail", path=self.path)

    @checked
    def snippets(self, pattern, max_results=5, context_chars=80, ignore_case=False):
        expect("snippets", "pattern", pattern, str)
        expect("snippets", "max_results", max_results, int)
        expect("snippets", "context_chars", context_chars, int)
        expect("snippets", "ignore_case", ignore_case, bool)
        return self._client.call(
            "file.snippets",
            path=self.path,
            pattern=pattern,
            max_results=max_results,
            context_chars=context_chars,
            ignore_case=ignore_case,
        )

    @checked
    def table(self, max_items=50):
        expect("table", "max_items", max_items, int)
        return self._client.call("file.table", path=self.path, max_items=max_items)

    @checked
    def lines(self, offset=1, limit=2000):
        expect("lines", "offset", offset, int)
        expect("lines", "limit", limit, int)
        return self._client.call("file.lines", path=self.path, offset=offset, limit=limit)

    def __repr__(self) -> str:  # the DSL form, no Python internals
        return self.describe()

    def describe(self) -> str:
        return self.path

    def __eq__(self, other) -> bool:
        return isinstance(other, FileObject) and other.path == self.path

    def __lt__(self, other) -> bool:
        if not isinstance(other, FileObject):
            raise fail(f"cannot compare file with {type_name(other)}")
        return self.path < other.path

    def __hash__(self) -> int:
        return hash(self.path)


class DirectoryObject:
    """A directory in the sandbox; iterating it yields its files."""

    def __init__(self, client: BrokerClient, path: str, recursive: bool) -> None:
        self._client = client
        self._path = path
        self._recursive = recursive

    @property
    def path(self) -> str:
        return self._path

    @property
    def name(self) -> str:
        return self._path.rsplit("/", 1)[-1]

    @property
    def recursive(self) -> bool:
        return self._recursive

    def _files(self, infos) -> list:
        return [FileObject(self._client, info) for info in infos]

    def stream(self):
        """`for f in dir`: the files a reply at a time, as many as fit in one (dir.iter), so a
        directory of any size iterates within the reply budget (the broker walks it once)."""
        offset = 0
        while offset is not None:
            reply = self._client.call("dir.iter", path=self._path, recursive=self._recursive, offset=offset)
            yield from self._files(reply["files"])
            offset = reply["next"]

    def _records(self, kind, rows) -> list:
        return [Record(kind, row) for row in rows]

    @checked
    def files(self, recursive=None, offset=0, limit=None):
        expect("files", "recursive", recursive, bool, allow_none=True)
        expect("files", "offset", offset, int)
        expect("files", "limit", limit, int, allow_none=True)
        recursive = self._recursive if recursive is None else recursive
        return self._files(self._client.call("dir.files", path=self._path, recursive=recursive, offset=offset,
                                             limit=_limit("files", limit)))

    @checked
    def search(self, pattern, scope="name", in_content=False, recursive=None, ignore_case=False):
        expect("search", "pattern", pattern, str)
        expect("search", "scope", scope, str)
        expect("search", "in_content", in_content, bool)
        expect("search", "recursive", recursive, bool, allow_none=True)
        expect("search", "ignore_case", ignore_case, bool)
        if in_content:
            scope = "content"
        recursive = self._recursive if recursive is None else recursive
        reply = self._client.call(
            "dir.search", path=self._path, pattern=pattern, scope=scope, recursive=recursive, ignore_case=ignore_case
        )
        return ResultList(self._files(reply["files"]), skipped=ResultList.of_skipped(reply))

    @checked
    def list(self, offset=0, limit=None):
        expect("list", "offset", offset, int)
        expect("list", "limit", limit, int, allow_none=True)
        return self._records("entry", self._client.call("dir.list", path=self._path, offset=offset,
                                                        limit=_limit("list", limit)))

    @checked
    def find(self, glob):
        expect("find", "glob", glob, str)
        return self._records("entry", self._client.call("dir.find", path=self._path, glob=glob))

    @checked
    def grep(self, pattern, glob=None, ignore_case=True, max_results=100):
        expect("grep", "pattern", pattern, str)
        expect("grep", "glob", glob, str, allow_none=True)
        expect("grep", "ignore_case", ignore_case, bool)
        expect("grep", "max_results", max_results, int)
        reply = self._client.call("dir.grep", path=self._path, pattern=pattern, glob=glob, ignore_case=ignore_case,
                                  max_results=max_results)
        return ResultList(self._records("match", reply["hits"]), reply["total"], ResultList.of_skipped(reply),
                          more="grep(..., max_results=N) shows more")

    def __repr__(self) -> str:  # the DSL form, no Python internals
        return self.describe()

    def describe(self) -> str:
        return self._path

    def __eq__(self, other) -> bool:
        return isinstance(other, DirectoryObject) and other._path == self._path

    def __hash__(self) -> int:
        return hash(self._path)


PYTHON_TYPE_NAMES = {
    "str": "string",
    "NoneType": "none",
    "FileObject": "file",
    "DirectoryObject": "directory",
    "Record": "record",
    "builtin_function_or_method": "function",
    "method": "function",
}


def python_message(exc: BaseException) -> str:
    """Python's wording of a type or value error, in the DSL's type names."""
    text = str(exc)
    concat = re.match(r'can only concatenate (\w+) \(not "(\w+)"\) to \w+', text)
    if concat:
        kinds = [PYTHON_TYPE_NAMES.get(k, k) for k in concat.groups()]
        return f"cannot add {kinds[1]} to {kinds[0]}"
    if isinstance(exc, NameError):
        name = getattr(exc, "name", None)
        return f"variable '{name}' is not defined at this point" if name else text
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    return re.sub(r"'(\w+)'", lambda m: f"'{PYTHON_TYPE_NAMES.get(m.group(1), m.group(1))}'", text)
