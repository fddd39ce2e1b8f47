"""FilesDSL and PromptScript transpiler: script text in, RestrictedPython-compatible Python text out.

Pure (no I/O, no import of ``runtime`` or ``sandbox_worker``). Pipeline::

    parse (prescan -> lark -> AST) -> check -> emit (libcst) -> Emitted(python, source_map)

Public API::

    parse(source, filename="<script>", lang="fdsl") -> ast.Module
    compile_script(source, filename="<script>", lang="fdsl") -> Emitted
    DSLError, format_error, SourceMap, Emitted
"""

from __future__ import annotations

from .errors import DSLError, Position, format_error
from .sourcemap import SourceMap

__all__ = [
    "parse", "check", "compile_script", "Emitted", "SourceMap", "DSLError", "Position",
    "format_error", "LANGUAGES",
]

LANGUAGES = ("fdsl", "ps")  # FilesDSL; PromptScript (grammar promptscript.lark, modules ps_*)


def _require(lang: str) -> None:
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r} (known: {', '.join(LANGUAGES)})")


def parse(source: str, filename: str = "<script>", lang: str = "fdsl", **limits):
    """Parse a script into its DSL AST. Raises ``DSLError``."""
    _require(lang)
    if lang == "ps":
        from .ps_parser import parse as _parse
    else:
        from .parser import parse as _parse

    return _parse(source, filename, **limits)


def check(module, lang: str = "fdsl") -> None:
    """Run the static checks on a parsed module. Raises the first ``DSLError``."""
    _require(lang)
    if lang == "ps":
        from .ps_checker import check as _check
    else:
        from .checker import check as _check

    _check(module)


def compile_script(source: str, filename: str = "<script>", lang: str = "fdsl", **limits):
    """Parse, check and emit a script. Returns ``Emitted(python, source_map)``.

    ``limits`` (keyword-only, optional): ``max_bytes`` (1 MiB), ``max_nesting`` (brackets,
    100), ``max_blocks`` (50), ``max_expr_depth`` (100), ``max_tokens`` (50000). Raises ``DSLError`` for every problem in the script; never
    ``RecursionError`` or a lark exception.
    """
    _require(lang)
    if lang == "ps":
        from .ps_emitter import emit
    else:
        from .emitter import emit

    module = parse(source, filename, lang, **limits)
    check(module, lang)
    return emit(module, source, filename)


def __getattr__(name: str):
    if name == "Emitted":
        from .emitter import Emitted

        return Emitted
    raise AttributeError(name)
