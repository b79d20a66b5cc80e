"""What only the Codex CLI does, read from the agent contract's shared runs (tests/agent_runs.py; the contract itself:
tests/helpers/agents/test_agent_contract.py): the Responses API's wire with function tools only, AGENTS.md as
project instructions in a user message, its home folder, its pinned version."""

import pytest
from agent_runs import first_requests
from sandbox_probes import added

from codex import CodexAgent
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.llm.scripted_server import message_text, tool_names

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("codex")]  # beside its contract runs (one worker)


def test_its_first_requests_offer_only_function_tools_and_carry_agents_md_as_project_instructions(agent_runs):
    run = agent_runs.fix("codex")
    first = first_requests(run.requests)
    assert "exec_command" in tool_names(first[0])
    # only function tools: no hosted web_search or sub-agent namespace, which other servers skip with a warning
    raw = [r["body"] for r in run.requests if r.get("api") == "responses" and r["body"].get("tools")]
    assert raw and all({tool["type"] for tool in body["tools"]} == {"function"} for body in raw)
    taught = [r for r in first if CONVENTIONS["errors"]["rule"] in message_text(r)]
    assert taught and all("# AGENTS.md instructions for" in message_text(r, "user") for r in taught)


def test_its_commands_see_its_own_home(agent_runs):
    assert "CODEX_HOME=" in added(agent_runs.probe("codex").rows["output"][0], "env.txt")


def test_the_pinned_cli_is_installed():
    assert CodexAgent.installed().startswith("Codex CLI 0.169.0")
