"""PromptScript values and operators, run in a real worker: precedence, short-circuit, `+`
coercion, truthiness, scoping, classes, break/continue/return, built-ins."""

from __future__ import annotations

import pytest

from tests.support.ps import lines, run_ps


def test_operators_precedence_and_values():
    r = run_ps("""
log(1 + 2 * 3)
log((1 + 2) * 3)
log(7 / 2)
log(7 % 3)
log(-2 * 3)
log(2 - -1)
log(1 < 2 and 2 < 3)
log(not 1 == 2)
log(true or false and false)
log(0.1 + 0.2 > 0.3)
log([1, 2] + [3])
log("a" in ["a", "b"])
log("k" in {k: 1})
log("x" not in "abc")
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] " + x for x in
                        ["7", "9", "3.5", "1", "-6", "3", "true", "true", "true", "true", "[1, 2, 3]",
                         "true", "true", "true"]]


def test_plus_with_a_string_renders_as_the_language_writes():
    r = run_ps("""
log("n=" + 1 + " f=" + 0.5 + " t=" + true + " f=" + false + " z=" + null)
log("list " + [1, "a", true, null])
log({a: 1, "b c": "x"} + "!")
log(1 + 2 + "3")
log("3" + 1 + 2)
""")
    assert r.ok, r.error
    assert lines(r) == ['[ps] n=1 f=0.5 t=true f=false z=null', '[ps] list [1, "a", true, null]',
                        '[ps] {a: 1, "b c": "x"}!', "[ps] 33", "[ps] 312"]


@pytest.mark.parametrize("expr,message", [
    ('1 < "2"', "cannot compare number with string"),
    ('"2" == 2', "cannot compare string with number"),
    ('1 != "1"', "cannot compare number with string"),
    ("[1] + 1", "cannot add number to array"),
    ("null + 1", "cannot add number to null"),
    ("true + 1", "cannot add number to boolean"),
    ("{} + {}", "cannot add object to object"),
    ("null < 1", "cannot compare null < number"),
])
def test_type_errors_are_clear(expr, message):
    r = run_ps(f"x = {expr}\n")
    assert r.exit_code == 1 and r.error_kind == "RuntimeError"
    assert message in r.error and r.error_line == 1


def test_short_circuit_and_truthiness():
    r = run_ps("""
def boom():
  log("evaluated")
  return true
x = false and boom()
y = true or boom()
log(x)
log(y)
for v in [0, 0.0, "", [], {}, null, false, 1, "a", [0], {a: 1}]:
  if v:
    log("truthy " + v)
log(0 or "default")
log("a" and "b")
""")
    assert r.ok, r.error
    assert "[ps] evaluated" not in r.output
    assert lines(r) == ["[ps] false", "[ps] true", "[ps] truthy 1", "[ps] truthy a", "[ps] truthy [0]",
                        "[ps] truthy {a: 1}", "[ps] default", "[ps] b"]


def test_scoping_functions_read_globals_and_locals_stay_local():
    r = run_ps("""
limit = 3
def under(x):
  return x < limit
def shadow():
  limit = 100
  return limit
log(under(2))
log(shadow())
log(limit)
def fact(n):
  if n <= 1:
    return 1
  return n * fact(n - 1)
log(fact(10))
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] true", "[ps] 100", "[ps] 3", "[ps] 3628800"]


def test_classes_with_init_fields_and_methods():
    r = run_ps("""
class Counter:
  def __init__(self, name, start):
    self.name = name
    self.count = start
  def add(self, n):
    self.count = self.count + n
    return self
  def show(self):
    return self.name + "=" + self.count
class Plain:
  def hello(self):
    return "hi"
c = Counter("c", 1)
c.add(2).add(3)
log(c.show())
log(c.count)
log(Plain().hello())
d = Counter("d", 0)
log(d.show() + " " + c.show())
log(c)
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] c=6", "[ps] 6", "[ps] hi", "[ps] d=0 c=6", "[ps] <Counter>"]


@pytest.mark.parametrize("source,message", [
    ("class A:\n  def __init__(self, x):\n    self.x = x\na = A()\n", "A() takes 1 argument but 0 were given"),
    ("class A:\n  def m(self):\n    return 1\na = A(1)\n", "A() takes no arguments"),
    ("class A:\n  def m(self, x):\n    return 1\nA().m()\n", "A.m() takes 1 argument but 0 were given"),
    ("class A:\n  def m(self):\n    return 1\nA().nope\n", "A instance has no field or method 'nope'"),
    ("class A:\n  def __init__(self):\n    pass\nA().init()\n", "no field or method 'init'"),
])
def test_class_errors(source, message):
    r = run_ps(source)
    assert r.exit_code == 1 and message in r.error, r.error


def test_break_continue_return_and_loops():
    r = run_ps("""
out = []
for i in range(10):
  if i == 2:
    continue
  if i == 5:
    break
  out = out + [i]
log(out)
n = 0
while true:
  n = n + 1
  if n >= 4:
    break
log(n)
def first_big(xs):
  for x in xs:
    if x > 10:
      return x
  return null
log(first_big([1, 20, 30]))
log(first_big([1]))
for k in {b: 1, a: 2}:
  log(k)
for ch in "ab":
  log(ch)
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] [0, 1, 3, 4]", "[ps] 4", "[ps] 20", "[ps] null", "[ps] b", "[ps] a",
                        "[ps] a", "[ps] b"]


