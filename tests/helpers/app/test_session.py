"""A session decides where every model role goes: real providers, or the scripted dry run when no key is set."""

import httpx
import pytest

from helpers.core import config
from helpers.core.config import MissingCredentials
from helpers.app.session import DRY_RUN_LABEL, default_agent_model, open_session
from helpers.llm.model_list import ModelNotServed
from helpers.llm.scripted_server import Reply, Script, ScriptedModelServer


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
    session = open_session(phoenix=False, check_models=False)  # (OpenAI itself is not asked from a test)
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
    with open_session(phoenix=False, judge_model="gpt-4.1-mini", check_models=False) as session:
        assert not session.dry_run and session.label == ""
        assert session.judge_model == "gpt-4.1-mini" and session.agent_model == default_agent_model(config.AGENT)
        assert session.optimizer_model == config.OPTIMIZER_MODEL and "sk-test" not in repr(session)
        assert "model check:   not done" in session.describe()


def test_anthropic_base_url_alone_sends_claude_codes_calls_and_claude_judges_to_that_server(no_keys, monkeypatch):
    import anthropic
    import openai

    served = ["claude-agent", "claude-judge", "claude-opt"]
    with ScriptedModelServer(Script(default=Reply("scripted answer")), models=served) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.origin)  # Anthropic-style: no /v1
        monkeypatch.setenv("ANTHROPIC_API_KEY", "local-proxy-key-123")
        with open_session(agent="claude-code", agent_model="claude-agent", judge_model="claude-judge",
                          optimizer_model="claude-opt", phoenix=False) as session:
            assert session.model_check == []  # its model list, asked as Anthropic's (agent) and OpenAI's (roles)
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


def test_a_google_key_alone_runs_the_gemini_cli_with_a_gemini_judge_and_optimizer_on_googles_endpoints(
        no_keys, monkeypatch):
    import openai

    served = ["gemini-agent", "gemini-judge", "gemini-opt"]
    with ScriptedModelServer(Script(default=Reply("scripted answer")), models=served) as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.origin)  # stands in for generativelanguage.googleapis.com
        monkeypatch.setenv("GOOGLE_API_KEY", "google-key-123456789")
        with open_session(agent="gemini-cli", agent_model="gemini-agent", judge_model="gemini-judge",
                          optimizer_model="gemini-opt", phoenix=False) as session:
            assert not session.dry_run and session.model_check == []  # Gemini's list, and the OpenAI-style one
            upstreams = session.gateway.upstreams
            assert (upstreams["agent"].url, upstreams["agent"].kind) == (server.origin, "gemini")
            assert (upstreams["judge"].url, upstreams["judge"].kind) == (server.origin + "/v1beta/openai",
                                                                         "openai-compatible")
            judge = session.judge_kwargs()
            assert "google-key" not in str(judge)
            judged = openai.OpenAI(base_url=judge["base_url"], api_key=judge["api_key"], max_retries=0).chat.completions.create(
                model="gemini-judge", messages=[{"role": "user", "content": "why?"}])
            assert session.usage(role="judge")["input_tokens"] > 0  # metered as a chat completion, not as Gemini
    assert judged.choices[0].message.content == "scripted answer"
    call = server.requests[-1]
    assert (call["path"], call["api"]) == ("/v1beta/openai/chat/completions", "chat")
    assert call["authorization"] == "Bearer google-key-123456789"  # the gateway put the key on, the judge never had it


def test_a_gemini_only_agent_given_every_roles_openai_server_has_its_calls_carried_there_and_says_so(
        no_keys, monkeypatch, tmp_path):
    """base_url= (no OPENAI_BASE_URL) is every role's OpenAI-compatible server, the Gemini CLI's too: the gateway
    carries its Gemini calls there as chat completions, with the server's key (never Google's, though one is set),
    the session says so, and without a gateway it is one error before any work. OPENAI_BASE_URL alone, the same."""
    from helpers.core.registry import make_agent

    monkeypatch.setenv("GEMINI_API_KEY", "google-key-123456789")  # base_url= given: it is not what the CLI uses
    monkeypatch.setenv("OPENAI_API_KEY", "local-server-key-123")
    models = {"agent_model": "local", "judge_model": "local", "optimizer_model": "local"}
    with ScriptedModelServer(Script(default=Reply("answer")), models=["local"]) as server:
        with open_session(agent="gemini-cli", base_url=server.base_url, phoenix=False, **models) as session:
            agent_upstream = session.gateway.upstreams["agent"]
            described = session.describe()
            agent = make_agent("gemini-cli", **session.agent_kwargs())
            agent.check()
            gateway_url = session.gateway.url_for("agent")
            routed = agent.through_gateway(gateway_url, "run-token", agent_upstream.kind)
            with pytest.raises(ValueError, match="only through the model gateway"):
                agent.invoke({"instance_id": "t", "problem_statement": "x"}, tmp_path, tmp_path)
            assert session.model_check == []  # the server's own list, read through the gateway
        assert (agent_upstream.url, agent_upstream.kind) == (server.base_url, "gemini-to-openai")
        assert agent_upstream.api_key == "local-server-key-123"
        assert f"gateway carries each call to {server.base_url}/chat/completions" in described
        assert (routed.base_url, routed.openai_base_url) == (gateway_url, None)
        with pytest.raises(ValueError, match="gateway=True"):
            open_session(agent="gemini-cli", base_url=server.base_url, phoenix=False, gateway=False, **models)
        monkeypatch.delenv("GEMINI_API_KEY")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        with open_session(agent="gemini-cli", phoenix=False, **models) as session:
            assert session.gateway.upstreams["agent"].kind == "gemini-to-openai"
            assert "agent calls:" in session.describe()
    assert not any("google-key" in str(request) for request in server.requests)


