"""What the transpiler made of a fixed corpus, recorded, so a faster transpiler can be shown to
give the same results: the emitted Python, its source map and every ``DSLError`` (kind,
message, line, column).

A case is a script (source, language, limits). Its outcome is what
``runtime.compile.compile_script`` gives (the Python and the source map, or the error), and,
when the script parses but the checker refuses it, the checker's full error list and what the
emitter makes of the unchecked module (the property tests emit such modules). The corpus:

  * the examples (examples/*.fdsl, *.ps) and every chunk of the annotated test data;
  * grammar-shaped programs from fuzz/strategies.py (``programs()``, ``ps_programs()``),
    drawn with a fixed seed when the corpus was recorded;
  * each generated one damaged (cut short, a character deleted, one inserted, a line
    indented), for syntax errors at every kind of place;
  * hostile shapes at the limits (deep expressions of each kind, long statements), and
    programs compiled under small limits (expression depth, tokens) so the depth check and
    the token count fire in many places.

The recording is tests/testdata/transpiler/compiled.json (sources included, so it does not
change when the examples or the strategies do). Usage::

    python -m tests.support.compile_corpus --record          # rewrite the recording
    python -m tests.support.compile_corpus --against /tmp/ref [--examples N]
        # fresh hypothesis programs (and their damaged forms), compiled here and by the
        # transpiler of another checkout in a child process; prints every difference

This file imports only ``transpiler``, ``runtime.compile`` and (to draw programs) ``fuzz``,
so a child process can run it against another checkout's transpiler.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RECORDING = REPO / "tests" / "testdata" / "transpiler" / "compiled.json"
_SEED = 20261126

# ---- the outcome of one case -------------------------------------------------------------------


def _error(e) -> list:
    return [e.kind, e.message, e.line, e.col]


def _emitted(emitted) -> dict:
    return {"python": emitted.python, "statements": [list(e) for e in emitted.source_map.statements],
            "expressions": [list(e) for e in emitted.source_map.expressions]}


def full_tree(node) -> object:
    """A parsed tree as plain data with every field, positions included."""
    from dataclasses import fields, is_dataclass

    if isinstance(node, tuple):
        return [full_tree(x) for x in node]
    if is_dataclass(node):
        return [type(node).__name__] + [[f.name, full_tree(getattr(node, f.name))] for f in fields(node)]
    return node if node is None or isinstance(node, (bool, int, str)) else repr(node)


def outcome(case: dict, with_tree: bool = False) -> dict:
    import transpiler
    from runtime.compile import compile_script, deep_stack

    source, lang, limits = case["source"], case["lang"], case.get("limits", {})
    name = case.get("filename", "case." + lang)
    out: dict = {}
    try:
        out["compile"] = _emitted(compile_script(source, name, lang, **limits))
    except transpiler.DSLError as e:
        out["compile"] = {"error": _error(e)}
    if "error" not in out["compile"] and not with_tree:
        return out
    with deep_stack():
        try:
            module = transpiler.parse(source, name, lang, **limits)
        except transpiler.DSLError:
            return out
        if with_tree:
            out["tree"] = full_tree(module)
        found = transpiler.errors(module, lang)
        if not found:
            return out
        out["errors"] = [_error(e) for e in found]
        try:
            out["emit"] = _emitted(transpiler.language(lang).part("emit").emit(module, source, name))
        except transpiler.DSLError as e:
            out["emit"] = {"error": _error(e)}
    return out


# ---- the corpus --------------------------------------------------------------------------------


def _chunks(path: Path) -> list[str]:
    """The chunks of an annotated test-data file (tests/support/chunked.py's format)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    chunks, current = [], []
    for line in lines + ["---"]:
        if line.rstrip("\r") == "---":
            chunks.append("".join(x + "\n" for x in current))
            current = []
        else:
            current.append(line)
    return chunks


def fixed_cases() -> list[dict]:
    cases = []
    for path in sorted((REPO / "examples").iterdir()):
        if path.suffix in (".fdsl", ".ps"):
            cases.append({"lang": path.suffix[1:], "filename": path.name, "source": path.read_text(encoding="utf-8")})
    for folder, lang in (("transpiler", "fdsl"), ("promptscript", "ps")):
        for path in sorted((REPO / "tests" / "testdata" / folder).glob(f"*.{lang}")):
            for i, chunk in enumerate(_chunks(path)):
                cases.append({"lang": lang, "filename": f"{path.name}#{i}", "source": chunk})
    return cases + hostile_cases()


def hostile_cases() -> list[dict]:
    """Shapes at the limits: each deep expression kind just inside and just past the depth
    limit, in both languages, and statements longer than the depth limit in tokens."""
    shapes = {
        "fdsl": ["x = {}1" .replace("{}", "-" * 99), "x = {}1".replace("{}", "-" * 101),
                 "x = " + "not " * 101 + "true", "x = 1\ny = " + "+".join(["x"] * 150),
                 "x = 1\ny = " + " * ".join(["x"] * 101) + "\nz = = 1",
                 "x = 's'" + ".lower()" * 120, "x = [1]" + "[0]" * 120, "x = 1\ny = " + "x < " * 120 + "x",
                 "x = " + "[" * 100 + "]" * 100, "x = " + "(" * 99 + "1" + ")" * 99,
                 "x = 1\nif " + " or ".join(["x"] * 150) + ":\n    print(x)\n",
                 "x = 1\nprint(" + ", ".join(f"x + {i}" for i in range(120)) + ")",
                 "x = [" + ", ".join(str(i) for i in range(200)) + "]\nprint(x)",
                 "x = 1\ny = " + "+".join(["x"] * 150) + "\nz = " + "9" * 4001, "z = " + "9" * 4001,
                 "z = " + "9" * 4001 + "\ny = = 1", "z = " + "9" * 4001 + "\ny = " + "-" * 120 + "1",
                 "print(1, x=1, 2)\ny = = 1", "print(1, x=1, 2)\nz = " + "-" * 120 + "1"],
        "ps": ["x = " + "-" * 99 + "1", "x = " + "-" * 101 + "a", "x = " + "not " * 101 + "true",
               "x = 1\ny = " + " + ".join(["x"] * 150), "x = {a: " * 60 + "1" + "}" * 60,
               "x = log" + "(1)" * 120, "x = [1]" + "[0]" * 120, "x = 1\ny = " + " and ".join(["x"] * 120),
               "x = [" + ", ".join(str(i) for i in range(200)) + "]\nlog(x)",
               "log(" + ", ".join(f"{i} + 1" for i in range(120)) + ")",
               "x = 1\ny = " + " - ".join(["x"] * 150) + "\nz = 1 < 2 < 3",
               "x = 1 < 2 < 3\ny = " + " * ".join(["x"] * 150), "x = " + "9" * 4001 + "\ny = = 1",
               "x = 00\ny = " + "-" * 120 + "a", "x = 00\ny = 1"],
    }
    return [{"lang": lang, "filename": f"hostile-{lang}#{i}", "source": src + "\n"}
            for lang, sources in shapes.items() for i, src in enumerate(sources)]


def generated_sources(lang: str, count: int, derandomize: bool) -> list[str]:
    """``count`` programs from fuzz/strategies.py, rendered to text."""
    from hypothesis import HealthCheck, Phase, given, settings

    from fuzz.strategies import programs, ps_programs

    if lang == "fdsl":
        from transpiler.fdsl.printer import render

        strategy = programs().map(render)
    else:
        strategy = ps_programs()
    drawn: list[str] = []

    @settings(max_examples=count, derandomize=derandomize, database=None, phases=[Phase.generate],
              deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(source):
        drawn.append(source)

    draw()
    return drawn


_INSERTS = ["(", ")", "[", "]", "{", "}", ":", "=", "==", '"', "'", "`", ".", ",", "-", "+", "#", "\n",
            "    ", " ", "\t", "\r", "not ", "if ", "else", "_x", "import", "1", "\\", "\x00", "\u00e9"]


def damage_edits(source: str, rng: random.Random) -> list[list]:
    """Four ways to damage ``source``: cut it short, delete a character, insert a piece,
    indent one line (as data, so the recording holds the edit, not a second copy)."""
    if not source:
        return []
    return [["cut", rng.randrange(len(source))], ["delete", rng.randrange(len(source))],
            ["insert", rng.randrange(len(source) + 1), rng.choice(_INSERTS)],
            ["indent", rng.randrange(len(source.split("\n")))]]


def apply_edit(source: str, edit: list) -> str:
    kind, at = edit[0], edit[1]
    if kind == "cut":
        return source[:at]
    if kind == "delete":
        return source[:at] + source[at + 1:]
    if kind == "insert":
        return source[:at] + edit[2] + source[at:]
    lines = source.split("\n")
    lines[at] = "  " + lines[at]
    return "\n".join(lines)


def generated_cases(count: int, derandomize: bool, seed: int, tag: str = "generated") -> list[dict]:
    rng = random.Random(seed)
    cases = []
    for lang in ("fdsl", "ps"):
        for i, source in enumerate(generated_sources(lang, count, derandomize)):
            name = f"{tag}-{lang}#{i}"
            cases.append({"lang": lang, "filename": name, "source": source})
            cases += [{"lang": lang, "filename": f"{name}.{k}", "of": name, "edit": edit}
                      for k, edit in enumerate(damage_edits(source, rng))]
            if i % 4 == 0:  # small limits: the depth check and the token count fire inside programs
                cases.append({"lang": lang, "filename": f"{name}.d", "of": name,
                              "limits": {"max_expr_depth": rng.choice([1, 2, 3])}})
                cases.append({"lang": lang, "filename": f"{name}.t", "of": name,
                              "limits": {"max_tokens": rng.randrange(1, 60)}})
    return cases


def all_cases(count: int = 100, derandomize: bool = True, seed: int = _SEED) -> list[dict]:
    cases = fixed_cases()
    for case in fixed_cases():  # the fixed ones under a small depth limit too
        if not case["filename"].startswith(("hostile", "syntax")):
            cases.append({"lang": case["lang"], "filename": case["filename"] + ".d", "of": case["filename"],
                          "limits": {"max_expr_depth": 2}})
    return cases + generated_cases(count, derandomize, seed)


def with_sources(cases: list[dict]) -> list[dict]:
    """Every case with its ``source`` (a case made from another: that one's, edited)."""
    by_name = {c["filename"]: c["source"] for c in cases if "source" in c}
    out = []
    for case in cases:
        if "source" not in case:
            source = by_name[case["of"]]
            case = dict(case, source=apply_edit(source, case["edit"]) if "edit" in case else source)
        out.append(case)
    return out


# ---- the recording -----------------------------------------------------------------------------

def digest(emitted: dict) -> str:
    """A short fingerprint of emitted Python and its source map."""
    import hashlib

    return hashlib.sha256(json.dumps(emitted, sort_keys=True).encode()).hexdigest()[:24]


def _condensed(result: dict) -> dict:
    """A generated case's outcome as recorded: errors in full, emitted code as a digest."""
    return {key: value if key == "errors" or "error" in value else {"digest": digest(value)}
            for key, value in result.items()}


def expected_matches(result: dict, expected: dict) -> bool:
    """Whether an outcome is the recorded one (a digest stands for the emitted code it hashes)."""
    if result.keys() != expected.keys():
        return False
    for key, want in expected.items():
        got = result[key]
        if isinstance(want, dict) and "digest" in want:
            if "error" in got or digest(got) != want["digest"]:
                return False
        elif got != want:
            return False
    return True


def record(path: Path = RECORDING) -> None:
    cases = all_cases()
    lines = []
    for case, full in zip(cases, with_sources(cases)):
        result = json.loads(json.dumps(outcome(full)))
        expected = _condensed(result) if case["filename"].startswith("generated") else result
        lines.append(json.dumps(dict(case, expected=expected), ensure_ascii=True, sort_keys=True))
    about = ("What the transpiler made of each case (tests/support/compile_corpus.py): the outcome of "
             "runtime.compile.compile_script and, for a script the checker refuses, its errors and the "
             "unchecked emit; a generated case's emitted code as a digest. A case with 'of' is another "
             "case's source, edited by 'edit' and/or compiled under 'limits'. Recorded at e66aca9, before "
             "the compile path was optimised; tests/transpiler/test_compile_equivalence.py keeps every "
             "result identical.")
    path.write_text('{"about": ' + json.dumps(about) + ',\n"cases": [\n' + ",\n".join(lines) + "\n]}\n",
                    encoding="utf-8")
    print(f"{len(cases)} cases recorded in {path}")


def load_recording(path: Path = RECORDING) -> list[dict]:
    """The recorded cases, each with its source and ``expected`` outcome."""
    return with_sources(json.loads(path.read_text(encoding="utf-8"))["cases"])


# ---- against another checkout --------------------------------------------------------------------


def _outcomes_stdin() -> None:
    cases = json.loads(sys.stdin.read())
    print(json.dumps([outcome(case, with_tree=True) for case in cases]))


def against(path: str, count: int, seed: int) -> int:
    cases = with_sources(generated_cases(count, derandomize=False, seed=seed, tag="fresh") + all_cases())
    env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
    # This file's code, run over the other checkout's packages: run by path, not as a script
    # (a script's own folder, with tests/support/transpiler.py, would come first on sys.path)
    run_here = "import runpy, sys; runpy.run_path(sys.argv.pop(1), run_name='__main__')"
    child = subprocess.run([sys.executable, "-c", run_here, __file__, "--outcomes"], input=json.dumps(cases), env=env,
                           cwd=path, capture_output=True, text=True, check=True)
    theirs = json.loads(child.stdout)
    differ = 0
    for case, old in zip(cases, theirs):
        new = json.loads(json.dumps(outcome(case, with_tree=True)))
        if new != old:
            differ += 1
            if differ <= 5:
                print(f"DIFFERENT: {case!r}\n  here:  {json.dumps(new)[:2000]}\n  there: {json.dumps(old)[:2000]}")
    print(f"{len(cases)} cases, {differ} different (against {path})")
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--against", metavar="PATH")
    parser.add_argument("--examples", type=int, default=300, help="fresh programs per language")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--outcomes", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.outcomes:
        _outcomes_stdin()
    elif args.record:
        record()
    elif args.against:
        seed = args.seed if args.seed is not None else random.randrange(1 << 30)
        print(f"seed {seed}")
        sys.exit(against(args.against, args.examples, seed))
    else:
        parser.print_help()


if __name__ == "__main__":
    main()
