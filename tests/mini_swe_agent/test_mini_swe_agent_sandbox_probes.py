"""The sandbox probes (tests/sandbox_probes.py) run by the real mini-swe-agent through its bash tool: nothing of
the key, the hidden tests or the user's files comes back, and nothing it starts survives."""

import pytest
from sandbox_probes import (LOOPBACK_SECRET, PROBE_SCRIPT, SECRET, added, check_nothing_came_back, fetch_script,
                            loopback_service, probe_run, scripted_run)

from helpers.core.sandbox import unavailable_reason
from helpers.llm.scripted_server import tool_call
from mini_swe_agent import MiniSweAgent
from mini_swe_agent.agent import PACKAGE_DIR, SUBMIT

pytestmark = [
    pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}"),
    pytest.mark.skipif(not (PACKAGE_DIR / MiniSweAgent.binary_path).exists(),
                       reason="mini-swe-agent is not installed in mini_swe_agent/.venv: run `make mini-swe-agent`"),
]


def test_probes_inside_a_run_find_no_key_no_hidden_tests_no_outside_files_and_leave_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # as a notebook kernel started with the key holds it
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    # mini-swe-agent ends a run only on its submit command: the probes' command submits first (its output's
    # first line), so the run ends once they ran
    probes = tool_call("bash", command=f"{SUBMIT} ; {PROBE_SCRIPT}")
    rows, sent = probe_run(lambda base_url: MiniSweAgent("gpt-5", base_url=base_url, api_key=SECRET), probes,
                           "openai-compatible", tmp_path)
    check_nothing_came_back(rows, tmp_path, sent)


def test_a_command_in_a_run_reaches_no_loopback_service_while_its_model_calls_complete(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with loopback_service() as service:
        fetch = tool_call("bash", command=f"{SUBMIT} ; {fetch_script(service.server_port)}")
        rows, requests = scripted_run(lambda base_url: MiniSweAgent("gpt-5", base_url=base_url, api_key=SECRET), fetch,
                                      "openai-compatible", tmp_path)
    # check_only_the_gateway_was_reached, but for a client that does not stream (litellm's plain chat completions)
    assert rows["status"][0] == "completed", rows["error"][0]
    fetched = added(rows["output"][0], "probe_net.txt")
    assert "Connection refused" in fetched and fetched.endswith("exit=1"), fetched
    assert LOOPBACK_SECRET not in rows["output"][0] and service.hits == []
    assert [r["api"] for r in requests if r["body"].get("tools")] == ["chat"]  # the model call went through
