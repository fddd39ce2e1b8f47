"""Static checks (security layer 1): each refusal is a located DSLError."""

from __future__ import annotations

import re

import pytest

from tests.support.transpiler import DATA, load_chunks
from transpiler import DSLError, compile_script, parse
from transpiler.fdsl.check import errors
from transpiler.fdsl.surface import BUILTINS, KNOWN_ATTRIBUTES, RESERVED_WORDS


def fail(src: str) -> DSLError:
    with pytest.raises(DSLError) as e:
        compile_script(src)
    return e.value


@pytest.mark.parametrize(
    "src, message, line, col",
    [
        ("d = 1\ng = d.__globals__", r"names cannot start with '_'", 2, 7),
        ("d = 1\ng = d.globals", r"^unknown attribute 'globals'$", 2, 7),
        ("d = 1\ng = d.read().mro", r"^unknown attribute 'mro'$", 2, 14),
        ("d = 1\nprint(d.format('x'))", r"^unknown attribute 'format'$", 2, 9),
        ("x = open('f')", r"^unknown function 'open'$", 1, 5),
        ("eval('1')", r"^unknown function 'eval'$", 1, 1),
        ("exec('1')", r"^unknown function 'exec'$", 1, 1),
        ("getattr(1, 'x')", r"^unknown function 'getattr'$", 1, 1),
        ("x = 1\nx()", r"^unknown function 'x'$", 2, 1),
        ("xs = [1]\nxs[0]()", r"only built-in functions and methods can be called", 2, 1),
        ("print = 1", r"^cannot assign to built-in 'print'$", 1, 1),
        ("x = 1\nif x:\n    Directory = 2", r"^cannot assign to built-in 'Directory'$", 3, 5),
        ("inclusive_range = 1", r"^cannot assign to built-in 'inclusive_range'$", 1, 1),
        ("str += 'x'", r"^cannot assign to built-in 'str'$", 1, 1),
        ("for len in [1]:\n    x = 1", r"^cannot assign to built-in 'len'$", 1, 5),
        ("x = 1\nprint(x, yy)", r"^undefined name 'yy'$", 2, 10),
        ("total += 1", r"^undefined name 'total'$", 1, 1),
        ("print(inclusive_range(1, 2))", r"unknown function 'inclusive_range'", 1, 7),
        ("break", r"^'break' outside a loop$", 1, 1),
        ("x = 1\nif x:\n    continue", r"^'continue' outside a loop$", 3, 5),
        ("x = class", r"'class' is not supported", 1, 5),
        ("lambda = 1", r"'lambda' is not supported", 1, 1),
        ("x = 1\nx.__class__.__bases__", r"names cannot start with '_'", 2, 3),
    ],
)
def test_check_errors_located(src, message, line, col):
    err = fail(src)
    assert err.kind == "SyntaxError"
    assert re.search(message, err.message), err.message
    assert (err.line, err.col) == (line, col)


@pytest.mark.parametrize("chunk", load_chunks(DATA / "checker_errors.fdsl"), ids=repr)
def test_checker_chunks(chunk):
    if not chunk.expectations:
        compile_script(chunk.source)
        return
    (line, pattern), = chunk.expectations
    with pytest.raises(DSLError) as e:
        compile_script(chunk.source)
    assert e.value.line == line, f"{chunk.where(line)}: got {e.value!r}"
    assert re.search(pattern, e.value.message), f"{chunk.where(line)}: got {e.value.message!r}"


@pytest.mark.parametrize("word", sorted(RESERVED_WORDS))
def test_every_reserved_word_is_refused_as_a_name(word):
    for src, col in ((f"{word} = 1", 1), (f"x = 1\nprint({word})", 7)):
        with pytest.raises(DSLError) as e:
            compile_script(src)
        assert e.value.col == col or e.value.line == 1


@pytest.mark.parametrize("name", sorted(KNOWN_ATTRIBUTES))
def test_every_known_attribute_is_allowed(name):
    compile_script(f"x = 1\ny = x.{name}\nx.{name}(1, k=2)")


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_every_builtin_can_be_called(name):
    compile_script(f"x = {name}(1)")


def test_all_errors_are_reported_in_source_order():
    module = parse("a = open(1)\nb = a.nope\nprint(zz)\nbreak\n")
    found = [(e.line, e.col, e.message) for e in errors(module)]
    assert found == [
        (1, 5, "unknown function 'open'"),
        (2, 7, "unknown attribute 'nope'"),
        (3, 7, "undefined name 'zz'"),
        (4, 1, "'break' outside a loop"),
    ]


def test_names_read_before_assignment_are_not_static_errors():
    compile_script("for i in [1, 2]:\n    if i > 1:\n        print(prev)\n    prev = i\n")
