"""Parser: every construct against the compact dump, every syntax error with its position."""

from __future__ import annotations

import re

import pytest
from lark import Tree

from tests.support.transpiler import DATA, load_chunks
from transpiler import DSLError, format_error, parse
from transpiler.fdsl import ast
from transpiler.fdsl.ast import dump
from transpiler.fdsl.parse import _ToAst, unescape


def stmt(src: str) -> str:
    module = parse(src)
    assert len(module.body) == 1
    return dump(module.body[0])


@pytest.mark.parametrize(
    "src, expected",
    [
        ("y = d.search(\"x\")", '(Assign target=y value=(Call func=(Attr obj=d name=search) args=("x")))'),
        ("x = 1", "(Assign target=x value=1)"),
        ("x = true", "(Assign target=x value=true)"),
        ("x = false", "(Assign target=x value=false)"),
        ("x = 'a'", '(Assign target=x value="a")'),
        ("x += 2", "(AugAssign target=x op=+ value=2)"),
        ("x -= 2", "(AugAssign target=x op=- value=2)"),
        ("x *= 2", "(AugAssign target=x op=* value=2)"),
        ("x /= 2", "(AugAssign target=x op=/ value=2)"),
        ("x %= 2", "(AugAssign target=x op=% value=2)"),
        ("print(x)", "(ExprStmt value=(Call func=print args=(x)))"),
        ("f()", "(ExprStmt value=(Call func=f))"),
        ("f(a, k=1, j=b)", "(ExprStmt value=(Call func=f args=(a) kwargs=((Keyword name=k value=1) (Keyword name=j value=b))))"),
        ("f(a,)", "(ExprStmt value=(Call func=f args=(a)))"),
        ("x = a.b.c", "(Assign target=x value=(Attr obj=(Attr obj=a name=b) name=c))"),
        ("x = a[1][b]", "(Assign target=x value=(Index obj=(Index obj=a index=1) index=b))"),
        ("x = [1, 3:5, 10]", "(Assign target=x value=(ListExpr items=(1 (Range start=3 stop=5) 10)))"),
        ("x = [5:3]", "(Assign target=x value=(ListExpr items=((Range start=5 stop=3))))"),
        ("x = [a + 1:b * 2]", "(Assign target=x value=(ListExpr items=((Range start=(BinOp op=+ left=a right=1) stop=(BinOp op=* left=b right=2)))))"),
        ("x = []", "(Assign target=x value=(ListExpr))"),
        ("x = [1, 2,]", "(Assign target=x value=(ListExpr items=(1 2)))"),
        ("x = [\n  1,\n    2\n]", "(Assign target=x value=(ListExpr items=(1 2)))"),
        ("x = 1 + 2 * 3", "(Assign target=x value=(BinOp op=+ left=1 right=(BinOp op=* left=2 right=3)))"),
        ("x = (1 + 2) * 3", "(Assign target=x value=(BinOp op=* left=(BinOp op=+ left=1 right=2) right=3))"),
        ("x = 1 - 2 - 3", "(Assign target=x value=(BinOp op=- left=(BinOp op=- left=1 right=2) right=3))"),
        ("x = 7 / 2 % 3", "(Assign target=x value=(BinOp op=% left=(BinOp op=/ left=7 right=2) right=3))"),
        ("x = -a.b", "(Assign target=x value=(UnaryOp op=- operand=(Attr obj=a name=b)))"),
        ("x = --1", "(Assign target=x value=(UnaryOp op=- operand=(UnaryOp op=- operand=1)))"),
        ("x = not a == b", "(Assign target=x value=(UnaryOp op=not operand=(Compare left=a ops=(==) comparators=(b))))"),
        ("x = a or b and c", "(Assign target=x value=(BoolOp op=or left=a right=(BoolOp op=and left=b right=c)))"),
        ("x = a or b or c", "(Assign target=x value=(BoolOp op=or left=(BoolOp op=or left=a right=b) right=c))"),
        ("x = a < b <= c", "(Assign target=x value=(Compare left=a ops=(< <=) comparators=(b c)))"),
        ("x = a != b", "(Assign target=x value=(Compare left=a ops=(!=) comparators=(b)))"),
        ("x = a > b >= c == d", "(Assign target=x value=(Compare left=a ops=(> >= ==) comparators=(b c d)))"),
        ("x = 'a' in s", '(Assign target=x value=(Compare left="a" ops=(in) comparators=(s)))'),
        ("x = 'a' not in s", '(Assign target=x value=(Compare left="a" ops=("not in") comparators=(s)))'),
        ("x = a + 1 < b * 2", "(Assign target=x value=(Compare left=(BinOp op=+ left=a right=1) ops=(<) comparators=((BinOp op=* left=b right=2))))"),
        ("break", "(Break)"),
        ("continue", "(Continue)"),
        ("for f in d:\n    print(f)", "(For target=f iter=d body=((ExprStmt value=(Call func=print args=(f)))))"),
        ("if a:\n  x = 1", "(If test=a body=((Assign target=x value=1)))"),
        ("if a:\n  x = 1\nelse:\n  x = 2", "(If test=a body=((Assign target=x value=1)) orelse=((Assign target=x value=2)))"),
        ("if a:\n  x = 1\nelif b:\n  x = 2\nelif c:\n  x = 3\nelse:\n  x = 4",
         "(If test=a body=((Assign target=x value=1)) elifs=((Elif test=b body=((Assign target=x value=2))) (Elif test=c body=((Assign target=x value=3)))) orelse=((Assign target=x value=4)))"),
        ("x = 1 # comment with 'quote\n", "(Assign target=x value=1)"),
        ("x = '# not a comment'", '(Assign target=x value="# not a comment")'),
        ("x = f(\n  a,\n  k=1,\n)", "(Assign target=x value=(Call func=f args=(a) kwargs=((Keyword name=k value=1))))"),
    ],
)
def test_construct_dump(src, expected):
    assert stmt(src) == expected


