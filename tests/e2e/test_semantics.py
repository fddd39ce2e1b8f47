"""FilesDSL semantics, end to end: transpile, run in a real worker, compare output or error."""

from __future__ import annotations

import pytest

from runtime import run_script


def run(corpus, source: str, **kwargs):
    return run_script(source, root=corpus, timeout=20, **kwargs)


OUTPUT_CASES = [
    # values and operators
    ("print(1 + 2 * 3, 7 / 2, 7 % 3, -4 + 1)", "7 3 1 -3"),
    ("print(true and false, true or false, not true)", "false true false"),
    ("print(1 < 2 < 3, 3 > 2 > 2, 1 == 1 != 2)", "true false true"),
    ('print("a" in "cat", 2 in [1, 2], 5 not in [1])', "true true true"),
    ('print([1, "a", true, [2]])', '[1, "a", true, [2]]'),
    ("print([1, 3:5, 10], [5:3], [2:2])", "[1, 3, 4, 5, 10] [5, 4, 3] [2]"),
    ('x = 1\nx += 4\nx *= 2\nprint(x, "ab" + "c", str(true) + str(3))', "10 abc true3"),
    ('print(len("abc"), len([1, 2]), sorted([3, 1, 2]), min([4, 2]), max(1, 9), sum([1, 2]), abs(-3))', "3 2 [1, 2, 3] 2 9 3 3"),
    ('print(int("42") + 1, "A,B".lower().split(","), [1, 2][-1])', '43 ["a", "b"] 2'),
    # control flow
    ("for i in [1:5]:\n    if i == 2:\n        continue\n    if i == 4:\n        break\n    print(i)", "1\n3"),
    ("x = 5\nif x < 3:\n    print(1)\nelif x < 10:\n    print(2)\nelse:\n    print(3)", "2"),
    ("total = 0\nfor n in [\n    1,\n    2,\n]:\n    total += n\nprint(total)", "3"),
    # directories and files
    ('d = Directory("docs", recursive=false)\nprint(len(d.files()), len(d.files(recursive=true)))', "9 10"),
    ('for f in Directory("docs/sub"):\n    print(f, f.name, f.suffix)', "docs/sub/deep.md deep.md .md"),
    ('print(Directory("/docs/./sub/..").path, Directory("/").path)', "docs ."),
    ('f = File("docs/long.txt")\nprint(f.page_count, f.size, f.path)', "3 1692 docs/long.txt"),
    # pages and ranges
    ('f = File("docs/long.txt")\nprint(f.read(pages=2).split("\\n")[0], f.read(pages=[3])[0].split("\\n")[-1])', "line 81 line 200"),
    ('f = File("docs/long.txt")\nprint(len(f.read(pages=[1:3])), len(f.read(pages=[3:1])), f.read(pages=[3:1])[0] == f.tail())', "3 3 true"),
    ('f = File("docs/long.txt")\nprint(f.head().split("\\n")[79], len(f.read().split("\\n")))', "line 80 201"),
    ('f = File("docs/empty.txt")\nprint(f.page_count, len(f.read(pages=1)))', "1 0"),
    ('f = File("docs/paper.pdf")\nprint(f.page_count, f.read(pages=2).strip())', "3 Methods section"),
    ('print(File("docs/latin1.txt").read().strip())', "caf\ufffd au lait"),
    # search scopes
    ('print(Directory("docs").search("\\.md$"))', "[docs/guide.md, docs/sub/deep.md]"),
    ('print(Directory("docs").search("^sub/"))', "[docs/sub/deep.md]"),
    ('print(Directory("docs").search("language model", scope="content"))', "[docs/paper.pdf, docs/plain.txt, docs/sub/deep.md]"),
    ('print(Directory("docs").search("LANGUAGE", in_content=true, ignore_case=true, recursive=false))', "[docs/paper.pdf, docs/plain.txt]"),
    ('print(Directory("docs").search("deep|plain", scope="both"))', "[docs/plain.txt, docs/sub/deep.md]"),
    ('f = File("docs/paper.pdf")\nprint(f.search("language model"), f.contains("Methods"), f.contains("methods"), f.contains("methods", ignore_case=true))', "[1, 3] true false true"),
    # snippets
    ('print(File("docs/plain.txt").snippets("language", context_chars=5))', '["[page 1] ut a language mode"]'),
    ('print(len(File("docs/long.txt").snippets("line 1", max_results=3)), File("docs/long.txt").snippets("zzz"))', "3 []"),
    # tables of contents, every kind
    ('print(File("docs/paper.pdf").table())', "Abstract (p.1)\nMethods (p.2)\n  Setup (p.2)\nResults (p.3)"),
    ('print(File("docs/guide.md").table())', "Guide (p.1)\n  Install (p.1)\n    Linux (p.1)"),
    ('print(File("docs/toc.txt").table())', "1. Overview (p.1)\n  1.1 Scope (p.2)\n2. Methods (p.3)"),
    ('print(File("docs/numbered.txt").table())', "1 Overview (p.1)\n  1.1 Scope (p.2)"),
    ('print(File("docs/plain.txt").table())', "No table of contents detected for docs/plain.txt"),
    ('print(File("docs/flat.pdf").table())', "No table of contents detected for docs/flat.pdf"),
    ('print(File("docs/paper.pdf").table(max_items=2))', "Abstract (p.1)\nMethods (p.2)\n... (2 more entries)"),
    # listings, find, grep, lines
    ('for e in Directory("docs/sub").list():\n    print(e.type, e.name, e.path)', "file deep.md docs/sub/deep.md"),
    ('print(Directory("docs").find("**/*.md"))', "[file docs/guide.md (56 bytes), file docs/sub/deep.md (29 bytes)]"),
    ('for h in Directory("docs").grep("LANGUAGE MODEL"):\n    print(h.path, h.line)', "docs/paper.pdf 1\ndocs/paper.pdf 7\ndocs/plain.txt 2\ndocs/sub/deep.md 2"),
    ('print(File("docs/long.txt").lines(offset=199, limit=5))', "199  line 199\n200  line 200"),
]


