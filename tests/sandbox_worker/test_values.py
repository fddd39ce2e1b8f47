"""sandbox_worker/values.py: one type naming and one rendering, each language its words."""

from __future__ import annotations

import time

import pytest

from runtime.api import run_script
from sandbox_worker.client import ScriptFailure
from sandbox_worker.lang.fdsl import api as fdsl
from sandbox_worker.lang.ps import values as ps
from sandbox_worker.values import MAX_RENDER_CHARS, MAX_RENDER_DEPTH


def test_each_language_names_and_writes_plain_values_in_its_own_words():
    value = [None, True, 3, "a\"b\n"]
    assert fdsl.render(value) == '[none, true, 3, "a\\"b\\n"]'
    assert ps.render(value) == '[null, true, 3, "a\\"b\\n"]'
    assert ps.render({"k": [1.5], "not a name": {}}) == '{k: [1.5], "not a name": {}}'
    assert [fdsl.type_name(v) for v in (None, True, 3, "s", [])] == ["none", "bool", "int", "string", "list"]
    assert [ps.type_name(v) for v in (None, True, 3, 1.5, "s", [], {})] == \
        ["null", "boolean", "number", "number", "string", "array", "object"]
    assert fdsl.render("top") == ps.render("top") == "top"  # a string alone is shown bare


def test_deep_nesting_is_cut_and_a_huge_value_fails_at_once_in_both_languages():
    deep: list = []
    for _ in range(MAX_RENDER_DEPTH + 5):
        deep = [deep]
    assert fdsl.render(deep).count("[") == MAX_RENDER_DEPTH and "..." in fdsl.render(deep)
    wide = ["x" * 1000] * (MAX_RENDER_CHARS // 1000 + 1)
    for language in (fdsl, ps):
        started = time.monotonic()
        with pytest.raises(ScriptFailure) as caught:
            language.render(wide)
        assert caught.value.message == (f"this {language.type_name(wide)} is too large to turn into text "
                                         f"(more than {MAX_RENDER_CHARS} characters)")
        assert time.monotonic() - started < 5


@pytest.mark.parametrize("lang,source", [
    ("fdsl", "b = [[1], [1]]\nfor i in [1:30]:\n  b = [b, b]\nprint(len(str(b)))\n"),
    ("ps", "b = [[1], [1]]\nfor i in range(30):\n  b = [b, b]\nlog(b)\n"),
])
def test_a_self_doubling_list_fails_with_a_located_error_not_a_timeout(lang, source, tmp_path):
    r = run_script(source, lang=lang, root=str(tmp_path), timeout=30, options={} if lang == "fdsl" else {"max_steps": 0})
    assert r.exit_code == 1, r.error
    assert "too large to turn into text" in r.error and r.error_line == 4, r.error
    assert r.figures["run_s"] < 10
