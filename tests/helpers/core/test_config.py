"""One place for defaults, model ids and prices."""

import pytest

from helpers.core.config import price_for


def test_dated_model_ids_take_the_price_of_their_family():
    assert price_for("gpt-4.1-2025-04-14") == price_for("gpt-4.1")
    assert price_for("gpt-4.1-mini-2025-04-14") == price_for("gpt-4.1-mini")  # longest prefix wins


def test_unknown_models_are_unpriced_not_guessed():
    assert price_for("my-local-llama") is None


def test_prices_can_be_overridden_per_call():
    assert price_for("my-local-llama", {"my-local-llama": (0.1, 0.2)}) == pytest.approx((0.1, 0.2))
    assert price_for("gpt-5", {"gpt-5": (9.0, 9.0)}) == (9.0, 9.0)
