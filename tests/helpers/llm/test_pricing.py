"""What a call costs: the maintained price table, our overrides on top, and unknown models unpriced."""

import pytest

from helpers.core import config
from helpers.llm.pricing import call_cost_usd, cost_usd, is_priced


def test_a_known_model_is_priced_from_the_maintained_table():
    assert call_cost_usd("gpt-4.1", 1_000_000, 1_000_000) == pytest.approx(2.0 + 8.0)


def test_dated_model_ids_take_the_price_of_their_family():
    assert call_cost_usd("gpt-4.1-2025-04-14", 1000, 500) == call_cost_usd("gpt-4.1", 1000, 500)
    assert call_cost_usd("gpt-4.1-mini-2025-04-14", 1000, 500) == call_cost_usd("gpt-4.1-mini", 1000, 500)


def test_unknown_models_are_unpriced_not_guessed():
    assert call_cost_usd("my-local-llama", 1000, 1000) is None and not is_priced("my-local-llama")
    assert cost_usd("my-local-llama", 1000, 1000) == 0.0  # the number is 0, the record says "unpriced"


def test_overrides_win_over_the_table_per_call_and_in_config(monkeypatch):
    assert call_cost_usd("my-local-llama", 1_000_000, 0, {"my-local-llama": (0.1, 0.2)}) == pytest.approx(0.1)
    assert call_cost_usd("gpt-5", 1_000_000, 1_000_000, {"gpt-5": (9.0, 9.0)}) == pytest.approx(18.0)
    monkeypatch.setitem(config.PRICE_OVERRIDES, "house-model", (1.0, 2.0))
    assert call_cost_usd("house-model-2026-01-01", 1_000_000, 1_000_000) == pytest.approx(3.0)


def test_the_scripted_model_costs_nothing_and_is_priced():
    assert is_priced(config.SCRIPTED_MODEL) and call_cost_usd(config.SCRIPTED_MODEL, 10**6, 10**6) == 0.0

