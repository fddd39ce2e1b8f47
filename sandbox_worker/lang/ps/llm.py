"""PromptScript's LLM built-ins in the worker: thin proxies of the ``ps.llm`` op. The calls,
keys, budgets and answer checks live in the broker (runtime/promptscript/llm/); the worker
only shapes arguments, and runs run_agent's loop so that each plan goes through ``apply``
(the broker's ps.action: the same policy, approvals and budgets as the script's own)."""

from __future__ import annotations

import json

from sandbox_worker.client import ScriptFailure
from wire import protocol

from .classes import PSClient
from .errors import BudgetExceeded, PSError, TimeoutInterrupt
from .guards import to_json
from .values import render, type_name

CALL_OPTIONS = frozenset(protocol.PS_LLM_OPTIONS + protocol.PS_LLM_CALL_OPTIONS)
AGENT_OPTIONS = CALL_OPTIONS | frozenset(protocol.PS_AGENT_OPTIONS)
MAX_PROMPT_CHARS = 64 * 1024  # the broker's cap on a string argument of an op
FED_BACK = ("RuntimeError", "SandboxError", "LimitError")  # an action's own limit; a spent budget ends the run
MAX_FEEDBACK_CHARS = 8000
WRITES = ("WRITE_FILE", "PATCH_FILE")


def _options(what: str, opts, known: frozenset) -> dict:
    if opts is None:
        return {}
    if type(opts) is not dict:
        raise PSError(f"{what}: options must be an object, not {type_name(opts)}")
    unknown = [k for k in opts if k not in known]
    if unknown:
        raise PSError(f"{what}: unknown option '{str(unknown[0])[:40]}' (options: {', '.join(sorted(known))})")
    return dict(opts)


def _fits(what: str, prompt: str) -> None:
    if len(prompt) > MAX_PROMPT_CHARS:
        raise PSError(f"{what}(): the prompt has {len(prompt)} characters, more than {MAX_PROMPT_CHARS}; "
                      "give long texts through context_files, or shorten it")


def _prompt_args(what: str, args: tuple) -> tuple[str, dict]:
    if not 1 <= len(args) <= 2:
        raise PSError(f"{what}() takes a prompt and an optional options object ({len(args)} arguments given)")
    if type(args[0]) is not str:
        raise PSError(f"{what}() needs a prompt string, not {type_name(args[0])}")
    _fits(what, args[0])
    return args[0], _options(f"{what}()", args[1] if len(args) == 2 else None, CALL_OPTIONS)


class LLMBuiltins:
    def __init__(self, rt, apply) -> None:
        self.rt = rt
        self.apply = apply  # ScriptBuiltins.apply: every plan is applied the way the script's own are
        self.step = rt.step_hook()  # each run_agent iteration counts as one statement (--max-steps)

    def call(self, kind: str, prompt: str, opts: dict, state: dict | None = None):
        options = to_json(opts, f"{kind}()")
        try:
            reply = self.rt.action_call("ps.llm", kind=kind, prompt=prompt, opts=options, state=state or {})
        except (Exception, TimeoutInterrupt):  # the block's timeout too: its request was counted
            self.recount()  # a failed call was counted too (and a refused answer charged)
            raise
        if type(reply) is not dict:
            raise PSError(f"{kind}(): no answer")
        self._counters(reply)
        return reply.get("value")

    def _counters(self, reply: dict) -> None:
        if type(reply.get("llm_calls")) is int:
            self.rt.llm_calls = reply["llm_calls"]
        if type(reply.get("cost")) in (int, float):
            self.rt.cost = reply["cost"]

    def recount(self) -> None:
        """llm_calls and cost as the broker counts them now (ps.counters)."""
        try:
            reply = self.rt.call("ps.counters")
        except ScriptFailure:
            return  # a stopped run: the error being raised says why
        if type(reply) is dict:
            self._counters(reply)

    def stop_if_spent(self) -> None:
        """A LimitError of an apply is the run's spent budget if the broker says the run is
        stopped (ps.steps answers its budget error): then it ends the run, never fed back."""
        try:
            self.rt.call("ps.steps", count=self.rt.steps)
        except ScriptFailure as exc:
            if exc.kind == "LimitError":
                raise BudgetExceeded(exc.message) from None
            raise

    def LLMClient(self, *args):
        if len(args) != 1:
            raise PSError(f"LLMClient() takes one options object ({len(args)} arguments given)")
        config = _options("LLMClient()", args[0], frozenset(protocol.PS_LLM_OPTIONS))
        return PSClient(config, self.client_call)

    def client_call(self, client: PSClient, *args):
        prompt, opts = _prompt_args("LLMClient", args)
        return self.call("plan", prompt, {**client.config, **opts})

    def plan(self, *args):
        prompt, opts = _prompt_args("plan", args)
        return self.call("plan", prompt, opts)

    def do(self, *args):
        return self.apply(self.plan(*args))

    def judge(self, *args):
        prompt, opts = _prompt_args("judge", args)
        return self.call("judge", prompt, opts)

    def summarize(self, *args):
        prompt, opts = _prompt_args("summarize", args)
        if "memory_key" not in opts:
            raise PSError("summarize() needs {memory_key: ...}: the memory whose summary it rewrites")
        return self.call("summarize", prompt, opts)

    def decide(self, *args):
        if len(args) != 1 or type(args[0]) is not dict:
            raise PSError("decide() takes one object {question, schema, ...options}")
        opts = _options("decide()", args[0], CALL_OPTIONS | {"question", "schema"})
        question = opts.pop("question", None)
        if type(question) is not str:
            raise PSError("decide() needs question: a string")
        _fits("decide", question)
        if "schema" not in opts:
            raise PSError('decide() needs schema: an object of field types, e.g. {next: "string"}')
        return self.call("decide", question, opts)

    def run_agent(self, *args):
        if not 2 <= len(args) <= 3:
            raise PSError(f"run_agent() takes a client (or its options), a prompt and optional options "
                          f"({len(args)} arguments given)")
        who, prompt = args[0], args[1]
        if type(who) is PSClient:
            base = dict(who.config)
        elif type(who) is dict:
            base = _options("run_agent() inline client", who, frozenset(protocol.PS_LLM_OPTIONS))
        else:
            raise PSError(f"run_agent() needs an LLMClient or an options object, not {type_name(who)}")
        if type(prompt) is not str:
            raise PSError(f"run_agent() needs a prompt string, not {type_name(prompt)}")
        _fits("run_agent", prompt)
        opts = _options("run_agent()", args[2] if len(args) == 3 else None, AGENT_OPTIONS)
        agent = {k: opts.pop(k) for k in protocol.PS_AGENT_OPTIONS if k in opts}
        most = agent.get("max_iterations")
        if most is not None and (type(most) is not int or most < 1):
            raise PSError("run_agent(): max_iterations must be a whole number of at least 1 (or null: no limit)")
        for flag in ("stop_on_report", "require_write"):
            if type(agent.get(flag, False)) is not bool:
                raise PSError(f"run_agent(): {flag} must be true or false")
        return AgentLoop(self, prompt, {**base, **opts}, agent).run()


