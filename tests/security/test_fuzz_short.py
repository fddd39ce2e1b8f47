"""The fuzz targets in their short, seeded form (CI runs only pytest): about 30 s in all.

The long pass is `python -m fuzz --minutes N`; both use the same targets.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from fuzz.corpus import LAYER_ORDER, load_corpus, run_entry
from fuzz.targets import CANARY, Sandbox, fuzz_paths, fuzz_programs, fuzz_protocol

SEED = 20261122


@pytest.mark.parametrize("target,budget", [(fuzz_programs, 8.0), (fuzz_paths, 4.0), (fuzz_protocol, 8.0)],
                         ids=["programs", "paths", "protocol"])
def test_fuzz_target_short_pass(target, budget):
    stats = target(budget, SEED)
    assert stats.count > 0
    assert stats.failures == []


def test_the_corpus_has_at_least_100_payloads_over_every_attack_class():
    entries = load_corpus()
    assert len(entries) >= 100
    classes = {entry.attack for entry in entries}
    for expected in ("subclass walk", "function globals", "generator/coroutine/traceback frames",
                     "format-string attribute access", "builtins recovery", "loader and module tricks",
                     "look-alike unicode identifiers", "BaseException subclasses", "memory bomb", "CPU bomb",
                     "recursion bomb", "fork bomb", "output bomb", "/proc and symlink tricks"):
        assert expected in classes
    assert {entry.expected for entry in entries} <= set(LAYER_ORDER)


def test_no_corpus_payload_succeeds_and_each_is_stopped_where_its_header_says():
    box = Sandbox()
    try:
        entries = load_corpus()
        with ThreadPoolExecutor(2) as pool:
            outcomes = list(pool.map(lambda e: (e, run_entry(e, box.root, box.host_strings, CANARY)), entries))
    finally:
        box.close()
    escaped = [f"{e.name}: {o.detail}" for e, o in outcomes if o.escaped]
    misplaced = [f"{e.name}: stopped by {o.layer}, header says {e.expected} ({o.detail})" for e, o in outcomes if not o.escaped and o.layer != e.expected]
    assert escaped == []
    assert misplaced == []
