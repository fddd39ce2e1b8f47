"""The annotated test-data helper (tests/support/chunked.py) itself."""

from __future__ import annotations

from tests.support.chunked import parse_chunks
from tests.support.transpiler import DATA, load_chunks

TEXT = """\
x = 1
---
# second chunk
y = open(1)   ### "unknown function 'open'"
z = 2
---
a = [   ### "never \\"closed\\""
"""


def test_chunks_and_relative_lines():
    chunks = parse_chunks(TEXT, "t.fdsl")
    assert [c.first_line_in_file for c in chunks] == [1, 3, 7]
    assert chunks[0].source == "x = 1\n" and chunks[0].expectations == []
    assert chunks[1].source.splitlines()[1].startswith("y = open(1)")
    assert chunks[1].expectations == [(2, "unknown function 'open'")]
    assert chunks[1].file_line(2) == 4
    assert chunks[2].expectations == [(1, 'never "closed"')]
    assert chunks[1].where(2) == "t.fdsl:4"


def test_annotation_is_a_comment_for_the_parser():
    from transpiler import parse

    chunk = parse_chunks('x = 1   ### "nothing"\n')[0]
    assert len(parse(chunk.source).body) == 1


def test_data_files_load():
    for name in ("syntax_errors", "checker_errors", "valid"):
        chunks = load_chunks(DATA / f"{name}.fdsl")
        assert len(chunks) > 5
