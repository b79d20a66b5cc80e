"""Probes an attacker would run inside an agent run, run by the real Cline CLI (the scripted model asks it
to): nothing of the key, the hidden tests or the user's files comes back, and nothing it starts survives.

Needs bubblewrap (as every run with a real model does); skipped, saying so, where it cannot start.
"""

import pytest
from sandbox_probes import (PROBE_SCRIPT, SECRET, check_nothing_came_back,
                            check_only_the_gateway_was_reached, fetch_script, loopback_service, scripted_run)

from cline import ClineAgent, run_act
from helpers.core.sandbox import unavailable_reason
from helpers.families.coding.house_suite import load_house_suite
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")


def test_probes_inside_a_cline_run_find_no_key_no_hidden_tests_no_outside_files_and_leave_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # as a notebook kernel started with the key holds it
    script = Script([Rule(reply=[Reply("Probing.", tool_calls=[tool_call("run_commands", commands=[PROBE_SCRIPT])]),
                                 Reply("Done.")])])
    with ScriptedModelServer(script) as server, \
            Gateway({"agent": Upstream(server.base_url, SECRET, "openai-compatible")}) as gateway:
        rows = run_act(tasks=load_house_suite().head(1), run_id="probes", model="gpt-4.1", base_url=server.base_url,
                       api_key=SECRET, results_root=tmp_path, progress=False, gateway=gateway, evaluate=False)
        sent = [r["authorization"] for r in server.requests]
    check_nothing_came_back(rows, tmp_path, sent)


def test_a_command_in_a_run_reaches_no_loopback_service_while_its_streamed_model_calls_complete(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    with loopback_service() as service:
        shell = tool_call("run_commands", commands=[fetch_script(service.server_port)])
        rows, requests = scripted_run(lambda base_url: ClineAgent("gpt-4.1", base_url=base_url, api_key=SECRET), shell,
                                      "openai-compatible", tmp_path)
    check_only_the_gateway_was_reached(rows, requests, service)
