"""What only Cline does as an agent, read from the agent contract's shared runs (tests/agent_runs.py; the contract
itself: tests/helpers/agents/test_agent_contract.py): .clinerules as a section of its system message (none without
rules), only the gateway's run token in its commands' environment, its trajectory taken from its conversation at the
gateway."""

import json

import pytest
from agent_runs import first_requests
from sandbox_probes import added

from helpers.families.coding.house_suite import CONVENTIONS
from helpers.llm.scripted_server import message_text

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cline")]  # beside its contract runs (one worker)


def test_the_rules_are_a_clinerules_section_of_its_system_message_and_no_rules_are_none(agent_runs):
    taught = [message_text(r, "system") for r in first_requests(agent_runs.fix("cline").requests)
              if CONVENTIONS["errors"]["rule"] in message_text(r)]
    assert taught and all("## .clinerules\n" in system for system in taught)
    untaught = message_text(first_requests(agent_runs.probe("cline").requests)[0], "system")
    assert ".clinerules" not in untaught


def test_its_commands_hold_only_a_run_token_and_its_trajectory_is_its_conversation_at_the_gateway(agent_runs):
    run = agent_runs.probe("cline")
    assert "OPENAI_API_KEY=gw-" in added(run.rows["output"][0], "env.txt")  # the gateway's token, never the key
    turns = json.loads(next(run.results.rglob(f"trajectories/probes/{run.rows.instance_id[0]}.json")).read_text())
    assert any(call["name"] == "run_commands" for turn in turns for call in turn["tool_calls"])
    assert "ran: " in run.rows["trajectory_summary"][0]