def test_a_google_key_alone_with_the_default_openai_judge_is_one_error_naming_gemini_too(no_keys, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "google-key-123456789")
    with pytest.raises(MissingCredentials) as error:
        open_session(agent="gemini-cli", phoenix=False)
    assert "GEMINI_API_KEY for Gemini models" in str(error.value) and config.JUDGE_MODEL in str(error.value)


def test_with_only_anthropic_base_url_an_openai_judge_is_one_error_naming_what_to_set(no_keys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "local-proxy-key-123")
    with pytest.raises(MissingCredentials) as error:
        open_session(agent="claude-code", phoenix=False)  # the default judge is an OpenAI model
    assert "judge" in str(error.value) and "OPENAI_BASE_URL" in str(error.value) and "JUDGE_MODEL" in str(error.value)


@pytest.fixture
def server_at_openai_base_url(no_keys, monkeypatch):
    """A scripted server as OPENAI_BASE_URL, listing a few OpenAI-style ids."""
    with ScriptedModelServer(Script(default=Reply("answer")), models=["gpt-4.1", "gpt-6-sol", "gpt-6.1-sol", "local"]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "local-server-key-123")
        yield server


def test_a_model_its_server_does_not_list_stops_the_session_before_any_agent_starts_naming_it_and_its_role(
        server_at_openai_base_url):
    server = server_at_openai_base_url
    with pytest.raises(ModelNotServed) as error:
        open_session(agent_model="local", judge_model="gpt-4.l", optimizer_model="local", phoenix=False)
    assert str(error.value) == (f"JUDGE_MODEL 'gpt-4.l' (the judge) is not served by {server.base_url} (it lists 4 "
                                "models; closest: 'gpt-4.1'). Set JUDGE_MODEL to one it serves.")
    assert server.model_requests() == []  # no agent, judge or optimizer call was made


def test_every_model_its_server_does_not_list_is_named_in_the_one_error(server_at_openai_base_url):
    with pytest.raises(ModelNotServed) as error:
        open_session(agent="codex", agent_model="gpt-5", judge_model="local", optimizer_model="gpt-6.1-sool", phoenix=False)
    lines = str(error.value).splitlines()
    assert len(lines) == 2 and lines[0].startswith("AGENT_MODEL 'gpt-5' (the codex agent) is not served by")
    assert lines[1].startswith("OPTIMIZER_MODEL 'gpt-6.1-sool' (the optimizer)") and "closest: 'gpt-6.1-sol'" in lines[1]


def test_models_their_server_lists_pass_the_check_through_the_gateway_at_no_cost(server_at_openai_base_url):
    with open_session(agent_model="local", judge_model="gpt-6.1-sol", optimizer_model="gpt-6-sol", phoenix=False) as session:
        assert session.model_check == [] and "model check:   each model is one its server lists" in session.describe()
        assert session.usage() == {"calls": 1, "input_tokens": 0, "output_tokens": 0, "cached_tokens": 0, "cost_usd": 0.0}  # one list, free


def test_a_server_without_a_model_list_is_not_an_error_and_is_named_once(no_keys, monkeypatch):
    with ScriptedModelServer(Script(default=Reply("answer")), lists_models=False) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "local-server-key-123")
        with open_session(agent_model="any", judge_model="any", optimizer_model="other", phoenix=False) as session:
            assert session.model_check == [f"skipped for {server.base_url}: it has no model list (HTTP 404)"]
            assert f"model check:   skipped for {server.base_url}" in session.describe()


def test_the_dry_run_passes_the_check_on_the_scripted_servers_own_list(no_keys):
    with open_session(phoenix=False) as session:
        assert session.dry_run and session.model_check == []


def test_the_model_check_of_an_openai_compatible_server_loads_no_other_providers_sdk():
    """Every session (each notebook's kernel, each dry run) checks its models: Anthropic's SDK, ~1.5 s of CPU to
    import, is loaded only to ask an Anthropic server (a fresh interpreter: this worker may hold it already)."""
    import subprocess
    import sys

    check = ("import sys\nfrom helpers.app.session import open_session\n"
             "with open_session(dry_run=True, phoenix=False) as session:\n"
             "    assert session.model_check == [] and session.usage()['calls'] >= 1\n"  # the list was asked for
             "print(sorted(m for m in ('anthropic', 'openai') if m in sys.modules))")
    ran = subprocess.run([sys.executable, "-c", check], cwd=config.REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.splitlines()[-1] == "['openai']", ran.stdout


def test_readable_tables_show_two_decimals_small_numbers_by_their_digits_and_cut_long_text():
    import pandas as pd

    from helpers.app.session import readable_tables
    from helpers.core import config

    table = pd.DataFrame({"cost_usd": [0.045587, 12345.678, 0.0], "p_value": [0.016, 0.5, float("nan")],
                          "text": ["x" * 200, "short", ""]})
    try:
        readable_tables()
        shown = repr(table) + table._repr_html_()  # as a terminal and as Jupyter show it
    finally:
        pd.reset_option("display.float_format")
        pd.reset_option("display.max_colwidth")
    assert "0.046" in shown and "12,345.68" in shown and "0.00" in shown and "0.50" in shown and "0.016" in shown
    assert "0.045587" not in shown and "NaN" in shown
    assert "x" * config.TABLE_TEXT_CHARS not in shown and "..." in shown  # cut, with an ellipsis
    assert table.loc[0, "text"] == "x" * 200  # the whole text is still there, one call away
