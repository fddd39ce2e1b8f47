"""The ``ps.llm`` op: one LLM call of a script (plan, a run_agent step, decide, judge,
summarize), served in the broker.

Each decision:
  * Deny when a budget is spent: --max-llm-calls (each request sent counts, retries too) and
    --max-cost (USD from the reply's token usage and genai-prices; an unknown model at
    providers.FALLBACK_PRICE). Either ends the run with a LimitError naming the budget.
  * Every request obeys the run's deadline and the enclosing `timeout` block (deadline_ms, as
    for ps.action), and the call's timeoutMs; HTTP 429/5xx, timeouts and lost connections are
    retried maxRetries times (default 2), retryDelayMs apart (default 1000).
  * An answer is checked (schema.py): a plan must name an action the policy in force allows
    (never ASK_USER under no_ask). A bad answer is sent back with what was wrong, maxRetries
    times, then the call fails with a script error at the calling line.
  * ``mock_plan`` (or provider mock) answers without any network: the same checks run on it.
  * Every text leaving this layer (errors, the run log) has the run's keys redacted.
"""

from __future__ import annotations

import json
import time

from runtime.errors import DeadlineExceeded, LimitError, ScriptError
from runtime.promptscript.deadline import BlockDeadline
from runtime.promptscript.llm import prompts
from runtime.promptscript.llm.config import DEFAULT_MAX_TOKENS, CLIDefaults, LLMError, Resolved, Secrets, resolve
from runtime.promptscript.llm.replay import MAX_TOKENS, Recorder
from runtime.promptscript.llm.schema import (
    BadAnswer,
    check_decision,
    check_plan,
    check_schema,
    check_summary,
    check_verdict,
    parse_json,
)
from runtime.promptscript.policy import ActionError
from wire.protocol import PS_LLM_CALL_OPTIONS, PS_LLM_KINDS

DEFAULT_TIMEOUT_MS = 120_000
DEFAULT_RETRIES = 2
DEFAULT_RETRY_DELAY_MS = 1000
MAX_LOGGED_TEXT = 2000
MOCK_FILE = "mock-agent-output.md"


