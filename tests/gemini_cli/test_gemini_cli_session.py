"""A session with AGENT="gemini-cli": its scripted dry run sends the agent's calls to the scripted server as a
Gemini upstream, the model check reads Gemini's model list through the gateway, and a task run through the
session's gateway completes with the tested patch."""

import pytest

from helpers.app.session import open_session
from helpers.core.registry import make_agent
from helpers.engine.runs import run_tasks
from helpers.families.coding.tasks import load_house_suite
from helpers.llm.model_list import NoModelList, served_models

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gemini-cli")]


def test_a_dry_run_session_sends_the_gemini_cli_to_the_scripted_server_as_gemini(tmp_path):
    tasks = load_house_suite().head(1)
    with open_session(dry_run=True, agent="gemini-cli", phoenix=False, dry_run_tasks=tasks) as session:
        assert session.gateway.upstreams["agent"].kind == "gemini"
        assert session.gateway.upstreams["judge"].kind != "gemini"
        assert not any("skipped" in note and "/u/agent" in note for note in session.model_check or [])
        agent = make_agent("gemini-cli", model=session.agent_model, base_url=session.base_url,
                           api_key=session.api_key, timeout_s=120)
        rows = run_tasks(tasks, agent, run_id="train_0", experiment="gemini-dry", progress=False,
                         gateway=session.gateway, results_root=tmp_path / "results")
    assert rows["status"].tolist() == ["completed"], rows["error"].tolist()
    assert "diff --git" in rows["output"][0] and rows["input_tokens"][0] > 0  # its write_file calls, applied


def test_served_models_reads_a_gemini_model_list_and_says_why_when_it_cannot():
    with open_session(dry_run=True, agent="gemini-cli", phoenix=False, gateway=False, check_models=False) as session:
        origin = session.base_url.removesuffix("/v1")
        assert "scripted-dry-run" in served_models(origin, "k", "gemini")
    with pytest.raises(NoModelList, match="could not be asked"):
        served_models("http://127.0.0.1:9", "k", "gemini")
