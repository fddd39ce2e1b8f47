"""The languages the transpiler knows. A language is a package beside this file holding
``grammar.lark`` and the modules ``parse`` (``parse(source, filename, limits, cache)``),
``check`` (``errors(module) -> list[DSLError]``) and ``emit`` (``emit(module, source,
filename) -> Emitted``); adding one means a folder and a line in ``LANGUAGES``."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["Language", "LANGUAGES", "language", "language_for"]


@dataclass(frozen=True)
class Language:
    name: str  # what the runtime, the wire and the worker call it
    title: str
    suffix: str  # a script file's extension

    def part(self, phase: str):
        """The module of this language for one phase (imported on first use)."""
        module = _PARTS.get((self.name, phase))  # import_module's locks cost 4% of compiling 20 lines
        if module is None:
            module = _PARTS[self.name, phase] = importlib.import_module(f"{__package__}.{self.name}.{phase}")
        return module


_PARTS: dict[tuple[str, str], object] = {}


LANGUAGES: dict[str, Language] = {
    lang.name: lang for lang in (
        Language("fdsl", "FilesDSL", ".fdsl"),
        Language("ps", "PromptScript", ".ps"),
    )
}


def language(name: str) -> Language:
    try:
        return LANGUAGES[name]
    except KeyError:
        raise ValueError(f"unknown language {name!r} (known: {', '.join(LANGUAGES)})") from None


def language_for(path: str) -> Language | None:
    """The language of a script file, by its extension."""
    return next((lang for lang in LANGUAGES.values() if str(path).endswith(lang.suffix)), None)
