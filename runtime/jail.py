"""How the broker starts a jailed process: the command line only. The broker never imports the
jailed side (sandbox_worker/, wire/ as the worker sees it); it finds those packages by spec and
starts `python -I -S -B` on them. Used for the script worker (runtime/supervisor.py), the PDF
extractor (runtime/services/pdf.py) and RUN_CMD's launcher (runtime/promptscript/command.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

# The jailed side's packages, found without importing them: the broker reaches the worker only
# by starting it.
JAILED_PACKAGES = ("sandbox_worker", "wire")


def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{name} is not installed")
    return Path(spec.origin).resolve().parent


def jailed_command(entry: str, packages: tuple[str, ...], call: str = "main()") -> list[str]:
    """The command line of a jailed process running `entry`'s `call` (its main()): isolated
    mode, no site, and only the import roots of the jailed side and of `packages`."""
    ensure_bytecode()
    roots: list[str] = []
    for package in JAILED_PACKAGES + packages:
        root = str(package_dir(package).parent)
        if root not in roots:
            roots.append(root)
    bootstrap = f"import sys; sys.path[:0] = {roots!r}; from {entry} import main; {call}"
    return [sys.executable, "-I", "-S", "-B", "-c", bootstrap]


_compiled = False


def ensure_bytecode() -> None:
    """Compile the jailed processes' modules once per broker process: a worker runs with -B
    and reads bytecode but never writes it, so without this every worker compiles them again
    (about 15 ms of its start). A read-only installation is left as it is."""
    global _compiled
    if _compiled:
        return
    _compiled = True
    import compileall

    for package in JAILED_PACKAGES:
        try:
            compileall.compile_dir(str(package_dir(package)), quiet=2, maxlevels=3)
        except OSError:
            pass
