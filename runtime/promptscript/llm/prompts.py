"""The messages of an LLM call: a system prompt that lists only the actions the policy in force
allows (and never ASK_USER under no_ask), then one user message holding the task, the memory
block (memory_key), the context files and, in run_agent, the last result."""

from __future__ import annotations

import json

from wire.protocol import PS_ACTION_ARGS

MAX_CONTEXT_FILE_CHARS = 20_000
MAX_LAST_RESULT_CHARS = 8_000

PLAN_FORMAT = ('Answer with exactly one JSON object and nothing else: '
               '{"action": "<ACTION>", "args": {...}, "done": <true|false>, "confidence": <0-1>, "reason": "<2-3 words>"}. '
               '"done" is true when the task is complete. Paths are relative to the project.')


def allowed_actions(policy: dict, no_ask: bool) -> list[str]:
    return [a for a in policy.get("allowActions", ()) if not (no_ask and a == "ASK_USER")]


def describe_actions(actions: list[str], commands: list[str]) -> str:
    lines = []
    for name in actions:
        args = ", ".join(f"{arg}{'' if required else '?'}: {what}"
                         for arg, (_kind, required, what) in PS_ACTION_ARGS[name].items())
        line = f"- {name} {{{args}}}"
        if name == "RUN_CMD":
            line += f" (commands allowed: {', '.join(commands) or 'none'})"
        lines.append(line)
    return "\n".join(lines)


def system_prompt(kind: str, actions: list[str], commands: list[str], schema: dict | None, extra: str | None) -> str:
    if kind in ("plan", "agent"):
        text = ("You are an agent working on a software project through actions. Choose the next single action.\n"
                f"Actions allowed (no others):\n{describe_actions(actions, commands)}\n{PLAN_FORMAT}")
        if kind == "agent":
            text += " When the task is complete, use REPORT with done true."
    elif kind == "decide":
        text = ("Answer the question with exactly one JSON object and nothing else, with these fields: "
                + json.dumps(schema, ensure_ascii=False) + ".")
    elif kind == "judge":
        text = 'Answer the question with exactly one JSON object and nothing else: {"answer": true} or {"answer": false}.'
    else:
        text = ('Rewrite the memory summary as the instruction says: at most 1500 characters and 4000 bytes of UTF-8, bullets. '
                'Answer with exactly one JSON object and nothing else: {"summary": "<the new summary>"}.')
    return text + (f"\n\n{extra}" if extra else "")


def user_message(prompt: str, *, memory: dict | None, files: list[tuple[str, str]], context: str | None,
                 state: dict) -> str:
    parts = [prompt]
    if memory is not None:
        parts.append("Memory (" + memory["key"] + "):\n" + json.dumps(
            {k: memory[k] for k in ("objective", "summary", "filesTouched", "recentDiffSummary", "openIssues")},
            ensure_ascii=False, indent=1))
    for path, text in files:
        if len(text) > MAX_CONTEXT_FILE_CHARS:  # the model is told it sees a part only
            parts.append(f"File {path} (its first {MAX_CONTEXT_FILE_CHARS:,} characters of {len(text):,}; "
                         f"the rest is not shown):\n{text[:MAX_CONTEXT_FILE_CHARS]}")
        else:
            parts.append(f"File {path}:\n{text}")
    if context:
        parts.append("Context:\n" + context)
    if "last_result" in state:
        last = str(state["last_result"])[:MAX_LAST_RESULT_CHARS]
        parts.append(f"Step {state.get('iteration', 1)}. Result of your last action:\n{last or '(none yet)'}")
    return "\n\n".join(parts)


def retry_message(error: str) -> str:
    return f"Your answer was not valid: {error}. Answer again with one valid JSON object only."
