"""The sandbox probes (tests/sandbox_probes.py) run by the real Gemini CLI through its run_shell_command tool:
nothing of the key, the hidden tests or the user's files comes back, nothing it starts survives, and with no
network but the gateway (the sandbox's own namespace) the run still completes: nothing is fetched at run time."""

import pytest
from sandbox_probes import (PROBE_SCRIPT, SECRET, check_nothing_came_back, probe_run,
                            check_only_the_gateway_was_reached, fetch_script, loopback_service, scripted_run)

from gemini_cli import GeminiCliAgent
from helpers.core.sandbox import unavailable_reason
from helpers.llm.scripted_server import tool_call

pytestmark = [pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}"),
              pytest.mark.xdist_group("gemini-cli")]  # beside the timeout test's machine-wide check


def agent_at(base_url):
    return GeminiCliAgent("gemini-2.5-pro", base_url=base_url, api_key=SECRET)


def test_probes_inside_a_run_find_no_key_no_hidden_tests_no_outside_files_and_leave_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)  # as a notebook kernel started with the key holds it
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    rows, sent = probe_run(agent_at, tool_call("run_shell_command", command=PROBE_SCRIPT), "gemini", tmp_path)
    check_nothing_came_back(rows, tmp_path, sent)


def test_a_command_in_a_run_reaches_no_loopback_service_while_its_streamed_model_calls_complete(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    with loopback_service() as service:
        shell = tool_call("run_shell_command", command=fetch_script(service.server_port))
        rows, requests = scripted_run(agent_at, shell, "gemini", tmp_path)
    check_only_the_gateway_was_reached(rows, requests, service)
