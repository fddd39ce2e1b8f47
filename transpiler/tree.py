"""What every language's syntax tree shares: the positioned node, iteration and the printed form.

Every node is a frozen dataclass with the 1-based ``line``/``col`` where its construct starts
(and ``end_line``/``end_col``, exclusive, where it ends). Position fields are made with
``position()`` and are excluded from equality, so two trees compare equal when they mean the
same program wherever they were written. A field made with ``hidden()`` (source text kept for
messages) takes part in equality but not in ``dump``.
"""

from __future__ import annotations

import json
import re
from dataclasses import MISSING, dataclass, field, fields
from typing import Callable, Iterator

__all__ = ["Node", "node", "position", "hidden", "payload", "walk", "dump"]


def position() -> int:
    return field(default=0, kw_only=True, compare=False, repr=False)


def hidden():
    return field(metadata={"dump": False})


def node(cls: type) -> type:
    """A node class: a frozen dataclass whose ``__init__`` fills the instance's dict directly.
    The dataclass's own calls ``object.__setattr__`` once per field, which is 40% of making a
    node, and the parser makes about one node per token."""
    cls = dataclass(frozen=True)(cls)
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: a node has no __post_init__")
    positional, keyword, stores, defaults = [], [], [], {}
    for f in fields(cls):
        if f.default_factory is not MISSING or not f.init:
            raise TypeError(f"{cls.__name__}.{f.name}: a node field is set by __init__, with a plain default or none")
        if f.name.startswith("_"):  # the generated __init__'s own names start with one
            raise TypeError(f"{cls.__name__}.{f.name}: a node field's name does not start with '_'")
        param = f.name
        if f.default is not MISSING:
            defaults[f"_default_{f.name}"] = f.default
            param += f"=_default_{f.name}"
        (keyword if f.kw_only else positional).append(param)
        stores.append(f"_fields[{f.name!r}] = {f.name}")
    params = ", ".join(positional + (["*"] + keyword if keyword else []))
    source = f"def __init__(_self, {params}):\n    _fields = _self.__dict__\n    " + "\n    ".join(stores)
    exec(source, defaults)  # noqa: S102 - the text is made of the class's own field names
    init = defaults["__init__"]
    init.__qualname__, init.__module__ = f"{cls.__qualname__}.__init__", cls.__module__
    cls.__init__ = init
    return cls


@node
class Node:
    line: int = position()
    col: int = position()
    end_line: int = position()
    end_col: int = position()


_MEANING: dict[type, tuple[str, ...]] = {}  # a node class -> its payload field names


def _meaning(cls: type) -> tuple[str, ...]:
    names = _MEANING.get(cls)
    if names is None:
        names = _MEANING[cls] = tuple(f.name for f in fields(cls) if f.compare)
    return names


def payload(node: Node) -> Iterator[tuple[str, object]]:
    """The fields that make up a node's meaning (positions left out), in declaration order."""
    for name in _meaning(type(node)):
        yield name, getattr(node, name)


def walk(node: Node) -> Iterator[Node]:
    """Yield ``node`` and every node below it, parents first, in source order (no recursion)."""
    stack: list[object] = [node]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        if isinstance(item, tuple):
            stack.extend(reversed(item))
        elif isinstance(item, Node):
            yield item
            names = _MEANING.get(type(item)) or _meaning(type(item))
            for name in reversed(names):
                value = getattr(item, name)
                if isinstance(value, (Node, tuple)):
                    push(value)


def _bare_word(value: str) -> str:
    return value if re.fullmatch(r"[^\s()\"]+", value) else json.dumps(value)


def dump(node: object, leaf: Callable[[object], str | None] = lambda _: None,
         word: Callable[[str], str] = _bare_word) -> str:
    """The compact printed form the table-driven tests compare against, e.g.
    ``(Assign target=y value=(Call func=(Attr obj=d name=search) args=("x")))``.

    ``leaf`` prints a language's atoms (names, literals) or returns None; ``word`` prints a
    plain string field. Tuples print in parentheses; empty tuples and ``None`` are left out."""
    text = leaf(node)
    if text is not None:
        return text
    if isinstance(node, str):
        return word(node)
    if isinstance(node, tuple):
        return "(" + " ".join(dump(x, leaf, word) for x in node) + ")"
    if isinstance(node, Node):
        parts = [type(node).__name__]
        shown = {f.name for f in fields(node) if f.metadata.get("dump", True)}
        for name, value in payload(node):
            if name in shown and value is not None and value != ():
                parts.append(f"{name}={dump(value, leaf, word)}")
        return "(" + " ".join(parts) + ")"
    raise TypeError(f"cannot dump {type(node).__name__}")
