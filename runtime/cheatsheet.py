"""Each language on one screen: what `fdsl --help` shows, and the short reference an agent's
tool description can carry. The full references are docs/filesdsl.md and docs/promptscript.md
(`fdsl help filesdsl|promptscript` prints them)."""

from __future__ import annotations

from pathlib import Path

FILESDSL = """\
FilesDSL (.fdsl): read-only exploration of the files under --root (paths are inside the sandbox).
  values   ints, true/false, "strings", lists [1, 3:5] (3:5 is an inclusive range); no floats
  control  for x in xs:   if / elif / else:   break   continue   (indentation as in Python)
  built-ins print len str int sorted min max sum abs Directory(path) File(path)
  Directory d.files()  d.search(regex, scope="name"|"content"|"both")  d.list()  d.find("**/*.md")
           d.grep(regex, glob=None, max_results=100) -> hits with .path .line .content
  File     f.read(pages=None)  f.page_count  f.lines(offset, limit)  f.search(regex) -> pages
           f.contains(regex)  f.snippets(regex)  f.table()  f.head()  f.tail()  f.name f.size
  results  search() and grep() lists also have .total, .truncated and .skipped (files not read)
  lists    xs[0] xs[-1] xs[1:3] xs.append(x) xs + ys     strings: lower split join strip replace ...
example:
  for f in Directory("/").search("install", scope="content", ignore_case=true):
      print(f, f.snippets("install", max_results=1))
"""

# The same, in the room a tool description has (OpenAI's, on some deployments, is 1,024 characters).
FILESDSL_COMPACT = """\
FilesDSL: Python-like, read-only; paths are inside the sandbox ("/" is its root); ints, true/false.
d = Directory(path): d.files() d.list() d.find("**/*.md") d.search(regex, scope="name"|"content"|"both")
  d.grep(regex, glob=None, max_results=100) -> hits .path .line .content
f = File(path): f.read(pages=None) f.page_count f.lines(offset, limit) f.search(regex) -> pages
  f.contains(regex) f.snippets(regex) f.table() f.head() f.tail()
for x in xs: / if / elif / else:; [1, 3:5] ranges, xs[-1], xs[1:3]; print len str int sorted min max sum
search() and grep() lists have .total .truncated .skipped: print them when they matter.
"""

PROMPTSCRIPT = """\
PromptScript (.ps): orchestration over the project (--project DIR, read-write; writes ask).
  values   numbers, true/false/null, "strings", arrays [..], objects {key: value}
  control  if/elif/else  for x in xs:  while  def f(a):  class  return  break  continue
  blocks   retry 3 backoff 500:   timeout 2000:   guard expr  (fails with the expression's text)
  scopes   with policy { allowActions: [...], allowRead: [...], allowWrite: [...] }:
  actions  apply("READ_FILE" | "WRITE_FILE" | "PATCH_FILE" | "SEARCH" | "RUN_CMD" | "ASK_USER"
           | "REPORT", { args })  or apply({ action, args, done })   parallel([{action, args}])
  llm      plan(p) do(p) run_agent(client, p, {memory_key}) decide({question, schema}) judge(q)
           summarize(i, {memory_key}) LLMClient({provider, model}); --provider mock: offline
  output   log(...) prints "[ps] ..."; budgets: --max-steps --max-time --max-tool-calls
           --max-llm-calls --max-cost
example:
  with policy { allowActions: ["SEARCH", "REPORT"] }:
    hits = apply("SEARCH", { query: "TODO", globs: ["src/**/*.py"] })
    apply("REPORT", { message: "found " + len(hits) })
"""

SHEETS = {"fdsl": FILESDSL, "ps": PROMPTSCRIPT}
REFERENCES = {"filesdsl": "filesdsl.md", "promptscript": "promptscript.md"}
DOCS = Path(__file__).resolve().parent.parent / "docs"


def reference(topic: str) -> str | None:
    """The full reference of a language (docs/<topic>.md), or None where the docs are not
    installed (a wheel carries the code only)."""
    path = DOCS / REFERENCES[topic]
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None
