"""The sandbox probes (tests/sandbox_probes.py) run by the real Codex CLI through its shell tool: nothing of the
key, the hidden tests or the user's files comes back, and nothing it starts survives."""

import pytest
from sandbox_probes import (PROBE_SCRIPT, SECRET, check_nothing_came_back, probe_run,
                            check_only_the_gateway_was_reached, fetch_script, loopback_service, scripted_run)

from codex import CodexAgent
from helpers.core.sandbox import unavailable_reason
from helpers.llm.scripted_server import tool_call

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")


def test_probes_inside_a_run_find_no_key_no_hidden_tests_no_outside_files_and_leave_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # as a notebook kernel started with the key holds it
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    rows, sent = probe_run(lambda base_url: CodexAgent("gpt-5", base_url=base_url, api_key=SECRET),
                           tool_call("exec_command", cmd=PROBE_SCRIPT), "openai-compatible", tmp_path)
    check_nothing_came_back(rows, tmp_path, sent)


def test_a_command_in_a_run_reaches_no_loopback_service_while_its_streamed_model_calls_complete(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    with loopback_service() as service:
        shell = tool_call("exec_command", cmd=fetch_script(service.server_port))
        rows, requests = scripted_run(lambda base_url: CodexAgent("gpt-5", base_url=base_url, api_key=SECRET), shell,
                                      "openai-compatible", tmp_path)
    check_only_the_gateway_was_reached(rows, requests, service)
