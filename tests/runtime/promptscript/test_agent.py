"""run_agent: the loop, its stops (REPORT done, max_iterations, each budget, the loop
detector), require_write, a hostile model, and memory across runs."""

from __future__ import annotations

import json
import threading

import pytest

from runtime.api import run_script
from tests.support.fake_llm import DONE

READ = {"action": "READ_FILE", "args": {"path": "in.txt"}, "done": False}


def ps(source: str, project, **options):
    options.setdefault("max_steps", 0)
    (project / "in.txt").write_text("IN")
    return run_script(source, lang="ps", options={"project": project, **options}, timeout=60)


def agent(plans, more: str = "") -> str:
    return f'r = run_agent({{ provider: "mock" }}, "task", {{ mock_plan: {json.dumps(plans)}{more} }})\nlog(r)\n'


def test_stops_on_report_or_after_max_iterations(tmp_path):
    result = ps(agent([READ, {"action": "READ_FILE", "args": {"path": "in.txt", "maxBytes": 1}, "done": False}, DONE]), tmp_path)
    assert result.output.splitlines()[-1] == '[ps] {done: true, iterations: 3, report: "fake: done", wrote: false}'
    result = ps(agent([READ], ", max_iterations: 2"), tmp_path)
    assert result.output == "[ps] {done: false, iterations: 2, report: null, wrote: false}\n", result.error
    result = ps(agent([DONE, READ], ", stop_on_report: false, max_iterations: 2"), tmp_path)
    assert result.output.endswith("[ps] {done: false, iterations: 2, report: \"fake: done\", wrote: false}\n")


def test_require_write_refuses_an_early_done(tmp_path):
    write = {"action": "WRITE_FILE", "args": {"path": "out.txt", "content": "x"}, "done": False}
    result = ps(agent([DONE, write, DONE], ", require_write: true"), tmp_path, write_approval=False)
    assert result.output.splitlines()[-1] == '[ps] {done: true, iterations: 3, report: "fake: done", wrote: true}', result.error
    assert (tmp_path / "out.txt").read_text() == "x"


def test_each_budget_stops_the_loop(tmp_path, fake_llm):
    result = ps(agent([READ]), tmp_path, max_llm_calls=3)
    assert result.exit_code == 1 and "budget exceeded: --max-llm-calls 3 (LLM call 4 refused)" in result.error
    assert "line 1" in result.error
    result = ps(agent([READ]), tmp_path, max_steps=5)
    assert "budget exceeded: --max-steps 5" in result.error
    result = ps(agent([READ]), tmp_path, max_tool_calls=4)
    assert "budget exceeded: --max-tool-calls 4" in result.error
    result = ps(agent([READ]), tmp_path, max_time_ms=1500, max_llm_calls=0)
    assert "budget exceeded: --max-time 1500 ms" in result.error
    fake_llm.usage = (1_000_000, 1)  # gpt-4o-mini: $0.15 a call (a zero usage is estimated instead)
    fake_llm.answer(READ, READ, READ)
    result = ps(f'run_agent({{ provider: "custom", baseUrl: "{fake_llm.url}", model: "gpt-4o-mini" }}, "t")\n',
                tmp_path, max_cost=0.2)
    assert "budget exceeded: --max-cost $0.2 ($0.3000 spent in 2 LLM calls)" in result.error
    result = ps('retry 3:\n  ' + agent([READ]).replace("\n", "\n  ", 1), tmp_path, max_llm_calls=2)
    assert "--max-llm-calls 2" in result.error  # retry never swallows a budget



