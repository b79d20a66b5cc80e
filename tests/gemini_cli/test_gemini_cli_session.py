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


def test_with_only_an_openai_compatible_server_the_cli_runs_through_the_gateway_as_chat_completions(tmp_path,
                                                                                                   monkeypatch):
    """The real CLI, speaking Gemini's API to the gateway, which carries each call to the scripted server's chat
    completions (its Gemini side never asked) and each answer back: the task completes with the tested patch. The
    server is given as open_session(base_url=) alone (OPENAI_BASE_URL's route: tests/helpers/app/test_session.py)."""
    from helpers.core.config import SCRIPTED_MODEL
    from helpers.stand_ins.dry_run import start_dry_run_server

    tasks = load_house_suite().head(1)
    server = start_dry_run_server(tasks, "gemini-cli")
    try:
        for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "OPENAI_BASE_URL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("OPENAI_API_KEY", "scripted-server-key-0123")
        with open_session(dry_run=False, agent="gemini-cli", agent_model=SCRIPTED_MODEL, judge_model=SCRIPTED_MODEL,
                          optimizer_model=SCRIPTED_MODEL, base_url=server.base_url, phoenix=False) as session:
            assert session.gateway.upstreams["agent"].kind == "gemini-to-openai" and session.model_check == []
            agent = make_agent("gemini-cli", **session.agent_kwargs(), timeout_s=120)
            rows = run_tasks(tasks, agent, run_id="train_0", experiment="gemini-chat", progress=False,
                             gateway=session.gateway, results_root=tmp_path / "results")
            calls = session.gateway.calls(experiment="gemini-chat")
    finally:
        server.stop()
    assert rows["status"].tolist() == ["completed"], rows["error"].tolist()
    assert "diff --git" in rows["output"][0] and rows["input_tokens"][0] > 0  # its write_file call, applied
    assert len(calls) >= 2 and all(c["path"].startswith("/v1/v1beta/models/") for c in calls)
    asked = [r for r in server.requests if r["api"] in ("gemini", "chat")]
    assert {r["api"] for r in asked} == {"chat"} and any(m["role"] == "tool" for m in asked[-1]["body"]["messages"])
