"""The agent contract, for every registered agent (helpers.core.registry): the real CLI, the scripted model server,
the gateway, the sandbox and the run engine. The rules reach the model and the fix is the tested patch; without its
rules a task gets the quick fix, which fails; a provider 4xx is one named error and a server error retried away is
none; the key is on no command line and nowhere the agent's commands can look; a timeout stops the run and all it
started; setup problems raise before any task; plan mode, where the agent has one, plans and edits nothing.

The runs are shared (tests/agent_runs.py: one fix run, one probe run, one plan run per agent and worker); what an
agent must say beyond its class's declarations is its Spec there. Each agent's own tests (tests/<agent>/) read the
same runs for what only that agent does.
"""

import os
import re
from pathlib import Path

import pytest
from agent_runs import MODEL_APIS, REFUSAL, agent_at, agents, all_gone, first_requests, processes_with, spec_of
from sandbox_probes import SECRET, added, check_nothing_came_back, check_only_the_gateway_was_reached

from helpers.core.config import MissingCredentials
from helpers.core.registry import agent_class, make_agent
from helpers.engine.runs import run_tasks
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.families.coding.tasks import load_house_suite
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text
from helpers.stand_ins.file_edit_tools import ShellTool, choose_adapter, offered_tools

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", agents())
def test_the_rules_reach_the_model_through_its_rules_file_and_the_fix_is_the_tested_patch(name, agent_runs):
    run, spec, rules_file = agent_runs.fix(name), spec_of(name), agent_class(name).rules_file
    fixed = run.rows.head(2)
    assert fixed["status"].tolist() == ["completed"] * 2, fixed["error"].tolist()
    assert fixed["pass_or_fail"].tolist() == ["pass"] * 2, fixed["test_log"].tolist()  # the gold fix: rules were read
    assert run.rows["agent"].tolist() == [name] * 4  # made by its registered name
    for row, task in zip(fixed.itertuples(), run.tasks.itertuples()):
        assert rules_file not in row.output
        assert row.output.count("diff --git") == task.patch.count("diff --git")  # its own task's files only
        assert row.input_tokens > 0 and row.cost_usd > 0 and row.iterations == spec.turns  # metered, priced
    # it edited with the tool of its own that the dry run picked from those it offered (its dry_run_tools)
    offered = offered_tools(next(r["body"] for r in run.requests if r.get("api") in MODEL_APIS and r["body"].get("tools")))
    edit_tool = choose_adapter(agent_class(name).dry_run_tools, offered).tool
    assert fixed["trajectory_summary"].str.contains(f"tools: {edit_tool} x").all(), fixed["trajectory_summary"].tolist()
    taught = [r for r in first_requests(run.requests) if any(i in message_text(r, "user") for i in fixed.instance_id)]
    assert len(taught) >= 2
    for request in taught:  # the rules file, in the message its agent puts it in
        assert CONVENTIONS["errors"]["rule"] in message_text(request, spec.rules_in)
        if spec.rules_in == "user":
            assert CONVENTIONS["errors"]["rule"] not in message_text(request, "system")


@pytest.mark.parametrize("name", agents())
def test_without_the_rules_a_task_needs_the_quick_fix_fails_its_hidden_tests(name, agent_runs):
    run = agent_runs.fix(name)
    quick = run.rows.iloc[2]
    assert quick["status"] == "completed", quick["error"]
    assert quick["pass_or_fail"] == "fail", quick["test_log"]
    assert quick["output"].count("diff --git") == run.tasks.naive_patch[2].count("diff --git")
    summary = quick["trajectory_summary"]
    # its answer after the edit, where its trajectory has one (mini-swe-agent ends on its submit command; Cline's
    # trajectory is its conversation at the gateway, which holds no last answer)
    assert "ended: Done: applied the quick fix" in summary or "ended: (no final message)" in summary, summary


@pytest.mark.parametrize("name", agents())
def test_a_provider_4xx_ends_in_a_one_line_error_with_its_message(name, agent_runs):
    refused = agent_runs.fix(name).rows.iloc[3]
    assert refused["status"] == "error" and refused["pass_or_fail"] == "fail"
    assert REFUSAL in refused["error"] and "\n" not in refused["error"], refused["error"]
    assert refused["output"] == ""  # nothing was changed


@pytest.mark.parametrize("name", agents())
def test_a_server_error_retried_away_is_not_an_error(name, agent_runs):
    run = agent_runs.fix(name)
    assert run.outage.fired == 1  # one model call got a 500: the gateway asked again
    assert run.rows["status"].tolist()[:3] == ["completed"] * 3, run.rows["error"].tolist()


