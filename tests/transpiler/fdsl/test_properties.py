"""Property tests shaped to the grammar.

Programs are generated as ASTs (``st.recursive``/``st.builds``: the INDENT/DEDENT grammar does
not suit ``hypothesis.extra.lark``), rendered with ``transpiler.fdsl.printer``, and must parse back
to the same tree and emit code RestrictedPython accepts. A raw-text fuzzer checks that any
text either parses or fails with a located ``DSLError``, never anything else.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from RestrictedPython import compile_restricted_exec

from fuzz.strategies import VARS, expressions, programs
from transpiler import DSLError, compile_script, parse
from transpiler.fdsl import ast
from transpiler.fdsl.ast import dump
from transpiler.fdsl.check import errors
from transpiler.fdsl.emit import emit
from transpiler.fdsl.printer import render

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

# FDSL_FUZZ_EXAMPLES=5000 for a longer pass
SETTINGS = settings(max_examples=int(os.environ.get("FDSL_FUZZ_EXAMPLES", "200")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# The same grammar-shaped strategies drive the boundary fuzzer (fuzz/strategies.py).
exprs = expressions()
modules = programs()


@SETTINGS
@given(modules)
def test_parse_render_roundtrip_and_restrictedpython(module):
    source = render(module)
    parsed = parse(source)
    assert dump(parsed) == dump(module)
    assert parsed == module
    found = errors(parsed)  # the checker never crashes, whatever it finds
    if any("outside a loop" in e.message for e in found):
        return  # Python itself refuses those; the checker stops them first
    emitted = emit(parsed, source)  # bypass the checker: RP must accept any parsed program
    result = compile_restricted_exec(emitted.python, filename="<fdsl>")
    assert result.errors == (), (source, emitted.python, result.errors)
    assert emitted.python.isascii()


@SETTINGS
@given(st.lists(st.builds(ast.Assign, VARS, exprs), max_size=4))
def test_checked_programs_compile(assigns):
    prefix = tuple(ast.Assign(v, ast.Int(1)) for v in ["a", "b", "xs", "file_1", "n", "Total"])
    module = ast.Module(prefix + tuple(assigns))
    source = render(module)
    try:
        emitted = compile_script(source)
    except DSLError as e:
        assert e.line is not None
        return
    assert compile_restricted_exec(emitted.python, filename="<fdsl>").errors == ()


def _assert_located(source: str) -> None:
    try:
        compile_script(source)
    except DSLError as e:
        assert e.kind == "SyntaxError"
        assert isinstance(e.line, int) and isinstance(e.col, int)
        text = source[1:] if source.startswith("\ufeff") else source
        nlines = text.replace("\r\n", "\n").count("\n") + 1
        assert 1 <= e.line <= nlines, (e, nlines)
        assert e.col >= 1


TOKENS = st.sampled_from(
    ["x", "y", " ", "  ", "    ", "\n", "\t", "(", ")", "[", "]", ":", ",", ".", "=", "+=",
     "==", "<", "-", "+", "*", "/", "%", "not", "in", "and", "or", "for", "if", "elif", "else",
     "break", "continue", "print", "read", "1", "'s'", '"t', "#", "\\", "_", "é", "\r", "true"]
)


@SETTINGS
@given(st.text(max_size=80))
def test_raw_text_fails_located(source):
    _assert_located(source)


@SETTINGS
@given(st.lists(TOKENS, max_size=40).map("".join))
def test_token_soup_fails_located(source):
    _assert_located(source)