@pytest.mark.parametrize(
    "body, value",
    [
        (r'"\d+"', "\\d+"),
        (r'"\\."', "\\."),
        (r'"a\nb"', "a\nb"),
        (r'"a\tb\rc"', "a\tb\rc"),
        (r'"q\"q"', 'q"q'),
        (r"'q\'q'", "q'q"),
        (r'"\x41"', "\\x41"),
        ('"é 日本"', "é 日本"),
    ],
)
def test_string_escapes(body, value):
    module = parse(f"x = {body}")
    assert module.body[0].value == ast.Str(value)
    assert unescape(r"\\d") == "\\d"


def test_empty_and_comment_only_scripts():
    assert parse("") == ast.Module(())
    assert parse("\n\n   \n# c\n   # c\n") == ast.Module(())


def test_line_endings_and_bom():
    assert dump(parse("\ufeffx = 1\r\ny = 2\r\n")) == "(Module body=((Assign target=x value=1) (Assign target=y value=2)))"
    with pytest.raises(DSLError) as e:
        parse("x = 1\ry = 2")
    assert (e.value.line, e.value.col) == (1, 6)
    assert "U+000D" in e.value.message


def test_positions():
    src = "d = Directory('x')\nfor f in d.files():\n    if f.size > 3:\n        print(f.name, k=[1, 2:3])\n"
    module = parse(src)
    assign, loop = module.body
    assert (assign.line, assign.col) == (1, 1)
    assert (assign.value.line, assign.value.col) == (1, 5)
    assert (loop.line, loop.col, loop.target_line, loop.target_col) == (2, 1, 2, 5)
    call = loop.iter
    assert (call.line, call.col) == (2, 10)
    assert (call.func.name_line, call.func.name_col) == (2, 12)
    cond = loop.body[0]
    assert (cond.line, cond.col) == (3, 5)
    assert (cond.test.line, cond.test.col) == (3, 8)
    pr = cond.body[0].value
    assert (pr.line, pr.col, pr.end_line, pr.end_col) == (4, 9, 4, 34)
    kw = pr.kwargs[0]
    assert (kw.line, kw.col) == (4, 23)
    rng = kw.value.items[1]
    assert (rng.line, rng.col) == (4, 29)


