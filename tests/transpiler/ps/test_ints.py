"""The static int analysis (transpiler/ps/ints.py): which names can only ever hold an int, and
what the emitter makes of them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from RestrictedPython import compile_restricted_exec

from transpiler import compile_script, parse
from transpiler.ps import ast as A
from transpiler.ps.ints import _NO_BINDING, known_ints

CASES = [
    # (source, the names known int)
    ("i = 0\ntotal = 0\nwhile i < 10:\n  total = total + i\n  i = i + 1\nlog(total)\n", {"i", "total"}),
    ("x = 1\ny = x * 2 - -3\nz = y % 7\nw = -4 % -3\n", {"x", "y", "z", "w"}),
    ("x = 1\nz = x % 0\n", {"x"}),  # % by zero: not int-typed (it raises)
    ("x = 1\nz = x % x\n", {"x"}),  # % only by a non-zero literal
    ("x = 1\nz = x / 1\n", {"x"}),  # / gives a float
    ("x = 1\nz = -x\n", {"x"}),  # unary minus of a variable: only of a literal
    ("b = true\nc = 1 + false\n", set()),  # booleans are not ints
    ("f = 1.0\ng = -1.5\nh = 2 * 1.0\n", set()),
    ('s = "1"\nn = null\na = [1]\no = {k: 1}\n', set()),
    ("x = len([1])\ny = f(1)\n", set()),  # calls: fail closed
    ("a = 1\nb = a\nc = b + a\nb = \"s\"\n", {"a"}),  # b is a string somewhere, so c is not known
    ("a = 1\nb = a + 1\nc = b\na = c * 2\n", {"a", "b", "c"}),  # a cycle of ints
    ("a = b\nb = a\n", {"a", "b"}),  # never a value at all: every read raises, checked or not
    # any other binding disqualifies the name
    ('x = 1\ndef f():\n  x = "a"\n  return x\n', set()),
    ("n = 0\nfor n in range(3):\n  pass\n", set()),
    ("k = 1\ndef g(k):\n  return k\n", set()),
    ("k = 1\ndef k():\n  return 1\n", set()),
    ("C = 1\nclass C:\n  def m(self):\n    return 1\n", set()),
    ("m = 1\nself = 2\nclass C:\n  def m(self):\n    return 1\n", set()),  # method names and parameters too
    ("plan = 3\nx = plan + 1\n", set()),  # an LLM built-in: starts as the built-in function
    ("cost = 1\n", set()),  # a runtime variable (the checker refuses it; the emitter may see it)
    # every scope at once: function, method, retry, timeout and policy bodies
    ("def f():\n  j = 0\n  while j < 3:\n    j = j + 1\n  return j\n", {"j"}),
    ("class C:\n  def m(self):\n    t = 3\n    self.t = \"s\"\n    return t\n", {"t"}),
    ("retry 2:\n  timeout 10:\n    with policy {}:\n      r = 1\n      r = r + 1\n", {"r"}),
    ('x = 1\no = {}\no.x = "s"\nxs = [1]\nxs[0] = "a"\n', {"x"}),  # members and items bind no name
    ("x = 1\nguard x < 2\nlog(x == 1, x)\n", {"x"}),
]


@pytest.mark.parametrize("source, expected", CASES)
def test_known_ints(source, expected):
    assert known_ints(parse(source, lang="ps")) == expected


def test_every_node_type_is_classified():
    """A new node type must be listed (as binding nothing, or handled as a binding); unlisted,
    it disqualifies every name (next test)."""
    bindings = (A.Assign, A.FunctionDef, A.ClassDef, A.For)
    types = {v for v in vars(A).values() if isinstance(v, type) and issubclass(v, A.Node) and v is not A.Node}
    assert types == set(_NO_BINDING) | set(bindings)


def test_an_unknown_node_type_disqualifies_every_name():
    @dataclass(frozen=True)
    class Weird(A.Node):
        name: str

    module = A.Module((A.Assign(A.Name("x"), A.Const(1)), Weird("x")))
    assert known_ints(module) == frozenset()
    module = A.Module((A.Assign(A.Name("x"), A.Const(1)), A.Assign(Weird("y"), A.Const(1))))
    assert known_ints(module) == frozenset()  # an unknown assignment target
    assert known_ints(A.Module((A.Assign(A.Name("x"), A.Const(1)),))) == {"x"}


def python_of(source: str) -> str:
    python = compile_script(source, lang="ps").python
    assert compile_restricted_exec(python, filename="<script>").errors == ()
    return python


def test_known_ints_emit_python_operators_without_checks():
    python = python_of("i = 0\nt = 0\nwhile i < 10:\n  t = t + i * 2 - 1\n  i = i + 1\n  b = i % 3 == 0\nlog(t - 1)\n")
    assert "while (i < 10):" in python
    assert "t = ((t + (i * 2)) - 1)" in python
    assert "i = (i + 1)" in python and "b = ((i % 3) == 0)" in python
    assert "log((t - 1))" in python  # the top level too
    assert "ps_type" not in python and "ps_add" not in python


def test_a_known_int_keeps_its_check_before_an_unknown_one():
    """The checks read the variables before the operation does: a known int left of a checked
    variable keeps its check, so the same unassigned variable fails first."""
    python = python_of("q = 1\ndef f(p):\n  a = q + p\n  b = p + q\n  c = q < 2\n  return a\n")
    assert "a = (q + p if ps_type(q) is ps_int and ps_type(p) is ps_int else ps_add(q, p))" in python
    assert "b = (p + q if ps_type(p) is ps_int else ps_add(p, q))" in python
    assert "c = (q < 2)" in python


def test_names_that_may_hold_other_values_keep_the_helpers():
    python = python_of('x = 1\ndef f():\n  x = "a"\n  return x + "b"\nwhile x < 3:\n  x = x + 1\ny = x + 1\n')
    assert "while (x < 3 if ps_type(x) is ps_int else ps_lt(x, 3)):" in python
    assert "x = (x + 1 if ps_type(x) is ps_int else ps_add(x, 1))" in python
    assert "ps_step(); y = ps_add(x, 1)" in python


def naive_fixed_point(module) -> frozenset:
    """The analysis as its docstring states it: drop, pass after pass, each name with a value
    not int-typed under the current set (the specification the worklist must equal)."""
    from transpiler.ps.ints import int_typed

    assigned: dict[str, list] = {}
    for node in A.walk(module):
        if isinstance(node, A.Assign) and isinstance(node.target, A.Name):
            assigned.setdefault(node.target.id, []).append(node.value)
    ints = _candidates(module)
    changed = True
    while changed:
        changed = False
        for name in list(ints):
            if not all(int_typed(value, ints) for value in assigned.get(name, ())):
                ints.discard(name)
                changed = True
    return frozenset(ints)


def _candidates(module) -> set[str]:
    """Names whose every binding is an assignment (no parameter, def, class or for target)."""
    from transpiler.ps.surface import BUILTINS, RUNTIME_VARS

    excluded = set(BUILTINS) | set(RUNTIME_VARS)
    for node in A.walk(module):
        if isinstance(node, (A.FunctionDef,)):
            excluded.add(node.name)
            excluded.update(node.params)
        elif isinstance(node, A.ClassDef):
            excluded.add(node.name)
        elif isinstance(node, A.For):
            excluded.add(node.target)
    return {n.target.id for n in A.walk(module) if isinstance(n, A.Assign) and isinstance(n.target, A.Name)} - excluded


def chains(seed: int) -> str:
    """Assignments reading each other in a shuffled order, some names broken by a string."""
    import random

    rng = random.Random(seed)
    n = rng.randrange(2, 40)
    lines = [f"v{i} = v{rng.randrange(n)} {rng.choice('+-*')} {rng.choice(['1', f'v{rng.randrange(n)}'])}" for i in range(n)]
    lines += [f'v{rng.randrange(n)} = "s"' for _ in range(rng.randrange(3))]
    lines += [f"v{rng.randrange(n)} = {rng.randrange(9)}" for _ in range(rng.randrange(3))]
    rng.shuffle(lines)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("source", [case[0] for case in CASES] + [chains(seed) for seed in range(200)])
def test_the_worklist_equals_the_fixed_point_by_passes(source):
    module = parse(source, lang="ps")
    assert known_ints(module) == naive_fixed_point(module)


def test_the_analysis_looks_at_each_value_once(monkeypatch):
    """Linear in the script (a bounded broker): a chain of 8,000 assignments, each broken by the
    one after it, took 34 s when names were dropped pass after pass."""
    import transpiler.ps.ints as ints

    calls = []
    for name in ("_int_shaped", "int_typed"):
        real = getattr(ints, name)
        monkeypatch.setattr(ints, name, lambda *a, real=real: calls.append(1) or real(*a))
    n = 8000
    source = f'a{n} = "s"\n' + "".join(f"a{i} = a{i + 1} + 1\n" for i in range(n))
    assert known_ints(parse(source, lang="ps")) == frozenset()
    assert len(calls) <= 3 * n + 3  # a value `a1 + 1` is three nodes
