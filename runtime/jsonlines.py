"""One JSON object per line, as the run log, the recorded LLM answers and `fdsl run-many`
write them."""

from __future__ import annotations

import json


def json_line(record: dict, encoding: str = "utf-8") -> str:
    """``record`` as one line of JSON that ``encoding`` can write: as it is, or, when a string
    holds what it cannot (a lone surrogate: a model's text, a file name that is not UTF-8), with
    JSON's \\u escapes, which read back as the same string. Nothing is dropped."""
    line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
    try:
        line.encode(encoding)
    except UnicodeEncodeError:
        line = json.dumps(record, default=str) + "\n"
    return line
