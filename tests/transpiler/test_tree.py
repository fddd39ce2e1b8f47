"""The node class both languages' trees are made of (transpiler/tree.py): a frozen dataclass
whose generated __init__ must behave as the dataclass's own would."""

from __future__ import annotations

import dataclasses
from dataclasses import field

import pytest

from transpiler.fdsl import ast as fdsl_ast
from transpiler.ps import ast as ps_ast
from transpiler.tree import Node, node, position


@node
class Pair(Node):
    left: object
    right: object = None
    note: str = field(default="", compare=False)
    at: int = position()


def test_a_node_is_made_as_its_dataclass_would_make_it():
    made = Pair(1, 2, "n", at=3, line=4, col=5, end_line=6, end_col=7)
    assert (made.left, made.right, made.note, made.at) == (1, 2, "n", 3)
    assert (made.line, made.col, made.end_line, made.end_col) == (4, 5, 6, 7)
    assert Pair(1) == Pair(1, None, line=9)  # defaults; positions and compare=False fields left out
    assert Pair(1, 2) != Pair(1, 3)
    assert dataclasses.replace(made, right=8).right == 8
    assert repr(Pair(1)) == "Pair(left=1, right=None, note='')"
    assert hash(Pair(1)) == hash(Pair(1, line=2))


def test_a_node_refuses_what_its_dataclass_refuses():
    made = Pair(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.left = 2
    with pytest.raises(TypeError):
        Pair()  # a field without a default
    with pytest.raises(TypeError):
        Pair(1, 2, "n", 3)  # a position is keyword-only
    with pytest.raises(TypeError):
        Pair(1, colour=2)


def test_node_classes_with_what_the_fast_init_cannot_mirror_are_refused():
    with pytest.raises(TypeError, match="default"):
        @node
        class Listed(Node):
            items: list = field(default_factory=list)

    with pytest.raises(TypeError, match="does not start with '_'"):
        @node
        class Private(Node):
            _fields: int  # would be the generated __init__'s name for the instance dict

    with pytest.raises(TypeError, match="__post_init__"):
        @node
        class Checked(Node):
            value: int

            def __post_init__(self) -> None:
                pass


@pytest.mark.parametrize("tree", [fdsl_ast, ps_ast], ids=["fdsl", "ps"])
def test_every_node_class_of_both_languages_has_the_fast_init(tree):
    classes = [cls for cls in vars(tree).values() if isinstance(cls, type) and issubclass(cls, Node)]
    assert len(classes) > 20
    for cls in classes:
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
        assert cls.__init__.__module__ == cls.__module__
        assert "_fields" in cls.__init__.__code__.co_varnames, cls
