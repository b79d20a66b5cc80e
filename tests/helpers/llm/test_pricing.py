"""What a call costs: the maintained price table, our overrides on top, and unknown models unpriced."""

import pytest

from helpers.core import config
from helpers.llm.pricing import call_cost_usd, is_local_server, is_priced


def test_a_known_model_is_priced_from_the_maintained_table():
    assert call_cost_usd("gpt-4.1", 1_000_000, 1_000_000) == pytest.approx(2.0 + 8.0)


def test_dated_model_ids_take_the_price_of_their_family():
    assert call_cost_usd("gpt-4.1-2025-04-14", 1000, 500) == call_cost_usd("gpt-4.1", 1000, 500)
    assert call_cost_usd("gpt-4.1-mini-2025-04-14", 1000, 500) == call_cost_usd("gpt-4.1-mini", 1000, 500)


def test_cached_input_is_priced_at_the_cache_read_rate_and_an_override_without_one_counts_it_in_full():
    assert call_cost_usd("gpt-4.1", 1_000_000, 0, cached_tokens=800_000) == pytest.approx(0.2 * 2.0 + 0.8 * 0.5)
    assert call_cost_usd("gpt-4.1", 1_000_000, 0, cached_tokens=None) == call_cost_usd("gpt-4.1", 1_000_000, 0)
    assert call_cost_usd("house", 1_000_000, 0, {"house": (1.0, 2.0, 0.1)}, cached_tokens=500_000) == pytest.approx(0.55)
    assert call_cost_usd("house", 1_000_000, 0, {"house": (1.0, 2.0)}, cached_tokens=500_000) == pytest.approx(1.0)


def test_unknown_models_are_unpriced_not_guessed():
    assert call_cost_usd("my-local-llama", 1000, 1000) is None and not is_priced("my-local-llama")


def test_overrides_win_over_the_table_per_call_and_in_config(monkeypatch):
    assert call_cost_usd("my-local-llama", 1_000_000, 0, {"my-local-llama": (0.1, 0.2)}) == pytest.approx(0.1)
    assert call_cost_usd("gpt-5", 1_000_000, 1_000_000, {"gpt-5": (9.0, 9.0)}) == pytest.approx(18.0)
    monkeypatch.setitem(config.PRICE_OVERRIDES, "house-model", (1.0, 2.0))
    assert call_cost_usd("house-model-2026-01-01", 1_000_000, 1_000_000) == pytest.approx(3.0)


def test_the_scripted_model_is_unpriced_so_its_calls_never_read_as_a_0_dollar_cost():
    assert not is_priced(config.SCRIPTED_MODEL) and call_cost_usd(config.SCRIPTED_MODEL, 10**6, 10**6) is None


def test_a_budget_does_not_refuse_the_scripted_model_which_charges_nothing():
    from helpers.llm.gateway.policy import refusal

    body = {"model": config.SCRIPTED_MODEL, "messages": []}
    assert refusal("POST", "/v1/chat/completions", "http://127.0.0.1:1/v1", body, None, budget_usd=5.0) is None
    assert "no price" in refusal("POST", "/v1/chat/completions", "http://127.0.0.1:1/v1",
                                 {**body, "model": "my-local-llama"}, None, budget_usd=5.0)



def test_a_model_server_on_this_machine_charges_nothing(monkeypatch):
    monkeypatch.delenv("PL_LOCAL_MODELS", raising=False)
    assert is_local_server("http://127.0.0.1:8080/v1") and is_local_server("http://localhost:11434/v1")
    assert is_local_server("http://[::1]:8000") and not is_local_server("https://api.openai.com/v1")
    assert not is_local_server(None) and not is_local_server("http://10.0.0.5:8000/v1")
    monkeypatch.setenv("PL_LOCAL_MODELS", "1")  # a team's own server elsewhere, declared local
    assert is_local_server("http://10.0.0.5:8000/v1")


def test_the_client_prices_by_the_model_that_answered_as_the_gateway_does():
    from helpers.llm.client import LLMClient
    from helpers.llm.gateway import Gateway, Upstream
    from helpers.llm.scripted_server import Reply, Script, ScriptedModelServer

    # a small local model answering whatever id was asked for, under its own name
    with ScriptedModelServer(Script(default=Reply("because")), answers_as="smollm2-135m-instruct") as server:
        with Gateway({"s": Upstream(server.base_url, None, "openai-compatible")}) as gateway:
            client = LLMClient("gpt-4.1", base_url=gateway.url_for("s"), api_key=gateway.issue_token("s"), cache=False)
            answer = client.complete([{"role": "user", "content": "why?"}])
            record, = gateway.calls()
    assert answer.model == "smollm2-135m-instruct" and answer.cost_usd is None and record["cost_usd"] is None
    assert client.unpriced and client.usage_summary()["unpriced"]  # never billed at gpt-4.1's price