def test_a_budget_spent_in_an_agents_apply_ends_the_run(tmp_path):
    """The apply's LimitError was fed back to the model as an action's error and the script
    went on, exiting 0: a spent budget ends the run with its own error."""
    source = ('apply("READ_FILE", { path: "in.txt" })\n'
              + agent([READ], ", max_iterations: 1") + 'log("after")\n')
    result = ps(source, tmp_path, max_tool_calls=1)
    assert result.exit_code == 1 and result.error_kind == "LimitError", (result.output, result.error)
    assert "budget exceeded: --max-tool-calls 1" in result.error and "after" not in result.output
    # with budget to spare, the loop and the script go on
    result = ps(agent([READ], ", max_iterations: 1") + 'log("after")\n', tmp_path, max_tool_calls=5)
    assert result.exit_code == 0 and result.output.endswith("[ps] after\n"), result.error


def test_a_spent_budget_fails_the_run_even_if_the_script_ended_well(tmp_path):
    from runtime.api import RunResult
    from runtime.errors import LimitError
    from runtime.promptscript.options import PSOptions
    from runtime.promptscript.session import PSSession

    session = PSSession(PSOptions())
    session.stopped = LimitError("budget exceeded: --max-tool-calls 1")
    result = RunResult(exit_code=0, output="")
    session.finish(result)
    assert result.exit_code == 1 and result.error_kind == "LimitError"
    assert result.error == "LimitError: budget exceeded: --max-tool-calls 1"

def test_loop_detection_warns_or_halts(tmp_path):
    result = ps(agent([READ, READ, READ, DONE]), tmp_path)
    assert "[ps] warning: loop detected in run_agent: READ_FILE with the same arguments 3 times in a row" in result.output
    assert result.exit_code == 0, result.error
    result = ps(agent([READ]), tmp_path, halt_on_loop=True)
    assert result.exit_code == 1 and "loop detected" in result.error and "--halt-on-loop" in result.error


def test_a_hostile_model_is_refused_and_told(tmp_path, fake_llm):
    fake_llm.answer(
        {"action": "READ_FILE", "args": {"path": "../../../etc/passwd"}, "done": False},
        {"action": "RUN_CMD", "args": {"cmd": "rm", "args": ["-rf", "/"]}, "done": False},
        {"action": "WRITE_FILE", "args": {"path": "x", "content": "y"}, "done": False},  # outside the policy
        {"action": "ASK_USER", "args": {"question": "key?"}, "done": False},  # no_ask
        json.dumps({"action": "READ_FILE", "args": {"path": "a" * 600_000}, "done": False}),  # huge
        DONE)
    result = ps(f'''
with policy {{ allowActions: ["READ_FILE", "RUN_CMD", "REPORT", "ASK_USER"], allowCommands: ["echo"] }}:
  log(run_agent({{ provider: "custom", baseUrl: "{fake_llm.url}", no_ask: true, maxRetries: 5 }}, "t"))
''', tmp_path, allow_commands=("echo",))
    assert result.exit_code == 0, result.error
    assert result.output.endswith('{done: true, iterations: 3, report: "fake: done", wrote: false}\n')
    texts = [fake_llm.texts(i) for i in range(len(fake_llm.requests))]
    assert "ASK_USER" not in texts[0].split("Actions allowed")[1].split("Answer with")[0]
    assert "error: READ_FILE: path '/../../../etc/passwd' climbs above the root" in texts[1]
    assert "error: " in texts[2] and "rm" in texts[2] and "echo" in texts[2]
    assert "action WRITE_FILE is not allowed by the policy here" in texts[3]
    assert "ASK_USER is not allowed (no_ask)" in texts[4]
    assert "more than the 524288 allowed" in texts[5]
    assert not (tmp_path / "x").exists()


