"""A session decides where every model role goes: real providers, or the scripted dry run when no key is set."""

import httpx
import pytest

from helpers.core.config import MissingCredentials
from helpers.app.session import DRY_RUN_LABEL, open_session


@pytest.fixture
def no_keys(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("helpers.core.config.REPO_ROOT", tmp_path)  # no .env to find


def test_without_a_key_every_role_goes_to_the_scripted_server_through_the_gateway_and_says_so(no_keys):
    session = open_session(phoenix=False)
    try:
        assert session.dry_run and session.label == DRY_RUN_LABEL
        judge, optimizer = session.judge_kwargs(), session.optimizer_kwargs()
        assert "/u/judge/" in judge["base_url"] and "/u/optimizer/" in optimizer["base_url"]
        answered = httpx.get(judge["base_url"] + "/models", headers={"Authorization": f"Bearer {judge['api_key']}"})
        assert answered.status_code == 200  # forwarded to the scripted server
        assert httpx.get(judge["base_url"] + "/models").status_code == 401  # no token, no model
        assert "SCRIPTED DRY RUN" in session.describe() and "SCRIPTED DRY RUN" in session.summary()
        scripted = session.agent_kwargs()["base_url"]
    finally:
        session.close()
    for url in (judge["base_url"], scripted):
        with pytest.raises(httpx.ConnectError):
            httpx.get(url + "/models", timeout=2)


def test_the_judge_and_the_optimizer_get_a_gateway_token_never_the_key(no_keys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key-123456789")
    session = open_session(phoenix=False)
    try:
        for settings in (session.judge_kwargs(), session.optimizer_kwargs()):
            assert "test-openai-key-123456789" not in str(settings) and "127.0.0.1" in str(settings)
        assert session.gateway.upstreams["agent"].kind == "openai" and "test-openai-key" not in repr(session.gateway)
    finally:
        session.close()


def test_asking_for_real_models_without_a_key_is_one_error_naming_what_to_set(no_keys):
    with pytest.raises(MissingCredentials) as error:
        open_session(dry_run=False, phoenix=False)
    assert "OPENAI_API_KEY" in str(error.value) and "ANTHROPIC_API_KEY" in str(error.value)


def test_a_key_in_the_environment_means_real_models_with_the_config_defaults(no_keys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123456789")
    session = open_session(phoenix=False, judge_model="gpt-4.1-mini")
    assert not session.dry_run and session.label == ""
    assert session.judge_model == "gpt-4.1-mini" and session.agent_model == "gpt-4.1"
    assert "sk-test" not in repr(session)


def test_anthropic_base_url_alone_sends_claude_codes_calls_and_claude_judges_to_that_server(no_keys, monkeypatch):
    import anthropic
    import openai

    from helpers.llm.scripted_server import Reply, Script, ScriptedModelServer

    with ScriptedModelServer(Script(default=Reply("scripted answer"))) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.origin)  # Anthropic-style: no /v1
        monkeypatch.setenv("ANTHROPIC_API_KEY", "local-proxy-key-123")
        with open_session(agent="claude-code", judge_model="claude-judge", optimizer_model="claude-opt",
                          phoenix=False) as session:
            assert not session.dry_run
            agent = session.gateway.upstreams["agent"]
            assert (agent.url, agent.kind) == (server.origin, "anthropic")
            token = session.gateway.issue_token("agent", role="agent")
            client = anthropic.Anthropic(base_url=session.gateway.url_for("agent"), api_key=token, max_retries=0)
            said = client.messages.create(model=session.agent_model, max_tokens=50, messages=[{"role": "user", "content": "hi"}])
            judge = session.judge_kwargs()
            judged = openai.OpenAI(base_url=judge["base_url"], api_key=judge["api_key"], max_retries=0).chat.completions.create(
                model="claude-judge", messages=[{"role": "user", "content": "why?"}])
            assert server.origin in session.describe()
    assert said.content[0].text == "scripted answer" and judged.choices[0].message.content == "scripted answer"
    assert [r["api"] for r in server.requests] == ["anthropic", "chat"]  # both reached it: nothing went elsewhere


def test_with_only_anthropic_base_url_an_openai_judge_is_one_error_naming_what_to_set(no_keys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "local-proxy-key-123")
    with pytest.raises(MissingCredentials) as error:
        open_session(agent="claude-code", phoenix=False)  # the default judge is an OpenAI model
    assert "judge" in str(error.value) and "OPENAI_BASE_URL" in str(error.value) and "JUDGE_MODEL" in str(error.value)
