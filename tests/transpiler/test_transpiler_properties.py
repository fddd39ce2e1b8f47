"""Property tests shaped to the grammar.

Programs are generated as ASTs (``st.recursive``/``st.builds``: the INDENT/DEDENT grammar does
not suit ``hypothesis.extra.lark``), rendered with ``transpiler.printer``, and must parse back
to the same tree and emit code RestrictedPython accepts. A raw-text fuzzer checks that any
text either parses or fails with a located ``DSLError``, never anything else.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from RestrictedPython import compile_restricted_exec

from transpiler import DSLError, compile_script, parse
from transpiler import ast
from transpiler.ast import dump
from transpiler.checker import errors
from transpiler.emitter import emit
from transpiler.printer import render
from transpiler.surface import BUILTINS, KNOWN_ATTRIBUTES

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

# FDSL_FUZZ_EXAMPLES=5000 for a longer pass
SETTINGS = settings(max_examples=int(os.environ.get("FDSL_FUZZ_EXAMPLES", "200")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

VARS = st.sampled_from(["a", "b", "xs", "file_1", "n", "Total"])
KW_NAMES = st.sampled_from(["k", "pages", "ignore_case", "scope", "recursive"])
ATTRS = st.sampled_from(sorted(KNOWN_ATTRIBUTES))
# any text a string literal may hold (no NUL, no lone surrogates)
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               max_size=12)

leaves = st.one_of(
    st.builds(ast.Name, VARS),
    st.builds(ast.Int, st.integers(0, 10**12)),
    st.builds(ast.Bool, st.booleans()),
    st.builds(ast.Str, TEXT),
)


def _compound(children):
    kwargs = st.lists(st.builds(ast.Keyword, KW_NAMES, children), max_size=2,
                      unique_by=lambda k: k.name).map(tuple)
    items = st.lists(st.one_of(children, st.builds(ast.Range, children, children)), max_size=3)
    func = st.one_of(st.builds(ast.Name, st.sampled_from(sorted(BUILTINS))),
                     st.builds(ast.Attr, children, ATTRS))
    return st.one_of(
        st.builds(ast.BinOp, st.sampled_from("+-*/%"), children, children),
        st.builds(ast.UnaryOp, st.sampled_from(["-", "not"]), children),
        st.builds(ast.BoolOp, st.sampled_from(["and", "or"]), children, children),
        st.builds(
            lambda left, pairs: ast.Compare(left, tuple(p[0] for p in pairs),
                                            tuple(p[1] for p in pairs)),
            children,
            st.lists(st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in",
                                                "not in"]), children), min_size=1, max_size=3),
        ),
        st.builds(ast.Call, func, st.lists(children, max_size=3).map(tuple), kwargs),
        st.builds(ast.Attr, children, ATTRS),
        st.builds(ast.Index, children, children),
        st.builds(ast.ListExpr, items.map(tuple)),
    )


exprs = st.recursive(leaves, _compound, max_leaves=5)


def _block(stmts):
    return st.lists(stmts, min_size=1, max_size=2).map(tuple)


def _stmts(children):
    return st.one_of(
        st.builds(ast.For, VARS, exprs, _block(children)),
        st.builds(ast.If, exprs, _block(children),
                  st.lists(st.builds(ast.Elif, exprs, _block(children)), max_size=2).map(tuple),
                  st.one_of(st.just(()), _block(children))),
    )


simple = st.one_of(
    st.builds(ast.Assign, VARS, exprs),
    st.builds(ast.AugAssign, VARS, st.sampled_from("+-*/%"), exprs),
    st.builds(ast.ExprStmt, exprs),
    st.builds(ast.Break),
    st.builds(ast.Continue),
)
statements = st.recursive(simple, _stmts, max_leaves=5)
modules = st.lists(statements, max_size=3).map(lambda body: ast.Module(tuple(body)))


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
