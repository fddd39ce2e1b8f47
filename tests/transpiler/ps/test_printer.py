"""PromptScript's printer is the parser's inverse: ``parse(render(tree))`` means the same
program as ``tree`` (the same dump), and rendering is a fixed point after one pass. Driven by
the grammar-shaped programs the boundary fuzzer uses, by the examples and by the annotated
test data."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, assume, given, settings

from fuzz.strategies import ps_programs
from tests.support import REPO
from transpiler import DSLError, compile_script, parse
from transpiler.ps.ast import dump
from transpiler.ps.printer import render

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")
SETTINGS = settings(max_examples=int(os.environ.get("FDSL_FUZZ_EXAMPLES", "200")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def roundtrip(source: str) -> None:
    tree = parse(source, lang="ps")
    text = render(tree)
    again = parse(text, lang="ps")
    assert dump(again) == dump(tree), text
    assert render(again) == text
    try:
        compile_script(source, lang="ps")
    except DSLError:
        return  # a checker error in the original stays one in the rendering
    compile_script(text, lang="ps")


@SETTINGS
@given(ps_programs())
def test_generated_programs_roundtrip(source):
    try:
        parse(source, lang="ps")
    except DSLError:
        assume(False)
    roundtrip(source)


@pytest.mark.parametrize("path", sorted((REPO / "examples").glob("*.ps")), ids=lambda p: p.name)
def test_examples_roundtrip(path):
    roundtrip(path.read_text())


@pytest.mark.parametrize("source", [
    "x = -(-1)\ny = not (a and b) or c\n",
    "x = (a or b) and c\n",
    "x = (1 + 2) * -3 % 4 - (5 - 6)\n",
    "x = (a < b) == (c in d)\n",
    'x = {"a b": [1, 2.5, 1e+20], "null": null, "k": `raw\nline`}\n',
    'x = "tab\\t nl\\n nul\\0 quote\\" backslash\\\\ \\d"\n',
    "x = f(a)(b).c[d](e)\n",
    "retry 3:\n  pass\n",
    "class C:\n  def __init__(self, v):\n    self.v = v\n  def get(self):\n    return self.v\n",
    "def f():\n  return\n",
    "if a:\n  pass\nelif b:\n  pass\nelif c:\n  pass\nelse:\n  pass\n",
    "while true:\n  with policy {allowActions: []}:\n    timeout 5:\n      guard a > 1 and not b\n  break\n",
])
def test_precedence_strings_and_blocks_roundtrip(source):
    roundtrip(source)
