"""FilesDSL and PromptScript transpiler: script text in, RestrictedPython-compatible Python text out.

Pure (no I/O beyond its own grammar files, no process-wide state, no import of ``runtime`` or
``sandbox_worker``). One pipeline serves every language in ``registry.LANGUAGES``::

    parse (frontend: prescan -> lark -> AST) -> check (error list) -> emit (libcst) -> Emitted

Public API::

    parse(source, filename="<script>", lang="fdsl", *, cache=None, **limits) -> AST module
    errors(module, lang="fdsl") -> list[DSLError];  check(module, lang="fdsl") raises the first
    compile_script(source, filename="<script>", lang="fdsl", *, cache=None, **limits) -> Emitted
    DSLError, format_error, SourceMap, Emitted, Limits, STACK_FRAMES, LANGUAGES, language_for

``limits`` (keyword-only, optional; see ``Limits``): ``max_bytes`` (1 MiB), ``max_nesting``
(brackets, 100), ``max_blocks`` (50), ``max_expr_depth`` (100), ``max_tokens`` (50000).
``cache`` is a ``frontend.ParserCache`` in which the built parser is kept across processes.
The deepest valid script needs a recursion limit of ``STACK_FRAMES``; below it, such a script
is refused with a ``DSLError``. Every problem is a ``DSLError``, never a lark exception.
"""

from __future__ import annotations

from .errors import DSLError, Position, format_error
from .limits import STACK_FRAMES, Limits
from .registry import LANGUAGES, Language, language, language_for
from .sourcemap import SourceMap

__all__ = [
    "parse", "errors", "check", "compile_script", "Emitted", "SourceMap", "DSLError", "Position",
    "format_error", "Limits", "STACK_FRAMES", "LANGUAGES", "Language", "language", "language_for",
]


def parse(source: str, filename: str = "<script>", lang: str = "fdsl", *, cache=None, **limits):
    """Parse a script into its language's AST. Raises ``DSLError``."""
    return language(lang).part("parse").parse(source, filename, Limits(**limits), cache)


def errors(module, lang: str = "fdsl") -> list[DSLError]:
    """Every static error of a parsed module, in source order."""
    return language(lang).part("check").errors(module)


def check(module, lang: str = "fdsl") -> None:
    """Raise the first static error of a parsed module, if any."""
    found = errors(module, lang)
    if found:
        raise found[0]


def compile_script(source: str, filename: str = "<script>", lang: str = "fdsl", *, cache=None, **limits):
    """Parse, check and emit a script. Returns ``Emitted(python, source_map)``."""
    module = parse(source, filename, lang, cache=cache, **limits)
    check(module, lang)
    return language(lang).part("emit").emit(module, source, filename)


def __getattr__(name: str):
    if name == "Emitted":  # libcst is imported only when code is emitted
        from .emitbase import Emitted

        return Emitted
    raise AttributeError(name)
