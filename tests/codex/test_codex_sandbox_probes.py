"""The sandbox probes (tests/sandbox_probes.py) run by the real Codex CLI through its shell tool: nothing of the
key, the hidden tests or the user's files comes back, and nothing it starts survives."""

import pytest
from sandbox_probes import PROBE_SCRIPT, SECRET, check_nothing_came_back

from codex import CodexAgent
from helpers.core.sandbox import unavailable_reason
from helpers.engine.runs import run_tasks
from helpers.families.coding.house_suite import load_house_suite
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")


def test_probes_inside_a_run_find_no_key_no_hidden_tests_no_outside_files_and_leave_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # as a notebook kernel started with the key holds it
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    steps = [Reply("Probing.", tool_calls=[tool_call("exec_command", cmd=PROBE_SCRIPT)]), Reply("Done.")]
    script = Script([Rule(match=lambda request: bool(request.get("tools")), reply=steps)], default=Reply("Done."))
    with ScriptedModelServer(script) as server, \
            Gateway({"agent": Upstream(server.base_url, SECRET, "openai-compatible")}) as gateway:
        agent = CodexAgent("gpt-5", base_url=server.base_url, api_key=SECRET)
        rows = run_tasks(load_house_suite().head(1), agent, run_id="probes", experiment="probes", progress=False,
                         results_root=tmp_path, evaluate=False, gateway=gateway)
        sent = [r.get("authorization") or r.get("x-api-key") or "" for r in server.requests]
    check_nothing_came_back(rows, tmp_path, sent)
