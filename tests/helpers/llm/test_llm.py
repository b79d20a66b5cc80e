"""The LLM client: retries that honour Retry-After, no retry storms, a budget, a cache, costs."""

import json
import socket

import pytest

from helpers.core import config
from helpers.core.config import MissingCredentials, llm_settings
from helpers.llm.client import BudgetExceeded, LLMClient, LLMError, cache_key, parse_json_object
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer

MESSAGES = [{"role": "user", "content": "Why did the patch fail?"}]


def make_client(server, tmp_path, **kw):
    """A client of the scripted server whose retries record their waits (`llm.waits`) instead of sleeping."""
    kw.setdefault("backoff_s", 0.01)
    llm = LLMClient("scripted-dry-run", base_url=server.base_url, api_key="test-key", cache_dir=tmp_path, **kw)
    llm.waits = []
    llm._sleep = llm.waits.append
    return llm


def test_a_429_with_retry_after_is_retried_after_the_asked_wait_then_answered(tmp_path):
    script = Script([Rule(reply=Reply(status=429, retry_after=1, error_message="rate limited"), times=1)],
                    default=Reply("the answer"))
    with ScriptedModelServer(script) as server:
        llm = make_client(server, tmp_path)
        answer = llm.complete(MESSAGES)
    assert answer.text == "the answer"
    assert len(server.chat_requests()) == 2
    assert llm.retries == 1
    assert llm.waits == [1.0]  # the server's Retry-After, not our 0.01 s backoff


def test_a_permanent_4xx_fails_at_once_with_the_providers_message(tmp_path):
    script = Script(default=Reply(status=400, error_message="model does not exist"))
    with ScriptedModelServer(script) as server:
        llm = make_client(server, tmp_path)
        with pytest.raises(LLMError, match="HTTP 400.*model does not exist"):
            llm.complete(MESSAGES)
    assert len(server.chat_requests()) == 1  # no retry storm


def test_server_errors_are_retried_a_bounded_number_of_times(tmp_path):
    with ScriptedModelServer(Script(default=Reply(status=503))) as server:
        llm = make_client(server, tmp_path, max_retries=2)
        with pytest.raises(LLMError, match="after 3 attempts"):
            llm.complete(MESSAGES)
    assert len(server.chat_requests()) == 3


def test_the_budget_stops_requests_once_spent(tmp_path):
    usage = {"prompt_tokens": 1_000_000, "completion_tokens": 0, "total_tokens": 1_000_000}
    with ScriptedModelServer(Script(default=Reply("ok", usage=usage))) as server:
        llm = make_client(server, tmp_path, budget_usd=1.5, cache=False, prices={"scripted-dry-run": (1.0, 0.0)})
        llm.complete(MESSAGES)  # $1.00
        llm.complete(MESSAGES)  # $2.00: over the budget now
        with pytest.raises(BudgetExceeded, match=r"budget of \$1.50"):
            llm.complete(MESSAGES)
    assert len(server.chat_requests()) == 2
    assert llm.total_cost_usd == pytest.approx(2.0)


def test_a_cached_answer_makes_no_request_and_costs_nothing(tmp_path):
    with ScriptedModelServer(Script(default=Reply("cached answer"))) as server:
        llm = make_client(server, tmp_path)
        first = llm.complete(MESSAGES, temperature=0)
        llm.remember(first)  # the caller used it
        again = make_client(server, tmp_path)  # a new client, as a re-run notebook would make
        second = again.complete(MESSAGES, temperature=0)
        different = again.complete(MESSAGES, temperature=1)  # other parameters: not the same request
    assert second.text == first.text == "cached answer"
    assert second.cached and not first.cached
    assert again.calls == 1 and again.cached_calls == 1
    assert len(server.chat_requests()) == 2
    assert different.cached is False


def test_usage_and_cost_are_counted_per_call_and_in_total(tmp_path):
    usage = {"prompt_tokens": 2000, "completion_tokens": 500, "total_tokens": 2500}
    with ScriptedModelServer(Script(default=Reply("ok", usage=usage))) as server:
        llm = make_client(server, tmp_path, cache=False, prices={"scripted-dry-run": (2.0, 8.0)})
        answer = llm.complete(MESSAGES)
        llm.complete(MESSAGES)
    assert answer.cost_usd == pytest.approx((2000 * 2 + 500 * 8) / 1e6)
    summary = llm.usage_summary()
    assert summary["calls"] == 2 and summary["input_tokens"] == 4000 and summary["output_tokens"] == 1000
    assert summary["cost_usd"] == pytest.approx(2 * answer.cost_usd)


