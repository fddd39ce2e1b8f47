"""PromptScript transpiler: each construct parsed and emitted (and accepted by RestrictedPython),
each syntax and checker error located (annotated chunks in tests/testdata/promptscript/)."""

from __future__ import annotations

import re

import pytest
from RestrictedPython import compile_restricted_exec

from tests.support.ps import DATA, load_chunks
from transpiler import DSLError, compile_script, parse
from transpiler.ps.ast import dump

PARSE_TABLE = [
    ("x = 1 + 2 * 3", '(Assign target=x value=(BinOp op="+" left=1 right=(BinOp op="*" left=2 right=3)))'),
    ("x = (1 + 2) * 3", '(Assign target=x value=(BinOp op="*" left=(BinOp op="+" left=1 right=2) right=3))'),
    ("x = -1.5", '(Assign target=x value=(UnaryOp op="-" operand=1.5))'),
    ("x = 2e3", "(Assign target=x value=2000.0)"),
    ("x = true and not false or null", "(Assign target=x value=(BoolOp op=or left=(BoolOp op=and left=true right=(UnaryOp op=not operand=false)) right=null))"),
    ("x = not a == b", '(Assign target=x value=(UnaryOp op=not operand=(Compare op="==" left=a right=b)))'),
    ('x = "a" in xs', '(Assign target=x value=(Compare op=in left="a" right=xs))'),
    ('x = "a" not in xs', '(Assign target=x value=(Compare op="not in" left="a" right=xs))'),
    ('s = "a\\n\\"b\\" # c"', '(Assign target=s value="a\\n\\"b\\" # c")'),
    ("s = `a\n  # b\nc`", '(Assign target=s value="a\\n  # b\\nc")'),
    ('o = {a: 1, "b c": [1, 2,], timeout: 3,}', '(Assign target=o value=(Object keys=(a "b c" timeout) values=(1 (Array items=(1 2)) 3)))'),
    ("o = {}", "(Assign target=o value=(Object))"),
    ("v = cfg.provider", "(Assign target=v value=(Attr obj=cfg name=provider))"),
    ("v = xs[0][1]", "(Assign target=v value=(Index obj=(Index obj=xs index=0) index=1))"),
    ("o.k = 1", "(Assign target=(Attr obj=o name=k) value=1)"),
    ("xs[0] = 1", "(Assign target=(Index obj=xs index=0) value=1)"),
    ("f(1, 2,)", "(ExprStmt value=(Call func=f args=(1 2)))"),
    ("guard x <= 5", '(Guard test=(Compare op="<=" left=x right=5))'),
    ("def f(a, b):\n  return a", "(FunctionDef name=f params=(a b) body=((Return value=a)))"),
    ("def f():\n  return", "(FunctionDef name=f body=((Return)))"),
    ("class A:\n  def __init__(self, x):\n    self.x = x\n  def get(self):\n    return self.x",
     "(ClassDef name=A methods=((FunctionDef name=__init__ params=(self x) body=((Assign target=(Attr obj=self name=x) value=x))) (FunctionDef name=get params=(self) body=((Return value=(Attr obj=self name=x))))))"),
    ("if a:\n  pass\nelif b:\n  pass\nelse:\n  pass", "(If test=a body=((Pass)) elifs=((If test=b body=((Pass)))) orelse=((Pass)))"),
    ("while true:\n  break", "(While test=true body=((Break)))"),
    ("for i in range(3):\n  continue", "(For target=i iter=(Call func=range args=(3)) body=((Continue)))"),
    ("with policy {allowActions: []}:\n  pass", "(Policy policy=(Object keys=(allowActions) values=((Array))) body=((Pass)))"),
    ("retry 3 backoff 500:\n  pass", "(Retry attempts=3 backoff=500 body=((Pass)))"),
    ("retry 3:\n  pass", "(Retry attempts=3 body=((Pass)))"),
    ("timeout 100:\n  pass", "(Timeout ms=100 body=((Pass)))"),
    ("x = 1  # comment", "(Assign target=x value=1)"),
    ("x = f(\n  1,\n  2\n)", "(Assign target=x value=(Call func=f args=(1 2)))"),
]


@pytest.mark.parametrize("source,expected", PARSE_TABLE)
def test_each_construct_parses(source, expected):
    module = parse(source, lang="ps")
    assert dump(module.body[-1]) == expected