@pytest.mark.parametrize("source, expected", OUTPUT_CASES, ids=[c[0][:40] for c in OUTPUT_CASES])
def test_output(corpus, source, expected):
    result = run(corpus, source)
    assert result.error is None, result.error
    assert result.output == expected + "\n"


ERROR_CASES = [
    # (source, error regex, line, column)
    ('x = 1\nf = File("docs/long.txt")\nprint(f.read(pages=[4]))', r"page 4 is out of range: docs/long.txt has 3 pages", 3, 7),
    ('f = File("docs/long.txt")\nprint(f.read(pages=0))', r"page 0 is out of range", 2, 7),
    ('print(File("docs/nope.txt"))', r"no such file: docs/nope.txt", 1, 7),
    ('print(File("docs"))', r"docs is a directory, not a file", 1, 7),
    ('d = Directory("docs")\n\nd.search("[unclosed")', r"invalid regex '\[unclosed'", 3, 1),
    ('Directory("docs").search("x", scope="title")', r"scope", 1, 1),
    ('print("a" + 1)', r"cannot add int to string", 1, 7),
    ("print(1 / 0)", r"division by zero", 1, 7),
    ('print(1 < "a")', r"not supported between instances of 'int' and 'string'", 1, 7),
    ("for i in [1]:\n    print(y)\ny = 2", r"variable 'y' is not defined", 2, 11),
    ('print([1, 2][5])', r"index 5 is out of range", 1, 7),
    ('File("docs/long.txt").read(page=1)', r"read\(\) has no argument 'page'", 1, 1),
    ('File("docs/long.txt").read(1, 2)', r"read\(\) takes at most 1 argument \(2 given\)", 1, 1),
    ('File("docs/long.txt").read(pages="1")', r"pages must be int or list, not string", 1, 1),
    ('Directory("docs/long.txt")', r"not a directory", 1, 1),
    ("x = [1:100000000]", r"range 1:100000000 has 100000000 items", 1, 5),
    ('File("docs/long.txt").lines(offset=0)', r"offset", 1, 1),
]


@pytest.mark.parametrize("source, pattern, line, column", ERROR_CASES, ids=[c[0][:40] for c in ERROR_CASES])
def test_error_is_located(corpus, source, pattern, line, column):
    result = run(corpus, source)
    assert result.exit_code == 1, result.output
    assert (result.error_line, result.error_column) == (line, column), result.error
    header, where, quoted, caret = result.error.split("\n")
    assert __import__("re").search(pattern, header), header
    assert where == f"  at line {line}, column {column}"
    assert quoted == "    " + source.split("\n")[line - 1]
    assert caret == "    " + " " * (column - 1) + "^"
    assert "Traceback" not in result.error


def test_syntax_error_is_located(corpus):
    result = run(corpus, 'x = 1\nprint(x))\n')
    assert result.exit_code == 1
    assert result.error_kind == "SyntaxError"
    assert result.error.startswith("SyntaxError: ")
    assert (result.error_line, result.error_column) == (2, 9)
