"""`fdsl run` of scripts that call a language model: the seed's carousel example unchanged,
offline (--provider mock) and against a local OpenAI-compatible server (the fake one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.fake_llm import DONE
from tests.support.ps import REPO

KEY = "sk-or-v1-abcdef0123456789-SECRET"


def fdsl(*args, env=None):
    return subprocess.run([sys.executable, "-m", "runtime.cli", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def test_carousel_runs_offline_with_the_mock_provider(tmp_path):
    proc = fdsl("run", REPO / "examples" / "carousel.ps", "--project", tmp_path, "--provider", "mock", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-5] == "[ps] Workflow de carrusel terminado!"
    memory = json.loads((tmp_path / ".ps-runs" / "memory" / "landing.carousel.json").read_text())
    assert memory["summary"] == "mock summary" and "mock-agent-output.md" in memory["filesTouched"]


def test_carousel_against_a_local_openai_compatible_server(tmp_path, fake_llm):
    def agent(n):
        return [{"action": "WRITE_FILE", "args": {"path": f"public/p{n}.html", "content": f"<p>{n}</p>"}, "done": False}, DONE]

    for n in range(4):
        fake_llm.answer(*agent(n))
    fake_llm.answer({"answer": True}, {"summary": "- carousel with 3 slides"})
    for n in range(4, 8):
        fake_llm.answer(*agent(n))
    proc = fdsl("run", REPO / "examples" / "carousel.ps", "--project", tmp_path, "--provider", "custom",
                "--base-url", fake_llm.url, "--model", "local-model", "--yes", "--max-llm-calls", "40",
                env={"OPENROUTER_API_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    assert "[ps] REPORT: Carrusel completado exitosamente" in proc.stdout
    assert len(fake_llm.requests) == 18 and {r["json"]["model"] for r in fake_llm.requests} == {"local-model"}
    assert (tmp_path / "public" / "p7.html").read_text() == "<p>7</p>"
    (run,) = [d for d in (tmp_path / ".ps-runs").iterdir() if d.name != "memory"]
    log = (run / "events.jsonl").read_text()
    end = json.loads(log.splitlines()[-1])
    assert end["llm_calls"] == 18 and end["tokens_in"] == 1800 and end["cost"] > 0  # unknown model: fallback price
    for text in (proc.stdout, proc.stderr, log):
        assert KEY not in text


def test_llm_flags_are_checked_and_only_for_ps(tmp_path):
    script = tmp_path / "x.fdsl"
    script.write_text("print(1)\n")
    proc = fdsl("run", script, "--max-llm-calls", "3")
    assert proc.returncode == 2 and "--max-llm-calls: only for PromptScript" in proc.stderr
    ps = tmp_path / "x.ps"
    ps.write_text('log(1)\n')
    proc = fdsl("run", ps, "--project", tmp_path, "--max-cost", "-1")
    assert proc.returncode == 2 and "--max-llm-calls and --max-cost must be non-negative" in proc.stderr
    proc = fdsl("run", ps, "--project", tmp_path, "--provider", "acme")
    assert proc.returncode == 2 and "invalid choice: 'acme'" in proc.stderr


def test_replay_reproduces_a_run_byte_for_byte_without_the_network(tmp_path, fake_llm):
    from tests.support.fake_llm import Fail

    script = tmp_path / "agent.ps"
    script.write_text(f'''
c = LLMClient({{ provider: "openai", baseUrl: "{fake_llm.url}", retryDelayMs: 1 }})
r = run_agent(c, "write the page", {{ require_write: true }})
log(r)
d = decide({{ question: "next?", schema: {{ next: "string" }}, provider: "openai", baseUrl: "{fake_llm.url}" }})
log("next: " + d.next, llm_calls, cost)
log(apply("READ_FILE", {{ path: "page.html" }}))
''')
    fake_llm.answer(Fail(500), {"action": "WRITE_FILE", "args": {"path": "page.html", "content": "<h1>hi</h1>"}, "done": False},
                    "not json", DONE, {"next": "style"})
    proc = fdsl("run", script, "--project", tmp_path, "--yes", env={"OPENAI_API_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    assert len(fake_llm.requests) == 5
    fake_llm.close()  # nothing answers any more: a replay must not need it
    (run,) = [d.name for d in (tmp_path / ".ps-runs").iterdir() if d.name != "memory"]
    assert KEY not in (tmp_path / ".ps-runs" / run / "llm.jsonl").read_text()
    replay = fdsl("replay", run, "--project", tmp_path, "--yes", env={"OPENAI_API_KEY": ""})
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == proc.stdout and replay.stdout.endswith("[ps] <h1>hi</h1>\n")
    assert len(fake_llm.requests) == 5
    proc = fdsl("replay", "no-such-run", "--project", tmp_path)
    assert proc.returncode == 2 and "has no recorded script" in proc.stderr


def test_the_agent_example_runs_offline(tmp_path):
    proc = fdsl("run", REPO / "examples" / "agent.ps", "--project", tmp_path, "--yes", env={"OPENAI_API_KEY": ""})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == ["[ps] agent: done=true after 3 steps", "[ps] next: tests (6 LLM calls, $0.0)"]
    assert (tmp_path / "agent-notes.md").read_text().startswith("# Notes")
    memory = json.loads((tmp_path / ".ps-runs" / "memory" / "example.agent.json").read_text())
    assert memory["summary"] == "- notes on the TODOs" and "agent-notes.md" in memory["filesTouched"]


def test_a_key_written_in_the_script_is_not_kept_in_the_run_log(tmp_path, fake_llm):
    script = tmp_path / "k.ps"
    script.write_text(f'c = LLMClient({{ provider: "custom", baseUrl: "{fake_llm.url}", apiKey: "{KEY}" }})\nlog(c("x").action)\n')
    proc = fdsl("run", script, "--project", tmp_path)
    assert proc.returncode == 0 and proc.stdout == "[ps] REPORT\n", proc.stderr
    assert fake_llm.requests[0]["headers"]["authorization"] == "Bearer " + KEY
    kept = "".join(p.read_text() for p in (tmp_path / ".ps-runs").rglob("*") if p.is_file())
    assert KEY not in kept and "[redacted]" in kept


def test_hostile_and_cut_short_answers_are_logged_charged_and_replayed_the_same(tmp_path, fake_llm):
    """A lone surrogate in an answer's raw text crashed the call (InternalError); a request cut
    short by a `timeout` block was neither logged nor recorded, so its replay took the next
    answer; an answer refused as too large cost nothing against --max-cost; and llm_calls and
    cost stayed stale in the script after a failed call."""
    from tests.support.fake_llm import Raw, Slow

    def envelope(content: str) -> Raw:  # json.dumps escapes the lone surrogate: valid bytes, a bad text
        return Raw(json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode(), {})

    once = f'{{ provider: "openai", baseUrl: "{fake_llm.url}", maxRetries: 0 }}'
    script = tmp_path / "hostile.ps"
    script.write_text(f'''
log(judge("a?", {{ provider: "openai", baseUrl: "{fake_llm.url}", retryDelayMs: 1 }}))
retry 2:
  log("calls", llm_calls)
  timeout 1500:
    log(judge("b?", {once}))
retry 2:
  log("calls", llm_calls)
  log(judge("c?", {once}))
log("calls", llm_calls, cost > 0.1)
''')
    fake_llm.answer(envelope('{"answer": true, "why": "\ud800"}'), {"answer": True}, Slow(3, {"answer": True}), {"answer": False},
                    Raw(b"x" * (3 << 20), {}), {"answer": True})
    proc = fdsl("run", script, "--project", tmp_path, "--yes", env={"OPENAI_API_KEY": KEY})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[ps] true", "[ps] calls 2", "[ps] calls 3", "[ps] false", "[ps] calls 4",
                                        "[ps] calls 5", "[ps] true", "[ps] calls 6 true"]
    (run,) = [d for d in (tmp_path / ".ps-runs").iterdir() if d.name != "memory"]
    events = [json.loads(line) for line in (run / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    calls = [e for e in events if e["event"] == "llm_call"]
    assert len(calls) == 6 == events[-1]["llm_calls"]
    assert "lone surrogate" in [e for e in events if e["event"] == "llm_invalid"][0]["error"]
    assert "timeout block" in calls[2]["error"] and calls[2]["ok"] is False
    # billed: estimated at maxTokens (its default, 4,096), the most the provider made, at the fallback price
    assert calls[4]["ok"] is False and calls[4]["tokens_out"] == 4096 and calls[4]["priced"] is False
    assert calls[4]["cost"] == round((calls[4]["tokens_in"] * 10 + 4096 * 30) / 1e6, 6)
    answers = (run / "llm.jsonl").read_text(encoding="utf-8").splitlines()  # strict UTF-8: it must decode
    assert len(answers) == 6 and json.loads(answers[0])["text"].endswith('"\ud800"}')
    fake_llm.close()
    replay = fdsl("replay", run.name, "--project", tmp_path, "--yes", env={"OPENAI_API_KEY": ""})
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == proc.stdout
