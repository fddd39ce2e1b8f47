"""Layer 2 alone: RestrictedPython code written by hand (the transpiler bypassed).

Each attack is code a FilesDSL script could never express; the guards and the minimal
builtins must still refuse it with a clean error, never a traceback or a leaked value.
"""

from __future__ import annotations

import pytest

from tests.support import CANARY

REJECTED_AT_COMPILE = [
    'File("data/a.txt").__class__',
    'File("data/a.txt").read.__globals__',
    'Directory("data").__class__.__subclasses__()',
    "len.__self__",
    "().__class__.__bases__[0].__subclasses__()",
    "__import__('os')",
    "x = _getattr_",
    "(lambda: 0).__code__",
    "[x for x in ()].__class__",
    "eval('1')",
    "exec('x = 1')",
    "g = (x for x in [1])\ng.gi_frame",
]


@pytest.mark.parametrize("code", REJECTED_AT_COMPILE)
def test_dunder_and_underscore_access_is_refused(run_worker_code, code):
    result, output = run_worker_code(code)
    assert result.status == "error"
    assert result.error["kind"] == "InternalError"
    assert "rejected by RestrictedPython" in result.error["msg"]
    assert "Traceback" not in result.error["msg"]


REFUSED_AT_RUN_TIME = [
    ('print("{0.path}".format(File("data/a.txt")))', "string has no attribute 'format'"),
    ('"{x}".format_map({})', "string has no attribute 'format_map'"),
    ("getattr(len, 'x')", "'getattr' is not defined"),
    ("type(len)", "'type' is not defined"),
    ("open('/etc/passwd')", "'open' is not defined"),
    ("globals()", "'globals' is not defined"),
    ("vars()", "'vars' is not defined"),
    ("import os", "ImportError"),
    ("g = (x for x in [1])\ng.send(None)", "has no attribute 'send'"),
    ('d = Directory("data")\nd.client', "directory has no attribute 'client'"),
    ('f = File("data/a.txt")\nf.read.func', "has no attribute 'func'"),
    ("len.name", "has no attribute 'name'"),
    ('x = {"a": 1}\nx.keys()', "has no attribute 'keys'"),
    ('x = {"a": 1}\nx["a"]', "cannot be indexed"),
    ("for c in 3:\n    pass", "cannot iterate over int"),
    ('f = File("data/a.txt")\nfor c in f:\n    pass', "cannot iterate over file"),
    ('f = File("data/a.txt")\nf.path = "x"', "cannot be modified"),
    ("x = [1]\nx[0] = 2", "cannot be modified"),
]


@pytest.mark.parametrize("code, message", REFUSED_AT_RUN_TIME)
def test_non_whitelisted_access_is_refused(run_worker_code, code, message):
    result, _ = run_worker_code(code)
    assert result.status == "error", result
    assert message in result.error["msg"]
    assert result.error["line"] is not None


def test_whitelisted_api_works_through_the_guards(run_worker_code):
    code = 'f = File("data/a.txt")\nprint(f.name, f.suffix, f.page_count, f.contains("language"), "A-b".lower())'
    result, output = run_worker_code(code)
    assert result.status == "ok", result
    assert output == "a.txt .txt 2 true a-b\n"


def test_worker_objects_hold_no_host_path(run_worker_code, sandbox):
    root, _ = sandbox
    code = 'd = Directory("data")\nf = File("data/a.txt")\nprint(d, f, d.files(), d.list(), str(f))\nprint("%s %r" % (f, d))'
    result, output = run_worker_code(code)
    assert result.status == "ok", result
    assert str(root) not in output
    assert str(root.parent) not in output


def test_paths_outside_the_root_never_reach_the_canary(run_worker_code, sandbox):
    root, canary = sandbox
    (root / "data" / "link").symlink_to(canary)
    attempts = [
        'print(File("../canary.txt").read())',
        f'print(File("{canary}").read())',
        'print(File("data/link").read())',
        'print(File("data/../../canary.txt").read())',
        'print(Directory("..").files())',
    ]
    for code in attempts:
        result, output = run_worker_code(code)
        assert result.status == "error", code
        assert CANARY not in output and CANARY not in result.error["msg"]
        assert str(root.parent) not in result.error["msg"]


def test_api_objects_format_as_dsl_values_not_python_internals(run_worker_code):
    """Raw restricted code (transpiler bypassed) can format objects with f-strings and
    format(); what it sees is the DSL form, never a module path or a heap address."""
    code = (
        "d = Directory('/')\n"
        "f = d.files()[0]\n"
        "e = d.list()[0]\n"
        "print(f'{d!r} | {f!r} | {e!r} | {[d, f]}')\n"
    )
    result, output = run_worker_code(code)
    assert result.status == "ok", result.error
    assert "sandbox_worker" not in output and " at 0x" not in output and "Object" not in output
    assert output.startswith(". | ")