@pytest.mark.parametrize("name", agents())
def test_the_key_is_on_no_command_line_yet_every_model_call_carried_it_upstream_metered(name, agent_runs):
    run = agent_runs.fix(name)
    assert run.seen_key == []  # watched on every command line of this worker's processes while it ran
    sent = [r["authorization"] for r in run.requests if r.get("api") in MODEL_APIS]
    assert sent and all(run.key in s for s in sent)
    assert run.calls and sum(c["input_tokens"] or 0 for c in run.calls) >= run.rows["input_tokens"].sum() > 0


@pytest.mark.parametrize("name", agents())
def test_probes_inside_a_run_find_no_key_no_hidden_tests_no_outside_files_and_leave_nothing(name, agent_runs):
    run = agent_runs.probe(name)
    sent = [r.get("authorization") or "" for r in run.requests]
    check_nothing_came_back(run.rows, run.results, sent)
    assert run.seen_key == []  # nor on a command line of its processes, seen from outside
    environment = added(run.rows["output"][0], "env.txt")
    assert "PATH=" in environment and SECRET not in environment  # the command's own environment


@pytest.mark.parametrize("name", agents())
def test_a_command_in_a_run_reaches_no_loopback_service_while_its_model_calls_complete(name, agent_runs):
    run, spec = agent_runs.probe(name), spec_of(name)
    check_only_the_gateway_was_reached(run.rows, run.requests, run.service, spec.turns, spec.streams)


@pytest.mark.parametrize("name", agents())
def test_the_recorded_trajectory_holds_the_shell_call_and_its_output(name, agent_runs):
    run = agent_runs.probe(name)
    records = "".join(p.read_text(errors="replace") for p in Path(run.results).rglob("*.json"))
    assert "echo all probed" in records  # the call
    assert "all probed" in records.replace("echo all probed", "")  # and what it printed
    assert run.rows["input_tokens"][0] > 0


@pytest.mark.parametrize("name", agents())
def test_a_timeout_stops_the_run_and_everything_it_started(name, tmp_path):
    spec, marker = spec_of(name), f"9{os.getpid()}.25"  # a `sleep` it leaves running, found by its argument
    shell = next(tool for tool in agent_class(name).dry_run_tools if isinstance(tool, ShellTool))
    # the command alone: a step that does not end the run (mini-swe-agent's own step also submits)
    start = ShellTool.step(shell, f"(sleep {marker} > /dev/null 2>&1 &) ; echo started")
    steps = [Reply("Starting.", tool_calls=start), Reply("Thinking...", delay_s=60)]
    with ScriptedModelServer(Script([Rule(match=lambda r: bool(r.get("tools")), reply=steps)],
                                    default=Reply("Done."))) as server:
        rows = run_tasks(load_house_suite().head(1), agent_at(name, server, "test-KEY-t", timeout_s=spec.timeout_s),
                         run_id="timeout", experiment="timeout", progress=False, results_root=tmp_path, evaluate=False)
    error = rows["error"][0]
    assert rows["status"].tolist() == ["timeout"] and f"{spec.timeout_s:g} s" in error, error  # not the model's 60 s
    assert "\n" not in error
    assert all_gone(f"sleep {marker}")  # anywhere on the machine
    binary = str(agent_class(name).binary())
    assert all_gone(binary, anywhere=False), processes_with(binary)  # of this worker's (other workers run it too)


@pytest.mark.parametrize("name", agents())
def test_setup_problems_raise_before_any_task(name, monkeypatch, tmp_path):
    monkeypatch.setattr("helpers.core.config.read_env", lambda variable: None)  # no .env either
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
                     "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    spec = spec_of(name)
    with pytest.raises(MissingCredentials, match="_API_KEY"):
        run_tasks(load_house_suite().head(1), make_agent(name, model=spec.model), run_id="x", progress=False,
                  results_root=tmp_path)
    assert list(tmp_path.rglob("*.jsonl")) == []  # no task started
    with pytest.raises(ValueError, match=re.escape(repr(spec.foreign_model))):
        make_agent(name, model=spec.foreign_model, api_key="k").check()
    with pytest.raises(ValueError, match="mode"):
        make_agent(name, mode="review")
    if not agent_class(name).plan_mode:
        with pytest.raises(ValueError, match="no headless plan mode"):
            make_agent(name, mode="plan")
    assert str(agent_class(name).binary().relative_to(agent_class(name).package_dir.parent)) in agent_class(name).installed()


@pytest.mark.parametrize("name", agents(needs_plan_mode=True))
def test_plan_mode_answers_with_a_plan_and_edits_nothing(name, agent_runs):
    run = agent_runs.plan(name)
    rows = run.rows
    assert rows["status"].tolist() == ["completed"] and rows["mode"].tolist() == ["plan"], rows["error"].tolist()
    assert rows["output"][0].startswith(f"Plan for {run.tasks.instance_id[0]}")
    assert all(CONVENTIONS[c]["title"] in rows["output"][0] for c in run.tasks.conventions[0])  # the rules reached it
    assert rows["pass_or_fail"].tolist() == ["not_evaluated"] and "diff --git" not in rows["output"][0]
