"""A session decides where every model role goes: real providers, or the scripted dry run when no key is set."""

import httpx
import pytest

from helpers.core.config import MissingCredentials
from helpers.app.session import DRY_RUN_LABEL, open_session


@pytest.fixture
def no_keys(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
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
