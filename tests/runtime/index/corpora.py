"""Generated corpora and patterns for the index's equivalence tests: words with the characters
case folding treats specially, every kind of line break, empty files, and regexes of many
shapes built from the same words."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from hypothesis import strategies as st

WORDS = ["alpha", "Beta", "gamma", "KELVIN", "\u212aelvin", "kelvin", "straße", "STRASSE", "İstanbul", "istanbul",
         "ıi", "ſun", "sun", "σοφία", "ΣΟΦΊΑ", "naïve", "x", "a-b", "2024", "reset", "password", "Password Reset",
         "\ufffd", "é", "中文", "a\x00b"]
SEPS = [" ", "\n", "\r\n", "\r", ". ", ", ", "\t", "\u2028", "\x0c", "", "\n\n"]
NAMES = ["a.txt", "b.md", "sub/c.txt", "sub/d.md", "sub/deep/e.txt", "f.txt"]
TEMPLATES = ["{a}", "{a} {b}", r"\b{a}\b", "{a}|{b}", "(?:{a})+", "^{a}", "{a}$", "{a}.{b}", r"{a}\s+{b}",
             "(?i){a}", "(?-i:{a})", "{a}\r\n{b}", "{a}\n{b}", "{a}(?={b})", "(?s){a}.*{b}", "{a}[.]", "(?a){a}",
             "^{a}$", r"{a}\Z", "(?x){a} {b}", "{a}{b}", "{a}(?:{b})?", "[{a}]", "{a}{{2}}", r"{a}\W{b}"]

texts = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPS)), max_size=25).map(
    lambda parts: "".join(w + s for w, s in parts))
corpora = st.dictionaries(st.sampled_from(NAMES), texts, max_size=5)
patterns = st.builds(lambda t, a, b: t.format(a=re.escape(a), b=re.escape(b)),
                     st.sampled_from(TEMPLATES), st.sampled_from(WORDS), st.sampled_from(WORDS))
# a step: ("query", pattern, ignore_case) or ("write", name, text) or ("delete", name)
steps = st.lists(st.one_of(
    st.tuples(st.just("query"), patterns, st.booleans()),
    st.tuples(st.just("write"), st.sampled_from(NAMES), texts),
    st.tuples(st.just("delete"), st.sampled_from(NAMES))), min_size=1, max_size=8)

# also ("build",): `fdsl index build` of the tree; ("newrun",): a new run, loading what was built
run_steps = st.lists(st.one_of(
    st.tuples(st.just("query"), patterns, st.booleans()),
    st.tuples(st.just("write"), st.sampled_from(NAMES), texts),
    st.tuples(st.just("delete"), st.sampled_from(NAMES)),
    st.just(("build",)), st.just(("newrun",))), min_size=1, max_size=10)


class Clock:
    """Distinct mtimes well in the past: the index trusts a file's (size, mtime_ns) only once it
    is older than its racy window."""

    def __init__(self) -> None:
        self.ns = time.time_ns() - 10_000 * 10**9

    def write(self, root: Path, name: str, text: str, crlf_bytes: bool = False) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        self.ns += 1_000_000_000
        os.utime(path, ns=(self.ns, self.ns))
