"""The one-pass parse (transpiler/onepass.py OnePassParser: lark's lexer and parse table with the transformer's
rules applied at each reduction) gives exactly the tree the plain way gives (lark's parse
tree, the depth check, then the Transformer), positions included, and leaves every error to
the plain way."""

from __future__ import annotations

import os

import lark
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz.strategies import programs, ps_programs
from tests.support import REPO
from tests.support.compile_corpus import full_tree
from transpiler import DSLError
from transpiler.fdsl.parse import FRONTEND as FDSL
from transpiler.fdsl.printer import render
from transpiler.ps.parse import FRONTEND as PS

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")
SETTINGS = settings(max_examples=int(os.environ.get("FDSL_FUZZ_EXAMPLES", "200")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FRONTENDS = {"fdsl": FDSL, "ps": PS}


def _outcome(frontend, source: str, direct: bool):
    parser = frontend.grammar.build()
    saved = frontend._direct
    if not direct:
        frontend._direct = (parser, None)  # what a grammar the one-pass parse does not mirror gets
    try:
        return full_tree(frontend.parse(source))
    except DSLError as e:
        return ("error", e.kind, e.message, e.line, e.col)
    finally:
        frontend._direct = saved


def same_both_ways(lang: str, source: str) -> None:
    frontend = FRONTENDS[lang]
    assert _outcome(frontend, source, True) == _outcome(frontend, source, False), source


@pytest.mark.parametrize("lang", ["fdsl", "ps"])
def test_both_languages_take_the_one_pass_parse(lang):
    import lark

    from transpiler import frontend as frontend_module

    if lark.__version__ not in frontend_module.DIRECT_LARK_VERSIONS:
        pytest.skip(f"lark {lark.__version__}: not a release the one-pass parse mirrors (the plain way is used)")
    frontend = FRONTENDS[lang]
    direct = frontend._direct_for(frontend.grammar.build())
    assert direct is not None and direct.inline


@pytest.mark.parametrize("lang", ["fdsl", "ps"])
def test_another_lark_release_is_parsed_the_plain_way(lang, monkeypatch):
    from transpiler import frontend as frontend_module

    monkeypatch.setattr(frontend_module, "DIRECT_LARK_VERSIONS", frozenset())
    frontend = FRONTENDS[lang]
    monkeypatch.setattr(frontend, "_direct", None)
    assert frontend._direct_for(frontend.grammar.build()) is None
    same_both_ways(lang, "x = 1\n")


@pytest.mark.parametrize("path", sorted(p for p in (REPO / "examples").iterdir() if p.suffix in (".fdsl", ".ps")),
                         ids=lambda p: p.name)
def test_examples_parse_without_a_parse_tree(path, monkeypatch):
    source = path.read_text(encoding="utf-8")
    lang = path.suffix[1:]
    same_both_ways(lang, source)

    def no_tree(*args, **kwargs):
        raise AssertionError("a valid script went the plain way")

    monkeypatch.setattr(lark.Lark, "parse", no_tree)
    FRONTENDS[lang].parse(source)


@pytest.mark.parametrize("lang,op", [("fdsl", "-"), ("fdsl", "not "), ("ps", "-"), ("ps", "not ")])
def test_depth_limit_is_the_same(lang, op, monkeypatch):
    frontend = FRONTENDS[lang]
    deep = "x = " + op * 100 + "1\n"
    too_deep = "x = " + op * 101 + "1\n"
    same_both_ways(lang, deep)
    same_both_ways(lang, too_deep)
    with pytest.raises(DSLError, match="expression too deep"):
        frontend.parse(too_deep)
    monkeypatch.setattr(lark.Lark, "parse", lambda *a, **k: (_ for _ in ()).throw(AssertionError("plain way")))
    frontend.parse(deep)  # at the limit: still the one-pass parse


@pytest.mark.parametrize("lang", ["fdsl", "ps"])
@pytest.mark.parametrize("source", [
    "", "\n\n", "# only a comment\n", "x = (((1)))\n", "x = [1, 2,]\n", "x = 1\n  y = 2\n", "x = = 1\n",
    "if x:\ny = 1\n", "print(1, k=2, 3)\n", "x = 1 < 2 < 3\n", 'x = {"a": 1, "a": 2}\n', "x = 007\n",
    "def f(a, a):\n  return a\n", "x = " + "9" * 4001 + "\n", "x = 1 +\n", "for i in [1:3]:\n    print(i)\n",
])
def test_odd_scripts_the_same_both_ways(lang, source):
    same_both_ways(lang, source)


@SETTINGS
@given(programs())
def test_generated_fdsl_the_same_both_ways(module):
    source = render(module)
    same_both_ways("fdsl", source)
    for cut in (len(source) // 3, len(source) // 2):
        same_both_ways("fdsl", source[:cut])


@SETTINGS
@given(ps_programs())
def test_generated_ps_the_same_both_ways(source):
    same_both_ways("ps", source)
    for cut in (len(source) // 3, len(source) // 2):
        same_both_ways("ps", source[:cut])