def test_memory_persists_across_runs(tmp_path, fake_llm):
    write = {"action": "WRITE_FILE", "args": {"path": "page.html", "content": "<p>1</p>\n<p>2</p>"}, "done": False}
    result = ps(agent([write, DONE], ', memory_key: "site.v1"').replace('"task"', '"Build the site"'), tmp_path,
                write_approval=False)
    assert result.exit_code == 0, result.error
    stored = json.loads((tmp_path / ".ps-runs" / "memory" / "site.v1.json").read_text())
    assert stored["objective"] == "Build the site" and list(stored["filesTouched"]) == ["page.html"]
    assert stored["recentDiffSummary"] == ["wrote page.html: 2 lines, 17 bytes"]
    fake_llm.answer({"answer": True})
    result = ps(f'log(judge("ok?", {{ provider: "custom", baseUrl: "{fake_llm.url}", memory_key: "site.v1" }}))\n', tmp_path)
    assert result.output == "[ps] true\n", result.error
    text = fake_llm.texts(0)
    assert "Memory (site.v1)" in text and "Build the site" in text and stored["filesTouched"]["page.html"] in text
    result = ps('plan("x", { provider: "mock", memory_key: "../up" })\n', tmp_path)
    assert "memory_key must be 1 to 100 letters" in result.error


def test_memory_updates_are_atomic_and_bounded(tmp_path):
    from types import SimpleNamespace

    from runtime.promptscript.llm.memory import MAX_MEMORY_BYTES, Memories

    memories = Memories(SimpleNamespace(options=SimpleNamespace(project=tmp_path)))

    def writer(n):
        for i in range(30):
            memories.update("k", lambda m, i=i: m["recentDiffSummary"].append(f"{n}-{i} " + "x" * 150))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    path = tmp_path / ".ps-runs" / "memory" / "k.json"
    stored = json.loads(path.read_text())
    assert len(path.read_bytes()) <= MAX_MEMORY_BYTES + 200 and 0 < len(stored["recentDiffSummary"]) <= 12
    memories.update("k", lambda m: m.__setitem__("summary", "s" * 50_000))
    assert len(path.read_bytes()) <= MAX_MEMORY_BYTES + 200


def test_a_short_cycle_is_a_loop_too(tmp_path):
    other = {"action": "READ_FILE", "args": {"path": "in.txt", "maxBytes": 1}, "done": False}
    result = ps(agent([READ, other, READ, other, READ, other, DONE]), tmp_path)
    assert "[ps] warning: loop detected in run_agent: the same 2 actions 3 times in a row" in result.output
    result = ps(agent([READ, other]), tmp_path, halt_on_loop=True)
    assert result.exit_code == 1 and "loop detected" in result.error


def test_a_prompt_over_the_op_limit_is_a_clear_error(tmp_path):
    result = ps('run_agent({ provider: "mock" }, "x" * 70000)\n', tmp_path)
    assert "run_agent(): the prompt has 70000 characters, more than 65536" in result.error


def test_a_bad_or_unwritable_memory_is_an_llm_error_never_an_internal_one(tmp_path):
    """Items of the wrong type in a memory file (a number in recentDiffSummary), a file nested
    too deep, or a memory directory that cannot be made gave an InternalError."""
    from types import SimpleNamespace

    from runtime.promptscript.llm.config import LLMError
    from runtime.promptscript.llm.memory import Memories

    memories = Memories(SimpleNamespace(options=SimpleNamespace(project=tmp_path)))
    (tmp_path / ".ps-runs" / "memory").mkdir(parents=True)
    path = tmp_path / ".ps-runs" / "memory" / "k.json"
    path.write_text(json.dumps({"summary": "s", "recentDiffSummary": [1, "kept", None], "openIssues": [{"a": 1}],
                                "filesTouched": {"a.txt": 5, "b.txt": "abc", "c.txt": None}}))
    memory = memories.load("k", "goal")
    assert memory["recentDiffSummary"] == ["kept"] and memory["openIssues"] == []
    assert memory["filesTouched"] == {"b.txt": "abc", "c.txt": None} and memory["summary"] == "s"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert memories.load("k", "goal")["summary"] == ""
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / ".ps-runs").write_text("a file where the directory should be")
    other = Memories(SimpleNamespace(options=SimpleNamespace(project=blocked)))
    with pytest.raises(LLMError, match="cannot be kept in .ps-runs/memory"):
        other.load("k", "goal")
