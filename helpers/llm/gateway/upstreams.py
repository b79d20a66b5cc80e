"""Upstreams and the key swap: where each provider is, its real key (never shown), and the headers that go
each way (the client's credentials dropped, the real key added the way the provider wants it).

A client's token comes as `Authorization: Bearer`, `x-api-key`, or (Google's Gemini API) `x-goog-api-key` or
the query parameter `key=`; every one of them is dropped before the request goes upstream."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import parse_qsl

from helpers.core import config

GEMINI_TO_OPENAI = (
    "gemini-to-openai"  # a Gemini client's calls carried to a chat-completions server (gemini_to_openai.py)
)
KINDS = ("openai", "anthropic", "openai-compatible", "gemini", GEMINI_TO_OPENAI)
DEFAULT_BASE_URLS = {
    "openai": config.OPENAI_URL,
    "anthropic": "https://api.anthropic.com",
    "gemini": config.GEMINI_URL,
}  # Gemini's paths carry their version
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}
KEY_HEADERS = {"anthropic": "x-api-key", "gemini": "x-goog-api-key"}  # kind -> its key header; else Bearer


@dataclass(frozen=True)
class Upstream:
    """One model provider: where it is, its real key (never shown) and how it wants the key."""

    base_url: str | None = None  # None: the kind's public URL (OpenAI .../v1, Anthropic and Gemini without a version)
    api_key: str | None = field(default=None, repr=False)  # None: send no key (e.g. the scripted server)
    kind: str = "openai"  # "openai" | "anthropic" | "openai-compatible" | "gemini" | "gemini-to-openai"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Upstream kind {self.kind!r} is not one of {', '.join(KINDS)}.")
        if not (self.base_url or DEFAULT_BASE_URLS.get(self.kind)):
            raise ValueError(f"An {self.kind!r} upstream needs a base_url.")

    @property
    def url(self) -> str:
        return (self.base_url or DEFAULT_BASE_URLS[self.kind]).rstrip("/")


def token_of(headers: Mapping[str, str], query: str = "") -> str | None:
    """The gateway token a client sent: Bearer, x-api-key, x-goog-api-key, or a `key=` query parameter."""
    authorization = headers.get("Authorization", "")
    if authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return headers.get("x-api-key") or headers.get("x-goog-api-key") or dict(parse_qsl(query)).get("key") or None


def upstream_headers(client_headers: Mapping[str, str], upstream: Upstream) -> dict[str, str]:
    """The client's headers that its allow-list passes (allowlist.forwarded_headers: never hop-by-hop or
    credential headers), plus the real key and identity coding."""
    from helpers.llm.gateway.allowlist import forwarded_headers

    headers = forwarded_headers(client_headers)[0]
    headers["Accept-Encoding"] = "identity"
    if upstream.api_key:
        if upstream.kind in KEY_HEADERS:
            headers[KEY_HEADERS[upstream.kind]] = upstream.api_key
        else:
            headers["Authorization"] = f"Bearer {upstream.api_key}"
    return headers


def client_headers(upstream_headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in upstream_headers.items() if k.lower() not in _HOP_BY_HOP}


MIN_SCRUBBED_KEY = 8  # a shorter "key" is a placeholder for a server that needs none ("none", "x"): replacing
# it everywhere would garble every message that holds those letters


def scrub(text: str, key: str | None) -> str:
    return text.replace(key, "[key]") if key and len(key) >= MIN_SCRUBBED_KEY else text


def scrub_bytes(body: bytes, key: str | None) -> bytes:
    return body.replace(key.encode(), b"[key]") if key and len(key) >= MIN_SCRUBBED_KEY else body
