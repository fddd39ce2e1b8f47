"""The wire protocol between the broker (runtime/) and the worker (sandbox_worker/).

Defined once, imported by both sides. Stdlib only: the worker imports it before it is jailed.

Each message travels as one frame of wire/frames.py: a 4-byte big-endian length, then that many
bytes of UTF-8 JSON (never pickle or marshal: a hostile frame decodes to plain data only).

Messages (each a JSON object with a "t" field):

  broker -> worker   {"t": "start",                                  first frame, once
                      "limits": {"memory_bytes": int, "cpu_seconds": int},
                      "isolation": "best" | "strict",
                      "lang": one of LANGUAGES,                       to import before hardening; not
                                                                      for a worker started ahead
                      "layers": [str, ...]}                           optional, tests and audits only
                     {"t": "warm"}                                    before the code, any number: a
                                                                      run took the worker and compiles
                                                                      its script meanwhile (the worker
                                                                      compiles a fixed line, warming
                                                                      its compile path on its core)
                     {"t": "code", "code": str,                       second frame, once: the script
                      "lang": one of LANGUAGES,                       (a session's pool sends the start
                      "mode": "restricted" | "os"}                    ahead, the code when a run takes
                                                                      the worker); "os" only for tests
                                                                      and audits
                     {"t": "ok", "v": value}                          reply to a call
                     {"t": "err", "kind": str, "msg": str}            reply to a call
  worker -> broker   {"t": "ready", "layers": {layer: status}}        first frame only, once hardened
                     {"t": "call", "op": str, "a": {name: value}}     expects one reply
                     {"t": "out", "s": str}                           script output, no reply
                     {"t": "end", "ok": true}                         script finished
                     {"t": "end", "ok": false, "error": {...}}        script failed (see ERROR_FIELDS)
"""

from __future__ import annotations

from wire.frames import (  # noqa: F401  (the framing, defined there: imported from here too)
    HEADER,
    MAX_REPLY_BYTES,
    MAX_REPLY_VALUE_BYTES,
    MAX_REQUEST_BYTES,
    REPLY_ENVELOPE_BYTES,
    FrameBuffer,
    ProtocolError,
    decode,
    encode,
    read_exact,
    read_frame,
    write_all,
    write_frame,
)

# The script languages: the worker runs a script of language L with sandbox_worker/lang/L.
LANGUAGES = ("fdsl", "ps")

# Argument kinds used in the op table. The broker validates every call against it.
STR = "str"
INT = "int"
BOOL = "bool"
OPT_STR = "str|null"
PAGES = "pages"  # null, an int, or a list of ints
OBJECT = "object"  # a JSON object (a policy, event data, action arguments), checked by its handler
OBJECTS = "objects"  # a list of JSON objects: parallel() items, each {action, args}

