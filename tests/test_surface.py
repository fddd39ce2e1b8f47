"""Layers 1 and 2 describe the same API, for each language: the transpiler's tables and the
worker's globals and guards."""

from __future__ import annotations

import pytest

from sandbox_worker.lang.fdsl import guards
from sandbox_worker.lang.fdsl.api import DirectoryObject, FileObject, ResultList
from transpiler.fdsl import surface


def test_attribute_tables_are_equal_per_type():
    assert guards.ALLOWED_ATTRIBUTES[DirectoryObject] == surface.DIRECTORY_ATTRS
    assert guards.ALLOWED_ATTRIBUTES[FileObject] == surface.FILE_ATTRS
    assert guards.ALLOWED_ATTRIBUTES[str] == surface.STRING_METHODS
    assert guards.ALLOWED_ATTRIBUTES[list] == surface.LIST_METHODS
    assert guards.ALLOWED_ATTRIBUTES[ResultList] == surface.RESULT_ATTRS
    assert guards.RECORD_FIELDS == surface.RECORD_ATTRS


def test_builtins_are_equal():
    worker_builtins = set(guards.restricted_globals(client=None)["__builtins__"])
    assert worker_builtins == set(surface.BUILTINS) | set(surface.RUNTIME_HELPERS)


def test_every_listed_attribute_exists_on_its_type():
    for cls in (DirectoryObject, FileObject):
        for name in guards.ALLOWED_ATTRIBUTES[cls]:
            assert hasattr(cls, name), (cls.__name__, name)
    for name in surface.STRING_METHODS:
        assert hasattr(str, name)
    for name in surface.LIST_METHODS:
        assert hasattr(list, name)


class _StartOnly:
    """A broker that answers only the run's first call."""

    def call(self, op, **args):
        assert op == "ps.start"
        return {"max_steps": 0, "max_time_ms": 0, "policy": {}, "files_changed": 0}


def test_promptscript_builtins_and_helpers_are_equal():
    from sandbox_worker.lang import ps as worker
    from transpiler.ps import surface as ps_surface

    names = set(worker.restricted_globals(_StartOnly())["__builtins__"]) - {"None", "True", "False"}
    assert names == ps_surface.BUILTINS | ps_surface.RUNTIME_HELPERS
    # the LLM built-ins are served (they were refused at compile time before issue 11)
    assert {"LLMClient", "run_agent", "plan", "do", "decide", "judge", "summarize"} <= names


def test_promptscript_runtime_variables_are_the_ones_the_worker_serves():
    from sandbox_worker.lang import ps as worker
    from sandbox_worker.lang.ps.errors import PSError
    from transpiler.ps import surface as ps_surface

    ps_var = worker.restricted_globals(_StartOnly())["__builtins__"]["ps_var"]
    for name in ps_surface.RUNTIME_VARS:
        ps_var(name)  # served, whatever its value
    with pytest.raises(PSError, match="unknown runtime variable"):
        ps_var("not_a_runtime_variable")
