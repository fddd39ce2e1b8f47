"""Hostile input: every failure is a clean, located DSLError; nothing else escapes."""

from __future__ import annotations

import sys
import time

import pytest

from transpiler import DSLError, compile_script


def fail(src: str, **limits) -> DSLError:
    with pytest.raises(DSLError) as e:
        compile_script(src, **limits)
    err = e.value
    assert err.line is not None and err.line >= 1 and err.col >= 1
    return err


def test_two_megabytes_is_refused_by_size():
    err = fail("x = 1\n" * (2 * 1024 * 1024 // 6 + 1))
    assert err.message.startswith("script is too large (") and "limit 1048576" in err.message
    assert (err.line, err.col) == (1, 1)


def test_size_limit_is_a_parameter_and_counts_utf8_bytes():
    err = fail("x = 'ééé'", max_bytes=10)
    assert "(12 bytes; limit 10)" in err.message
    compile_script("x = 1", max_bytes=10)


def test_ten_thousand_nested_brackets():
    start = time.perf_counter()
    err = fail("x = " + "[" * 10_000 + "]" * 10_000)
    assert err.message == "nesting too deep (limit 100)"
    assert (err.line, err.col) == (1, 105)
    assert time.perf_counter() - start < 1


def test_deep_parentheses_inside_limit_compile():
    compile_script("x = " + "(" * 99 + "1" + ")" * 99)
    compile_script("x = " + "[" * 100 + "]" * 100)


def test_deep_blocks():
    def nested(depth):
        lines = ["x = 1"] + ["    " * i + "if x:" for i in range(depth)] + ["    " * depth + "y = 1"]
        return "\n".join(lines) + "\n"

    compile_script(nested(50))
    err = fail(nested(51))
    assert err.message == "blocks nested too deep (limit 50)"
    assert (err.line, err.col) == (53, 205)
    err = fail(nested(300))
    assert "nested too deep" in err.message


def test_hundred_thousand_term_sum_never_recursion_error():
    limit = sys.getrecursionlimit()
    err = fail("x = " + "+".join(["1"] * 100_000))
    assert "too long" in err.message or "too deep" in err.message
    assert sys.getrecursionlimit() == limit


def test_long_sum_below_token_limit_is_too_deep_at_its_start():
    err = fail("x = 1\ny = " + "+".join(["x"] * 5000))
    assert err.message == "expression too deep (limit 100)"
    assert (err.line, err.col) == (2, 5)


@pytest.mark.parametrize("op", ["-", "not "])
def test_unary_chains(op):
    err = fail("x = " + op * 10_000 + "1")
    assert "too deep" in err.message
    compile_script("x = " + op * 99 + "1")


def test_long_method_chain():
    err = fail("x = 's'" + ".lower()" * 1000)
    assert "too deep" in err.message


def test_many_tokens():
    err = fail("x = 1\n" * 60_000)
    assert "too long" in err.message


@pytest.mark.parametrize(
    "src, line, col, code",
    [
        ("x = 1\x00", 1, 6, "U+0000"),
        ("\x00", 1, 1, "U+0000"),
        ("x = '\x00'", 1, 6, "U+0000"),
        ("n\u0430me = 1", 1, 2, "U+0430"),  # Cyrillic small a, looks like Latin a
        ("x = 1\nna\u200bme = 2", 2, 3, "U+200B"),  # zero-width space
        ("x\u00a0= 1", 1, 2, "U+00A0"),
        ("\u0455 = 1", 1, 1, "U+0455"),
        ("x = \u2212 1", 1, 5, "U+2212"),  # minus sign
        ("x = 1 \u202e", 1, 7, "U+202E"),  # right-to-left override
        ("x = \ud800", 1, 5, "U+D800"),  # lone surrogate
        ("x = 1\x0c", 1, 6, "U+000C"),
        ("x = 1\x1b", 1, 6, "U+001B"),
        ("\ufeff\ufeffx = 1", 1, 1, "U+FEFF"),  # only one BOM is skipped
    ],
)
def test_odd_characters_are_located(src, line, col, code):
    err = fail(src)
    assert code in err.message
    assert (err.line, err.col) == (line, col)


def test_unicode_inside_strings_and_comments_is_fine():
    out = compile_script("x = 'na\u0430me \u200b \U0001f600' # caf\u00e9 \u202e\n").python
    assert out.isascii()
    assert "'na\\u0430me \\u200b \\U0001f600'" in out


@pytest.mark.parametrize(
    "src",
    [
        "x" * 100_000,
        "if" + " x" * 1000 + ":",
        "(" * 100 + ")" * 100,
        "'" * 5001,
        "\n" * 100_000,
        " " * 100_000,
        "#" * 100_000,
        "x = 1\n" + " " * 10_000 + "y",
        "f(" + "k=1," * 5000 + ")",
        "f(" + "a," * 20_000 + ")",
        "[" + "1:" * 1000 + "]",
    ],
    ids=lambda s: repr(s[:20]),
)
def test_garbage_only_raises_dslerror(src):
    try:
        compile_script(src)
    except DSLError as e:
        assert e.line is not None and e.col is not None
