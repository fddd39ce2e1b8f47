"""The layout's promises (docs/architecture.md), checked on the source: which package may import
which, and no import circle among our modules, counting imports inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import REPO

OURS = ("wire", "transpiler", "runtime", "sandbox_worker")
# package -> the packages of ours it may import
ALLOWED = {
    "wire": {"wire"},
    "transpiler": {"transpiler"},
    "sandbox_worker": {"sandbox_worker", "wire"},
    "runtime": {"runtime", "wire", "transpiler"},
}


def modules() -> dict[str, Path]:
    found = {}
    for package in OURS:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict) -> set[str]:
    """Our modules that `name` imports, anywhere in its body (TYPE_CHECKING blocks aside)."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            node.body = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.split(".")[0] in OURS:
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_each_package_imports_only_what_it_may():
    wrong = [f"{name} imports {target}" for name, targets in graph().items() for target in sorted(targets)
             if target.split(".")[0] not in ALLOWED[name.split(".")[0]]]
    assert wrong == []


def test_no_import_circles():
    edges = {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in graph().items()}
    circles, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                circles.append(path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert circles == []


# Test folders that follow no package: whole-pipeline runs, attacks across layers, helpers, data.
CROSS_CUTTING = {"e2e", "security", "support", "testdata"}


def test_tests_mirror_the_layout():
    tests = REPO / "tests"
    stray = []
    for folder in sorted(p for p in tests.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        relative = folder.relative_to(tests)
        if relative.parts[0] in CROSS_CUTTING:
            continue
        if not (REPO / relative).is_dir():
            stray.append(str(relative))
    assert stray == [], "test folders without a package of the same path"


def test_no_test_edits_sys_path():
    edits = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        if "testdata" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", "") == "sys":
                edits.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert edits == []


def test_every_public_name_of_runtime_resolves():
    import runtime

    missing = [name for name in runtime.__all__ if not hasattr(runtime, name)]
    assert missing == []


def test_every_language_has_its_three_parts():
    """A language is a transpiler package, a worker package and its name on the wire."""
    import importlib

    import transpiler
    from wire import protocol

    assert set(transpiler.LANGUAGES) == set(protocol.LANGUAGES)
    for name in transpiler.LANGUAGES:
        for phase in ("parse", "check", "emit"):
            assert transpiler.language(name).part(phase)
        worker = importlib.import_module(f"sandbox_worker.lang.{name}")
        assert callable(worker.restricted_globals) and callable(worker.python_message), name
