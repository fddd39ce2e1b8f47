"""The escape corpus: fuzz/corpus/*.py, one known sandbox-escape or DoS payload per file.

Each file starts with a header of comment lines:

    # attack: <attack class>            (the row of the table in docs/security.md)
    # stops: <layer>                    (the layer expected to stop it, one of LAYER_ORDER)
    # <what the payload tries>

and prints ESCAPED if the attack worked (so a run that completes, or prints it, or shows the
canary or a host path, is an escape). Each runs as `fdsl audit --mode restricted` would: the
transpiler bypassed, RestrictedPython and the FilesDSL guards in force, in the fully hardened
worker. `run_entry` tells which layer actually stopped it from the run's outcome.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"

# The layers a corpus run can tell apart, outermost first, and what each means.
LAYER_ORDER = {
    "restrictedpython": "compile_restricted refuses the code (names starting with '_', exec, imports of names...)",
    "guards": "the restricted globals (missing builtins, attribute/item/iteration/write guards, print hook) and Python's own runtime checks",
    "broker": "the broker refuses the request: validation, the Sandbox policy, virtual paths (a host path names nothing)",
    "limits": "rlimits, the recursion limit and the supervisor's deadline, memory watch and output cap",
    "process": "the worker's process jail (namespaces, Landlock, seccomp, uid)",
}
HEADER = re.compile(r"#\s*(attack|stops):\s*(.+)")
CORPUS_TIMEOUT = 2.0
CORPUS_MEMORY_MB = 128
CORPUS_MAX_OUTPUT = 50_000


@dataclass
class Entry:
    name: str
    attack: str
    expected: str
    description: str
    code: str


@dataclass
class Outcome:
    layer: str  # one of LAYER_ORDER, "none" (it completed) or "crash"
    escaped: bool
    detail: str
    exit_code: int


def load_corpus(directory: Path = CORPUS_DIR) -> list[Entry]:
    entries = []
    for path in sorted(directory.glob("*.py")):
        code = path.read_text(encoding="utf-8")
        fields, description = {}, ""
        for line in code.splitlines():
            if not line.startswith("#"):
                break
            match = HEADER.match(line)
            if match:
                fields[match.group(1)] = match.group(2).strip()
            elif not description:
                description = line.lstrip("# ").strip()
        if "attack" not in fields or fields.get("stops") not in LAYER_ORDER:
            raise ValueError(f"{path.name}: the header needs '# attack:' and '# stops:' one of {sorted(LAYER_ORDER)}")
        entries.append(Entry(path.stem, fields["attack"], fields["stops"], description, code))
    return entries


class RecordingBroker:
    """Wraps the run's broker and remembers the error replies it sent, so a failure can be
    attributed to the broker (its reply) rather than to the guards (raised in the worker)."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.errors: list[str] = []

    @property
    def requests(self) -> int:
        return self.broker.requests

    def reply(self, message: dict) -> dict:
        answer = self.broker.reply(message)
        if answer.get("t") == "err":
            self.errors.append(str(answer.get("msg", "")))
        return answer


def classify(outcome: str, error: dict | None, broker_errors=()) -> str:
    error = error or {}
    message, kind = str(error.get("msg", "")), error.get("kind")
    if outcome == "completed":
        return "none"
    if outcome == "crash":
        return "crash"
    if outcome == "timeout" or kind == "LimitError":
        return "limits"
    if message.startswith("code rejected by RestrictedPython"):
        return "restrictedpython"
    if kind == "SandboxError" or (message and message in broker_errors):
        return "broker"
    if re.search(r"PermissionError|Operation not permitted|Too many open files|Permission denied", message):
        return "process"
    return "guards"


def run_entry(entry: Entry, root, host_strings=(), canary: str | None = None) -> Outcome:
    import time

    from runtime.audit import audit, broker_for

    broker = RecordingBroker(broker_for(root, time.monotonic() + CORPUS_TIMEOUT + 1))
    result = audit(entry.code, mode="restricted", root=root, timeout=CORPUS_TIMEOUT,
                   memory_mb=CORPUS_MEMORY_MB, max_output=CORPUS_MAX_OUTPUT, broker=broker)
    layer = classify(result.outcome, result.error, broker.errors)
    text = result.output + str((result.error or {}).get("msg", ""))
    escaped = layer == "none" or "ESCAPED" in result.output
    escaped = escaped or (canary is not None and canary in text) or any(h in text for h in host_strings)
    detail = f"{result.outcome}: {(result.error or {}).get('kind')}: {str((result.error or {}).get('msg'))[:160]}"
    return Outcome(layer, escaped, detail, result.exit_code)
