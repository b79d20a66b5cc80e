"""The real Claude Code CLI against the scripted model server (Anthropic Messages API), on house tasks,
through the run engine: rules via CLAUDE.md, the edit in the patch, isolation, timeouts, errors, the key."""

import threading
import time

import pytest

from helpers.core import config

from worker_processes import command_lines

from claude_code import ClaudeCodeAgent
from claude_code.agent import claude_binary
from helpers.core.config import MissingCredentials
from helpers.testing.dry_run import DryRunScript
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.core.processes import scratch_dir
from helpers.engine.runs import run_tasks
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text, tool_call, tool_names
from helpers.families.coding.tasks import load_house_suite
from helpers.families.coding.workspaces import prepare_workspace, remove_workspace, write_rules

pytestmark = pytest.mark.slow
KEY = "test-anthropic-KEY-4c1e9d"  # only ever sent to the scripted server
MARKER = "987.654"  # the argument of a `sleep` an agent leaves running: find it in /proc afterwards


@pytest.fixture(scope="module")
def house():
    return load_house_suite()


def agent_for(server, **settings):
    return ClaudeCodeAgent("claude-sonnet-4-5", base_url=server.base_url, api_key=settings.pop("api_key", KEY), **settings)


def run(tasks, agent, tmp_path, **kw):
    return run_tasks(tasks, agent, run_id=kw.pop("run_id", "train_0"), experiment="claude", progress=False,
                     results_root=tmp_path / "results", workers=kw.pop("workers", 2), **kw)


def processes_with(text: str) -> list[str]:
    """Command lines holding `text` of the processes this test worker started."""
    lines = [b" ".join(cmd).decode(errors="replace") for _, cmd in command_lines()]
    return [line for line in lines if text in line]


def test_the_rules_reach_the_model_through_claude_md_and_the_fix_is_the_tested_patch(house, tmp_path):
    tasks = house.head(2)
    rules = "\n".join(f"- {CONVENTIONS[c]['rule']}" for c in CONVENTIONS)
    with ScriptedModelServer(DryRunScript(tasks).script()) as server:
        df = run(tasks, agent_for(server), tmp_path, ruleset=rules)
        requests = server.model_requests("anthropic")
    assert df["status"].tolist() == ["completed", "completed"], df["error"].tolist()
    assert df["pass_or_fail"].tolist() == ["pass", "pass"], df["test_log"].tolist()  # the gold fix: rules were read
    assert df["agent"].tolist() == ["claude-code"] * 2
    for row, task in zip(df.itertuples(), tasks.itertuples()):
        assert "CLAUDE.md" not in row.output
        assert row.output.count("diff --git") == task.patch.count("diff --git")  # its own task's files only
        assert row.input_tokens > 0 and row.iterations == 2
    first = [r for r in requests if not any(m["role"] == "assistant" for m in r["messages"])]
    assert len(first) == 2 and {"Bash", "Write", "Edit"} <= set(tool_names(first[0]))
    assert all(0 < r["max_tokens"] <= config.AGENT_MAX_OUTPUT_TOKENS for r in first)  # the CLI's output cap is set
    for request in first:  # Claude Code sends CLAUDE.md as project instructions in the first user message
        assert CONVENTIONS["errors"]["rule"] in message_text(request, "user")
        assert CONVENTIONS["errors"]["rule"] not in message_text(request, "system")
        assert "Primary working directory" in message_text(request)


def test_without_rules_the_quick_fix_fails_and_the_trajectory_shows_the_shell_call(house, tmp_path):
    task = house.iloc[0].to_dict()
    workspace = prepare_workspace(task, scratch_dir("test-ws"))
    try:
        with ScriptedModelServer(DryRunScript(house.head(1)).script()) as server:
            write_rules(workspace, "CLAUDE.md", "")
            result = agent_for(server).run(task, workspace, "")
    finally:
        remove_workspace(workspace)
    assert result.status == "completed", result.error
    assert result.final_text.startswith("Done: applied the quick fix")
    assert [s["type"] for s in result.trajectory] == ["message", "tool_call", "tool_result", "message"]
    assert result.trajectory[1]["name"] == "Bash" and "git apply" in result.trajectory[1]["text"]
    assert result.usage["input_tokens"] > 0 and result.cost_usd > 0  # priced from our table


