"""What a call must pass before the gateway forwards it: its body is JSON, its path and model are the upstream's
and the token's (policy.py), and its fields, tools and content are what the roles send (allowlist.py), its output
capped by the token's role. One function, so that every wire format is checked by the same steps in one order."""

from __future__ import annotations

import json
from typing import Any

import orjson

from helpers.llm.gateway.allowlist import Screened, forwarded_query, screen
from helpers.llm.gateway.metering import parsed
from helpers.llm.gateway.policy import Refusal, api_of, malformed_model, model_of, refusal, upstream_path
from helpers.llm.gateway.records import COUNTS
from helpers.llm.gateway.upstreams import Upstream


def checked_call(
    method: str,
    raw_path: str,
    path: str,
    name: str,
    upstream: Upstream,
    body: bytes,
    *,
    cap: int,
    models: set[str] | None,
    budget_usd: float | None,
) -> Refusal | tuple[str, str, dict, Screened | None, bytes]:
    """(path upstream, query, the request's JSON, what may be forwarded: None for a GET, and its bytes as forwarded)
    or why it is refused. `raw_path` is the gateway's path as sent (/u/<name>/...), `path` the same decoded (for
    naming the model), `cap` the token's role's output cap, `models` the models the token may ask for."""
    try:
        asked, plain = parsed(body) if body else ({}, True)
    except (ValueError, RecursionError):  # not JSON, or nested past json's depth: refused below
        asked, plain = None, False
    if method != "GET" and not isinstance(asked, dict):
        return Refusal(400, "the request body is not a JSON object", "invalid_request")
    asked = asked if isinstance(asked, dict) else {}
    if malformed_model(asked):
        return Refusal(400, f"refused: {malformed_model(asked)}", "invalid_request")
    where = upstream_path(raw_path, name)
    why = where if isinstance(where, str) else refusal(method, where[0], upstream.url, asked, models, budget_usd)
    screened: Screened | None = None
    if why is None and method != "GET":
        wire = "anthropic" if where[0].endswith("/messages/count_tokens") else api_of(where[0])
        found = screen(wire, asked, cap, model_of(where[0], asked), where[0].endswith(COUNTS))
        why, screened = (found, None) if isinstance(found, str) else (None, found)
    if why is not None:
        named = model_of(path, asked)
        return Refusal(403, f"refused: {why}", "forbidden", named[:200] if isinstance(named, str) else None)
    query, dropped = forwarded_query(api_of(where[0]), where[0], where[1])
    if screened is not None:
        screened.changes += [f"query parameter {dropped_name!r} dropped" for dropped_name in dropped]
    return where[0], query, asked, screened, b"" if screened is None else serialised(screened.body, plain)


def serialised(body: dict[str, Any], plain: bool) -> bytes:
    """What goes upstream: the gateway's own serialisation of what it checked, never the client's bytes (so no
    duplicate key or other parser difference shows the provider something else). orjson's (compact, UTF-8) when the
    request was `plain` JSON to orjson; json.dumps's when it held what only json.loads takes (NaN or an infinity,
    which orjson would write as null), or is nested deeper than orjson writes."""
    if plain:
        try:
            return orjson.dumps(body)
        except TypeError:  # orjson.JSONEncodeError: nested past its depth limit
            pass
    return json.dumps(body).encode()


__all__ = ["checked_call", "serialised"]
