"""What the gateway forwards: only what a run needs, on the parsed, decoded path.

A run's token opens one upstream, and on it only the model endpoints (chat completions, Responses,
Anthropic messages and their token count, the model list) under the upstream's own base path (or that
path + /v1, as Anthropic-style clients post it), and Gemini's (`/v1beta/models/<model>:generateContent`,
`:streamGenerateContent`, `:countTokens`, GET `/v1beta/models`; `/v1/` likewise, the google-genai SDK's
default), with the configured models when the gateway was given them (a Gemini call names its model in
its path), and, under a budget, only models with a price. Everything else gets a 403 naming what was refused.
Paths with `..`, `.`, empty segments, backslashes or encoded separators are refused before any routing.
What a request's body may ask for (fields, tools, content, output cap) is allowlist.py's. The error shape each client reads (OpenAI's and Anthropic's, or Google's
`{"error": {"code", "message", "status"}}` for a Gemini client), and which recorded statuses are transient,
live here too.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Mapping, NamedTuple
from urllib.parse import unquote, urlsplit

from aiohttp import web

from helpers.core import config
from helpers.llm.gemini_errors import gemini_error
from helpers.llm.pricing import is_priced
from helpers.llm.retries import GATEWAY_RETRIES_HEADER, is_retryable

ENDPOINTS = {
    "POST": ("/chat/completions", "/responses", "/messages", "/messages/count_tokens"),
    "GET": ("/models",),
}
_ENCODED_SEPARATORS = ("%2f", "%5c", "%2e", "%00")
# Gemini: the model and the method are in the path (the model's characters as Google's ids have them)
GEMINI_CALL = re.compile(
    r"/(?:v1beta|v1)/models/([A-Za-z0-9][A-Za-z0-9._-]*):"
    r"(generateContent|streamGenerateContent|countTokens)"
)
GEMINI_LISTS = ("/v1beta/models", "/v1/models")


def upstream_path(raw_path: str, name: str) -> tuple[str, str] | str:
    """(path, query) a client asked for under /u/<name>, decoded and checked; or why it is refused."""
    raw, _, query = raw_path.partition("?")
    path = _decoded(raw, name)
    return (path, query) if path.startswith("/") else path


# The checks of a path depend on the path alone, and a gateway's clients ask for a handful of paths: each is decided
# once (the query, which may carry a token, is never a key here).
@lru_cache(maxsize=256)
def _decoded(raw: str, name: str) -> str:
    """The decoded path under /u/<name> (it starts with "/"), or why it is refused (it does not)."""
    prefix = f"/u/{name}"
    if not raw.startswith(prefix + "/"):
        return f"the path must start with {prefix}/"
    rest = raw[len(prefix) :]
    if any(code in rest.lower() for code in _ENCODED_SEPARATORS) or "\\" in rest:
        return "encoded separators, dots or backslashes in the path"
    path = unquote(rest)
    segments = path.split("/")[1:]
    if any(segment in ("", ".", "..") for segment in segments):
        return "empty, '.' or '..' segments in the path"
    return path


def refusal(
    method: str, path: str, base_url: str, body: dict[str, Any], models: set[str] | None, budget_usd: float | None
) -> str | None:
    """Why this request may not go upstream, or None when it may."""
    why = _not_an_endpoint(method, path, base_url)
    if why is not None:
        return why
    model = model_of(path, body)
    if method == "POST" and not model and (models is not None or budget_usd is not None):
        return (
            "the call names no model (`model` absent, null or empty): under a model list or a budget every call "
            "names the model it calls"
        )
    if models is not None and model is not None and model not in models:
        return f"model {model!r} is not one this run may call (configured: {', '.join(sorted(models))})"
    # the scripted model has no price and charges nothing: any budget is kept with it
    if budget_usd is not None and model not in (None, config.SCRIPTED_MODEL) and not is_priced(model):
        return (
            f"model {model!r} has no price, so the budget of ${budget_usd:.2f} cannot be kept: add it to "
            "PRICE_OVERRIDES in helpers/core/config.py, or run without a budget"
        )
    return None


@lru_cache(maxsize=256)
def _not_an_endpoint(method: str, path: str, base_url: str) -> str | None:
    """Why `path` is not a model endpoint under `base_url` for `method`, or None when it is one."""
    base = urlsplit(base_url).path.rstrip("/")
    allowed = {prefix + endpoint for endpoint in ENDPOINTS.get(method, ()) for prefix in (base, base + "/v1")}
    allowed |= {base + listing for listing in GEMINI_LISTS} if method == "GET" else set()
    gemini = method == "POST" and path.startswith(base + "/") and GEMINI_CALL.fullmatch(path[len(base) :]) is not None
    if path in allowed or gemini:
        return None
    shown = sorted(allowed) + (
        [f"{base}/v1beta/models/<model>:generateContent|streamGenerateContent|countTokens"] if method == "POST" else []
    )
    return f"{method} {path} is not a model endpoint this gateway forwards (allowed: {', '.join(shown) or 'none'})"


def malformed_model(body: dict[str, Any]) -> str | None:
    """Why a body's `model` is not a model's id (present, and neither a string nor null), else None."""
    model = body.get("model")
    if model is None or isinstance(model, str):
        return None
    return f"the field 'model' must be a string naming the model (got a JSON {type(model).__name__})"


def model_of(path: str, body: dict[str, Any]) -> Any:
    """The model a call names: in a Gemini path (.../models/<model>:generateContent), else the body's `model`."""
    call = _gemini_call(path.partition("?")[0])
    return call[0] if call else body.get("model")