# op name -> ordered {argument name: kind}. Every argument is required on the wire: defaults
# live in the script-facing objects, so the broker sees exactly what will be done.
OPS: dict[str, dict[str, str]] = {
    "ping": {},  # liveness, and the round-trip benchmark
    "dir.open": {"path": STR},
    "dir.files": {"path": STR, "recursive": BOOL, "offset": INT, "limit": INT},
    "dir.iter": {"path": STR, "recursive": BOOL, "offset": INT},
    "dir.search": {"path": STR, "pattern": STR, "scope": STR, "recursive": BOOL, "ignore_case": BOOL},
    "dir.list": {"path": STR, "offset": INT, "limit": INT},
    "dir.find": {"path": STR, "glob": STR},
    "dir.grep": {"path": STR, "pattern": STR, "glob": OPT_STR, "ignore_case": BOOL, "max_results": INT},
    "file.open": {"path": STR},
    "file.page_count": {"path": STR},
    "file.read": {"path": STR, "pages": PAGES},
    "file.search": {"path": STR, "pattern": STR, "ignore_case": BOOL},
    "file.contains": {"path": STR, "pattern": STR, "ignore_case": BOOL},
    "file.head": {"path": STR},
    "file.tail": {"path": STR},
    "file.snippets": {"path": STR, "pattern": STR, "max_results": INT, "context_chars": INT, "ignore_case": BOOL},
    "file.table": {"path": STR, "max_items": INT},
    "file.lines": {"path": STR, "offset": INT, "limit": INT},
    # The file toolset (runtime/services/toolset.py): only runs given toolset_handlers() serve these;
    # FilesDSL's handler table stays read-only.
    "fs.read": {"path": STR, "max_chars": INT, "offset": INT},
    "fs.write": {"path": STR, "content": STR},
    "fs.edit": {"path": STR, "old_text": STR, "new_text": STR},
    "fs.delete": {"path": STR},
    "fs.move": {"source": STR, "destination": STR},
    "fs.copy": {"source": STR, "destination": STR},
    "fs.list_files": {"path": STR, "pattern": STR},
    "fs.list_directory": {"path": STR},
    "fs.find_files": {"path": STR, "recursive": BOOL, "glob": STR},
    # PromptScript (runtime/promptscript/session.py serves these; policies, event data and action
    # arguments travel as objects, the arguments checked against PS_ACTION_ARGS).
    # -> {max_steps, max_time_ms, policy, files_changed}: the budgets the worker enforces
    # itself and the base policy (for the runtime variables)
    "ps.start": {},
    "ps.steps": {"count": INT},  # the step counter, reported every few thousand steps
    # apply(): -> {"value": any, "print": str|null, "files_changed": int}. deadline_ms: the time
    # left in the earliest pending `timeout` block (0: none); the broker stops there with a
    # TimeoutError, which the worker turns into that block's timeout.
    "ps.action": {"name": STR, "args": OBJECT, "deadline_ms": INT},
    "ps.parallel": {"items": OBJECTS, "max": INT, "fail_fast": BOOL, "deadline_ms": INT},  # -> [{ok, value} | {ok, error}]
    "ps.scope": {"change": STR, "policy": OBJECT, "line": INT},  # with policy: "enter" | "exit" ({} on exit)
    # a run-log event: retry, timeout, block_start, block_end, budget (a budget the worker
    # enforces ran out), end (data {steps}: the final step count; not logged itself)
    "ps.event": {"kind": STR, "line": INT, "data": OBJECT},
    # A language-model call (runtime/promptscript/llm/): kind is one of PS_LLM_KINDS, opts the
    # client's options with the call's over them (PS_LLM_OPTIONS, plus memory_key,
    # context_files, and decide's schema), state what run_agent feeds back ({last_result,
    # iteration}, else {}). -> {"value": plan | object | bool | str, "llm_calls": int, "cost": float}.
    # deadline_ms as for ps.action. The call runs in the broker; keys never leave it.
    "ps.llm": {"kind": STR, "prompt": STR, "opts": OBJECT, "state": OBJECT, "deadline_ms": INT},
    "ps.counters": {},  # -> {"llm_calls": int, "cost": float}: after a ps.llm that failed (it was counted)
}

# The actions a ps.action names (spec: "Acciones del LLM"), and those ps.parallel may run
# (the read-only ones).
PS_ACTIONS = ("READ_FILE", "WRITE_FILE", "PATCH_FILE", "SEARCH", "RUN_CMD", "ASK_USER", "REPORT")

# What a `with policy` object may say: key -> (type, what it must be). check_policy() is the
# one check of it; the worker runs it for an early, located message, the broker again.
PS_POLICY_KEYS: dict[str, tuple[str, str]] = {
    "allowActions": ("strs", "an array of action names"),
    "allowCommands": ("strs", "an array of command names"),
    "maxFileBytes": ("count", "a non-negative integer"),
    "maxFilesChanged": ("count", "a non-negative integer"),
    "allowRead": ("strs", "an array of project paths"),
    "allowWrite": ("strs", "an array of project paths"),
}
MAX_POLICY_ITEMS = 1000