class AgentLoop:
    """LLM -> plan -> apply -> its result fed back, until REPORT done (stop_on_report), the
    iterations (max_iterations), or a budget, the policy or the loop detector stops it."""

    def __init__(self, llm: LLMBuiltins, prompt: str, opts: dict, agent: dict) -> None:
        self.llm, self.prompt, self.opts = llm, prompt, opts
        self.stop_on_report = agent.get("stop_on_report", True)
        self.require_write = agent.get("require_write", False)
        self.most = agent.get("max_iterations")
        self.history: list[str] = []
        self.wrote = False

    def run(self) -> dict:
        last, i, report = "", 0, None
        while self.most is None or i < self.most:
            self.llm.step()
            i += 1
            plan = self.llm.call("agent", self.prompt, self.opts, {"last_result": last, "iteration": i,
                                                                   "require_write": self.require_write, "wrote": self.wrote})
            action, args = plan["action"], plan["args"]
            warning = self.loop_warning(plan)
            if self.stop_on_report and self.require_write and self.finishing(plan) and not self.wrote:
                last = ("refused: require_write: write a file (WRITE_FILE or PATCH_FILE) before you finish"
                        + warning)
                continue
            try:
                value = self.llm.apply(plan)
            except BudgetExceeded:
                raise
            except ScriptFailure as exc:
                if exc.kind not in FED_BACK:
                    raise
                if exc.kind == "LimitError":
                    self.llm.stop_if_spent()
                last = f"error: {exc.message}"[:MAX_FEEDBACK_CHARS] + warning
                continue
            self.wrote = self.wrote or action in WRITES
            last = ("ok" + ("" if value is None else ": " + render(value)))[:MAX_FEEDBACK_CHARS] + warning
            if action == "REPORT":
                report = args.get("message")
                if self.stop_on_report and self.finishing(plan):
                    return {"done": True, "iterations": i, "report": report, "wrote": self.wrote}
        return {"done": False, "iterations": i, "report": report, "wrote": self.wrote}

    @staticmethod
    def finishing(plan: dict) -> bool:
        return plan["action"] == "REPORT" and (plan["done"] is True or plan["args"].get("done") is True)

    def loop_warning(self, plan: dict) -> str:
        self.history.append(plan["action"] + " " + json.dumps(plan["args"], sort_keys=True))
        del self.history[:-protocol.LOOP_REPEATS * protocol.LOOP_MAX_CYCLE]
        cycle = protocol.repeating_cycle(self.history)
        if not cycle:
            return ""
        what = (f"the same {cycle} actions" if cycle > 1 else f"{plan['action']} with the same arguments")
        message = f"loop detected in run_agent: {what} {protocol.LOOP_REPEATS} times in a row"
        if self.llm.rt.halt_on_loop:
            self.llm.rt.budget_spent(message + " (--halt-on-loop)")
        self.llm.rt.output(f"[ps] warning: {message}; the model is told to change course (--halt-on-loop stops instead)\n")
        self.history.clear()
        return f"\nwarning: {message}: do something else, or REPORT with done true if the task is complete"
