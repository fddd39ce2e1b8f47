"""Script regexes keep Python `re` semantics on RE2: each difference between the two engines,
handled; and RE2's translation agrees with Python on generated patterns and texts."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from runtime.errors import ScriptError
from runtime.services.globs import glob_to_regex
from runtime.services.regex_translate import MAX_CHAR
from runtime.services.textsearch import Searcher, compile_pattern, compile_trusted


def spans(pattern: str, text: str, ignore_case: bool = False) -> list[tuple[int, int]]:
    """Every match the broker finds, searching again from each position as grep does."""
    searcher, pat, out = Searcher(None), compile_pattern(pattern, ignore_case), []
    for pos in range(len(text) + 1):
        m = searcher.search(pat, text, pos)
        out.append(None if m is None else (m.start(), m.end()))
    return out


def python_spans(pattern: str, text: str, ignore_case: bool = False) -> list[tuple[int, int]]:
    rx = re.compile(pattern, re.MULTILINE | (re.IGNORECASE if ignore_case else 0))
    return [None if (m := rx.search(text, pos)) is None else m.span() for pos in range(len(text) + 1)]


def on_re2(pattern: str, ignore_case: bool = False) -> bool:
    return compile_pattern(pattern, ignore_case).re2 is not None


@pytest.mark.parametrize("pattern, text", [
    (r"\d+", "page ٣٤ and ৭"),  # Unicode digits: RE2's \d is ASCII
    (r"\w+", "naïve Ελληνικά 漢字 x_1"),  # Unicode word characters
    (r"\s+", "a\xa0b\u3000c\x1cd\x0be"),  # Python's \s has \x1c-\x1f, \v, NBSP...: RE2's has neither
    (r"[^\W\d]+", "abc123ü"),  # negated categories inside a class
    (r"(?a)\w+", "naïve"),  # the ASCII flag keeps them ASCII
    (r"a\Z", "a\n"),  # Python's \Z is RE2's \z: not before a final newline
    (r"a$", "a\nb a"),  # MULTILINE $: before every newline and at the end
    (r"(?m)^b", "a\nb\n"),
    (r"(?s)a.b", "a\nb"), (r"a.b", "a\nb"),  # DOTALL
    (r"\bcafé\b", "un café noir"),  # a Unicode word boundary: the fallback, exactly
    (r"\bfoo\b", "foo bar (foo)"),  # ASCII text: RE2's \b is exact
    (r"\Bo\B", "foo ööö"),
    (r"(?P<word>é+)", "ééé"),
    (r"x{1001}", "x" * 1001),  # over RE2's repeat limit: the fallback
    (r"a++b", "aaab"), (r"(?>a|ab)c", "abc"),  # possessive and atomic (Python 3.11)
    (r"(?<=\$)\d+", "cost $42"), (r"(\w)\1", "hello"), (r"(a)?(?(1)b|c)", "ab c"),
    (r"(?-m:a$)", "a\n"),  # $ without MULTILINE matches before a final newline
    (r"(?!/)[^x]", "a/b"),  # a one-character lookahead before a class stays on RE2
    ("\ud800", "x"), ("a.", "\ud800a\ud800"),  # a lone surrogate in the pattern, in the text
])
def test_each_difference_from_re2_is_handled(pattern, text):
    assert spans(pattern, text) == python_spans(pattern, text)


def test_what_runs_on_re2_and_what_falls_back():
    assert all(on_re2(p) for p in [r"\d+", r"\bfoo\b", r"a\Z", r"(?!/)[^x]", r"(?P<n>x)", r"[\w.-]+@\w+"])
    for pattern, reason in [(r"(?<=\$)\d+", "lookbehind (?<=...)"), (r"(?=a)", "lookahead (?=...)"),
                            (r"(\w)\1", "a backreference"), (r"(a)?(?(1)b|c)", "a conditional group"),
                            (r"a++", "a possessive repeat"), (r"(?>a)", "an atomic group"),
                            (r"x{1001}", "a repeat count over 1000"), (r"(?-m:$)", "$ without MULTILINE")]:
        assert compile_pattern(pattern).reason.startswith(reason), pattern


def test_python_syntax_errors_not_re2s():
    # RE2 accepts (?<name>...) and \z; Python 3.11 does not.
    for pattern, message in [(r"(?<n>a)", "unknown extension ?<n"), (r"a\z", "bad escape \\z"),
                             (r"(?<=a+)b", "look-behind requires fixed-width pattern"), ("[unclosed", "unterminated")]:
        with pytest.raises(ScriptError, match=re.escape(message)):
            compile_pattern(pattern)


def test_ignore_case_is_pythons_including_dotted_and_dotless_i():
    text = "İSTANBUL ıstanbul Istanbul Kelvin \u212a ſ"
    for pattern in ["istanbul", "[a-z]+", "[^i ]+", "k", "s", "[iK]"]:
        assert spans(pattern, text, True) == python_spans(pattern, text, True), pattern
    assert spans("(?a)k", "\u212a k", True) == python_spans("(?a)k", "\u212a k", True)


def test_ignore_case_agrees_with_python_for_every_cased_character():
    cased = [c for c in map(chr, range(MAX_CHAR + 1))
             if not "\ud800" <= c <= "\udfff" and (c.lower() != c or c.upper() != c)]
    text = "".join(cased)
    searcher = Searcher(None)
    for c in cased:
        pat = compile_pattern(re.escape(c), True)
        ours = set()
        for m in searcher.finditer(pat, text):
            ours.add(text[m.start():m.end()])
        assert ours == set(re.findall("(?i)" + re.escape(c), text)), repr(c)


@pytest.mark.parametrize("category", [r"\d", r"\w", r"\s", r"\D", r"\W", r"\S", r"[\w\s]", r"[^\d\s]"])
def test_unicode_categories_are_pythons_for_every_character(category):
    text = "".join(chr(c) for c in range(MAX_CHAR + 1) if not 0xD800 <= c <= 0xDFFF)
    pattern = compile_pattern(category)
    assert pattern.re2 is not None
    found = [text[m.start()] for m in Searcher(None).finditer(pattern, text)]
    assert found == re.findall(category, text)


def test_an_empty_match_is_followed_one_character_further():
    # Python's finditer would next try a longer match at the same place ("a" at 0); we move on,
    # as RE2 and Go do. Only patterns that prefer an empty match where a longer one exists differ.
    found = [(m.start(), m.end()) for m in Searcher(None).finditer(compile_pattern("a*?"), "aa")]
    assert found == [(0, 0), (1, 1), (2, 2)]
    assert [m.span() for m in re.finditer("a*", "baaa")] == [
        (m.start(), m.end()) for m in Searcher(None).finditer(compile_pattern("a*"), "baaa")]


def test_globs_run_on_re2_and_classes_never_match_a_slash():
    assert glob_to_regex("[!a]").re2 is not None and glob_to_regex("[--0]").re2 is not None
    assert not glob_to_regex("a[--0]b").match("a/b") and glob_to_regex("a[--0]b").match("a.b")
    assert not glob_to_regex("a[!x]b").match("a/b") and glob_to_regex("a[!x]b").match("a-b")
    with pytest.raises(ScriptError, match=r"^invalid glob '\[z-a\]': bad character range z-a$"):
        glob_to_regex("[z-a]")


# ------------------------------------------------------------------ generated patterns

ATOMS = ["a", "b", "I", "ı", "é", "1", "٣", " ", "\\n", ".", "\\d", "\\w", "\\s", "\\W", "[ab]", "[^a]", "[a-c\\d]",
         "^", "$", "\\A", "\\Z", "\\b", "\\B", "(?=a)", "(?!b)", "(?<=a)"]
TEXT = st.text(alphabet="abIıé1٣ \n_", max_size=8)


def pattern_strategy():
    atom = st.sampled_from(ATOMS)

    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map("".join),
            st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
            inner.map(lambda x: f"({x})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{1,2}", "*?", "??", "{2}"])).map(
                lambda t: f"(?:{t[0]}){t[1]}"),
        )

    return st.recursive(atom, extend, max_leaves=5)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=pattern_strategy(), text=TEXT, ignore_case=st.booleans())
@example(pattern=r"(?:(?:\B|[^a]))*", text="11", ignore_case=False)  # RE2 went on after an empty iteration
def test_generated_patterns_match_as_in_python(pattern, text, ignore_case):
    assert spans(pattern, text, ignore_case) == python_spans(pattern, text, ignore_case)
    # The fallback runs the same translation: it must agree too.
    pat = compile_pattern(pattern, ignore_case)
    fallback = [None if (m := pat.fallback.search(text, pos)) is None else m.span() for pos in range(len(text) + 1)]
    assert fallback == python_spans(pattern, text, ignore_case)


@settings(max_examples=500, deadline=None)
@given(line=st.text(alphabet=" \t.\u20261a#`~é٣", max_size=30))
def test_the_toc_patterns_match_as_python_does(line):
    from runtime.services import documents

    for source in (documents.ATX_HEADING, documents.FENCE, documents.DOTTED_TOC, documents.NUMBERED_TOC,
                   documents.SECTION_NUMBER):
        ours, python = compile_trusted(source).match(line), re.match(source, line)
        assert (ours is None) == (python is None), (source, line)
        if python is not None:
            groups = range(python.re.groups + 1)
            assert [ours.group(i) for i in groups] == [python.group(i) for i in groups], (source, line)


@pytest.mark.parametrize("source", [r"(?:\B|x)*", r"(?:a?)+", r"(?:^|b){2,3}"])
def test_a_repeat_that_can_match_empty_goes_to_the_fallback(source):
    pattern = compile_pattern(source)
    assert pattern.re2 is None and pattern.reason == "a repeat of something that can match the empty string"


def test_repeats_that_cannot_match_empty_stay_on_re2():
    for source in (r"(?:ab?)*", r"(?:\w+\s)*", r"(?:x?)?", r"a*"):
        assert compile_pattern(source).re2 is not None, source
