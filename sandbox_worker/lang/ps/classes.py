"""PromptScript classes: a class is a table of methods, an instance an object with fields."""

from __future__ import annotations

from .errors import PSError

# ---- classes -------------------------------------------------------------------------------

def _arity_error(what: str, fn, given: int) -> PSError:
    expected = fn.__code__.co_argcount - 1
    return PSError(f"{what}() takes {expected} argument{'s' if expected != 1 else ''} but {given} "
                   f"{'was' if given == 1 else 'were'} given")


class PSClass:
    """A PromptScript class: a name and a table of methods (plain functions taking self)."""

    __slots__ = ("name", "methods")

    def __init__(self, name: str, methods: dict) -> None:
        self.name = name
        self.methods = methods

    def __call__(self, *args):
        instance = PSInstance(self)
        init = self.methods.get("__init__")
        if init is None:
            if args:
                raise PSError(f"{self.name}() takes no arguments (it has no __init__)")
        else:
            if len(args) != init.__code__.co_argcount - 1:
                raise _arity_error(self.name, init, len(args))
            init(instance, *args)
        return instance


class PSInstance:
    __slots__ = ("ps_class", "fields")

    def __init__(self, ps_class: PSClass) -> None:
        self.ps_class = ps_class
        self.fields = {}


class BoundMethod:
    __slots__ = ("instance", "name", "fn")

    def __init__(self, instance, name, fn) -> None:
        self.instance, self.name, self.fn = instance, name, fn

    def __call__(self, *args):
        if len(args) != self.fn.__code__.co_argcount - 1:
            raise _arity_error(f"{self.instance.ps_class.name}.{self.name}", self.fn, len(args))
        return self.fn(self.instance, *args)


def ps_make_class(name, methods):
    return PSClass(name, dict(methods))


class PSClient:
    """An LLMClient: its options (checked by the broker on each call), callable as plan()."""

    __slots__ = ("config", "call")

    def __init__(self, config: dict, call) -> None:
        self.config = config
        self.call = call  # the plan() of the run's built-ins

    def __call__(self, *args):
        return self.call(self, *args)
