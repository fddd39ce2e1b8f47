"""Hypothesis strategies shaped to the FilesDSL grammar (whole programs as ASTs, rendered with
transpiler.fdsl.printer), hostile path strings and hostile protocol messages."""

from __future__ import annotations

from hypothesis import strategies as st

from transpiler.fdsl import ast
from transpiler.fdsl.surface import BUILTINS, KNOWN_ATTRIBUTES

VARS = st.sampled_from(["a", "b", "xs", "file_1", "n", "Total"])
KW_NAMES = st.sampled_from(["k", "pages", "ignore_case", "scope", "recursive", "glob", "max_results"])
ATTRS = st.sampled_from(sorted(KNOWN_ATTRIBUTES))
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)

# Path pieces that have broken sandboxes before: climbing, doubled and trailing separators,
# encodings, look-alike dots, NUL, backslashes, the names next to the root and symlinks.
PATH_PIECES = [
    "..", ".", "", "/", "//", "data", "a.txt", "b.md", "sub", "c.txt", "canary.txt", "root",
    "link_out", "dir_out", "link_in", "%2e%2e", "\uff0e\uff0e", "..\\", "\\", "~", "\x00", "..;",
    "...", " ", "data/", "/proc", "self", "environ", "etc", "passwd", "tmp", "\u2215", "\u2024\u2024",
]
HOSTILE_STRINGS = [
    "../canary.txt", "/../canary.txt", "data/../../canary.txt", "link_out", "dir_out/canary.txt",
    "data/sub/../../..", "/proc/self/environ", "/etc/passwd", "data/a.txt/..", "//..//canary.txt",
    "\\..\\canary.txt", "data/\x00a.txt", "\uff0e\uff0e/canary.txt", "~/canary.txt", "*", "**/*",
]


def hostile_paths(host_strings: list[str] = ()):
    """Paths built from pieces, hostile literals, the host's own paths, and raw text."""
    joined = st.lists(st.sampled_from(PATH_PIECES), min_size=1, max_size=6).flatmap(
        lambda parts: st.sampled_from(["/", "\\", "//"]).map(lambda sep: sep.join(parts))
    )
    absolute = joined.map(lambda p: "/" + p)
    return st.one_of(
        joined, absolute, st.sampled_from(HOSTILE_STRINGS + list(host_strings)),
        st.text(max_size=24), st.sampled_from(list(host_strings) or ["/"]).map(lambda h: h + "/../canary.txt"),
    )


def _literals(host_strings: list[str] = ()):
    """String literals a FilesDSL program can hold (the language has no NUL)."""
    return st.one_of(TEXT, st.sampled_from([s for s in HOSTILE_STRINGS + list(host_strings) if "\x00" not in s]))


def expressions(host_strings: list[str] = ()):
    """FilesDSL expressions (transpiler.fdsl.ast nodes), with hostile string literals."""
    leaves = st.one_of(
        st.builds(ast.Name, VARS),
        st.builds(ast.Int, st.integers(0, 10**12)),
        st.builds(ast.Bool, st.booleans()),
        st.builds(ast.Str, _literals(host_strings)),
    )

    def compound(children):
        kwargs = st.lists(st.builds(ast.Keyword, KW_NAMES, children), max_size=2, unique_by=lambda k: k.name).map(tuple)
        items = st.lists(st.one_of(children, st.builds(ast.Range, children, children)), max_size=3)
        func = st.one_of(st.builds(ast.Name, st.sampled_from(sorted(BUILTINS))), st.builds(ast.Attr, children, ATTRS))
        return st.one_of(
            st.builds(ast.BinOp, st.sampled_from("+-*/%"), children, children),
            st.builds(ast.UnaryOp, st.sampled_from(["-", "not"]), children),
            st.builds(ast.BoolOp, st.sampled_from(["and", "or"]), children, children),
            st.builds(
                lambda left, pairs: ast.Compare(left, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)),
                children,
                st.lists(st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in", "not in"]), children), min_size=1, max_size=3),
            ),
            st.builds(ast.Call, func, st.lists(children, max_size=3).map(tuple), kwargs),
            st.builds(ast.Attr, children, ATTRS),
            st.builds(ast.Index, children, children),
            st.builds(ast.ListExpr, items.map(tuple)),
        )

    return st.recursive(leaves, compound, max_leaves=6)


