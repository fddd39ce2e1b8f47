"""The LLM built-ins end to end (real worker, broker in this process): the mock provider and
mock_plan offline, the fake provider on loopback (OpenAI and Anthropic formats), answer
checks, HTTP errors, timeouts, keys."""

from __future__ import annotations

import json

import pytest

from runtime.api import run_script
from tests.support.fake_llm import DONE, ECHO_KEY, Fail, Raw, Slow

KEY = "sk-test-0123456789abcdef-SECRET"


def ps(source: str, project, **options):
    options.setdefault("max_steps", 0)
    return run_script(source, lang="ps", options={"project": project, **options}, timeout=60)


def events(project) -> list[dict]:
    (run,) = [d for d in (project / ".ps-runs").iterdir() if d.name != "memory"]
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def custom(fake, **more) -> str:
    opts = {"provider": "custom", "baseUrl": fake.url, "model": "gpt-4o-mini", **more}
    return json.dumps(opts)


def test_every_builtin_offline_with_mock(tmp_path):
    (tmp_path / "in.txt").write_text("hello")
    result = ps('''
c = LLMClient({ provider: "mock", no_ask: true })
log(c("anything").action)
p = plan("x", { mock_plan: { action: "READ_FILE", args: { path: "in.txt" }, done: false } })
log(p.args.path, apply(p))
log(do("x", { mock_plan: { action: "READ_FILE", args: { path: "in.txt" }, done: false } }))
log(decide({ question: "q", schema: { next: "string", n: "number" }, mock_plan: { next: "b", n: 2 } }))
log(judge("ok?", { mock_plan: { answer: false } }))
log(run_agent(c, "go", { max_iterations: 3 }))
log(summarize("short", { memory_key: "k", mock_plan: { summary: "S" } }))
log(llm_calls, max_llm_calls, cost, max_cost)
''', tmp_path)
    assert result.exit_code == 0, result.error
    assert result.output.splitlines() == [
        "[ps] REPORT", "[ps] in.txt hello", "[ps] hello", '[ps] {next: "b", n: 2}', "[ps] false",
        "[ps] REPORT: mock: done", '[ps] {done: true, iterations: 1, report: "mock: done", wrote: false}',
        "[ps] S", "[ps] 7 500 0.0 10.0"]


def test_the_spec_rebinding_of_plan_still_works(tmp_path):
    result = ps('plan = plan("x", { provider: "mock" })\nlog(plan.done)\n', tmp_path)
    assert result.exit_code == 0 and result.output == "[ps] true\n", result.error


def test_openai_format_request_shape_policy_and_memory(tmp_path, fake_llm):
    (tmp_path / ".ps-runs" / "memory").mkdir(parents=True)
    (tmp_path / ".ps-runs" / "memory" / "proj.json").write_text(json.dumps({"summary": "MEMORY-SUMMARY-42"}))
    fake_llm.answer({"action": "READ_FILE", "args": {"path": "a.txt"}, "done": False, "confidence": 0.5})
    result = ps(f'''
with policy {{ allowActions: ["READ_FILE", "SEARCH", "REPORT"] }}:
  p = plan("read a", {custom(fake_llm, temperature=0.2, maxTokens=77, memory_key="proj")})
log(p.action)
''', tmp_path)
    assert result.exit_code == 0, result.error
    (request,) = fake_llm.requests
    body = request["json"]
    assert request["path"] == "/v1/chat/completions" and body["model"] == "gpt-4o-mini"
    assert body["temperature"] == 0.2 and body.get("max_completion_tokens", body.get("max_tokens")) == 77
    system = body["messages"][0]["content"]
    assert "- READ_FILE {" in system and "- REPORT {" in system
    assert "WRITE_FILE" not in system and "RUN_CMD" not in system and "ASK_USER" not in system
    assert "MEMORY-SUMMARY-42" in body["messages"][1]["content"] and "read a" in body["messages"][1]["content"]
    call = next(e for e in events(tmp_path) if e["event"] == "llm_call")
    assert call["provider"] == "custom" and call["model"] == "gpt-4o-mini" and call["tokens_in"] == 100
    assert call["tokens_out"] == 20 and call["ok"] is True and call["cost"] > 0


