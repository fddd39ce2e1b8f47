"""Layers 1 and 2 describe the same API: the transpiler's tables and the worker's guards."""

from __future__ import annotations

from sandbox_worker.lang.fdsl import guards
from sandbox_worker.lang.fdsl.api import DirectoryObject, FileObject
from transpiler.fdsl import surface


def test_attribute_tables_are_equal_per_type():
    assert guards.ALLOWED_ATTRIBUTES[DirectoryObject] == surface.DIRECTORY_ATTRS
    assert guards.ALLOWED_ATTRIBUTES[FileObject] == surface.FILE_ATTRS
    assert guards.ALLOWED_ATTRIBUTES[str] == surface.STRING_METHODS
    assert guards.ALLOWED_ATTRIBUTES[list] == surface.LIST_METHODS
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
