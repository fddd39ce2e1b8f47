"""docs/tools.md's examples are what the tools answer over examples/docs, character for character."""

from __future__ import annotations

import pytest

from runtime.tools import ToolError, Tools
from tests.support import REPO

DOC = (REPO / "docs" / "tools.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def tools():
    t = Tools(root=REPO / "examples" / "docs")
    yield t
    t.close()


def test_the_grep_and_read_examples(tools):
    grep = tools.call("grep", {"pattern": "language model", "max_results": 1})
    assert f"```json\n{grep}\n```" in DOC
    read = tools.call("read", {"path": "guides/intro.md", "limit": 3})
    assert f"```text\n{read}\n```" in DOC


def test_the_run_fdsl_error_example(tools):
    with pytest.raises(ToolError) as info:
        tools.call("run_fdsl", {"script": 'x = File("reports/summary.txt")\nprint(x.read(pages=[1:4]))\n'})
    assert f"```text\n{info.value}\n```" in DOC


def test_the_error_table(tools):
    for name, params in [("read", {"path": "billing/nope.md"}), ("grep", {"pattern": "[unclosed"}),
                         ("delete", {}), ("read", {"path": "x", "offset": 0})]:
        with pytest.raises(ToolError) as info:
            tools.call(name, params)
        first = str(info.value).split(" (paths are inside")[0]  # the hint names the root's folders
        assert f"`{first}`" in DOC