@pytest.mark.parametrize(
    "src, message, line, col",
    [
        ("print(x))", r"^unexpected '\)'$", 1, 9),
        ("x = = 1", r"^unexpected '='$", 1, 5),
        ("if x:\ny = 1", r"^expected an indented block$", 2, 1),
        ("if x:\n", r"^expected an indented block$", 1, 6),
        ("if x:\n    y=1\n  z=2", r"^unindent does not match", 3, 3),
        ("x=1\n  y=2", r"^unexpected indent$", 2, 3),
        ("x = 'abc", r"^unterminated string$", 1, 5),
        ('x = "a\\"', r"^unterminated string$", 1, 5),
        ("\tx = 1", r"tab character in indentation", 1, 1),
        ("if x:\n  \ty = 1", r"tab character in indentation", 2, 3),
        ("import os", r"'import' is not supported", 1, 1),
        ("x = 1\nfrom x", r"'from' is not supported", 2, 1),
        ("x = a.class", r"'class' is not supported", 1, 7),
        ("_x = 1", r"names cannot start with '_'", 1, 1),
        ("y = __import__('os')", r"names cannot start with '_'", 1, 5),
        ("x = (1", r"^'\(' was never closed$", 1, 5),
        ("x = [1,\n 2", r"^'\[' was never closed$", 1, 5),
        ("x = 1 +", r"^unexpected end of line$", 1, 8),
        ("for x in y\n  z=1", r"^expected ':'$", 1, 11),
        ("f(a=1, 2)", r"positional argument follows keyword argument", 1, 8),
        ("f(a=1, a=2)", r"duplicate keyword argument 'a'", 1, 8),
        ("x = $", r"unexpected character '\$'", 1, 5),
        ("x = 1 \\\n + 2", r"backslash", 1, 7),
        ("x = 1\x00", r"U\+0000", 1, 6),
        ("x = '\x00'", r"U\+0000", 1, 6),
        ("# \x00", r"U\+0000", 1, 3),
        ("x = 1" + "0" * 5000, r"integer literal too long", 1, 5),
    ],
)
def test_syntax_error_positions(src, message, line, col):
    with pytest.raises(DSLError) as e:
        parse(src)
    err = e.value
    assert err.kind == "SyntaxError"
    assert re.search(message, err.message), err.message
    assert (err.line, err.col) == (line, col)


@pytest.mark.parametrize("chunk", load_chunks(DATA / "syntax_errors.fdsl"), ids=repr)
def test_syntax_error_chunks(chunk):
    assert chunk.expectations, f"{chunk.where()}: a chunk here must expect an error"
    (line, pattern), = chunk.expectations
    with pytest.raises(DSLError) as e:
        parse(chunk.source)
    assert e.value.line == line, f"{chunk.where(line)}: got {e.value!r}"
    assert re.search(pattern, e.value.message), f"{chunk.where(line)}: got {e.value.message!r}"
    assert 1 <= e.value.col


def test_transformer_fails_closed_on_unknown_rule():
    """A parse-tree rule without a method raises a located DSLError, never passes through."""

    class Meta:
        line, column, end_line, end_column, empty = 7, 3, 7, 4, False

    with pytest.raises(DSLError) as e:
        _ToAst().transform(Tree("made_up_rule", [], meta=Meta()))
    err = e.value
    assert (err.line, err.col) == (7, 3)
    assert "made_up_rule" in err.message


def test_format_error_exact():
    src = "x = 1\ny = 2\nprint(x))\n"
    assert format_error("SyntaxError", "unexpected ')'", src, 3, 9) == (
        "SyntaxError: unexpected ')'\n"
        "  at line 3, column 9\n"
        "    print(x))\n"
        "            ^"
    )
    assert format_error("RuntimeError", "boom", src, None, None) == "RuntimeError: boom"
    # tabs shown as one space so the caret lines up
    assert format_error("SyntaxError", "m", "a\tb = $\n", 1, 7).splitlines()[2:] == [
        "    a b = $",
        "          ^",
    ]


def test_a_long_line_is_quoted_around_its_column_with_the_caret_under_it():
    from transpiler.errors import QUOTED_CHARS

    line = "".join(chr(ord("a") + i % 26) for i in range(100_000))
    for col in (1, 5, 150, 50_000, 99_990, 100_000):
        quoted, caret = format_error("SyntaxError", "m", line + "\n", 1, col).splitlines()[2:]
        assert len(quoted) <= 4 + 3 + QUOTED_CHARS + 3
        assert quoted[len(caret) - 1] == line[col - 1] and caret.strip() == "^"
        assert quoted.startswith("    ...") == (col > QUOTED_CHARS // 2 + 1)
        assert quoted.endswith("...") == (col < 100_000 - QUOTED_CHARS // 2)


def test_dslerror_format_matches_parse():
    src = "x = 1\n\nfor f in d:\n    print(x))\n"
    with pytest.raises(DSLError) as e:
        parse(src)
    assert e.value.format(src) == (
        "SyntaxError: unexpected ')'\n"
        "  at line 4, column 13\n"
        "        print(x))\n"
        "                ^"
    )
