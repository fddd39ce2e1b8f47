"""What an LLM writes first in FilesDSL (issue 14, item 9): Python's spellings that mean the
same are accepted, the others are refused with the FilesDSL way to write them."""

from __future__ import annotations

import pytest

from runtime.api import run_script


def run(source: str, tmp_path) -> tuple[str, str | None]:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    r = run_script(source, root=str(tmp_path), timeout=30)
    return r.output, r.error


def test_slices_negative_indexes_and_python_booleans(tmp_path):
    out, error = run('xs = [10, 20, 30, 40]\n'
                     'print(xs[1:3], xs[2:], xs[:2], xs[-2:], xs[-1], "hello"[1:3])\n'
                     'hits = Directory("/").grep("a")\n'
                     'print(hits[0:1], len(hits[-1:]))\n'
                     'flag = True\n'
                     'if flag and not False:\n'
                     '    print(flag, False)\n', tmp_path)
    assert error is None, error
    assert out.splitlines() == ["[20, 30] [30, 40] [10, 20] [30, 40] 40 el", "[a.txt:1: alpha] 1", "true false"]


@pytest.mark.parametrize("source,message", [
    ('xs = [1, 2]\nprint(xs["a":])\n', "a slice bound must be an int, not string"),
    ('xs = [1, 2]\nprint(xs[5])\n', "index 5 is out of range (list of length 2)"),
    ('d = Directory("/")\nprint(d[0:1])\n', "directory cannot be indexed"),
])
def test_bad_slices_and_indexes_name_what_is_wrong(tmp_path, source, message):
    _out, error = run(source, tmp_path)
    assert error is not None and error.startswith(f"RuntimeError: {message}\n  at line 2"), error


def test_promptscript_accepts_python_booleans_too(tmp_path):
    r = run_script('x = True\nif x and not False:\n  log(x, False)\nTruex = 1\nlog(Truex)\n', lang="ps",
                   root=str(tmp_path), timeout=30)
    assert r.ok and r.output == "[ps] true false\n[ps] 1\n", r.error
    r = run_script("x = None\n", lang="ps", root=str(tmp_path), timeout=30)
    assert r.exit_code == 1 and "'None' is not PromptScript; write 'null'" in r.error