def test_a_missing_key_names_the_variables_to_set(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setattr("helpers.core.config.REPO_ROOT", tmp_path)
    llm = LLMClient("gpt-4.1", cache_dir=tmp_path)
    with pytest.raises(MissingCredentials) as error:
        llm.complete(MESSAGES)
    message = str(error.value)
    assert "OPENAI_API_KEY" in message and "OPENAI_BASE_URL" in message and "DRY_RUN" in message


def test_one_base_url_in_the_environment_points_every_role_at_it(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9999/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "local-key")
    for model in ("gpt-4.1", "gpt-5", "claude-sonnet-4-5"):
        settings = llm_settings(model)
        assert settings.base_url == "http://127.0.0.1:9999/v1"
        assert settings.provider == "openai-compatible"
    assert llm_settings("gpt-5", base_url="http://other/v1").base_url == "http://other/v1"


@pytest.fixture
def google_only(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                 "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("helpers.core.config.REPO_ROOT", tmp_path)  # no .env to find


def test_a_gemini_model_takes_googles_key_gemini_api_key_first(google_only, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    assert (llm_settings("gemini-3-flash-preview").provider, llm_settings("gemini-3-flash-preview").api_key) == (
        "gemini", "google-key")
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    assert llm_settings("gemini-3-flash-preview").api_key == "gemini-key" and config.has_credentials()
    assert config.gemini_openai_url() == "https://generativelanguage.googleapis.com/v1beta/openai/"


def test_a_gemini_judge_calls_googles_openai_compatible_endpoint_with_googles_key(google_only, monkeypatch, tmp_path):
    with ScriptedModelServer(Script(default=Reply("because"))) as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.origin)  # stands in for Google's server
        monkeypatch.setenv("GEMINI_API_KEY", "gemini-key-123")
        answer = LLMClient("gemini-3-flash-preview", cache_dir=tmp_path).complete(MESSAGES)
    assert answer.text == "because"
    call, = server.requests
    assert (call["path"], call["authorization"]) == ("/v1beta/openai/chat/completions", "Bearer gemini-key-123")
    assert call["body"]["model"] == "gemini-3-flash-preview"


def test_googles_openai_compatible_model_list_names_models_as_its_own_api_does_and_is_read_as_ids(google_only):
    from helpers.llm.model_list import served_models

    # the stand-in lists "models/<id>" as the endpoint's data ids; that Google's does so is from its docs, not seen here
    with ScriptedModelServer(Script(default=Reply("x")), models=["models/gemini-3-flash-preview"]) as server:
        assert "gemini-3-flash-preview" in served_models(server.base_url, "k", "openai-compatible")


def test_the_key_is_read_from_a_dotenv_file_and_never_shown(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv-SECRET\n")
    monkeypatch.chdir(tmp_path)
    settings = llm_settings("gpt-4.1")
    assert settings.api_key == "sk-from-dotenv-SECRET"
    assert "SECRET" not in repr(settings)
    assert "SECRET" not in repr(LLMClient("gpt-4.1", cache_dir=tmp_path))


def test_cache_keys_are_canonical():
    a = {"model": "m", "messages": MESSAGES, "temperature": 0}
    b = {"temperature": 0, "messages": MESSAGES, "model": "m"}
    assert cache_key(a) == cache_key(b)
    assert cache_key(a) != cache_key({**a, "model": "n"})


@pytest.mark.parametrize("text", ['{"a": 1}', '```json\n{"a": 1}\n```', 'Sure! {"a": 1} Hope it helps.'])
def test_json_objects_are_found_in_model_answers(text):
    assert parse_json_object(text) == {"a": 1}


def test_an_answer_without_a_json_object_is_a_clear_error():
    with pytest.raises(ValueError, match="not a JSON object"):
        parse_json_object("I cannot do that.")


def test_a_retry_after_longer_than_our_own_backoff_cap_is_honoured(tmp_path):
    script = Script([Rule(reply=Reply(status=429, retry_after=1), times=1)], default=Reply("the answer"))
    with ScriptedModelServer(script) as server:
        llm = make_client(server, tmp_path, max_backoff_s=0.1)  # caps our backoff, not the server's ask
        assert llm.complete(MESSAGES).text == "the answer"
    assert llm.waits == [1.0]


def test_a_retry_after_beyond_the_limit_fails_at_once_saying_what_the_server_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "LLM_MAX_RETRY_AFTER_S", 0.5)
    with ScriptedModelServer(Script(default=Reply(status=429, retry_after=3))) as server:
        llm = make_client(server, tmp_path, max_retries=1)
        with pytest.raises(LLMError, match=r"Retry-After: 3 s.*LLM_MAX_RETRY_AFTER_S") as error:
            llm.complete(MESSAGES)
    assert error.value.transient and error.value.status_code == 429
    assert len(server.chat_requests()) == 1 and llm.waits == []  # failed at once, nothing waited


@pytest.mark.parametrize("status, transient", [(429, True), (500, True), (503, True), (529, True),
                                               (400, False), (401, False), (404, False), (422, False)])
def test_failures_are_marked_transient_by_status_code_not_by_wording(tmp_path, status, transient):
    # every message says "rate limit ... try again": only the status code decides
    reply = Reply(status=status, error_message="rate limit, overloaded, try again later")
    with ScriptedModelServer(Script(default=reply)) as server:
        with pytest.raises(LLMError) as error:
            make_client(server, tmp_path, max_retries=1).complete(MESSAGES)
    assert error.value.transient is transient and error.value.status_code == status


def test_a_timeout_and_a_refused_connection_are_transient(tmp_path):
    with ScriptedModelServer(Script(default=Reply("late", delay_s=2))) as server:
        with pytest.raises(LLMError) as timed_out:
            make_client(server, tmp_path, max_retries=0, timeout_s=0.3).complete(MESSAGES)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    nobody = LLMClient("scripted-dry-run", base_url=f"http://127.0.0.1:{port}/v1", api_key="k",
                       cache_dir=tmp_path, max_retries=0)
    with pytest.raises(LLMError) as refused:
        nobody.complete(MESSAGES)
    assert timed_out.value.transient and refused.value.transient
    assert timed_out.value.status_code is None and refused.value.status_code is None
    # said in words, not by the SDK's class names (APITimeoutError, APIConnectionError)
    assert ": no answer in time (the request timed out)." in str(timed_out.value) and "Error" not in str(timed_out.value)
    assert ": the model server could not be reached" in str(refused.value) and "APIConnectionError" not in str(refused.value)


def test_a_200_answer_that_is_not_a_chat_completion_is_a_named_failure_of_that_call(tmp_path):
    with ScriptedModelServer(Script(default=Reply("a Messages body", fault="wrong_api"))) as server:
        with pytest.raises(LLMError) as failed:
            make_client(server, tmp_path).complete(MESSAGES)
    said = str(failed.value)
    assert "the server answered 200, but the body is not a chat completion" in said
    assert '(a "message" object, as another API answers): it has no choices' in said and "TypeError" not in said
    assert not failed.value.transient and failed.value.status_code == 200  # a rerun would get the same


def test_a_completion_without_content_or_with_an_error_instead_is_named_as_such():
    from types import SimpleNamespace

    from openai.types.chat import ChatCompletion

    from helpers.llm.client import not_a_completion

    def completion(message, finish_reason="stop"):
        return ChatCompletion.construct(id="x", object="chat.completion", created=0, model="m",
                                        choices=[SimpleNamespace(message=message, finish_reason=finish_reason)])

    empty = SimpleNamespace(content=None, tool_calls=None)
    assert not_a_completion(completion(empty)) == "its message has no content (finish_reason 'stop')"
    assert not_a_completion(completion(empty, "length")) is None  # cut at its cap: callers name that (cut_at_length)
    assert not_a_completion(completion(SimpleNamespace(content="fine", tool_calls=None))) is None
    assert not_a_completion(completion(None)) == "its first choice has no message"
    error = ChatCompletion.construct(error={"message": "upstream overloaded"})
    assert not_a_completion(error) == "with an error instead of a completion: upstream overloaded"


def test_a_spent_budget_is_transient(tmp_path):
    usage = {"prompt_tokens": 1_000_000, "completion_tokens": 0, "total_tokens": 1_000_000}
    with ScriptedModelServer(Script(default=Reply("ok", usage=usage))) as server:
        llm = make_client(server, tmp_path, budget_usd=0.5, cache=False, prices={"scripted-dry-run": (1.0, 0.0)})
        llm.complete(MESSAGES)
        with pytest.raises(BudgetExceeded) as error:
            llm.complete(MESSAGES)
    assert error.value.transient


def test_an_answer_is_cached_only_once_the_caller_remembers_it(tmp_path):
    script = Script([Rule(reply=Reply("not JSON at all"), times=1)], default=Reply('{"ok": true}'))
    with ScriptedModelServer(script) as server:
        bad = make_client(server, tmp_path).complete(MESSAGES)  # the caller could not use it: not remembered
        good_client = make_client(server, tmp_path)
        good = good_client.complete(MESSAGES)
        good_client.remember(good)
        replayed = make_client(server, tmp_path).complete(MESSAGES)
        requests = len(server.chat_requests())
    assert bad.text == "not JSON at all" and good.text == '{"ok": true}' and not good.cached
    assert replayed.text == '{"ok": true}' and replayed.cached
    assert requests == 2  # the bad answer was asked again; the remembered one was replayed


def test_cache_entries_of_answers_nobody_vouched_for_are_ignored(tmp_path):
    with ScriptedModelServer(Script(default=Reply("fresh"))) as server:
        llm = make_client(server, tmp_path)
        key = cache_key({"model": "scripted-dry-run", "messages": MESSAGES})
        stale = {"text": "stale, cached before answers were vouched for", "model": "m", "input_tokens": 0,
                 "output_tokens": 0, "cost_usd": 0.0, "raw": {}}
        path = tmp_path / key[:2] / f"{key}.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(stale))
        assert llm.complete(MESSAGES).text == "fresh"
    assert len(server.chat_requests()) == 1


def test_the_default_judge_and_optimizer_models_get_their_output_cap_as_max_completion_tokens():
    # OpenAI's reasoning models (gpt-6.1-sol among them) refuse max_tokens
    from helpers.core import config
    from helpers.llm.client import output_cap

    for model in (config.JUDGE_MODEL, config.OPTIMIZER_MODEL, "gpt-6-sol"):
        assert output_cap(model, {"max_tokens": 10}) == {"max_completion_tokens": 10}
