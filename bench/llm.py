"""PromptScript's LLM layer: what the runtime adds to each LLM call, start-up without LLM
calls, and a 20-step run_agent, against the fake provider of the tests on loopback (answers at
once; no network).

    python bench/llm.py [--calls 200] [--runs 3] [--base b0ed6ab]

1. Overhead per call: a script making --calls plan() calls (worker -> pipe -> broker -> option
   resolution, prompt, pydantic-ai, HTTP, answer check -> worker), per call, against the same
   requests made by pydantic-ai's model_request in this process (the baseline), same server.
2. Start-up of `fdsl run` of a .ps script with no LLM call: this tree against --base (a git
   archive of that commit, unpacked in a temporary directory), medians of --runs.
3. A 20-step run_agent (19 READ_FILE then REPORT done): wall time, steps, tokens, cost.
Ratios matter, not absolute figures (shared, noisy machines).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runtime import run_script  # noqa: E402
from tests.support.fake_llm import DONE, FakeLLM  # noqa: E402

PLAN = {"action": "READ_FILE", "args": {"path": "in.txt"}, "done": False}


def run_ps(source: str, project: Path) -> dict:
    result = run_script(source, lang="ps", options={"project": project, "max_steps": 0, "max_llm_calls": 0},
                        timeout=300)
    assert result.ok, result.error
    return result.figures


def per_call_in_script(fake: FakeLLM, project: Path, calls: int) -> float:
    opts = f'{{ provider: "custom", baseUrl: "{fake.url}", model: "gpt-4o-mini" }}'
    one = f'p = plan("x", {opts})\n'  # the first call loads pydantic-ai: measured apart
    many = one + f'for i in range({calls}):\n  p = plan("x", {opts})\n'
    fake.queue.clear()
    return (run_ps(many, project)["run_s"] - run_ps(one, project)["run_s"]) / calls


def direct_caller(fake: FakeLLM):
    """A function making ``calls`` requests with pydantic-ai in this process: the baseline."""
    from openai import AsyncOpenAI
    from pydantic_ai.direct import model_request
    from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(
        openai_client=AsyncOpenAI(base_url=fake.url, api_key="none", max_retries=0)))
    messages = [ModelRequest(parts=[SystemPromptPart(content="system"), UserPromptPart(content="x")])]
    loop = asyncio.new_event_loop()
    loop.run_until_complete(model_request(model, messages))

    def per_call(calls: int) -> float:
        started = time.perf_counter()
        for _ in range(calls):
            response = loop.run_until_complete(model_request(model, messages, model_settings={"max_tokens": 4096}))
            json.loads(response.parts[0].content)
        return (time.perf_counter() - started) / calls

    return per_call


def startup(tree: Path, project: Path) -> float:
    script = project / "hello.ps"
    script.write_text('log("hello")\n')
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "run", str(script), "--project", str(project)],
                          cwd=tree, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return time.perf_counter() - started


def agent_run(fake: FakeLLM, project: Path) -> dict:
    fake.queue.clear()
    fake.answer(*[{**PLAN, "args": {"path": "in.txt", "maxBytes": n}} for n in range(1, 20)], DONE)
    source = (f'r = run_agent({{ provider: "custom", baseUrl: "{fake.url}", model: "gpt-4o-mini" }}, "read")\n'
              'log(r.iterations, llm_calls, cost)\n')
    started = time.perf_counter()
    result = run_script(source, lang="ps", options={"project": project, "max_steps": 0}, timeout=300)
    wall = time.perf_counter() - started
    assert result.ok, result.error
    runs = sorted(d for d in (project / ".ps-runs").iterdir() if d.name != "memory")
    end = json.loads((runs[-1] / "events.jsonl").read_text().splitlines()[-1])
    return {"wall_s": wall, "output": result.output.strip(), **{k: end.get(k) for k in ("llm_calls", "tokens_in", "tokens_out", "cost")}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--base", default="b0ed6ab", help="the commit to compare start-up with")
    args = parser.parse_args()
    fake = FakeLLM()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "in.txt").write_text("IN\n")
        direct_per_call, pairs = direct_caller(fake), []
        for _ in range(args.runs):  # interleaved, so that both see the same load
            pairs.append((direct_per_call(args.calls), per_call_in_script(fake, project, args.calls)))
        direct = statistics.median(d for d, _ in pairs)
        scripted = statistics.median(s for _, s in pairs)
        print(f"LLM call, fake server: pydantic-ai direct {direct * 1000:.2f} ms, from a script {scripted * 1000:.2f} ms; "
              f"added by the runtime {(scripted - direct) * 1000:.2f} ms per call (ratio {scripted / direct:.2f})")
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.base], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        pairs = [(startup(base, project), startup(REPO, project)) for _ in range(max(args.runs, 5))]  # interleaved
        before, after = statistics.median(b for b, _ in pairs), statistics.median(a for _, a in pairs)
        print(f"start-up of a .ps without LLM calls: {args.base} {before * 1000:.0f} ms, now {after * 1000:.0f} ms "
              f"(ratio {after / before:.2f})")
        agent = agent_run(fake, project)
        print(f"20-step run_agent: {agent['wall_s']:.2f} s wall, output {agent['output']!r}, "
              f"{agent['llm_calls']} LLM calls, {agent['tokens_in']}+{agent['tokens_out']} tokens, ${agent['cost']}")
    fake.close()


if __name__ == "__main__":
    main()
