"""PATCH_FILE's three formats, applied in memory (the caller writes the result atomically).

  * ``REPLACE:\\n<content>``   the spec's format: the whole new content after the first line.
  * a unified diff            ``--- a/x`` / ``+++ b/x`` headers (optional, one file only) and
                              ``@@ -l,n +l,n @@`` hunks. Each hunk's context and removed lines
                              must match exactly: at the stated line first, else at the one
                              place after the previous hunk where they match. No fuzz.
  * exact edits               ``[{old, new}, ...]``: each ``old`` must occur exactly once in
                              the text as it stands after the previous edits.

Every function returns the new text or raises PatchError naming what did not match; nothing
is half-applied, because nothing is written until the whole patch has applied.
"""

from __future__ import annotations

import re

from runtime.errors import ScriptError


class PatchError(ScriptError):
    kind = "RuntimeError"


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def looks_like_diff(patch: str) -> bool:
    return patch.startswith(("--- ", "@@ ", "diff ")) or "\n@@ -" in patch


def apply_replace(patch: str) -> str:
    first, sep, rest = patch.partition("\n")
    if first.rstrip("\r") != "REPLACE:":
        raise PatchError("a REPLACE patch starts with the line 'REPLACE:'")
    return rest


def _split(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _bare(line: str) -> str:
    return line[:-2] if line.endswith("\r\n") else line[:-1] if line.endswith("\n") else line


def parse_diff(patch: str) -> list[dict]:
    """Hunks as {start, old: [lines], new: [lines], old_eof_nl, new_eof_nl}."""
    lines = patch.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    hunks: list[dict] = []
    headers = 0
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r")
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            headers += 1
            if headers > 1:
                raise PatchError("the diff touches more than one file; PATCH_FILE patches one file (its 'path')")
            i += 2
            continue
        if line.startswith(("diff ", "index ", "new file mode", "deleted file mode", "similarity ", "rename ")):
            i += 1
            continue
        m = _HUNK.match(line)
        if not m:
            raise PatchError(f"diff line {i + 1} is not a hunk header ('@@ -l,n +l,n @@'): {line[:60]!r}")
        old_n = int(m.group(2)) if m.group(2) is not None else 1
        new_n = int(m.group(4)) if m.group(4) is not None else 1
        hunk = {"start": int(m.group(1)), "old": [], "new": [], "old_nl": True, "new_nl": True, "header": i + 1}
        i += 1
        last = None
        while i < len(lines) and (len(hunk["old"]) < old_n or len(hunk["new"]) < new_n or
                                  (i < len(lines) and lines[i].startswith("\\"))):
            body = lines[i]
            tag, text = (body[:1], body[1:]) if body else (" ", "")
            text = text.rstrip("\r")
            if tag == " ":
                hunk["old"].append(text)
                hunk["new"].append(text)
            elif tag == "-":
                hunk["old"].append(text)
            elif tag == "+":
                hunk["new"].append(text)
            elif tag == "\\":
                if last in (" ", "-"):
                    hunk["old_nl"] = False
                if last in (" ", "+"):
                    hunk["new_nl"] = False
            else:
                raise PatchError(f"diff line {i + 1}: a hunk line starts with ' ', '-', '+' or '\\', not {tag!r}")
            last = tag if tag != "\\" else last
            i += 1
        if len(hunk["old"]) != old_n or len(hunk["new"]) != new_n:
            raise PatchError(f"hunk at diff line {hunk['header']} is cut short: it announces "
                             f"-{old_n} +{new_n} lines and has -{len(hunk['old'])} +{len(hunk['new'])}")
        hunks.append(hunk)
    if not hunks:
        raise PatchError("the diff has no hunk ('@@ -l,n +l,n @@')")
    return hunks


def apply_diff(text: str, patch: str) -> str:
    hunks = parse_diff(patch)
    src = _split(text)
    bare = [_bare(x) for x in src]
    eol = "\r\n" if src and src[0].endswith("\r\n") else "\n"
    out: list[str] = []
    pos = 0  # next source line not yet copied
    for n, h in enumerate(hunks, 1):
        old = h["old"]
        want = max(h["start"] - 1, 0) if old else h["start"]  # "-0,0" inserts at the top
        candidates = [want] if bare[want: want + len(old)] == old and want >= pos else []
        if not candidates:
            candidates = [j for j in range(pos, len(bare) - len(old) + 1) if bare[j: j + len(old)] == old]
            if len(candidates) > 1 and old:
                raise PatchError(f"hunk {n} (diff line {h['header']}) matches {len(candidates)} places; add context lines")
        if not candidates:
            shown = (old[0][:60] if old else "")
            raise PatchError(f"hunk {n} (diff line {h['header']}) does not apply: its context/removed lines "
                             f"(starting {shown!r}) are not in the file at line {h['start']} or after line {pos}")
        at = candidates[0]
        out.extend(src[pos:at])
        end = at + len(old)
        at_eof = end == len(src)
        for k, line in enumerate(h["new"]):
            if at_eof and k == len(h["new"]) - 1 and not h["new_nl"]:
                out.append(line)  # "\\ No newline at end of file"
            else:
                out.append(line + eol)
        pos = end
    out.extend(src[pos:])
    return "".join(out)


def apply_edits(text: str, edits) -> str:
    if type(edits) is not list or not edits:
        raise PatchError("edits must be a non-empty array of {old, new} objects")
    for n, edit in enumerate(edits, 1):
        if type(edit) is not dict or set(edit) != {"old", "new"} or type(edit["old"]) is not str or type(edit["new"]) is not str:
            raise PatchError(f"edit {n} must be an object {{old: string, new: string}}")
        old = edit["old"]
        if not old:
            raise PatchError(f"edit {n}: old must not be empty")
        count = text.count(old)
        if count != 1:
            where = "was not found" if count == 0 else f"occurs {count} times (add context so it is unique)"
            raise PatchError(f"edit {n}: old text {old[:60]!r} {where}")
        text = text.replace(old, edit["new"], 1)
    return text
