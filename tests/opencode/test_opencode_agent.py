"""What only opencode does, read from the agent contract's shared runs (tests/agent_runs.py; the contract itself:
tests/helpers/agents/test_agent_contract.py): its tools on a GPT model, AGENTS.md in its system message, its config
(the key as a pipe, no auto-update, no sharing) and its npm that fetches nothing, its pinned version."""

import pytest
from agent_runs import FIX_RUN_OUTPUT_CAP, first_requests
from sandbox_probes import added

from helpers.families.coding.house_suite import CONVENTIONS
from helpers.llm.scripted_server import message_text, tool_names
from opencode import OpencodeAgent

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("opencode")]  # beside its contract runs (one worker)


def test_on_a_gpt_model_it_offers_apply_patch_reads_agents_md_in_its_system_message_and_keeps_its_config_out(agent_runs):
    run = agent_runs.fix("opencode")
    first = first_requests(run.requests)
    # PL_MAX_OUTPUT_TOKENS (set in the fix run) governs its output cap, its title request's too
    assert {r.get("max_completion_tokens") or r.get("max_tokens") for r in first} == {FIX_RUN_OUTPUT_CAP}
    assert {"bash", "apply_patch", "read"} <= set(tool_names(first[0]))
    assert any(CONVENTIONS["errors"]["rule"] in message_text(r, "system") for r in first)
    assert not run.rows["output"].str.contains("opencode.json").any()  # its config is not part of the patch


def test_its_config_names_a_pipe_for_the_key_and_turns_off_updates_sharing_and_npm_fetches(agent_runs):
    patch = agent_runs.probe("opencode").rows["output"][0]
    environment, config = added(patch, "env.txt"), added(patch, "config.txt")
    assert "OPENCODE_CONFIG=" in environment and "XDG_CONFIG_HOME=" in environment
    assert '"apiKey": "{file:/dev/fd/' in config  # the config names a pipe, not the key
    assert "OPENCODE_DISABLE_AUTOUPDATE=1" in environment and '"autoupdate": false' in config
    assert '"share": "disabled"' in config
    assert "npm_config_offline=true" in environment and ".npm" not in added(patch, "home.txt")  # its npm fetched nothing


def test_the_pinned_cli_is_installed():
    assert OpencodeAgent.installed().startswith("opencode 1.18.33")
