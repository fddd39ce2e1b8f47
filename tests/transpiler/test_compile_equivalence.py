"""The compile path gives what it gave before it was optimised: for every recorded case
(tests/testdata/transpiler/compiled.json, made by `python -m tests.support.compile_corpus --record`;
recorded at e66aca9, and again after PromptScript's counting by runs changed its emitted code)
the same emitted Python, the same source map and the same errors (kind, message, line,
column), for the examples, the annotated test data, grammar-shaped programs from
fuzz/strategies.py, their damaged forms and hostile shapes at the limits.

With ``TRANSPILER_REF`` set to a checkout (``git worktree add /tmp/ref e66aca9``), fresh
hypothesis programs are also compared with that checkout's transpiler in a child process.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

import pytest

from tests.support.compile_corpus import against, expected_matches, load_recording, outcome

CASES = load_recording()


GROUPS: dict[str, list[dict]] = defaultdict(list)
for _case in CASES:
    GROUPS[_case["filename"].split("#")[0].split(".")[0]].append(_case)


def test_recording_covers_every_kind_of_case():
    assert len(CASES) > 1000
    assert {"generated-fdsl", "generated-ps", "hostile-fdsl", "hostile-ps", "valid", "syntax_errors", "checker_errors",
            "tour", "carousel"} <= GROUPS.keys()
    kinds = [json.dumps(c["expected"]["compile"]) for c in CASES]
    assert sum('"python"' in k or '"digest"' in k for k in kinds) > 300  # compiled
    for message in ("expression too deep", "script is too long", "unexpected", "undefined name",
                    "was never closed", "expected an indented block", "too long (limit"):
        assert any(message in k for k in kinds), message


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_same_results_as_recorded(group):
    wrong = []
    for case in GROUPS[group]:
        got = json.loads(json.dumps(outcome(case)))
        if not expected_matches(got, case["expected"]):
            wrong.append(f"{case['filename']}: {json.dumps(got)[:600]}\n  recorded: {json.dumps(case['expected'])[:600]}")
    assert not wrong, f"{len(wrong)} of {len(GROUPS[group])} differ:\n" + "\n".join(wrong[:3])


@pytest.mark.skipif(not os.environ.get("TRANSPILER_REF"), reason="set TRANSPILER_REF to an older checkout")
def test_same_results_as_reference_checkout():
    count = int(os.environ.get("FDSL_FUZZ_EXAMPLES", "300"))
    assert against(os.environ["TRANSPILER_REF"], count, seed=int.from_bytes(os.urandom(4), "big")) == 0