def test_anthropic_format_and_the_key_never_leaves_the_broker(tmp_path, fake_llm, monkeypatch):
    from runtime.broker import Broker

    frames = []
    encode = Broker.encode_reply
    monkeypatch.setattr(Broker, "encode_reply", lambda self, reply: frames.append(encode(self, reply)) or frames[-1])
    monkeypatch.setenv("MY_ANTHROPIC", KEY)
    fake_llm.answer({"answer": True}, Fail(401, json.dumps({"error": {"message": "bad key " + KEY}})))
    opts = f'{{ provider: "anthropic", baseUrl: "{fake_llm.anthropic_url}", apiKey: "MY_ANTHROPIC", maxRetries: 0 }}'
    result = ps(f'log(judge("fine?", {opts}))\nlog(judge("again?", {opts}))\n', tmp_path, llm_key_env=("MY_ANTHROPIC",))
    assert result.exit_code == 1 and result.output == "[ps] true\n"
    assert "HTTP 401 (the API key was refused: check it)" in result.error and "line 2" in result.error
    assert fake_llm.requests[0]["path"] == "/v1/messages"
    assert {KEY, "Bearer " + KEY} & set(fake_llm.requests[0]["headers"].values())  # x-api-key or bearer, per SDK version
    assert '{"answer": true}' in fake_llm.texts(0)
    log = "".join(p.read_text() for p in (tmp_path / ".ps-runs").rglob("*.jsonl"))
    for text in (result.output, result.error, log, b"".join(frames).decode("utf-8", "replace")):
        assert KEY not in text
    assert frames  # the worker got replies, none with the key