def test_builtins_len_range_log():
    r = run_ps("""
log(len([1, 2, 3]))
log(len("hola"))
log(len({a: 1}))
log(range(3))
log(range(2, 5))
log(range(0, 10, 2))
log(range(5, 0, -2))
log("a", 1, true)
log()
imagenes = ["a.jpg", "b.jpg"]
for i in range(len(imagenes)):
  log("Imagen " + i + ": " + imagenes[i])
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] 3", "[ps] 4", "[ps] 1", "[ps] [0, 1, 2]", "[ps] [2, 3, 4]",
                        "[ps] [0, 2, 4, 6, 8]", "[ps] [5, 3, 1]", "[ps] a 1 true", "[ps] ",
                        "[ps] Imagen 0: a.jpg", "[ps] Imagen 1: b.jpg"]


@pytest.mark.parametrize("source,message", [
    ("range(0, 10, 0)", "range() step cannot be zero"),
    ("range()", "range() takes 1, 2 or 3 arguments (0 given)"),
    ("range(1, 2, 3, 4)", "range() takes 1, 2 or 3 arguments (4 given)"),
    ('range("3")', "range() arguments must be integers, not string"),
    ("range(1.5)", "range() arguments must be integers, not number"),
    ("len(3)", "len() needs an array, a string or an object, not number"),
    ("x = [1][5]", "index 5 is out of range"),
    ('x = {a: 1}.b', "object has no key 'b'"),
    ('x = {a: 1}["b"]', 'object has no key "b"'),
    ("x = 1 / 0", "division by zero"),
])
def test_builtin_and_value_errors(source, message):
    r = run_ps(source + "\n")
    assert r.exit_code == 1 and message in r.error, r.error
    assert r.error_line == 1


def test_objects_member_access_and_assignment():
    r = run_ps("""
config = { provider: "openai", model: "gpt-4", temperature: 0.7, }
log(config.provider)
config.model = "other"
config["new key"] = [1]
config.nested = {deep: {er: 1}}
config.nested.deep.er = 2
log(config.model + " " + config["new key"] + " " + config.nested.deep.er)
xs = [1, 2, 3]
xs[0] = 9
xs[-1] = 7
log(xs)
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] openai", "[ps] other [1] 2", "[ps] [9, 2, 7]"]


def test_runtime_error_is_located_in_a_function():
    r = run_ps("def f(x):\n  return x + null\n\ny = 1\nf([1])\n")
    assert r.exit_code == 1
    assert r.error_line == 2 and "cannot add null to array" in r.error