def test_the_key_is_neither_in_the_agents_commands_environment_nor_on_any_command_line(house, tmp_path):
    seen_lines: list[str] = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            seen_lines.extend(processes_with(KEY))
            time.sleep(0.05)

    steps = [Reply("Looking.", tool_calls=[tool_call("Bash", command="printenv > env.txt; cat /proc/$PPID/environ > parent_env.txt")]),
             Reply("Done.", delay_s=1.0)]
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ScriptedModelServer(Script([Rule(match=lambda r: bool(r.get("tools")), reply=steps)])) as server:
            df = run(house.head(1), agent_for(server), tmp_path, evaluate=False)
            sent = [r["authorization"] for r in server.requests]
    finally:
        done.set()
        watcher.join()
    assert df["status"].tolist() == ["completed"], df["error"].tolist()
    assert "env.txt" in df["output"][0] and "CLAUDE_CONFIG_DIR" in df["output"][0]  # the command ran, its output landed
    assert KEY not in df["output"][0]
    assert seen_lines == []
    assert sent and all(KEY in s for s in sent)  # yet every request carried it


def test_a_timeout_stops_the_run_and_everything_it_started(house, tmp_path):
    steps = [Reply("Starting.", tool_calls=[tool_call("Bash", command=f"(sleep {MARKER} &) ; echo started")]),
             Reply("Thinking...", delay_s=60)]
    with ScriptedModelServer(Script([Rule(match=lambda r: bool(r.get("tools")), reply=steps)])) as server:
        df = run(house.head(1), agent_for(server, timeout_s=8), tmp_path, evaluate=False)
    assert df["status"].tolist() == ["timeout"] and "8 s" in df["error"][0]  # not the 60 s the model would take
    assert processes_with(f"sleep {MARKER}") == []
    assert processes_with(str(claude_binary())) == []


def test_a_provider_4xx_ends_in_an_error_with_its_message(house, tmp_path):
    refusal = Reply(status=400, error_message="scripted refusal: this model is not enabled for the key")
    with ScriptedModelServer(Script([Rule(reply=refusal)])) as server:
        df = run(house.head(1), agent_for(server), tmp_path)
    assert df["status"].tolist() == ["error"]
    assert "scripted refusal: this model is not enabled" in df["error"][0]
    assert df["pass_or_fail"].tolist() == ["fail"]


def test_setup_problems_raise_before_any_task(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.setattr("helpers.core.config.read_env", lambda name: None)  # no .env either
    with pytest.raises(MissingCredentials, match="ANTHROPIC_API_KEY"):
        ClaudeCodeAgent("claude-sonnet-4-5").check()
    with pytest.raises(ValueError, match="not a Claude model"):
        ClaudeCodeAgent("gpt-4.1", api_key="k").check()
    with pytest.raises(ValueError, match="mode"):
        ClaudeCodeAgent(mode="review")
    assert ClaudeCodeAgent.installed().startswith("Claude Code 2.1.328")


def test_plan_mode_answers_with_a_plan_and_edits_nothing(house, tmp_path):
    tasks = house.head(1)
    rules = "\n".join(f"- {CONVENTIONS[c]['rule']}" for c in CONVENTIONS)
    with ScriptedModelServer(DryRunScript(tasks).script()) as server:
        df = run(tasks, agent_for(server, mode="plan"), tmp_path, ruleset=rules)
        first = server.model_requests("anthropic")[0]
    assert df["status"].tolist() == ["completed"] and df["mode"].tolist() == ["plan"]
    assert df["output"][0].startswith(f"Plan for {tasks.instance_id[0]}")
    assert all(CONVENTIONS[c]["title"] in df["output"][0] for c in tasks.conventions[0])  # the rules reached it
    assert df["pass_or_fail"].tolist() == ["not_evaluated"]
    assert "plan mode is active" in message_text(first, "user").lower()
