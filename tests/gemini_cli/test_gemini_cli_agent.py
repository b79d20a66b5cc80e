"""What only the Gemini CLI does, read from the agent contract's shared runs (tests/agent_runs.py; the contract
itself: tests/helpers/agents/test_agent_contract.py): Gemini's API by model path, its tools,
its settings, the key's variable kept from its commands; and, with no run, its upstream: Google's by default, an
OpenAI-compatible server's (carried as chat completions by the gateway) when only that is configured."""

import pytest
from agent_runs import first_requests, spec_of
from sandbox_probes import added

from gemini_cli import GeminiCliAgent
from helpers.core.config import MissingCredentials
from helpers.llm.scripted_server import tool_names

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gemini-cli")]  # beside its contract runs (one worker)
MODEL = spec_of("gemini-cli").model


def test_it_calls_its_model_by_path_offers_its_tools_and_keeps_its_settings_out_of_the_patch(agent_runs):
    run = agent_runs.fix("gemini-cli")
    model_calls = [r for r in run.requests if r.get("api") == "gemini"]
    assert model_calls and all(r["path"].startswith(f"/v1beta/models/{MODEL}:") for r in model_calls)
    assert {"run_shell_command", "write_file", "replace"} <= set(tool_names(first_requests(run.requests)[0]))
    assert not run.rows["output"].str.contains("settings.json").any()  # its settings are not part of the patch


def test_its_commands_see_its_settings_but_not_the_keys_variable(agent_runs):
    patch = agent_runs.probe("gemini-cli").rows["output"][0]
    environment, settings = added(patch, "env.txt"), added(patch, "settings.txt")
    assert "GOOGLE_GEMINI_BASE_URL=" in environment and "gemini.js" in added(patch, "probe_proc.txt")
    assert "GEMINI_API_KEY" not in environment  # redacted from the commands' environment (the gateway token too)
    assert '"usageStatisticsEnabled": false' in settings and '"enableAutoUpdate": false' in settings


def test_the_pinned_cli_is_installed_and_calls_google_by_default():
    assert GeminiCliAgent.installed().startswith("Gemini CLI 0.61.0")
    assert GeminiCliAgent("x", api_key="k").upstream() == ("https://generativelanguage.googleapis.com", "k", "gemini")


def test_with_only_an_openai_compatible_server_its_calls_go_there_carried_as_chat_completions(monkeypatch):
    local = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1/", "OPENAI_API_KEY": "local"}
    monkeypatch.setattr("helpers.core.config.read_env", local.get)
    agent = GeminiCliAgent("qwen2.5-coder")
    agent.check_provider()  # any model that server serves: the session's model check asks it
    assert agent.upstream() == ("http://127.0.0.1:8080/v1", "local", "gemini-to-openai")
    with_gemini = {**local, "GEMINI_API_KEY": "g"}  # a Gemini key of its own wins: Google's API, as before
    monkeypatch.setattr("helpers.core.config.read_env", with_gemini.get)
    assert GeminiCliAgent(MODEL).upstream() == ("https://generativelanguage.googleapis.com", "g", "gemini")
    routed = GeminiCliAgent(MODEL).through_gateway("http://127.0.0.1:9/u/agent/v1", "gw-token", "gemini-to-openai")
    assert routed.upstream()[2] == "gemini"  # through the gateway the CLI speaks Gemini's API to it


def test_with_no_server_configured_it_says_in_one_line_what_to_set(monkeypatch):
    monkeypatch.setattr("helpers.core.config.read_env", {}.get)
    with pytest.raises(MissingCredentials) as error:
        GeminiCliAgent(MODEL).check()
    assert "GEMINI_API_KEY" in str(error.value) and "OPENAI_BASE_URL" in str(error.value)
    assert "\n" not in str(error.value) and "another AGENT" in str(error.value)