def streams(path: str, body: dict[str, Any]) -> bool:
    """Whether a call asks for a stream: Gemini's :streamGenerateContent, or the body's `stream`."""
    call = _gemini_call(path.partition("?")[0])
    return call[1] == "streamGenerateContent" if call else bool(body.get("stream"))


@lru_cache(maxsize=256)
def _gemini_call(path: str) -> tuple[str, str] | None:
    """(model, method) of a Gemini call's path, else None."""
    call = GEMINI_CALL.search(path)
    return (call.group(1), call.group(2)) if call else None


def api_of(path: str, headers: Mapping[str, str] | None = None) -> str:
    """The wire format a client speaks on `path`: "gemini" (a Gemini call), "anthropic", "responses", "chat"
    (by the endpoint's name, Google's OpenAI-compatible /v1beta/openai/ included), else "gemini" for any other
    /v1beta/ path or a client that sent Google's key header, else "chat"."""
    return _api_by_path(path.partition("?")[0]) or ("gemini" if "x-goog-api-key" in (headers or {}) else "chat")


@lru_cache(maxsize=256)
def _api_by_path(path: str) -> str | None:
    if _gemini_call(path):
        return "gemini"
    for suffix, api in (("/messages", "anthropic"), ("/responses", "responses"), ("/chat/completions", "chat")):
        if path.endswith(suffix):
            return api
    return "gemini" if "/v1beta/" in path + "/" and "/openai/" not in path + "/" else None


__all__ = [
    "upstream_path",
    "refusal",
    "malformed_model",
    "model_of",
    "streams",
    "api_of",
    "ENDPOINTS",
]  # documented in CODE_APPENDIX.md


def is_transient(status: int | str | None) -> bool:
    """True for a call that failed for a reason a later retry may not meet: rate limit, outage, unreachable
    upstream or broken answer (502 from the gateway), timeout (504). A spent budget ("budget") is not
    transient by itself, nor is a client that left."""
    return is_retryable(status if isinstance(status, int) else None)


class Refusal(NamedTuple):
    """A call the gateway refuses before forwarding it: the HTTP status its client gets, why (the record's error),
    the error's kind, and the model it named (None when it named none the record can keep)."""

    status: int
    message: str
    kind: str
    model: str | None = None


class ClientGone(Exception):
    """The client closed its connection while its answer was streaming."""


async def healthz(_: web.Request) -> web.Response:
    """The gateway's health route: {"status": "ok"}."""
    return web.json_response({"status": "ok"})


def error_response(
    status: int, message: str, kind: str, headers: Mapping[str, str] | None = None, api: str = "chat"
) -> web.Response:
    """An error in the OpenAI/Anthropic shape both SDKs read ({"error": {"message", "type"}}), or for a
    Gemini client (`api`) in Google's ({"error": {"code", "message", "status"}}), which the google-genai SDK reads."""
    body = (
        gemini_error(status, message)
        if api == "gemini"
        else {"type": "error", "error": {"message": message, "type": kind, "code": kind}}
    )
    return web.json_response(body, status=status, headers=dict(headers or {}))


def no_more_retries(record: dict) -> dict[str, str]:
    """Headers on an answer the gateway has retried as far as its policy allows: ours, and the one the OpenAI
    and Anthropic SDKs (and so Cline and Claude Code) honour, so that no client retries it again."""
    return {GATEWAY_RETRIES_HEADER: str(record["retries"]), "x-should-retry": "false"}
