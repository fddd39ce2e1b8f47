"""runtime/compile.py: the stack and the parser cache the runtime lends the transpiler, and the
transpiler's side of that bargain (no I/O, no process-wide state of its own)."""

from __future__ import annotations

import builtins
import io
import os
import subprocess
import sys

import transpiler
from runtime.compile import UserParserCache, compile_script, deep_stack
from tests.support import REPO
from transpiler.fdsl.parse import FRONTEND as FDSL
from transpiler.frontend import Grammar
from transpiler.ps.parse import FRONTEND as PS

DEEP = "x = " + "(" * 99 + "1" + ")" * 99 + "\n" + "".join(" " * 4 * i + "if true:\n" for i in range(50)) + " " * 200 + "print(x)\n"


def test_transpiler_does_no_io_and_leaves_the_recursion_limit_alone(monkeypatch):
    transpiler.compile_script("print(1)\n")  # grammar loaded once per process
    transpiler.compile_script("log(1)\n", lang="ps")

    def refuse(*args, **kwargs):
        raise AssertionError("the transpiler touched the outside world")

    for target, name in ((builtins, "open"), (io, "open"), (os, "open"), (os, "makedirs"), (os, "stat"),
                         (sys, "setrecursionlimit")):
        monkeypatch.setattr(target, name, refuse)
    assert "print" in transpiler.compile_script(DEEP).python
    assert "ps_main" in transpiler.compile_script('x = {"a": [1, 2]}\nlog(x)\n', lang="ps").python


def test_below_the_needed_stack_a_deep_script_is_a_located_error_not_a_crash():
    code = ("import sys, transpiler\n"
            f"src = {DEEP!r}\n"
            "try:\n    transpiler.compile_script(src)\n    print('compiled')\n"
            "except transpiler.DSLError as e:\n    print('DSLError', e.message)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(("DSLError expression too deep", "compiled")), done.stdout
    assert "Traceback" not in done.stderr


def test_deep_stack_restores_the_limit_after_the_last_user():
    before = sys.getrecursionlimit()
    with deep_stack(before + 500):
        with deep_stack(before + 500):
            assert sys.getrecursionlimit() == before + 500
        assert sys.getrecursionlimit() == before + 500
    assert sys.getrecursionlimit() == before
    assert compile_script(DEEP).python  # the runtime's door lends the stack itself


def test_parser_cache_round_trip_and_a_damaged_entry_only_costs_a_rebuild(tmp_path):
    cache = UserParserCache(str(tmp_path / "cache"))
    for frontend in (FDSL, PS):
        fresh = Grammar(frontend.grammar.package, frontend.grammar.indenter, **frontend.grammar.extra)
        built = fresh.build(cache)
        stored = list((tmp_path / "cache").iterdir())
        assert stored, "the built parser was kept"
        again = Grammar(fresh.package, fresh.indenter, **fresh.extra)
        loaded = again.build(cache)
        assert type(loaded.options.postlex) is fresh.indenter
        assert loaded.parse("x = 1\n") == built.parse("x = 1\n")
        for entry in stored:
            entry.write_bytes(b"not a pickle")
        damaged = Grammar(fresh.package, fresh.indenter, **fresh.extra)
        assert damaged.build(cache).parse("x = 1\n") == built.parse("x = 1\n")
        for entry in (tmp_path / "cache").iterdir():
            entry.unlink()


def test_parser_cache_refuses_a_folder_or_entry_others_could_write(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o777)
    os.chmod(folder, 0o777)
    cache = UserParserCache(str(folder))
    cache.store("k", b"data")
    assert not list(folder.iterdir()), "nothing is written to a folder others can write"
    assert cache.load("k") is None

    private = tmp_path / "private"
    cache = UserParserCache(str(private))
    cache.store("k", b"data")
    assert cache.load("k") == b"data"
    entry = next(private.iterdir())
    os.chmod(entry, 0o666)
    assert cache.load("k") is None, "an entry others could have written is not unpickled"
    entry.unlink()
    (private / "elsewhere").write_bytes(b"planted")
    os.symlink(private / "elsewhere", entry)
    assert cache.load("k") is None, "a symlinked entry is not followed"