def test_range_makes_a_real_array_and_a_for_over_range_builds_none():
    r = run_ps("""
x = range(3)
x[0] = 5
log(x, range(3) + [1], range(3) == [0, 1, 2], len(range(2, 9, 3)), 2 in range(3))
log(range(0), range(3, 0, -1) == [3, 2, 1])
n = 0
for i in range(1000000000000):
  n = n + 1
  if n == 3:
    break
log(n, i)
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] [5, 1, 2] [0, 1, 2, 1] true 3 true", "[ps] [] true", "[ps] 3 2"]
    r = run_ps("x = range(1000000000000)\n")
    assert r.exit_code == 1 and r.error_kind == "RuntimeError"
    assert "range() as an array would hold 1000000000000 items (limit 1000000)" in r.error
    assert "for i in range(...)" in r.error


@pytest.mark.parametrize("source,message", [
    ('apply("REPORT", {message: "m"}, 3)', "apply() takes a plan, or an action name and its args: 1 or 2 arguments (3 given)"),
    ("len()", "len() takes 1 argument (0 given)"),
    ("len([1], [2])", "len() takes 1 argument (2 given)"),
    ("parallel()", "parallel() takes an array of items and an optional options object (0 arguments given)"),
    ('x = 1 in "123"', "'in' a string needs a string on the left, not number"),
    ('x = "k" in 5', "'in' needs an array, a string or an object on the right, not number"),
    ('x = -"a"', "cannot negate string (unary - needs a number)"),
    ("x = 5\nx()", "a number is not a function and cannot be called"),
    ('x = "s"\nx(1)', "a string is not a function and cannot be called"),
    ("class A:\n  def m(self):\n    return 1\na = A()\na()", "an instance is not a function and cannot be called"),
    ("def f(a):\n  return a\nf(1, 2)", "f() takes 1 argument but 2 were given"),
    ("def f(a, b):\n  return a\nf(1)", "f() is missing 1 argument: b"),
    ("def f():\n  def g(a):\n    return a\n  return g()\nf()", "g() is missing 1 argument: a"),
    ("x = 10\nfor i in range(14):\n  x = x * x\nlog(x)", "a number of more than 4300 digits cannot be turned into text"),
    ("x = 10\nfor i in range(14):\n  x = x * x\ny = \"n\" + x", "a number of more than 4300 digits cannot be turned into text"),
    ('x = 10\nfor i in range(14):\n  x = x * x\napply("REPORT", {message: "m", filesChanged: [x]})',
     "REPORT: a number of more than 4300 digits cannot be sent to an action"),
    ("x = 10\nfor i in range(12):\n  x = x * x\ny = x / 3", "number too large"),
    ("x = 2 - true", "cannot subtract boolean from number"),
    ("x = true * 3", "cannot multiply boolean by number"),
    ("x = 6 / false", "cannot divide number by boolean"),
    ('x = "%s" % 1', "cannot take string modulo number (% needs two numbers)"),
    ("x = -true", "cannot negate boolean"),
    ("x = 5 % 0", "division by zero"),
    ("x = true < 2", "cannot compare boolean < number (only two numbers or two strings)"),
    ("x = [1] < [2]", "cannot compare array < array (only two numbers or two strings)"),
    ('x = "ab" * 2.5', "cannot multiply string by number"),
    ('x = "ab" * 100000000', "string * 100000000 would hold 200000000 items (limit 10000000)"),
])
def test_errors_are_worded_in_promptscript_terms(source, message):
    r = run_ps(source + "\n")
    assert r.exit_code == 1 and r.error_kind == "RuntimeError", r.error
    assert message in r.error, r.error
    for python_word in ("positional", "object is not callable", "<locals>", "restricted_globals", "int_max_str_digits",
                        "'int'", "'str'", "length()", "requires string"):
        assert python_word not in r.error, r.error
    assert r.error_line is not None


def test_booleans_are_not_numbers_and_equality_is_by_type():
    r = run_ps("""
log(true == 1, 1 == true, false == 0, [true] == [1], {a: true} == {a: 1}, 1 in [true])
log(1 == 1.0, [1, [2]] == [1.0, [2.0]], {a: [1]} == {a: [1]}, null == false, "1" in ["1"])
log(1 in ["1"], [1] == ["1"], "a" != "b", true != 1, 2 in [1, 2.0])
log("ab" * 2, [0] * 3, 3 * "x", 7 % 3, -7 % 3, 7.5 - 0.5)
""")
    assert r.ok, r.error
    assert lines(r) == ["[ps] false false false false false false",
                        "[ps] true true true false true",
                        "[ps] false false true true true",
                        "[ps] abab [0, 0, 0] xxx 1 2 7.0"]


def test_runtime_variables_follow_the_policy_in_force():
    r = run_ps("""
guard "WRITE_FILE" in allowed_actions
log(len(allowed_actions), allowed_commands, files_changed, max_files_changed)
with policy { allowActions: ["READ_FILE", "REPORT"], allowCommands: ["git"], maxFilesChanged: 3 }:
  log(allowed_actions, allowed_commands, max_files_changed)
  copy = allowed_actions
  copy[0] = "changed"
  log(allowed_actions[0])
  with policy { maxFilesChanged: 10 }:
    log(max_files_changed)
  guard "WRITE_FILE" in allowed_actions
""", allow_commands=("git", "npm"))
    assert r.exit_code == 1 and r.error_kind == "RuntimeError"
    assert lines(r) == ['[ps] 7 ["git", "npm"] 0 null', '[ps] ["READ_FILE", "REPORT"] ["git"] 3',
                        "[ps] READ_FILE", "[ps] 3"]
    assert 'guard failed: "WRITE_FILE" in allowed_actions (line 11)' in r.error and r.error_line == 11


def test_a_guard_on_a_null_limit_fails_as_a_guard_and_says_why():
    r = run_ps("guard max_files_changed <= 5\n")
    assert r.exit_code == 1 and r.error_kind == "RuntimeError" and r.error_line == 1
    assert ("guard failed: max_files_changed <= 5 (line 1; max_files_changed is null: no limit on changed "
            "files is set (--max-files-changed N, or a policy maxFilesChanged))") in r.error
    assert run_ps("guard max_files_changed <= 5\n", max_files_changed=5).ok
    r = run_ps("guard max_files_changed <= 5\n", max_files_changed=6)
    assert r.exit_code == 1 and "guard failed: max_files_changed <= 5 (line 1)" in r.error
    r = run_ps("x = null\nguard x > 1\n")
    assert r.exit_code == 1 and "guard failed: x > 1 (line 2; null > number)" in r.error
    r = run_ps("old_max_files_changed = null\nguard old_max_files_changed < 3\n")  # another name
    assert r.exit_code == 1 and "guard failed: old_max_files_changed < 3 (line 2; null < number)" in r.error
    r = run_ps("x = null\ny = x > 1\n")  # outside a guard it stays a comparison error
    assert r.exit_code == 1 and "cannot compare null > number" in r.error
