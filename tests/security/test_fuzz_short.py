"""The generative fuzz targets in their short, seeded form (CI runs only pytest), and the
budget accounting of `python -m fuzz`. The corpus has its own tests (test_corpus.py).

The long pass is `python -m fuzz --minutes N`; both use the same targets.
"""

from __future__ import annotations

import pytest

import fuzz.corpus
from fuzz import __main__ as fuzz_main
from fuzz.budgets import fuzz_documents, fuzz_replies
from fuzz.targets import fuzz_paths, fuzz_programs, fuzz_protocol, fuzz_ps_programs

SEED = 20261122


# Each target with a note that shows it reached the code under test, not only the generator.
@pytest.mark.parametrize("target,budget,reached", [
    (fuzz_programs, 8.0, "run in the worker"),
    (fuzz_ps_programs, 6.0, "run in the worker"),
    (fuzz_paths, 4.0, "ops per path"),
    (fuzz_protocol, 8.0, "replied err"),
    (fuzz_replies, 5.0, "refused by the reply budget"),
    (fuzz_documents, 8.0, "pdf"),
], ids=["programs", "ps_programs", "paths", "protocol", "replies", "documents"])
def test_fuzz_target_short_pass(target, budget, reached):
    stats = target(budget, SEED)
    assert stats.count > 0
    assert stats.notes.get(reached, 0) > 0, stats.notes
    assert stats.failures == []


def test_a_budget_too_short_for_the_generative_targets_is_incomplete_not_success(capsys):
    code = fuzz_main.main(["--minutes", "0.05", "--targets", "programs,paths"])
    out = capsys.readouterr().out
    assert code == fuzz_main.EXIT_INCOMPLETE
    assert "pass INCOMPLETE" in out and "NOT RUN" in out
    assert "failures 0" in out


def test_the_corpus_runs_in_full_whatever_the_budget(monkeypatch, capsys):
    entries = [e for e in fuzz.corpus.load_corpus() if e.name.startswith(("001_", "041_", "115_"))]
    assert len(entries) == 3
    monkeypatch.setattr(fuzz.corpus, "load_corpus", lambda: list(entries))
    # 0.6 s cannot hold three payloads in three modes: the corpus still runs them all.
    code = fuzz_main.main(["--minutes", "0.01", "--targets", "corpus,programs"])
    out = capsys.readouterr().out
    corpus_line = next(line for line in out.splitlines() if line.startswith("corpus "))
    assert corpus_line.split()[1] == "3"
    assert "corpus: restricted runs: 3" in out and "corpus: baseline runs: 3" in out and "corpus: os runs: 3" in out
    assert code == fuzz_main.EXIT_INCOMPLETE  # programs got no time


def test_unknown_targets_are_a_usage_error():
    assert fuzz_main.main(["--targets", "nope"]) == fuzz_main.EXIT_USAGE