def programs(host_strings: list[str] = ()):
    """Whole FilesDSL modules (transpiler.fdsl.ast.Module), with hostile string literals."""
    exprs = expressions(host_strings)

    def block(stmts):
        return st.lists(stmts, min_size=1, max_size=2).map(tuple)

    def compound_stmts(children):
        return st.one_of(
            st.builds(ast.For, VARS, exprs, block(children)),
            st.builds(ast.If, exprs, block(children),
                      st.lists(st.builds(ast.Elif, exprs, block(children)), max_size=2).map(tuple),
                      st.one_of(st.just(()), block(children))),
        )

    # Calls that reach the broker with a hostile path, so runs exercise the file ops.
    opener = st.builds(
        lambda var, fn, arg, method: ast.Assign(var, ast.Call(ast.Attr(ast.Call(ast.Name(fn), (ast.Str(arg),), ()), method), (), ())),
        VARS, st.sampled_from(["File", "Directory"]), _literals(host_strings),
        st.sampled_from(["read", "files", "head", "list"]),
    )
    simple = st.one_of(
        st.builds(ast.Assign, VARS, exprs),
        st.builds(ast.AugAssign, VARS, st.sampled_from("+-*/%"), exprs),
        st.builds(ast.ExprStmt, exprs),
        st.builds(ast.ExprStmt, st.builds(ast.Call, st.just(ast.Name("print")), st.lists(exprs, max_size=2).map(tuple), st.just(()))),
        opener,
        st.builds(ast.Break),
        st.builds(ast.Continue),
    )
    statements = st.recursive(simple, compound_stmts, max_leaves=6)
    prefix = tuple(ast.Assign(v, ast.Int(1)) for v in ["a", "b", "xs", "file_1", "n", "Total"])
    return st.lists(statements, max_size=4).map(lambda body: ast.Module(prefix + tuple(body)))


# ------------------------------------------------------------------ protocol

JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=30))
json_values = st.recursive(JSON_LEAVES, lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.text(max_size=8), c, max_size=4)), max_leaves=12)


def call_messages(ops: list[str]):
    """'call' messages: known and unknown ops, right and wrong argument names and types."""
    op = st.one_of(st.sampled_from(ops), st.text(max_size=20), json_values)
    args = st.one_of(
        st.dictionaries(st.sampled_from(["path", "pattern", "pages", "scope", "recursive", "ignore_case", "glob",
                                         "max_results", "context_chars", "max_items", "offset", "limit", "x"]),
                        json_values, max_size=6),
        json_values,
    )
    return st.builds(lambda o, a: {"t": "call", "op": o, "a": a}, op, args)


def any_messages(ops: list[str]):
    return st.one_of(call_messages(ops), st.dictionaries(st.text(max_size=6), json_values, max_size=4),
                     st.builds(lambda t, rest: {"t": t, **rest}, st.sampled_from(["call", "out", "end", "ready", "start", "ok", "err"]),
                               st.dictionaries(st.text(max_size=6), json_values, max_size=3)))


# ------------------------------------------------------------------ PromptScript

PS_VARS = ["a", "b", "xs", "obj", "n", "total"]
PS_KEYS = st.sampled_from(["path", "query", "content", "old", "new", "cmd", "args", "globs", "mode", "message",
                           "maxBytes", "timeoutMs", "question", "filesChanged", "v", "n", "allowActions",
                           "allowWrite", "allowCommands", "maxFileBytes", "max", "fail_fast", "timeout"])
PS_ACTIONS = ["READ_FILE", "WRITE_FILE", "PATCH_FILE", "SEARCH", "RUN_CMD", "ASK_USER", "REPORT", "NO_SUCH_ACTION"]
# Defined first in every generated program, so names read are always defined (the checker
# refuses a name defined nowhere).
PS_PRELUDE = (
    'a = 1\nb = "text"\nxs = [1, 2, 3]\nobj = {path: "data/a.txt", n: 2}\nn = 3\ntotal = 0\n'
    "def helper(x):\n  return x\n"
    "class Box:\n  def __init__(self, v):\n    self.v = v\n  def get(self):\n    return self.v\n"
)


def ps_string(text: str) -> str:
    """A "..." literal holding `text` (the language's escapes)."""
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
               .replace("\r", "\\r").replace("\t", "\\t").replace("\x00", "\\0"))
    return f'"{escaped}"'


