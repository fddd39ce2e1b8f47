"""The actions that talk to the person running the script rather than to files: REPORT
prints a report (and keeps it for the run's result), ASK_USER asks on the terminal, within the
run's time and the worker's pending ``timeout`` block."""

from __future__ import annotations

import os

from runtime.promptscript.policy import ActionError
from runtime.terminal import printable

MAX_ANSWER_CHARS = 4096


def report(session, args: dict, policy: dict):
    session.reports.append(args)
    lines = [f"[ps] REPORT: {args['message']}"]
    if args.get("filesChanged"):
        lines.append("  files changed: " + ", ".join(args["filesChanged"]))
    if args.get("nextSuggestions"):
        lines.append("  next: " + "; ".join(args["nextSuggestions"]))
    return None, "\n".join(lines) + "\n"


def ask_user(session, args: dict, policy: dict):
    question = args["question"]
    choices = args.get("choices", [])
    try:
        tty = session.stdin is not None and os.isatty(session.stdin.fileno())
    except (AttributeError, OSError, ValueError):
        tty = False
    if not tty:
        raise ActionError("ASK_USER needs a terminal, and none is attached (stdin is not a terminal)")
    print(f"[ps] ASK_USER: {printable(question)}", file=session.stderr)
    for i, choice in enumerate(choices, 1):
        print(f"  {i}. {printable(choice)}", file=session.stderr)
    print("> ", end="", file=session.stderr, flush=True)
    left = session.deadline.left()
    if left is not None:  # the wait for an answer obeys --max-time and the timeout block
        import select

        try:
            ready = select.select([session.stdin], [], [], max(left, 0))[0]
        except (OSError, ValueError, TypeError):
            ready = [session.stdin]
        if not ready:
            print(file=session.stderr)
            raise session.deadline.expired("no answer to ASK_USER in time")
    answer = session.stdin.readline()
    if not answer:
        raise ActionError("ASK_USER: no answer (end of input)")
    answer = answer.rstrip("\n")[:MAX_ANSWER_CHARS]
    if choices and answer.strip().isdigit() and 1 <= int(answer.strip()) <= len(choices):
        answer = choices[int(answer.strip()) - 1]
    return answer, None
