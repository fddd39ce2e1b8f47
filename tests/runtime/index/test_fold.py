"""The index's tokenizer: case folding coarser than every search's case-insensitivity, and the
literals a regex requires."""

from __future__ import annotations

import _sre
import re

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from regex import _regex

from runtime.index.fold import fold, fold_table, required_literals
from runtime.services.textsearch import Searcher, compile_pattern

# Every character with a case, as the interpreter or the `regex` engine sees it (the engine's
# Unicode can be newer: U+A7CB, the capital of U+0264, is Unicode 16)
CASED = [chr(cp) for cp in range(0x20000) if not 0xD800 <= cp < 0xE000
         and (chr(cp).lower() != chr(cp) or chr(cp).upper() != chr(cp) or cp in fold_table()
              or _sre.unicode_tolower(cp) != cp or len(_regex.get_all_cases(regex.I | regex.U, cp)) > 1)]


def test_nothing_past_the_table_has_a_case():
    for cp in range(0x20000, 0x110000):
        c = chr(cp)
        if 0xD800 <= cp < 0xE000:
            continue
        assert _sre.unicode_tolower(cp) == cp and c.lower() == c and c.upper() == c, hex(cp)


@pytest.mark.parametrize("tail", ["", "(?=)"], ids=["re2", "fallback"])
def test_every_character_the_engine_equates_folds_alike(tail):
    # Each cased character, searched case-insensitively by the engines FilesDSL uses (RE2, and
    # the `regex` fallback a lookahead sends it to), over a text of all cased characters:
    # whatever it matches must fold to the same character.
    text = "".join(CASED)
    searcher = Searcher()
    assert (compile_pattern("a" + tail, True).re2 is None) == bool(tail)
    for c in CASED:
        pattern = compile_pattern(re.escape(c) + tail, ignore_case=True)
        for m in searcher.finditer(pattern, text):
            assert fold(text[m.start():m.end()]) == fold(c), (hex(ord(c)), text[m.start():m.end()])


def test_the_engines_newer_case_pairs_fold_alike():
    assert fold("\ua7cb") == fold("\u0264")  # Unicode 16: the capital of U+0264 (rams horn)
    assert fold("\u1c89") == fold("\u1c8a")


def test_without_the_engines_case_tables_the_index_rules_nothing_out(monkeypatch):
    from runtime.index import fold as fold_module
    from runtime.index.tokens import TokenIndex

    tokens = TokenIndex()
    tokens.add("a.txt", 1, 1, {"hello"})
    tokens.add("b.txt", 1, 1, {"other"})
    assert tokens.candidates("hello") == 0b01
    monkeypatch.setattr(fold_module, "_engine_all_cases", lambda: None)
    assert tokens.candidates("hello") is None  # every document is searched


def test_special_folds():
    assert fold("İıIi") == "iiii"
    assert fold("Kk\u212a") == "kkk"
    assert fold("Sſs") == "sss"
    assert fold("Σσς") == fold("σσσ")
    assert fold("Straße") == "straße"


@given(st.text(alphabet=st.sampled_from("aAzZİıKkſSσςΣé\u212a\n\r\x00 .\ud800"), max_size=40))
@settings(max_examples=300, deadline=None)
def test_fold_keeps_lengths_and_matches_the_table(text):
    folded = fold(text)
    assert len(folded) == len(text)
    assert folded == text.translate(fold_table())


def test_required_literals():
    assert required_literals("password reset") == ("password reset",)
    assert required_literals(r"\bPass(word)? reset[.]md") == (" reset.md", "pass")
    assert required_literals("price|cost") is None
    assert required_literals("ab") is None  # shorter than a trigram
    assert required_literals("(?x) h e l l o") == ("hello",)
    assert required_literals(r"foo\r\nbar") == ("bar", "foo")  # cut at line breaks
    assert required_literals("(abc)+x(def)?") == ("abc",)
    assert required_literals("(abc)*") is None
    assert required_literals("[unclosed") is None
    assert required_literals(r"(?=abc)\w") is None


def test_the_table_is_built_once_per_machine_and_read_back_whole(tmp_path, monkeypatch):
    """fold_table() keeps what it built in the user's private cache; a later process reads it
    (a damaged file is built again), keyed by what it derives from."""
    from runtime.index import fold as fold_module

    built = fold_module.build_fold_table()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    try:
        fold_table.cache_clear()
        assert fold_table() == built
        (kept,) = (tmp_path / "filesdsl").glob("fold-*.json")
        fold_table.cache_clear()
        monkeypatch.setattr(fold_module, "build_fold_table", lambda: pytest.fail("built again"))
        assert fold_table() == built  # read back
        for damage in (b"not json", b"[[1, -5]]", b'[["a", 2]]'):
            kept.write_bytes(damage)
            fold_table.cache_clear()
            monkeypatch.setattr(fold_module, "build_fold_table", lambda: built)
            assert fold_table() == built and kept.read_bytes() != damage  # built again, and kept
    finally:
        fold_table.cache_clear()
