"""The script-facing API of PromptScript, as data (layer 1; the worker mirrors it).

Member access (``obj.key``) is not listed here: it reads keys of objects and fields or methods
of class instances, and the worker's guard refuses it on every other type.
"""

from __future__ import annotations

# Functions a script may call by bare name. The worker supplies each as a global.
BUILTINS: frozenset[str] = frozenset({"log", "len", "range", "apply", "parallel", "LLMClient", "run_agent", "plan",
                                      "do", "decide", "judge", "summarize"})

# The LLM built-ins: a script may rebind these names (the spec's own `plan = plan("...")`);
# the others cannot be redefined.
REBINDABLE: frozenset[str] = frozenset({"LLMClient", "run_agent", "plan", "do", "decide", "judge", "summarize"})

# Read-only variables the runtime keeps up to date (spec: "Guards con variables del runtime").
# Reading one gives its current value; assigning or modifying one is a compile-time error.
RUNTIME_VARS: frozenset[str] = frozenset(
    {"allowed_actions", "allowed_commands", "files_changed", "max_files_changed", "last_search",
     "max_llm_calls", "llm_calls", "max_cost", "cost"}
)

# Names the generated code uses; the worker supplies them; a script can never name them
# (every name starting with "ps_" is refused by the parser).
RUNTIME_HELPERS: frozenset[str] = frozenset({
    "ps_main", "ps_step", "ps_add", "ps_sub", "ps_mul", "ps_div", "ps_mod", "ps_neg", "ps_eq",
    "ps_ne", "ps_lt", "ps_le", "ps_gt", "ps_ge", "ps_in", "ps_not_in", "ps_guard", "ps_policy",
    "ps_retry", "ps_timeout", "ps_make_class", "ps_var", "ps_range_iter",
    "ps_run", "ps_check", "ps_type", "ps_int",
})