def underscore_names(python: str) -> list[str]:
    """Every identifier of the generated code that starts with '_' (RestrictedPython refuses them)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(python)):
        for name in (getattr(node, "id", None), getattr(node, "attr", None), getattr(node, "arg", None),
                     getattr(node, "name", None) if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else None):
            if isinstance(name, str) and name.startswith("_"):
                found.append(name)
    return found


@pytest.mark.parametrize("source,expected", PARSE_TABLE)
def test_each_construct_emits_restricted_python(source, expected):
    names = "a = 1\nb = 1\nxs = [[1, 2]]\ncfg = {provider: 1}\no = {}\nx = 1\ndef f(p, q):\n  return p\n"
    if source.startswith(("return", "def")):
        names = ""
    emitted = compile_script(names + source, lang="ps")
    assert not underscore_names(emitted.python), emitted.python
    result = compile_restricted_exec(emitted.python)
    assert result.errors == () and result.code is not None


def test_guard_keeps_the_expression_as_written():
    module = parse("x = 1\nguard   x <= (5 +\n   2)", lang="ps")
    assert module.body[1].text == "x <= (5 + 2)"


def test_class_is_compiled_away_without_underscore_names():
    py = compile_script("class A:\n  def __init__(self):\n    self.v = 1\na = A()\n", lang="ps").python
    assert "ps_make_class('A', ps_class_A())" in py
    assert "def ps_init(self):" in py and "'__init__': ps_init" in py


def emitted_statement(source: str) -> str:
    """The Python statement the last line of ``source`` becomes (not its ``# L<n>:`` comment)."""
    py = compile_script(source, lang="ps").python
    return py.rstrip("\n").splitlines()[-1].strip().removeprefix("ps_step(); ")


def test_operators_become_helper_calls_nested_as_the_precedence_says():
    assert (emitted_statement("a = 1.5\nb = 2.5\nx = (a - b) * -(a % b) / 2 - -a\n")  # not ints: see test_ints.py
            == "x = ps_sub(ps_div(ps_mul(ps_sub(a, b), ps_neg(ps_mod(a, b))), 2), ps_neg(a))")
    assert emitted_statement("x = -1 + -2.5\n") == "x = ps_add(-1, -2.5)"  # number literals stay
    assert (emitted_statement("a = 1\nx = not (a or a) and a in [a] or a not in [1]\n")
            == "x = not (a or a) and ps_in(a, [a]) or ps_not_in(a, [1])")
    assert emitted_statement("x = files_changed + len(allowed_actions)\n") == \
        "x = ps_add(ps_var('files_changed'), len(ps_var('allowed_actions')))"


def test_for_over_range_iterates_lazily_and_range_elsewhere_is_an_array():
    py = compile_script("for i in range(10):\n  x = range(3)\n", lang="ps").python
    assert "for i in ps_range_iter(10):" in py and "x = range(3)" in py


def _check_chunks(name):
    for chunk in load_chunks(DATA / name):
        with pytest.raises(DSLError) as info:
            compile_script(chunk.source, lang="ps")
        err = info.value
        assert chunk.expectations, chunk.where()
        line, pattern = chunk.expectations[0]
        assert re.search(pattern, err.message), f"{chunk.where(line)}: {err.message!r} !~ {pattern!r}"
        assert err.line == line, f"{chunk.where(line)}: error at line {err.line}: {err.message}"
        assert err.col and err.col >= 1
        text = err.format(chunk.source)
        assert text.splitlines()[1].startswith(f"  at line {line}, column ")
        assert text.splitlines()[-1].strip() == "^"


def test_syntax_errors_are_located():
    _check_chunks("syntax_errors.ps")


def test_checker_errors_are_located():
    _check_chunks("checker_errors.ps")


def test_unknown_parse_rule_fails_closed():
    from lark import Tree

    from transpiler.ps.parse import _ToAst

    with pytest.raises(Exception) as info:
        _ToAst().transform(Tree("made_up_rule", []))
    assert "no AST rule" in str(info.value)


def test_fdslc_emits_by_extension(tmp_path):
    import subprocess
    import sys

    from tests.support.ps import REPO

    script = tmp_path / "x.ps"
    script.write_text('log("hi" + 1)\n')
    proc = subprocess.run([sys.executable, "-m", "runtime.fdslc", str(script), "--emit"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "ps_step(); log(ps_add('hi', 1))" in proc.stdout
    bad = tmp_path / "bad.ps"
    bad.write_text("x = (\n")
    proc = subprocess.run([sys.executable, "-m", "runtime.fdslc", str(bad)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr.startswith("SyntaxError: '(' was never closed")
    assert "Traceback" not in proc.stderr
