"""What only Claude Code does, read from the agent contract's shared runs (tests/agent_runs.py; the contract itself:
tests/helpers/agents/test_agent_contract.py): the Messages API's wire, CLAUDE.md as project instructions in the first
user message, its config folder, its plan-mode reminder, its pinned version."""

import pytest
from agent_runs import FIX_RUN_OUTPUT_CAP, first_requests
from sandbox_probes import added

from claude_code import ClaudeCodeAgent
from helpers.core import config
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.llm.scripted_server import message_text, tool_names

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("claude-code")]  # beside its contract runs (one worker)


def test_its_first_requests_offer_its_tools_cap_the_output_and_carry_claude_md_as_project_instructions(agent_runs):
    first = first_requests(agent_runs.fix("claude-code").requests)
    assert {"Bash", "Write", "Edit"} <= set(tool_names(first[0]))
    # the CLI's output cap: PL_MAX_OUTPUT_TOKENS (set in the fix run, below AGENT_MAX_OUTPUT_TOKENS) governs it
    assert FIX_RUN_OUTPUT_CAP < config.AGENT_MAX_OUTPUT_TOKENS
    assert max(r["max_tokens"] for r in first) == FIX_RUN_OUTPUT_CAP and all(r["max_tokens"] > 0 for r in first)
    taught = [r for r in first if CONVENTIONS["errors"]["rule"] in message_text(r)]
    assert taught and all("Primary working directory" in message_text(r) for r in taught)


def test_its_commands_see_its_own_config_folder(agent_runs):
    assert "CLAUDE_CONFIG_DIR=" in added(agent_runs.probe("claude-code").rows["output"][0], "env.txt")


def test_plan_mode_is_its_own_reminder_in_the_user_message(agent_runs):
    first = first_requests(agent_runs.plan("claude-code").requests)[0]
    assert "plan mode is active" in message_text(first, "user").lower()


def test_the_pinned_cli_is_installed():
    assert ClaudeCodeAgent.installed().startswith("Claude Code 2.1.328")
