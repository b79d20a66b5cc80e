"""What a model call costs: the one place cost is computed, from a maintained price table.

Prices come from genai-prices (Pydantic's table of providers' list prices, with dated ids, tiers such as
long-context rates, and its snapshot bundled: no network at run time), with `config.PRICE_OVERRIDES`
and a caller's `prices` on top (USD per 1M tokens, input and output; the scripted model costs 0).
A model in neither is *unpriced*: its cost is not guessed, and callers report it as unpriced.
"""

from __future__ import annotations

from functools import lru_cache

from helpers.core import config

Prices = dict[str, tuple[float, float]]


def _override(model: str, prices: Prices | None) -> tuple[float, float] | None:
    """An override for `model` (exact, or the longest prefix of a dated id such as "x-2025-01-01")."""
    table = {**config.PRICE_OVERRIDES, **(prices or {})}
    if model in table:
        return table[model]
    for name in sorted(table, key=len, reverse=True):
        if model.startswith(name + "-"):
            return table[name]
    return None


@lru_cache(maxsize=512)
def _table_cost(model: str, input_tokens: int, output_tokens: int) -> float | None:
    from genai_prices import Usage, calc_price

    try:
        price = calc_price(Usage(input_tokens=input_tokens, output_tokens=output_tokens), model_ref=model)
    except LookupError:
        return None
    return float(price.total_price)


def call_cost_usd(model: str | None, input_tokens: int, output_tokens: int, prices: Prices | None = None) -> float | None:
    """USD for one call of `model` with these token counts; None when the model is unpriced.
    Cached input tokens count at the full input price (an upper bound)."""
    if not model:
        return None
    override = _override(model, prices)
    if override is not None:
        return (input_tokens * override[0] + output_tokens * override[1]) / 1_000_000
    return _table_cost(model, int(input_tokens), int(output_tokens))


def cost_usd(model: str, input_tokens: int, output_tokens: int, prices: Prices | None = None) -> float:
    """USD for the tokens, 0.0 for an unpriced model (report it with `is_priced`, never as free)."""
    return call_cost_usd(model, input_tokens, output_tokens, prices) or 0.0


def is_priced(model: str | None, prices: Prices | None = None) -> bool:
    """Whether calls of `model` have a known price."""
    return call_cost_usd(model, 1000, 1000, prices) is not None


__all__ = ["call_cost_usd", "cost_usd", "is_priced"]  # documented in CODE_APPENDIX.md
