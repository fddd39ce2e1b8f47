"""``fdslc SCRIPT [--emit | --check] [-o FILE]``: transpile a FilesDSL (.fdsl) or PromptScript (.ps) script.

Exit codes: 0 success, 1 script error (formatted on stderr), 2 usage error (bad arguments, or
the script cannot be read). Never prints a Python traceback.
"""

from __future__ import annotations

import argparse
import sys

from runtime.compile import compile_script
from transpiler import LANGUAGES, DSLError, language, language_for


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fdslc", description="Transpile a FilesDSL (.fdsl) or PromptScript (.ps) script to RestrictedPython-ready Python."
    )
    p.add_argument("script", help="the .fdsl or .ps script to transpile")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--emit", action="store_true", help="print the generated Python (default)")
    mode.add_argument("--check", action="store_true", help="only validate; print 'ok'")
    p.add_argument("--lang", choices=sorted(LANGUAGES), help="language (default: by extension)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the generated Python to FILE")
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)  # argparse prints usage and exits 2 on a usage error
    except SystemExit as e:  # returned, not raised, so callers get an int like every other path
        return e.code if isinstance(e.code, int) else 2
    try:
        with open(args.script, "rb") as f:
            data = f.read()
    except OSError as e:
        print(f"fdslc: cannot read {args.script}: {e.strerror or e}", file=sys.stderr)
        return 2
    lang = language(args.lang) if args.lang else language_for(args.script)
    if lang is None:
        print(f"fdslc: cannot tell the language of {args.script}: use a .fdsl or .ps extension or --lang",
              file=sys.stderr)
        return 2
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        print(f"SyntaxError: the script is not valid UTF-8 (byte {e.start})\n"
              f"  at line {line}", file=sys.stderr)
        return 1
    try:
        emitted = compile_script(source, filename=args.script, lang=lang.name)
    except DSLError as e:
        print(e.format(source), file=sys.stderr)
        return 1
    if args.check:
        print("ok")
        return 0
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(emitted.python)
        except OSError as e:
            print(f"fdslc: cannot write {args.output}: {e.strerror or e}", file=sys.stderr)
            return 2
        return 0
    sys.stdout.write(emitted.python)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
