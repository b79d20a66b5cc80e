"""Where a model server on this machine's loopback answers, one way for every stand-in (the scripted model server,
llama-server): `origin`, the base URL of Anthropic's Messages and Google's Gemini API (they add /v1/... or
/v1beta/... themselves), and `base_url`, OpenAI's, ending in /v1."""

from __future__ import annotations

from typing import Protocol


class _OnAPort(Protocol):
    @property
    def port(self) -> int: ...


class LoopbackURLs:
    """A mixin for a server class with a `port` (an attribute or a property): its `origin` and `base_url`."""

    @property
    def origin(self: _OnAPort) -> str:
        """http://127.0.0.1:<port>: Anthropic's and Gemini's base URL (ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self: _OnAPort) -> str:
        """http://127.0.0.1:<port>/v1: OpenAI's (chat completions and the Responses API; OPENAI_BASE_URL)."""
        return f"http://127.0.0.1:{self.port}/v1"


__all__ = ["LoopbackURLs"]  # the public API, documented in CODE_APPENDIX.md
