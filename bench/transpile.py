"""How long the transpiler takes to compile a script (runtime.compile.compile_script: prescan,
lark, depth check, AST, check, libcst emit and source map), per phase, against Python's own
``compile()`` of the emitted code measured in the same run.

    python bench/transpile.py [--runs N] [--rounds R] [--against PATH] [--profile NAME]

``--against PATH`` runs the same measurements in a child process whose ``transpiler`` is
imported from PATH (e.g. a ``git worktree add /tmp/ref <commit>`` of an older commit) and
prints the ratio new/old beside each figure. ``--profile NAME`` prints a cProfile of
compiling one script instead. Figures are medians in milliseconds with the parser already
built (a warm worker); each side is measured in ``--rounds`` child processes, taken in turn,
and the best median of the rounds is kept (a shared machine's noise only adds time).
Nothing here is a test; read the figures.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SCRIPTS = {
    "one line": ("fdsl", 'print("hi")\n'),
    "20 statements": ("fdsl", "".join(f"x{i} = {i} * 2\n" for i in range(19)) + "print(x18)\n"),
    "inventory.fdsl": ("fdsl", (REPO / "examples" / "inventory.fdsl").read_text(encoding="utf-8")),
    "tour.fdsl": ("fdsl", (REPO / "examples" / "tour.fdsl").read_text(encoding="utf-8")),
    "carousel.ps": ("ps", (REPO / "examples" / "carousel.ps").read_text(encoding="utf-8")),
    "retry_guard.ps": ("ps", (REPO / "examples" / "retry_guard.ps").read_text(encoding="utf-8")),
}


def _median_ms(call, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure(runs: int) -> dict:
    """Figures for every script, in this process (``transpiler`` as sys.path finds it)."""
    import transpiler
    from runtime.compile import compile_script, deep_stack

    out = {"transpiler": transpiler.__file__}
    for name, (lang, source) in SCRIPTS.items():
        emitted = compile_script(source, name, lang)  # builds (or loads) the parser once
        parse = transpiler.language(lang).part("parse").parse
        errors = transpiler.language(lang).part("check").errors
        emit = transpiler.language(lang).part("emit").emit
        with deep_stack():
            module = parse(source, name)
            figures = {
                "compile": _median_ms(lambda: compile_script(source, name, lang), runs),
                "parse": _median_ms(lambda: parse(source, name), runs),
                "check": _median_ms(lambda: errors(module), runs),
                "emit": _median_ms(lambda: emit(module, source, name), runs),
                "python compile()": _median_ms(lambda: compile(emitted.python, name, "exec"), runs),
            }
        out[name] = figures
    return out


def _child(path: str, runs: int) -> dict:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
    child = subprocess.run([sys.executable, __file__, "--runs", str(runs), "--json"], env=env, cwd=path,
                           capture_output=True, text=True, check=True)
    return json.loads(child.stdout)


def _best(results: list[dict]) -> dict:
    best = results[0]
    for other in results[1:]:
        for name in SCRIPTS:
            best[name] = {phase: min(ms, other[name][phase]) for phase, ms in best[name].items()}
    return best


def report(new: dict, old: dict | None) -> None:
    print(f"transpiler: {new['transpiler']}" + (f"  against: {old['transpiler']}" if old else ""))
    for name in SCRIPTS:
        cells = []
        for phase, ms in new[name].items():
            cell = f"{phase} {ms:.3f}"
            if old:
                cell += f" ({ms / old[name][phase]:.2f}x of {old[name][phase]:.3f})"
            cells.append(cell)
        print(f"{name:>15}: " + ", ".join(cells))
    base = new["20 statements"]
    print(f"20 statements: compile is {base['compile'] / base['python compile()']:.1f}x Python's compile() of its output")


def profile(name: str, runs: int) -> None:
    from runtime.compile import compile_script

    lang, source = SCRIPTS[name]
    compile_script(source, name, lang)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(runs):
        compile_script(source, name, lang)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(35)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", metavar="PATH", help="a checkout whose transpiler to compare with")
    parser.add_argument("--profile", metavar="NAME", choices=sorted(SCRIPTS), help="cProfile one script")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.profile:
        profile(args.profile, args.runs)
        return
    if args.json:
        print(json.dumps(measure(args.runs)))
        return
    news, olds = [], []
    for _ in range(args.rounds):
        news.append(_child(str(REPO), args.runs))
        if args.against:
            olds.append(_child(args.against, args.runs))
    report(_best(news), _best(olds) if olds else None)


if __name__ == "__main__":
    if "PYTHONPATH" not in os.environ:
        sys.path.insert(0, str(REPO))
    main()