def check_policy(policy, type_name=lambda value: type(value).__name__) -> dict:
    """A copy of a `with policy` object whose every key and value is as PS_POLICY_KEYS says;
    otherwise ValueError naming what is wrong (``type_name`` words a value's type)."""
    if type(policy) is not dict:
        raise ValueError(f"a policy must be an object, not {type_name(policy)}")
    out = {}
    for key, value in policy.items():
        if key not in PS_POLICY_KEYS:
            raise ValueError(f"unknown policy key '{str(key)[:40]}' (known: {', '.join(PS_POLICY_KEYS)})")
        kind, what = PS_POLICY_KEYS[key]
        if kind == "count":
            if type(value) is not int or value < 0:
                raise ValueError(f"policy {key} must be {what}")
            out[key] = value
            continue
        if type(value) is not list or any(type(v) is not str for v in value):
            raise ValueError(f"policy {key} must be {what}")
        if len(value) > MAX_POLICY_ITEMS:
            raise ValueError(f"policy {key} has {len(value)} items (at most {MAX_POLICY_ITEMS})")
        if key == "allowActions":
            unknown = [name for name in value if name not in PS_ACTIONS]
            if unknown:
                raise ValueError(f"policy allowActions: unknown action '{unknown[0][:40]}' (actions: {', '.join(PS_ACTIONS)})")
        out[key] = list(value)
    return out


# The options of LLMClient(config) and of each LLM call (spec: LLMClient), and the kinds of call.
PS_LLM_OPTIONS = ("provider", "apiKey", "model", "baseUrl", "temperature", "maxTokens", "maxRetries",
                  "retryDelayMs", "timeoutMs", "no_ask", "mock_plan", "system", "context")
PS_LLM_CALL_OPTIONS = ("memory_key", "context_files")  # any call; the broker handles them
PS_AGENT_OPTIONS = ("stop_on_report", "require_write", "max_iterations")  # run_agent's, kept in the worker
PS_LLM_KINDS = ("plan", "agent", "decide", "judge", "summarize")
PS_PLAN_KEYS = ("action", "args", "done", "confidence", "reason")

PS_PARALLEL_ACTIONS = ("READ_FILE", "SEARCH")  # parallel() runs the read-only actions only
PS_PARALLEL_OPTIONS = {"max": 4, "fail_fast": True}  # option -> default
PS_MAX_PARALLEL = 16  # most actions at once
PS_MAX_PARALLEL_ITEMS = 1000


def check_parallel(items, options, type_name=lambda value: type(value).__name__,
                   shown=lambda value: repr(value)[:40]) -> tuple[list, int, bool]:
    """parallel()'s items and options as (items, max, fail_fast) when every item is an object
    {action, args} naming a read-only action and the options are as PS_PARALLEL_OPTIONS says;
    otherwise ValueError naming what is wrong (``type_name`` words a value's type, ``shown``
    a value). The worker runs it for an early, located message; the broker again."""
    if type(items) is not list:
        raise ValueError(f"parallel() needs an array of {{action, args}} items, not {type_name(items)}")
    if len(items) > PS_MAX_PARALLEL_ITEMS:
        raise ValueError(f"parallel() takes at most {PS_MAX_PARALLEL_ITEMS} items, not {len(items)}")
    for i, item in enumerate(items, 1):
        if type(item) is not dict or set(item) != {"action", "args"}:
            raise ValueError(f"parallel item {i} must be an object {{action, args}}")
        if item["action"] not in PS_PARALLEL_ACTIONS:
            raise ValueError(f"parallel item {i}: parallel() runs only the read-only actions "
                             f"{', '.join(PS_PARALLEL_ACTIONS)}, not {shown(item['action'])}")
        if type(item["args"]) is not dict:
            raise ValueError(f"parallel item {i}: args must be an object, not {type_name(item['args'])}")
    options = {} if options is None else options
    if type(options) is not dict:
        raise ValueError(f"parallel() options must be an object {{max, fail_fast}}, not {type_name(options)}")
    unknown = [k for k in options if k not in PS_PARALLEL_OPTIONS]
    if unknown:
        raise ValueError(f"parallel(): unknown option '{str(unknown[0])[:40]}' (options: {', '.join(PS_PARALLEL_OPTIONS)})")
    most = options.get("max", PS_PARALLEL_OPTIONS["max"])
    fail_fast = options.get("fail_fast", PS_PARALLEL_OPTIONS["fail_fast"])
    if type(most) is not int or not 1 <= most <= PS_MAX_PARALLEL:
        raise ValueError(f"parallel(): max must be a whole number from 1 to {PS_MAX_PARALLEL}")
    if type(fail_fast) is not bool:
        raise ValueError("parallel(): fail_fast must be true or false")
    return items, most, fail_fast