def test_no_key_unknown_provider_and_no_provider_say_what_to_do(tmp_path, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    result = ps('plan("x", { provider: "openai" })\n', tmp_path)
    assert "set the environment variable OPENAI_API_KEY" in result.error and "line 1" in result.error
    result = ps('plan("x", { provider: "acme" })\n', tmp_path)
    assert "LLM option provider must be one of openai, openrouter, anthropic, custom, mock" in result.error
    result = ps('plan("x")\n', tmp_path)
    assert "no LLM provider: set OPENAI_API_KEY" in result.error and "--provider mock" in result.error
    result = ps('LLMClient({ modle: "x" })\n', tmp_path)
    assert "LLMClient(): unknown option 'modle'" in result.error
    assert "Traceback" not in result.error


def test_malformed_answers_are_sent_back_then_fail_clearly(tmp_path, fake_llm):
    fake_llm.answer("I think you should read it", {"action": "READ_FILE", "args": {}, "done": "no"},
                    {"action": "READ_FILE", "args": {"path": "a"}, "done": False})
    result = ps(f'p = plan("x", {custom(fake_llm)})\nlog(p.args.path)\n', tmp_path)
    assert result.exit_code == 0 and result.output == "[ps] a\n", result.error
    assert "the answer is not valid JSON" in fake_llm.texts(1)
    assert "the plan needs 'done' as a boolean" in fake_llm.texts(2)
    fake_llm.answer("[[[[", "{}", '{"action": 1}')
    result = ps(f'log(1)\np = plan("x", {custom(fake_llm, maxRetries=2)})\n', tmp_path)
    assert result.exit_code == 1 and "line 2" in result.error
    assert "gave no valid answer in 3 attempts" in result.error and "raise maxRetries" in result.error
    fake_llm.answer("[[[[", "{}")  # an LLM error is a script error: retry catches it
    result = ps(f'retry 2:\n  p = plan("x", {custom(fake_llm, maxRetries=1)})\nlog(p.action)\n', tmp_path)
    assert result.exit_code == 0 and result.output == "[ps] REPORT\n", result.error


def test_deep_or_huge_answers_are_refused(tmp_path, fake_llm):
    fake_llm.answer("[" * 5000 + "]" * 5000, json.dumps({"action": "WRITE_FILE", "args": {"path": "x", "content": "a" * 600_000}, "done": False}))
    result = ps(f'plan("x", {custom(fake_llm, maxRetries=1)})\n', tmp_path)
    assert result.exit_code == 1 and "gave no valid answer in 2 attempts" in result.error
    assert "nested more than 32 levels" in fake_llm.texts(1)
    assert "more than the 524288 allowed" in result.error


def test_http_errors_are_retried_then_reported(tmp_path, fake_llm):
    fake_llm.answer(Fail(500), Fail(429), DONE)
    result = ps(f'log(plan("x", {custom(fake_llm, retryDelayMs=1)}).action)\n', tmp_path)
    assert result.exit_code == 0 and len(fake_llm.requests) == 3, result.error
    fake_llm.answer(Fail(503), Fail(503))
    result = ps(f'plan("x", {custom(fake_llm, retryDelayMs=1, maxRetries=1)})\n', tmp_path)
    assert "failed: HTTP 503 after 2 attempts" in result.error
    fake_llm.answer(Fail(404))
    result = ps(f'plan("x", {custom(fake_llm, retryDelayMs=1)})\n', tmp_path)
    assert "HTTP 404 (unknown model or wrong baseUrl)" in result.error
    result = ps('plan("x", { provider: "custom", baseUrl: "http://127.0.0.1:9/v1", maxRetries: 0 })\n', tmp_path)
    assert "cannot reach the provider" in result.error


def test_slow_answers_obey_timeoutMs_and_the_timeout_block(tmp_path, fake_llm):
    fake_llm.answer(Slow(3))
    result = ps(f'plan("x", {custom(fake_llm, timeoutMs=300, maxRetries=0)})\n', tmp_path)
    assert "no answer within timeoutMs 300 ms" in result.error
    fake_llm.answer(Slow(3))
    result = ps(f'timeout 400:\n  plan("x", {custom(fake_llm)})\nlog("after")\n', tmp_path)
    assert result.exit_code == 1 and "did not finish within 400 ms" in result.error and result.output == ""


def test_decide_validates_against_the_schema(tmp_path, fake_llm):
    fake_llm.answer({"next": 3}, {"next": "write", "file": "a.html"})
    result = ps(f'c = decide({{ question: "next?", schema: {{ next: "string", file: "string" }}, {custom(fake_llm)[1:-1]} }})\n'
                'log(c.next + " " + c.file)\n', tmp_path)
    assert result.output == "[ps] write a.html\n", result.error
    assert "the field 'next' must be a string" in fake_llm.texts(1)
    result = ps('decide({ question: "q", schema: { a: "integer" }, provider: "mock" })\n', tmp_path)
    assert "schema field 'a' must be one of string, number" in result.error


def test_lazy_imports_a_script_without_llm_calls(tmp_path):
    import subprocess
    import sys

    code = ("import sys\nfrom runtime.api import run_script\n"
            f"r = run_script('log(1)\\np = plan(\"x\", {{ provider: \"mock\" }})', lang='ps', options={{'project': {str(tmp_path)!r}}})\n"
            "assert r.exit_code == 0, r.error\n"
            "print(sorted(m for m in ('pydantic_ai', 'openai', 'anthropic', 'genai_prices', 'httpx2') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=str(__import__("tests.support", fromlist=["REPO"]).REPO))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"  # mock calls, like scripts with no LLM call, load none of them


@pytest.mark.parametrize("provider", ["custom", "anthropic", "openai", "openrouter"])
def test_each_builtin_against_the_fake_server(tmp_path, fake_llm, provider, monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.setenv(name, KEY)
    url = fake_llm.url if provider == "custom" else fake_llm.anthropic_url
    (tmp_path / "f.txt").write_text("F")
    fake_llm.answer({"action": "READ_FILE", "args": {"path": "f.txt"}, "done": False},  # client call
                    {"action": "READ_FILE", "args": {"path": "f.txt"}, "done": False},  # do
                    {"x": 1}, {"answer": False},
                    {"action": "READ_FILE", "args": {"path": "f.txt"}, "done": False}, DONE,  # run_agent
                    {"summary": "new"})
    result = ps(f'''
c = LLMClient({{ provider: "{provider}", baseUrl: "{url}" }})
log(c("p").action, do("d", {{ provider: "{provider}", baseUrl: "{url}" }}))
log(decide({{ question: "q", schema: {{ x: "number" }}, provider: "{provider}", baseUrl: "{url}" }}).x)
log(judge("j", {{ provider: "{provider}", baseUrl: "{url}" }}))
log(run_agent(c, "agent").iterations)
log(summarize("s", {{ memory_key: "m", provider: "{provider}", baseUrl: "{url}" }}))
''', tmp_path)
    assert result.exit_code == 0, result.error
    assert result.output.splitlines() == ["[ps] READ_FILE F", "[ps] 1", "[ps] false", "[ps] REPORT: fake: done",
                                          "[ps] 2", "[ps] new"]
    assert "Result of your last action:\nok: F" in fake_llm.texts(5)


def test_a_huge_response_is_refused_unread(tmp_path, fake_llm):
    fake_llm.answer("x" * (3 << 20))
    result = ps(f'plan("x", {custom(fake_llm, maxRetries=0)})\n', tmp_path)
    assert result.exit_code == 1 and "the provider's response is over 2097152 bytes" in result.error


def test_answer_checks_only_ever_refuse_with_a_reason():
    """Whatever text a model returns, the check is a plan or a BadAnswer: never a crash."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from runtime.promptscript.llm.schema import BadAnswer, check_decision, check_plan, check_verdict, parse_json

    leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["action", "args", "done", "confidence", "reason", "x", "path"]), inner, max_size=5), max_leaves=20)

    @settings(max_examples=300, deadline=None)
    @given(st.one_of(st.text(max_size=200), values.map(json.dumps)))
    def check(text):
        for checker in (lambda v: check_plan(v, ["READ_FILE", "REPORT"], True), check_verdict,
                        lambda v: check_decision(v, {"next": "string"})):
            try:
                checker(parse_json(text))
            except BadAnswer as exc:
                assert str(exc)

    check()


def test_verbose_traces_each_llm_call(tmp_path, fake_llm):
    import io

    from runtime.promptscript.options import PSOptions
    from runtime.promptscript.session import PSSession

    err = io.StringIO()
    session = PSSession(PSOptions(verbose=True), stderr=err)
    fake_llm.answer(DONE)
    reply = session.llm.op_llm("plan", "x", {"provider": "custom", "baseUrl": fake_llm.url, "model": "gpt-4o-mini"}, {})
    session.llm.close()
    assert reply["value"]["action"] == "REPORT" and reply["llm_calls"] == 1
    assert err.getvalue().startswith("[ps] llm #1 plan custom gpt-4o-mini -> ok (100+20 tokens, $")


def test_a_call_never_goes_to_a_url_the_script_chose(tmp_path, monkeypatch):
    # Rewritten on purpose: every call (not only one with a key from the environment) is held
    # to its provider's URL, loopback, or a URL the operator gave or allowed.
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    result = ps('plan("x", { provider: "openai", baseUrl: "https://collector.example/v1" })\n', tmp_path)
    assert result.exit_code == 1 and "go only to https://api.openai.com/v1" in result.error
    assert "--allow-base-url https://collector.example/v1" in result.error and KEY not in result.error
    result = ps('plan("x", { provider: "custom", apiKey: "literal-key", baseUrl: "http://10.0.0.9/v1" })\n', tmp_path)
    assert result.exit_code == 1 and "--allow-base-url http://10.0.0.9/v1" in result.error
    from runtime.promptscript.llm.config import CLIDefaults, LLMError, Secrets, resolve

    env = {"OPENAI_API_KEY": KEY}
    # the operator's --base-url and --allow-base-url are trusted (checked without a request: no test reaches the network)
    cfg = resolve({"provider": "openai"}, CLIDefaults(base_url="https://h.example/v1"), Secrets(), env)
    assert cfg.base_url == "https://h.example/v1" and cfg.api_key == KEY
    cfg = resolve({"provider": "openai", "baseUrl": "https://h.example/v1"},
                  CLIDefaults(allow_base_urls=("https://h.example/v1",)), Secrets(), env)
    assert cfg.base_url == "https://h.example/v1" and cfg.api_key == KEY
    for url in ("https://127.attacker.example/v1", "http://127.0.0.1.nip.io/v1", "http://localhost.example/v1"):
        with pytest.raises(LLMError, match="--allow-base-url"):
            resolve({"provider": "openai", "baseUrl": url}, CLIDefaults(), Secrets(), env)
    for url in ("http://127.0.0.1:8/v1", "http://127.9.9.9/v1", "http://[::1]:8/v1", "http://localhost:8/v1"):
        assert resolve({"provider": "openai", "baseUrl": url}, CLIDefaults(), Secrets(), env).api_key == KEY


def test_api_key_names_only_the_providers_own_variable_or_one_the_operator_allowed(tmp_path, monkeypatch):
    from runtime.promptscript.llm.config import CLIDefaults, LLMError, Secrets, resolve

    env = {"OPENAI_API_KEY": KEY, "GITHUB_TOKEN": "ghp-SECRET-TOKEN", "AWS_SECRET_ACCESS_KEY": "aws-SECRET"}
    for name in ("GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"):
        with pytest.raises(LLMError, match=f"--llm-key-env {name}") as info:
            resolve({"provider": "openai", "apiKey": name}, CLIDefaults(), Secrets(), env)
        assert env[name] not in str(info.value)
    with pytest.raises(LLMError, match="--llm-key-env OPENAI_API_KEY"):  # another provider's variable
        resolve({"provider": "anthropic", "apiKey": "OPENAI_API_KEY"}, CLIDefaults(), Secrets(), env)
    cfg = resolve({"provider": "openai", "apiKey": "GITHUB_TOKEN"}, CLIDefaults(key_env=("GITHUB_TOKEN",)), Secrets(), env)
    assert cfg.api_key == "ghp-SECRET-TOKEN"
    assert resolve({"provider": "openai", "apiKey": "OPENAI_API_KEY"}, CLIDefaults(), Secrets(), env).api_key == KEY
    # an all-capitals key naming no variable is the key itself, redacted like any key
    secrets = Secrets()
    assert resolve({"provider": "openai", "apiKey": "ABCD1234KEY"}, CLIDefaults(), secrets, env).api_key == "ABCD1234KEY"
    assert secrets.redact("x ABCD1234KEY") == "x [redacted]"
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-SECRET-TOKEN")
    result = ps('plan("x", { provider: "openai", apiKey: "GITHUB_TOKEN" })\n', tmp_path)
    assert result.exit_code == 1 and "--llm-key-env GITHUB_TOKEN" in result.error


def test_context_files_are_read_through_the_policy_and_guards_see_the_counters(tmp_path, fake_llm):
    (tmp_path / "notes.md").write_text("CONTEXT-NOTES-7")
    (tmp_path / "secret.txt").write_text("hidden")
    fake_llm.answer({"answer": True})
    result = ps(f'''
guard judge("ok?", {custom(fake_llm, context_files=["notes.md"])})
guard llm_calls == 1 and cost > 0 and cost < max_cost
with policy {{ allowRead: ["notes.md"] }}:
  judge("x", {custom(fake_llm, context_files=["secret.txt"])})
''', tmp_path)
    assert "File notes.md:\nCONTEXT-NOTES-7" in fake_llm.texts(0)
    assert result.exit_code == 1 and "line 5" in result.error and "secret.txt" in result.error
    assert len(fake_llm.requests) == 1  # refused before any request


def test_context_files_count_as_reads_against_the_tool_call_budget_and_are_logged(tmp_path, fake_llm):
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text(name)
    fake_llm.answer({"answer": True})
    result = ps(f'judge("ok?", {custom(fake_llm, context_files=["a.md"])})\n', tmp_path)
    assert result.ok, result.error
    reads = [e for e in events(tmp_path) if e.get("event") == "action" and e.get("action") == "READ_FILE"]
    assert [(e["args"]["path"], e["ok"], e.get("context_file")) for e in reads] == [("a.md", True, True)]
    import shutil

    shutil.rmtree(tmp_path / ".ps-runs")
    result = ps(f'judge("ok?", {custom(fake_llm, context_files=["a.md", "b.md"])})\n', tmp_path, max_tool_calls=1)
    assert result.exit_code == 1 and "budget exceeded: --max-tool-calls 1" in result.error
    assert len(fake_llm.requests) == 1  # the second run stopped before its request


def test_an_object_between_prose_is_taken(tmp_path, fake_llm):
    fake_llm.answer('Sure! Here is the plan:\n{"action": "REPORT", "args": {"message": "m"}, "done": true}\nHope it helps.')
    result = ps(f'log(plan("x", {custom(fake_llm, maxRetries=0)}).args.message)\n', tmp_path)
    assert result.output == "[ps] m\n", result.error


def test_the_fence_check_is_linear_on_a_hostile_answer():
    """``` + 500 KB of spaces + x made the fence regex quadratic (20 KB: 3.9 s of the broker's
    CPU); checked in a child so that a regression fails on its timeout instead of hanging."""
    import subprocess
    import sys

    from runtime.promptscript.llm.schema import parse_json

    code = ("from runtime.promptscript.llm.schema import BadAnswer, parse_json\n"
            "try:\n    parse_json('```' + ' ' * 500_000 + 'x')\nexcept BadAnswer:\n    print('refused')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=10)
    assert done.stdout == "refused\n", done.stderr
    assert parse_json('```json\n{"a": [1, "```"]}\n```') == {"a": [1, "```"]}
    assert parse_json('  ```\n{"b": 2}```  ') == {"b": 2} and parse_json('```JSON {"c": 3}\n```') == {"c": 3}
    assert parse_json('{"d": "```x```"}') == {"d": "```x```"}


def test_every_content_encoding_layer_is_decoded_under_the_cap(tmp_path, fake_llm):
    """Only an exact "gzip" was decoded under the 2 MiB cap: "identity, gzip" went to httpx's
    own decoder, unbounded (a gzip bomb of 300 MB took the broker's memory)."""
    import gzip

    def completion(text: str) -> bytes:
        return json.dumps(fake_llm.reply("/v1/chat/completions", "gpt-4o-mini", text)).encode()

    bomb = gzip.compress(completion(" " * (20 << 20)), 9)
    fake_llm.answer(Raw(bomb, {"Content-Encoding": "identity, gzip"}))
    result = ps(f'plan("x", {custom(fake_llm, maxRetries=0)})\n', tmp_path)
    assert result.exit_code == 1 and "over 2097152 bytes once decompressed" in result.error, result.error
    fake_llm.answer(Raw(b"xx", {"Content-Encoding": "br"}))
    result = ps(f'plan("x", {custom(fake_llm, maxRetries=0)})\n', tmp_path)
    assert result.exit_code == 1 and "Content-Encoding 'br', which is not supported" in result.error, result.error
    twice = gzip.compress(gzip.compress(completion(json.dumps(DONE))))
    fake_llm.answer(Raw(twice, {"Content-Encoding": "gzip, identity, gzip"}))
    result = ps(f'log(plan("x", {custom(fake_llm, maxRetries=0)}).args.message)\n', tmp_path)
    assert result.output == "[ps] fake: done\n", result.error


def _replay(tmp_path, monkeypatch, capsys, options=None, answers="", flags=(), events=None):
    """`fdsl replay r1` of a hand-made run directory, in this process; the run it would start is
    captured, not run: (exit code, the options it would run with, stderr)."""
    import runtime.cli as cli
    from runtime.api import RunResult

    run = tmp_path / ".ps-runs" / "r1"
    run.mkdir(parents=True, exist_ok=True)
    (run / "script.ps").write_text('log("hi")\n')
    start = json.dumps({"event": "start", "options": options or {}}) if events is None else events
    (run / "events.jsonl").write_text(start + "\n")
    if answers is not None:
        (run / "llm.jsonl").write_text(answers)
    seen = {}
    monkeypatch.setattr(cli, "run_script", lambda *a, **kw: seen.update(kw["options"]) or RunResult(0, ""))
    code = cli.main(["replay", "r1", "--project", str(tmp_path), *flags])
    return code, seen, capsys.readouterr().err


def test_replay_takes_budgets_and_commands_from_its_command_line(tmp_path, monkeypatch, capsys):
    crafted = {"allow_commands": ["sh"], "max_steps": 0, "max_time_ms": 0, "max_llm_calls": 0, "max_cost": 0,
               "max_tool_calls": 0, "model": "m1", "provider": "openai"}
    code, seen, err = _replay(tmp_path, monkeypatch, capsys, crafted)
    assert code == 0, err
    assert seen["allow_commands"] == () and seen["max_steps"] == 50_000 and seen["max_time_ms"] == 600_000
    assert seen["max_llm_calls"] == 500 and seen["max_cost"] == 10.0 and seen["model"] == "m1"
    code, seen, err = _replay(tmp_path, monkeypatch, capsys, crafted, flags=("--allow-command", "git", "--max-steps", "7"))
    assert code == 0 and seen["allow_commands"] == ("git",) and seen["max_steps"] == 7
    code, _, err = _replay(tmp_path, monkeypatch, capsys, {"model": ["x"]})
    assert code == 2 and "option model must be a string or null" in err


def test_replay_refuses_a_damaged_or_hostile_run_directory(tmp_path, monkeypatch, capsys):
    deep = "[" * 100_000 + "]" * 100_000
    for answers, says in ((deep + "\n", "llm.jsonl line 1 is not valid JSON"),
                          ('{"ok": true, "text": "t", "tokens_in": NaN, "tokens_out": 1, "model": "m"}\n', "not valid JSON"),
                          ('{"ok": true, "text": 5, "tokens_in": 1, "tokens_out": 1, "model": "m"}\n', "line 1 is not a recorded"),
                          ('{"ok": true, "text": "t", "tokens_in": -1, "tokens_out": 1, "model": "m"}\n', "not a recorded"),
                          ('{"ok": false, "what": "x", "retryable": "yes"}\n', "not a recorded answer"),
                          ('[1]\n', "not a recorded answer")):
        code, seen, err = _replay(tmp_path, monkeypatch, capsys, None, answers)
        assert code == 2 and says in err and "Traceback" not in err and not seen, (answers[:40], err)
    code, _, err = _replay(tmp_path, monkeypatch, capsys, events=deep)
    assert code == 2 and "events.jsonl's first line is not valid JSON" in err
    code, _, err = _replay(tmp_path, monkeypatch, capsys, events="[1]")
    assert code == 2 and "does not start with its options" in err
    run = tmp_path / ".ps-runs" / "r1"
    (run / "llm.jsonl").unlink()
    (tmp_path / "elsewhere.jsonl").write_text('{"ok": false, "what": "x", "retryable": false}\n')
    (run / "llm.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    code, _, err = _replay(tmp_path, monkeypatch, capsys, answers=None)
    assert code == 2 and "cannot open r1/llm.jsonl" in err
    (run / "llm.jsonl").unlink()
    with open(run / "llm.jsonl", "wb") as f:
        f.truncate((64 << 20) + 1)  # sparse: no disk used
    code, _, err = _replay(tmp_path, monkeypatch, capsys, answers=None)
    assert code == 2 and "r1/llm.jsonl is over 67108864 bytes" in err


def test_a_key_echoed_back_by_the_server_is_redacted_everywhere(tmp_path, fake_llm, monkeypatch):
    """The reply's value, llm_invalid events and memory summaries carried a key the server sent
    back in a 200 answer into the worker, the output, the project's files and the run log."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fake_llm.answer({"action": "REPORT", "args": {"message": "k=" + ECHO_KEY, ECHO_KEY: [ECHO_KEY]}, "done": True},
                    {"action": ECHO_KEY, "args": {}, "done": True}, DONE, {"summary": "sum " + ECHO_KEY})
    opts = f'provider: "openai", baseUrl: "{fake_llm.url}"'
    result = ps(f'''
p = plan("x", {{ {opts} }})
log(p.args)
apply("WRITE_FILE", {{ path: "leak.txt", content: p.args.message }})
plan("y", {{ {opts} }})
log(summarize("s", {{ {opts}, memory_key: "m1" }}))
''', tmp_path, write_approval=False)
    assert result.exit_code == 0, result.error
    assert '[ps] {message: "k=[redacted]", "[redacted]": ["[redacted]"]}' in result.output
    assert "[ps] sum [redacted]" in result.output
    assert "Bearer " + KEY in fake_llm.requests[0]["headers"].values()  # so the server did echo it
    assert (tmp_path / "leak.txt").read_text() == "k=[redacted]"
    invalid = [e for e in events(tmp_path) if e["event"] == "llm_invalid"]
    assert invalid and "[redacted]" in invalid[0]["error"]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
    assert KEY not in result.output


def test_lone_surrogates_and_non_finite_numbers_are_bad_answers(tmp_path, fake_llm):
    """A lone surrogate in an answer killed the run ("undecodable frame"); NaN and Infinity
    were taken as numbers. Both are now bad answers, sent back to the model."""
    from runtime.promptscript.llm.schema import BadAnswer, parse_json

    for text in ('{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', 'x {"a": NaN} y'):
        with pytest.raises(BadAnswer, match="not valid JSON"):
            parse_json(text)
    with pytest.raises(BadAnswer, match="lone surrogate"):
        parse_json('{"a\\udc80": "b"}')
    fake_llm.answer('{"action": "REPORT", "args": {"message": "a\\ud800b"}, "done": true}',
                    '{"action": "REPORT", "args": {"message": "m"}, "done": true, "confidence": NaN}', DONE)
    result = ps(f'log(plan("x", {custom(fake_llm, maxRetries=2)}).args.message)\nlog("after")\n', tmp_path)
    assert result.exit_code == 0 and result.output == "[ps] fake: done\n[ps] after\n", result.error
    invalid = [e["error"] for e in events(tmp_path) if e["event"] == "llm_invalid"]
    assert "lone surrogate" in invalid[0] and "NaN is not a JSON number" in invalid[1]
    assert "lone surrogate" in fake_llm.texts(1)  # told to the model


def test_max_cost_holds_when_usage_is_missing_or_negative(tmp_path, fake_llm, monkeypatch):
    """Negative usage lowered the cost and a missing one cost nothing: --max-cost never stopped
    the run. Such calls are now estimated at 4 characters a token, at the fallback price."""
    loop = f'for i in range(50):\n  plan("x", {custom(fake_llm)})\n'
    fake_llm.usage = (-10_000_000, -1_000_000)
    result = ps(loop, tmp_path, max_cost=0.01)
    assert result.exit_code == 1 and "budget exceeded: --max-cost $0.01" in result.error, result.error
    calls = [e for e in events(tmp_path) if e["event"] == "llm_call"]
    assert calls[0]["priced"] is False and calls[0]["tokens_in"] > 0 and calls[0]["cost"] > 0 and len(calls) < 50
    reply = fake_llm.reply
    monkeypatch.setattr(fake_llm, "reply", lambda *a: {k: v for k, v in reply(*a).items() if k != "usage"})
    other = tmp_path / "other"
    other.mkdir()
    result = ps(loop, other, max_cost=0.01)
    assert result.exit_code == 1 and "budget exceeded: --max-cost $0.01" in result.error, result.error


def test_out_of_range_numbers_oversized_summaries_and_cut_context_files_are_said(tmp_path):
    """1e999 was taken as a number (infinity); a summary over the memory's room was cut twice
    without a word; a context file was cut at 20,000 characters without telling the model."""
    from runtime.promptscript.llm import prompts
    from runtime.promptscript.llm.schema import MAX_SUMMARY_BYTES, BadAnswer, check_summary, parse_json

    for text in ('{"n": 1e999}', '{"n": -1e400}', 'ok {"n": 1E+999} ok'):
        with pytest.raises(BadAnswer, match="out of range for a number"):
            parse_json(text)
    assert parse_json('{"n": 1.5e300}') == {"n": 1.5e300}
    fits = "€" * ((MAX_SUMMARY_BYTES - 2) // 3)
    assert check_summary({"summary": fits}) == fits
    with pytest.raises(BadAnswer, match="the summary takes 4001 bytes, over the 4000 allowed"):
        check_summary({"summary": fits + "€"})
    with pytest.raises(BadAnswer, match="over the 4000 allowed"):  # as stored: each control character takes 6
        check_summary({"summary": "\x01" * 700})
    text = prompts.user_message("p", memory=None, files=[("a.txt", "A" * 25_000), ("b.txt", "B" * 10)], context=None,
                                state={})
    assert "File a.txt (its first 20,000 characters of 25,000; the rest is not shown):\n" + "A" * 20_000 + "\n" in text
    assert "A" * 20_001 not in text and "File b.txt:\nBBBBBBBBBB" in text


def test_a_summary_is_returned_as_the_memory_keeps_it(tmp_path):
    (tmp_path / ".ps-runs" / "memory").mkdir(parents=True)
    summary = "€" * 1300 + "\n" * 49  # 4,000 bytes once stored as JSON, quotes included
    literal = json.dumps(summary, ensure_ascii=False)
    r = ps(f'log(summarize("s", {{ memory_key: "k", mock_plan: {{ summary: {literal} }} }}) == {literal})\n', tmp_path)
    assert r.exit_code == 0 and r.output == "[ps] true\n", r.error
    memory = json.loads((tmp_path / ".ps-runs" / "memory" / "k.json").read_text())
    assert memory["summary"] == summary


def test_the_answer_recorder_counts_bytes_and_says_when_it_stops(tmp_path):
    """It counted characters: a recording of 3-byte characters grew to three times
    --max-log-bytes, and past the 64 MiB a replay reads, with nothing said."""
    from types import SimpleNamespace

    from runtime.promptscript.llm.replay import ANSWERS, Recorder

    written = []
    log = SimpleNamespace(dir=tmp_path, max_bytes=16_384, write=lambda event, **fields: written.append((event, fields)))
    recorder = Recorder(log)
    for _ in range(3):
        recorder.record({"ok": True, "text": "€" * 5000, "tokens_in": 1, "tokens_out": 1, "model": "m"})
    recorder.close()
    assert (tmp_path / ANSWERS).stat().st_size <= 16_384
    assert len((tmp_path / ANSWERS).read_text(encoding="utf-8").splitlines()) == 1
    assert [event for event, _ in written] == ["replay_truncated"]
    assert "limit of 16384 bytes" in written[0][1]["message"]