def ps_expressions(host_strings: list[str] = ()):
    """PromptScript expressions as source text, with hostile string literals."""
    literal_text = _literals(host_strings)
    leaves = st.one_of(
        st.sampled_from(PS_VARS),
        st.integers(-(10**6), 10**12).map(str),
        st.floats(0, 1e6, allow_nan=False).map(lambda f: f"{f:.3f}"),
        literal_text.map(ps_string),
        literal_text.filter(lambda t: "`" not in t).map(lambda t: f"`{t}`"),
        st.sampled_from(["true", "false", "null"]),
    )

    def compound(children):
        items = st.lists(children, max_size=3).map(", ".join)
        pairs = st.lists(st.tuples(PS_KEYS, children), max_size=3, unique_by=lambda kv: kv[0]).map(lambda ps: ", ".join(f"{k}: {v}" for k, v in ps))
        action = st.builds(lambda act, args: f'apply("{act}", {{{args}}})', st.sampled_from(PS_ACTIONS), pairs)
        return st.one_of(
            st.builds(lambda op, l, r: f"({l} {op} {r})", st.sampled_from("+-*/%"), children, children),
            st.builds(lambda op, l, r: f"({l} {op} {r})", st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in", "not in", "and", "or"]), children, children),
            children.map(lambda e: f"(not {e})"), children.map(lambda e: f"(-{e})"),
            items.map(lambda s: f"[{s}]"), pairs.map(lambda s: f"{{{s}}}"),
            st.builds(lambda f, args: f"{f}({args})", st.sampled_from(["log", "len", "range", "helper", "Box"]), items),
            action,
            st.builds(lambda reqs: f"parallel([{reqs}], {{max: 2}})",
                      st.lists(st.builds(lambda act, args: f'{{action: "{act}", args: {{{args}}}}}',
                                         st.sampled_from(["READ_FILE", "SEARCH", "WRITE_FILE"]), pairs), max_size=2).map(", ".join)),
            st.builds(lambda e, k: f"{e}.{k}", st.sampled_from(["obj", "Box(1)"]), st.sampled_from(["path", "n", "v", "get()", "missing"])),
            st.builds(lambda e, i: f"{e}[{i}]", children, children),
        )

    return st.recursive(leaves, compound, max_leaves=6)


def ps_programs(host_strings: list[str] = ()):
    """Whole PromptScript programs as source text, rendered with 2-space indentation."""
    exprs = ps_expressions(host_strings)
    simple = st.one_of(
        st.builds(lambda v, e: f"{v} = {e}", st.sampled_from(PS_VARS), exprs),
        st.builds(lambda e: f"log({e})", exprs),
        exprs,
        st.builds(lambda e: f"guard {e}", exprs),
        st.builds(lambda e: f"obj.v = {e}", exprs),
        st.builds(lambda e: f"xs[0] = {e}", exprs),
        st.just("pass"),
    )

    def block(children):
        return st.lists(children, min_size=1, max_size=3)

    def compound(children):
        def indent(lines: list[str]) -> str:
            return "\n".join("  " + line for stmt in lines for line in stmt.split("\n"))

        loop_body = st.builds(lambda body, tail: body + tail, block(children), st.sampled_from([[], ["break"], ["continue"]]))
        return st.one_of(
            st.builds(lambda c, body, other: f"if {c}:\n{indent(body)}" + (f"\nelse:\n{indent(other)}" if other else ""),
                      exprs, block(children), st.one_of(st.just([]), block(children))),
            st.builds(lambda c, body: f"while {c}:\n{indent(body)}", exprs, loop_body),
            st.builds(lambda v, e, body: f"for {v} in {e}:\n{indent(body)}", st.sampled_from(PS_VARS), exprs, loop_body),
            st.builds(lambda p, body: f"with policy {p}:\n{indent(body)}", exprs, block(children)),
            st.builds(lambda k, ms, body: f"retry {k} backoff {ms}:\n{indent(body)}", st.integers(0, 3), st.integers(0, 20), block(children)),
            st.builds(lambda ms, body: f"timeout {ms}:\n{indent(body)}", st.integers(0, 300), block(children)),
        )

    statements = st.recursive(simple, compound, max_leaves=6)
    return st.lists(statements, max_size=5).map(lambda body: PS_PRELUDE + "".join(s + "\n" for s in body))