# Each action's arguments: name -> (type, required, what the script must give). Types: "str",
# "int", "bool", "strs" (an array of strings), "list" (an array, its items checked by the
# action). Checked in the broker, after the budgets and the policy, by
# runtime/promptscript/arguments.py; a name not listed is refused.
PS_MAX_SEARCH_RESULTS = 10_000
PS_MAX_CMD_TIMEOUT_MS = 600_000
PATH_ARG = ("str", True, "a project-relative path")
PS_ACTION_ARGS: dict[str, dict[str, tuple[str, bool, str]]] = {
    "READ_FILE": {"path": PATH_ARG, "maxBytes": ("int", False, "a non-negative integer")},
    "WRITE_FILE": {"path": PATH_ARG, "content": ("str", True, "a string"),
                   "mode": ("str", False, '"overwrite" or "create_only"')},
    "PATCH_FILE": {"path": PATH_ARG, "patch": ("str", False, "a string (REPLACE:\\n<content>, or a unified diff)"),
                   "edits": ("list", False, "an array of {old, new} objects"), "old": ("str", False, "a string"),
                   "new": ("str", False, "a string")},
    "SEARCH": {"query": ("str", False, "a string"), "globs": ("strs", False, "an array of strings"),
               "maxResults": ("int", False, f"an integer from 1 to {PS_MAX_SEARCH_RESULTS}")},
    "RUN_CMD": {"cmd": ("str", True, "a program name"), "args": ("strs", False, "an array of strings"),
                "timeoutMs": ("int", False, f"an integer from 1 to {PS_MAX_CMD_TIMEOUT_MS}")},
    "ASK_USER": {"question": ("str", True, "a string"), "choices": ("strs", False, "an array of strings")},
    "REPORT": {"message": ("str", True, "a string"), "filesChanged": ("strs", False, "an array of strings"),
               "nextSuggestions": ("strs", False, "an array of strings"), "done": ("bool", False, "true or false")},
}

# Loop detection (--halt-on-loop in the broker, run_agent's warning in the worker): the same
# action with the same args, or the same short cycle of them (A,B,A,B,A,B), this many times.
LOOP_REPEATS = 3
LOOP_MAX_CYCLE = 4


def repeating_cycle(history: list) -> int:
    """The length (1..LOOP_MAX_CYCLE) of a block of calls that ends ``history`` and repeats
    LOOP_REPEATS times in a row (A,A,A or A,B,A,B,A,B), or 0."""
    for period in range(1, LOOP_MAX_CYCLE + 1):
        span = period * LOOP_REPEATS
        if len(history) < span:
            break
        tail = history[-span:]
        if all(tail[i] == tail[i - period] for i in range(period, span)):
            return period
    return 0


# Ops of PromptScript runs (never in a FilesDSL run's handler table).
PS_OPS = frozenset(op for op in OPS if op.startswith("ps."))

# Ops of the file toolset (never in a FilesDSL run's handler table).
TOOLSET_OPS = frozenset(op for op in OPS if op.startswith("fs."))

# Fields of a failed "end" message's "error" object.
ERROR_FIELDS = ("kind", "msg", "line", "col")

# Error kinds a reply or an end message may carry.
ERROR_KINDS = frozenset(
    {
        "RuntimeError",  # a script error: bad argument, missing file, invalid regex, out of range...
        "SandboxError",  # a path or operation refused by the sandbox policy
        "LimitError",  # a resource limit: memory, output, recursion, sizes
        "TimeoutError",  # the run's deadline passed
        "InternalError",  # a bug on our side; never the script's fault
    }
)