class LLMLayer:
    def __init__(self, session, cli: CLIDefaults | None = None, environ=None) -> None:
        self.session = session
        self.cli = cli or CLIDefaults()
        self.environ = environ
        self.secrets = Secrets()
        self.calls = 0
        self.cost = 0.0
        self.tokens = [0, 0]
        self.providers = None  # providers.Providers, made by the first call that reaches one
        self.mock_turns: dict[str, int] = {}
        self.memory = None  # memory.Memories, made by the first call naming a memory_key
        self.current: tuple = ("plan", None, "", {})
        self.replay = None if session.options.replay is None else list(session.options.replay)
        self.recorder = Recorder(session.log if session.options.record_llm else None)

    def totals(self) -> dict:
        """The run log's `end` fields (none for a run without LLM calls)."""
        if not self.calls:
            return {}
        return {"llm_calls": self.calls, "tokens_in": self.tokens[0], "tokens_out": self.tokens[1],
                "cost": round(self.cost, 6)}

    def noted(self, action: str, values: dict, ok: bool, error: str | None = None) -> None:
        """An action done: into the active memory (memory.py), if a call named one."""
        if self.memory is not None:
            try:
                self.memory.note(action, values, ok, error)
            except LLMError as exc:  # the action is done: a memory that cannot be updated is only logged
                self.session.event("memory_error", action=action, error=str(exc)[:500])

    def counters(self) -> dict:
        return {"llm_calls": self.calls, "cost": round(self.cost, 6)}

    def op_llm(self, kind: str, prompt: str, opts: dict, state: dict, deadline_ms: int = 0):
        s = self.session
        s.check_budgets()
        if kind not in PS_LLM_KINDS:
            raise ActionError(f"unknown LLM call kind {kind[:40]!r}")
        s._block_deadline(deadline_ms)
        try:
            value = self.answer(kind, prompt, dict(opts), state)
        except ScriptError as exc:
            if isinstance(exc, LLMError):
                raise LLMError(self.secrets.redact(str(exc))) from None
            raise
        finally:
            s.deadline.block_at = None
        return {"value": value, **self.counters()}

    def answer(self, kind: str, prompt: str, opts: dict, state: dict):
        extra = {k: opts.pop(k) for k in (*PS_LLM_CALL_OPTIONS, "schema") if k in opts}
        schema = None
        if kind == "decide":
            try:
                schema = check_schema(extra.get("schema"))
            except ValueError as exc:
                raise LLMError(str(exc)) from None
        elif "schema" in extra:
            raise LLMError("schema is an option of decide() only")
        self.current = (kind, schema, prompt, state)  # what provider mock answers without mock_plan
        mock = "mock_plan" in opts
        cfg = resolve({**opts, "provider": "mock"} if mock else opts, CLIDefaults() if mock else self.cli,
                      self.secrets, self.environ, need_key=self.replay is None)
        memory = self.memory_for(extra.get("memory_key"), kind, prompt, state)
        files = self.context_files(extra.get("context_files"))
        policy = self.session.policies.current
        allowed = prompts.allowed_actions(policy, cfg.get("no_ask", False))
        messages = [("system", prompts.system_prompt(kind, allowed, list(policy.get("allowCommands", ())), schema,
                                                     cfg.get("system"))),
                    ("user", prompts.user_message(prompt, memory=memory, files=files, context=cfg.get("context"),
                                                  state=state if kind == "agent" else {}))]
        value = self.ask(kind, cfg, messages, lambda text: self.check(kind, text, allowed, cfg, schema))
        value = self.redacted(value)  # a server may echo the key back: it never reaches the worker or a memory
        if kind == "summarize" and memory is not None:
            value = self.memory.set_summary(memory["key"], value)
        return value

    def redacted(self, value):
        """``value`` with the run's keys blanked out of every string in it (keys included)."""
        if type(value) is str:
            return self.secrets.redact(value)
        if type(value) is dict:
            return {self.redacted(k): self.redacted(v) for k, v in value.items()}
        if type(value) is list:
            return [self.redacted(v) for v in value]
        return value

    def check(self, kind: str, text: str, allowed: list, cfg: Resolved, schema):
        value = parse_json(text)
        if kind in ("plan", "agent"):
            return check_plan(value, allowed, cfg.get("no_ask", False))
        if kind == "decide":
            return check_decision(value, schema)
        if kind == "judge":
            return check_verdict(value)
        return check_summary(value)

    def ask(self, kind: str, cfg: Resolved, messages: list, check):
        """Request, check, and on a bad answer ask again with what was wrong (maxRetries times)."""
        retries = cfg.get("maxRetries", DEFAULT_RETRIES)
        for attempt in range(retries + 1):
            text = self.request(kind, cfg, messages)
            try:
                return check(text)
            except BadAnswer as exc:
                problem = self.secrets.redact(str(exc))
                self.session.event("llm_invalid", kind=kind, attempt=attempt + 1, error=problem[:500])
                messages = [*messages, ("assistant", _text_only(text[:prompts.MAX_LAST_RESULT_CHARS])),
                            ("user", prompts.retry_message(problem))]
        raise LLMError(f"{kind}: the model ({cfg.provider} {cfg.model}) gave no valid answer in {retries + 1} "
                       f"attempt{'s' if retries else ''}: {problem} (raise maxRetries, or change the prompt or the model)")

    def request(self, kind: str, cfg: Resolved, messages: list) -> str:
        """One answer's text, HTTP errors and timeouts retried; counts calls, tokens and cost."""
        retries = cfg.get("maxRetries", DEFAULT_RETRIES)
        for attempt in range(retries + 1):
            self.admit(cfg)
            started = time.monotonic()
            try:
                reply = self.send(cfg, messages)
            except (BlockDeadline, DeadlineExceeded, LimitError) as stopped:  # a deadline met waiting for it
                if cfg.provider != "mock":  # replayed as the same stop (replayed())
                    self.recorder.record({"ok": False, "what": str(stopped), "stopped": type(stopped).__name__})
                self.log_call(kind, cfg, messages, started, ok=False, error=str(stopped))
                raise
            except _Failed as failed:
                if cfg.provider != "mock":
                    self.recorder.record({"ok": False, "what": failed.what, "retryable": failed.retryable,
                                          "billed": failed.billed})
                if failed.billed:  # an answer came and was refused (too large, unreadable): it was billed
                    self.account(kind, cfg, messages, None, started, billed=failed.billed, error=failed.what)
                else:
                    self.log_call(kind, cfg, messages, started, ok=False, error=failed.what)
                if not failed.retryable or attempt == retries:
                    raise LLMError(f"{kind}: the LLM call to {cfg.provider} ({cfg.model}) failed: {failed.what}"
                                   + (f" after {attempt + 1} attempts" if attempt else "")) from None
                self.pause(cfg.get("retryDelayMs", DEFAULT_RETRY_DELAY_MS))
                continue
            if cfg.provider != "mock":
                self.recorder.record({"ok": True, "text": self.secrets.redact(reply.text), "tokens_in": reply.input_tokens,
                                      "tokens_out": reply.output_tokens, "model": reply.model})
            self.account(kind, cfg, messages, reply, started)
            return reply.text
        raise AssertionError("unreachable")

    def admit(self, cfg: Resolved) -> None:
        s, o = self.session, self.session.options
        s.check_budgets()
        if o.max_llm_calls and self.calls >= o.max_llm_calls:
            s.stop(f"budget exceeded: --max-llm-calls {o.max_llm_calls} (LLM call {self.calls + 1} refused)")
        if o.max_cost and self.cost >= o.max_cost:
            s.stop(f"budget exceeded: --max-cost ${o.max_cost:g} (${self.cost:.4f} spent in {self.calls} LLM calls)")
        s.deadline.check(f"LLM call to {cfg.provider}")
        self.calls += 1

    def send(self, cfg: Resolved, messages: list):
        if cfg.provider == "mock":
            return self.mock_reply(cfg, messages)
        if self.replay is not None:
            return self.replayed()
        if self.providers is None:
            from runtime.promptscript.llm.providers import Providers

            self.providers = Providers()
        from runtime.promptscript.llm.providers import classify

        limit = cfg.get("timeoutMs", DEFAULT_TIMEOUT_MS) / 1000
        left = self.session.deadline.left()
        answered = self.providers.answered[0]
        try:
            return self.providers.call(cfg, messages, limit if left is None else max(min(limit, left), 0.001))
        except TimeoutError:  # asyncio's too, since Python 3.11 (asyncio stays unloaded until a provider call)
            self.session.deadline.check(f"LLM call to {cfg.provider}")  # the run's or the block's deadline
            raise _Failed(f"no answer within timeoutMs {int(limit * 1000)} ms", True) from None
        except ScriptError:
            raise
        except Exception as exc:  # noqa: BLE001 - a provider's failure, worded by classify()
            raise _Failed(*classify(exc), billed=self.providers.answered[0] - answered) from None

    def replayed(self):
        """The next recorded answer (fdsl replay): no provider is reached."""
        from types import SimpleNamespace

        if not self.replay:
            raise LLMError(f"replay: the script asks for more LLM answers than the run recorded ({self.calls - 1})")
        entry = self.replay.pop(0)
        if type(entry) is not dict:
            raise LLMError("replay: a recorded answer is damaged")
        if entry.get("ok") is not True:
            what = str(entry.get("what", "a recorded failure"))
            stopped = entry.get("stopped")
            if stopped == "BlockDeadline":
                raise BlockDeadline(what)
            if stopped == "DeadlineExceeded":
                raise DeadlineExceeded(what)
            if stopped == "LimitError":
                self.session.stop(what)
            billed = entry.get("billed")
            raise _Failed(what, entry.get("retryable") is True,
                          billed=billed if type(billed) is int and 0 < billed <= MAX_TOKENS else 0)
        return SimpleNamespace(text=str(entry.get("text", "")), input_tokens=int(entry.get("tokens_in") or 0),
                               output_tokens=int(entry.get("tokens_out") or 0), model=str(entry.get("model", "")))

    def pause(self, ms: int) -> None:
        if self.replay is not None:
            return  # a replay does not wait between attempts
        left = self.session.deadline.left()
        if left is not None and left <= ms / 1000:
            time.sleep(max(left, 0))
            self.session.deadline.check("waiting to retry an LLM call")
        time.sleep(ms / 1000)

    def mock_reply(self, cfg: Resolved, messages: list):
        from types import SimpleNamespace

        given = cfg.options.get("mock_plan")
        if isinstance(given, list) and given:  # one answer per call, in order, the last repeated
            turn_key = json.dumps(given, sort_keys=True)
            turn = self.mock_turns.get(turn_key, 0)
            self.mock_turns[turn_key] = turn + 1
            given = given[min(turn, len(given) - 1)]
        if "mock_plan" not in cfg.options:
            given = _mock_default(*self.current)
        text = given if isinstance(given, str) else json.dumps(given)
        tokens_in = sum(len(t) for _, t in messages) // 4
        return SimpleNamespace(text=text, input_tokens=tokens_in, output_tokens=len(text) // 4, model="mock")

    def account(self, kind: str, cfg: Resolved, messages: list, reply, started: float, billed: int = 0,
                error: str | None = None) -> None:
        """Count a call's tokens and cost, and log it: a reply's, or (``reply`` None) an answer of
        ``billed`` bytes that came and was refused, whose usage is unknown and so estimated."""
        usd, known = 0.0, True
        tokens_in, tokens_out = (reply.input_tokens, reply.output_tokens) if reply is not None else (0, 0)
        if cfg.provider != "mock":  # providers.py (httpx, genai-prices) stays unloaded for mock runs
            from runtime.promptscript.llm.providers import fallback_price, price

            if tokens_in > 0 and tokens_out > 0:
                usd, known = price(cfg.provider, cfg.model, tokens_in, tokens_out)
            else:  # usage absent, zero or negative: estimated (4 characters a token), at the fallback price
                tokens_in = tokens_in if tokens_in > 0 else max(1, sum(len(t) for _, t in messages) // 4)
                if reply is None:  # a refused answer: no more than maxTokens were made, whatever came
                    tokens_out = max(1, min(billed // 4, cfg.get("maxTokens", DEFAULT_MAX_TOKENS)))
                tokens_out = tokens_out if tokens_out > 0 else max(1, len(reply.text) // 4)
                usd, known = fallback_price(tokens_in, tokens_out), False
        self.cost += usd
        self.tokens[0] += tokens_in
        self.tokens[1] += tokens_out
        outcome = {"ok": True, "response": reply.text} if reply is not None else {"ok": False, "error": error}
        self.log_call(kind, cfg, messages, started, **outcome, tokens_in=tokens_in, tokens_out=tokens_out,
                      cost=round(usd, 6), priced=known)
        o = self.session.options
        if o.max_cost and self.cost > o.max_cost:
            self.session.stop(f"budget exceeded: --max-cost ${o.max_cost:g} (${self.cost:.4f} spent in {self.calls} LLM calls)")

    def log_call(self, kind: str, cfg: Resolved, messages: list, started: float, **fields) -> None:
        shown = {k: self.secrets.redact(v)[:MAX_LOGGED_TEXT] if isinstance(v, str) else v for k, v in fields.items()}
        prompt = self.secrets.redact(messages[-1][1])[:MAX_LOGGED_TEXT]
        ms = round((time.monotonic() - started) * 1000, 1)
        self.session.event("llm_call", kind=kind, provider=cfg.provider, model=cfg.model, call=self.calls,
                           latency_ms=ms, prompt=prompt, **shown)
        if self.session.options.verbose:
            outcome = (f"ok ({fields.get('tokens_in')}+{fields.get('tokens_out')} tokens, ${fields.get('cost')})"
                       if fields.get("ok") else f"error: {shown.get('error')}")
            print(f"[ps] llm #{self.calls} {kind} {cfg.provider} {cfg.model} -> {outcome} ({ms} ms)",
                  file=self.session.stderr)

    # -- memory and context files --

    def memory_for(self, key, kind: str, prompt: str, state: dict):
        if key is None:
            if kind == "summarize":
                raise LLMError("summarize() needs memory_key: the memory whose summary it rewrites")
            return None
        if self.memory is None:
            from runtime.promptscript.llm.memory import Memories

            self.memory = Memories(self.session)
        objective = prompt if kind == "agent" and state.get("iteration") == 1 else None
        return self.memory.load(key, objective)

    def context_files(self, paths) -> list[tuple[str, str]]:
        if paths is None:
            return []
        if type(paths) is not list or any(type(p) is not str for p in paths) or len(paths) > 20:
            raise LLMError("context_files must be an array of at most 20 project paths")
        s = self.session
        out = []
        for path in paths:  # a READ_FILE: the policy in force, --max-tool-calls, the run log
            values = {"path": path}
            s.admit("READ_FILE", values)
            try:
                value, _ = s.dispatch("READ_FILE", values, s.policies.current)
            except ScriptError as exc:
                s.log_action("READ_FILE", values, False, error=str(exc))
                raise
            s.log_action("READ_FILE", values, True, value=value, context_file=True)
            out.append((path, value if isinstance(value, str) else json.dumps(value)))
        return out

    def close(self) -> None:
        self.recorder.close()
        self.redact_script()
        if self.providers is not None:
            self.providers.close()


    def redact_script(self) -> None:
        """A key written in the script itself (apiKey: "sk-...") is blanked out of its copy kept for replay."""
        from runtime.promptscript.llm.replay import SCRIPT, rewrite

        log = self.session.log
        if log is not None and self.secrets.keys:
            rewrite(log.dir / SCRIPT, self.secrets.redact)


class _Failed(Exception):
    """A call that got no usable answer; ``billed``: the bytes of an answer that came and was
    refused (the provider bills it)."""

    def __init__(self, what: str, retryable: bool, billed: int = 0) -> None:
        super().__init__(what)
        self.what, self.retryable, self.billed = what, retryable, billed


def _text_only(text: str) -> str:
    """``text`` with each lone surrogate (a hostile answer's) as U+FFFD, so it can be sent back."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _mock_default(kind: str, schema: dict | None, prompt: str, state: dict):
    """provider mock without mock_plan: a fixed, valid answer of each kind. An agent that must
    write (require_write) and has not yet writes MOCK_FILE, so that scripts run offline whole."""
    if kind == "agent" and state.get("require_write") is True and state.get("wrote") is not True:
        return {"action": "WRITE_FILE", "args": {"path": MOCK_FILE, "content": f"mock agent: {prompt[:500]}\n"},
                "done": False, "reason": "mock write"}
    if kind in ("plan", "agent"):
        return {"action": "REPORT", "args": {"message": "mock: done", "done": True}, "done": True, "reason": "mock"}
    if kind == "judge":
        return {"answer": True}
    if kind == "summarize":
        return {"summary": "mock summary"}
    empty = {"string": "", "number": 0, "boolean": False, "array": [], "object": {}}
    return {field: empty[type_] for field, type_ in (schema or {}).items()}
