"""The runtime's door to the transpiler: the stack the deepest valid script needs, and the
private directory where built parsers are kept between processes."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading

import transpiler

__all__ = ["compile_script", "deep_stack", "UserParserCache"]

_stack_lock = threading.Lock()
_stack_users = 0
_stack_saved = 0


@contextlib.contextmanager
def deep_stack(frames: int = transpiler.STACK_FRAMES):
    """Raise the recursion limit to ``frames`` while any compilation runs; put it back after
    the last one finishes."""
    global _stack_users, _stack_saved
    with _stack_lock:
        if _stack_users == 0:
            _stack_saved = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_stack_saved, frames))
        _stack_users += 1
    try:
        yield
    finally:
        with _stack_lock:
            _stack_users -= 1
            if _stack_users == 0:
                sys.setrecursionlimit(_stack_saved)


class UserParserCache:
    """Built parsers (lark pickles them), or other derived tables (`kind`), in a directory only
    this user can write.

    Never the shared temp directory: another local user could plant a pickle there. Any doubt
    about the directory means no cache, which only costs start-up time."""

    def __init__(self, folder: str | None = None, kind: str = "parser", suffix: str = ".lark-cache") -> None:
        self._folder, self.kind, self.suffix = folder, kind, suffix

    @property
    def folder(self) -> str:
        if self._folder:
            return self._folder
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "filesdsl")

    def _private(self) -> bool:
        try:
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
            info = os.stat(self.folder, follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022

    def _path(self, key: str) -> str:
        return os.path.join(self.folder, f"{self.kind}-{key}{self.suffix}")

    def load(self, key: str) -> bytes | None:
        if not self._private():
            return None
        try:
            fd = os.open(self._path(key), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
                return None
            return f.read()

    def store(self, key: str, data: bytes) -> None:
        if not self._private():
            return
        tmp = self._path(key) + f".{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self._path(key))
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


_CACHE = UserParserCache()


def compile_script(source: str, filename: str = "<script>", lang: str = "fdsl", **limits):
    """``transpiler.compile_script`` with the stack and the parser cache it needs."""
    with deep_stack():
        return transpiler.compile_script(source, filename, lang, cache=_CACHE, **limits)


class CompiledScripts:
    """Scripts compiled already, by (language, filename, source): compiling is pure (nothing of
    a sandbox or a limit goes in), so a script run again skips it. The least recently run go
    first past `max_scripts` scripts or `max_chars` characters of source. A script that does not
    compile is not kept (its error is found again, quickly). Thread-safe: the sessions of a
    process share one (runtime/session.py), and each may run on its own thread."""

    def __init__(self, max_scripts: int = 256, max_chars: int = 8 << 20) -> None:
        from collections import OrderedDict

        self.max_scripts, self.max_chars = max_scripts, max_chars
        self.entries: OrderedDict = OrderedDict()
        self.chars = 0
        self.lock = threading.Lock()

    def __contains__(self, key: tuple[str, str, str]) -> bool:
        return key in self.entries

    def compile(self, source: str, filename: str, lang: str):
        key = (lang, filename, source)
        with self.lock:
            emitted = self.entries.get(key)
            if emitted is not None:
                self.entries.move_to_end(key)
                return emitted
        emitted = compile_script(source, filename=filename, lang=lang)  # (outside the lock: another session's compile goes on)
        with self.lock:
            if key not in self.entries:
                self.entries[key] = emitted
                self.chars += len(source)
            while len(self.entries) > self.max_scripts or self.chars > self.max_chars:
                (_, _, dropped), _ = self.entries.popitem(last=False)
                self.chars -= len(dropped)
        return emitted
