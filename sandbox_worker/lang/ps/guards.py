"""The RestrictedPython hooks of a PromptScript run (fail closed), and values as JSON for the broker."""

from __future__ import annotations

import json
import math

from .blocks import RetryBlock
from .classes import BoundMethod, PSInstance
from .errors import PSError
from .values import type_name

# ---- guards (RestrictedPython hooks) ---------------------------------------------------------

def guarded_getattr(obj, name):
    """Allow object keys and instance fields/methods; deny everything else."""
    if type(name) is not str or name.startswith("_"):
        raise PSError("member names cannot start with '_'")
    t = type(obj)
    if t is dict:
        if name in obj:
            return obj[name]
        raise PSError(f"object has no key '{name}'")
    if t is PSInstance:
        if name in obj.fields:
            return obj.fields[name]
        fn = obj.ps_class.methods.get(name)
        if fn is not None and name != "__init__":
            return BoundMethod(obj, name, fn)
        raise PSError(f"{obj.ps_class.name} instance has no field or method '{name}'")
    raise PSError(f"{type_name(obj)} has no member '{name}'")


def guarded_getitem(obj, index):
    t = type(obj)
    if t is dict:
        if type(index) is not str:
            raise PSError(f"an object key must be a string, not {type_name(index)}")
        if index in obj:
            return obj[index]
        raise PSError(f"object has no key {json.dumps(index)}")
    if t is list or t is str:
        if type(index) is not int:
            raise PSError(f"an index must be an integer, not {type_name(index)}")
        try:
            return obj[index]
        except IndexError:
            raise PSError(f"index {index} is out of range ({type_name(obj)} of length {len(obj)})") from None
    raise PSError(f"{type_name(obj)} cannot be indexed")


class Writer:
    """What ``_write_(obj)`` returns: the only way generated code assigns a member or an item."""

    __slots__ = ("target",)

    def __init__(self, target) -> None:
        object.__setattr__(self, "target", target)

    def __setattr__(self, name, value):
        target = object.__getattribute__(self, "target")
        if type(name) is not str or name.startswith("_"):
            raise PSError("member names cannot start with '_'")
        if type(target) is dict:
            target[name] = value
        elif type(target) is PSInstance:
            target.fields[name] = value
        else:
            raise PSError(f"cannot set member '{name}' of {type_name(target)}")

    def __setitem__(self, index, value):
        target = object.__getattribute__(self, "target")
        if type(target) is dict:
            if type(index) is not str:
                raise PSError(f"an object key must be a string, not {type_name(index)}")
            target[index] = value
        elif type(target) is list:
            if type(index) is not int:
                raise PSError(f"an index must be an integer, not {type_name(index)}")
            try:
                target[index] = value
            except IndexError:
                raise PSError(f"index {index} is out of range (array of length {len(target)})") from None
        else:
            raise PSError(f"{type_name(target)} items cannot be assigned")


def guarded_write(obj):
    if type(obj) in (dict, list, PSInstance):
        return Writer(obj)
    raise PSError(f"{type_name(obj)} cannot be modified")


def guarded_iter(obj):
    t = type(obj)
    if t is list or t is str or t is range:  # a range only ever comes from ps_range_iter
        return iter(obj)
    if t is dict:
        return iter(list(obj))
    if t is RetryBlock:
        return obj
    raise PSError(f"cannot iterate over {type_name(obj)}")


# ---- JSON values for the broker -------------------------------------------------------------

def to_json(value, what: str, depth: int = 0):
    t = type(value)
    if t is int and value.bit_length() > 14_000:  # near Python's 4300-digit text conversion limit
        try:
            str(value)
        except ValueError:
            raise PSError(f"{what}: a number of more than 4300 digits cannot be sent to an action") from None
    if value is None or t in (bool, int, str):
        return value
    if t is float:
        if math.isnan(value) or math.isinf(value):
            raise PSError(f"{what}: {value} cannot be sent to an action")
        return value
    if depth > 50:
        raise PSError(f"{what}: value nested too deep")
    if t is list:
        return [to_json(v, what, depth + 1) for v in value]
    if t is dict:
        return {str(k): to_json(v, what, depth + 1) for k, v in value.items()}
    raise PSError(f"{what}: a {type_name(value)} cannot be sent to an action")
