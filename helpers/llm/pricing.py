"""What a model call costs: the one place cost is computed, from a maintained price table.

Prices come from genai-prices (Pydantic's table of providers' list prices, with dated ids, tiers such as
long-context rates, and its snapshot bundled: no network at run time), with `config.PRICE_OVERRIDES`
and a caller's `prices` on top (USD per 1M tokens: input and output, and optionally cached input).
Cached input tokens (the part of the input read from the provider's prompt cache) are priced at the table's
cache-read rate; an override without a third, cached price counts them at its full input price (an upper bound).
A model in neither is *unpriced*: its cost is None, never guessed and never shown as $0.00. The scripted
model of the dry run is unpriced too (its calls are "scripted: no charge": tokens, no dollars). Every reader (the
gateway's meter, LLMClient, the agents' own accounting) prices a call here, by the model that served it.
A model server on this machine (a loopback URL, or any URL when PL_LOCAL_MODELS=1) charges nothing: its
calls are reported as tokens used, "local: no charge".
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from urllib.parse import urlsplit

from helpers.core import config

Prices = dict[str, tuple[float, ...]]  # (input, output) or (input, output, cached input), USD per 1M


def _override(model: str, prices: Prices | None) -> tuple[float, ...] | None:
    """An override for `model` (exact, or the longest prefix of a dated id such as "x-2025-01-01")."""
    table = {**config.PRICE_OVERRIDES, **(prices or {})}
    if model in table:
        return table[model]
    for name in sorted(table, key=len, reverse=True):
        if model.startswith(name + "-"):
            return table[name]
    return None


@lru_cache(maxsize=512)
def _table_cost(model: str, input_tokens: int, output_tokens: int, cached_tokens: int) -> float | None:
    from genai_prices import Usage, calc_price

    # genai-prices counts cache reads inside input_tokens, as the gateway's meter does
    usage = Usage(input_tokens=input_tokens, cache_read_tokens=cached_tokens or None, output_tokens=output_tokens)
    try:
        price = calc_price(usage, model_ref=model)
    except LookupError:
        return None
    return float(price.total_price)


def call_cost_usd(
    model: str | None,
    input_tokens: int,
    output_tokens: int,
    prices: Prices | None = None,
    cached_tokens: int | None = None,
) -> float | None:
    """USD for one call of `model` with these token counts; None when the model is unpriced.
    `cached_tokens` is the part of `input_tokens` read from the prompt cache (None or 0: none was)."""
    if not model:
        return None
    cached = min(int(cached_tokens or 0), int(input_tokens))
    override = _override(model, prices)
    if override is not None:
        cached_price = override[2] if len(override) > 2 else override[0]
        return ((input_tokens - cached) * override[0] + cached * cached_price + output_tokens * override[1]) / 1_000_000
    return _table_cost(model, int(input_tokens), int(output_tokens), cached)


def is_priced(model: str | None, prices: Prices | None = None) -> bool:
    """Whether calls of `model` have a known price."""
    return call_cost_usd(model, 1000, 1000, prices) is not None


def is_local_server(url: str | None) -> bool:
    """Whether a model server at `url` runs on this machine (a loopback host), or PL_LOCAL_MODELS=1 says all do."""
    if config.read_env("PL_LOCAL_MODELS") == "1":
        return True
    host = urlsplit(url or "").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


__all__ = ["call_cost_usd", "is_priced", "is_local_server"]  # documented in CODE_APPENDIX.md
