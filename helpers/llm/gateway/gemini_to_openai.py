"""A Gemini client's calls carried to an OpenAI chat-completions server: the upstream kind "gemini-to-openai".

The Gemini CLI speaks only Google's Gemini API; llama.cpp's llama-server, vLLM, Ollama and OpenRouter speak chat
completions. On an upstream of this kind the gateway screens each Gemini call as it came (policy.py, allowlist.py:
its model from the path, its fields, its output cap), then translates it, both ways (the request by
gemini_request.py):
- POST .../models/<m>:generateContent and :streamGenerateContent go to POST <base>/chat/completions:
  `systemInstruction` becomes a system message; `contents` become messages (a user turn's text and images, a
  model turn's text and functionCall parts as an assistant message with tool_calls, each functionResponse part a
  tool message answering its call by id, else the first open call of its name); thought parts are left out;
  `functionDeclarations` become function tools (`parametersJsonSchema` as it is, `parameters` in Google's schema
  with its upper-case types made JSON Schema); `toolConfig`'s mode becomes tool_choice; `generationConfig` gives
  max_tokens, temperature, top_p, stop, seed, the penalties and response_format (topK, thinkingConfig and
  candidateCount have no chat counterpart every server takes, and are left out). A stream asks for its usage.
- The answer becomes a GenerateContentResponse: reasoning as a thought part, text, each tool call a whole
  functionCall (its id kept), finish_reason as Gemini's finishReason (a call whose arguments are not a JSON object
  is left out and the answer ends MALFORMED_FUNCTION_CALL, as Google's own server says it, so the CLI asks again),
  usage as usageMetadata (reasoning tokens as thoughtsTokenCount, cached ones as cachedContentTokenCount).
- The stream becomes Gemini's `alt=sse` stream (GeminiStream), its headers sent at once (the Gemini CLI waits 60 s
  for headers; a local server may read a long prompt for longer): text and thoughts as they come, and once the
  server's [DONE] came one last chunk with the function calls whole (Gemini never streams a call in pieces), the
  finishReason and the usageMetadata. A server's error event becomes Google's error chunk; a stream that breaks
  is ended by relay.py in Google's shape, as for a Gemini upstream.
- An error answer keeps its status, in Google's error shape (`{"error": {"code", "message", "status"}}`).
- :countTokens is answered here, offline (helpers.core.tokens: an estimate for any model, as a token count is
  for budgeting); GET .../v1beta/models from the server's GET <base>/models.
Every other path (the OpenAI model list the session's model check reads) goes to the server as it came.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from helpers.llm.gateway.gemini_request import chat_request, tokens_of
from helpers.llm.gateway.metering import json_or_none
from helpers.llm.gateway.policy import GEMINI_CALL, GEMINI_LISTS
from helpers.llm.gemini_errors import gemini_error
from helpers.llm.gateway.relay import Limits, Stream, UpstreamFault
from helpers.llm.gateway.upstreams import GEMINI_TO_OPENAI, Upstream

FINISH = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "function_call": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}  # chat's finish_reason -> Gemini's finishReason (anything else: OTHER)
MALFORMED = "MALFORMED_FUNCTION_CALL"
GENERATES = ["generateContent", "streamGenerateContent", "countTokens"]  # what the model list says each model does


@dataclass
class Carried:
    """One Gemini call as it goes to the chat-completions server (`path` there, `body`), or its answer made here
    (`local`: a token count), and how the server's answer comes back (`answer`, `stream`)."""

    path: str
    body: bytes
    model: str
    listing: bool = False  # GET .../v1beta/models: the server's model list
    local: bytes | None = None

    def answer(self, status: int, body: bytes) -> bytes:
        """The server's whole answer in Gemini's shape; raises UpstreamFault for a success that is no chat
        completion (or model list), which the gateway retries like any broken answer."""
        parsed = json_or_none(body)
        if not 200 <= status < 300:
            return json.dumps(gemini_error(status, _error_message(parsed, body, status))).encode()
        wanted = "data" if self.listing else "choices"
        if not isinstance(parsed, dict) or not isinstance(parsed.get(wanted), list):
            raise UpstreamFault(
                f"the model server answered {status} without {wanted!r}: not a chat completions "
                f"{'model list' if self.listing else 'answer'}"
            )
        return json.dumps(model_list(parsed) if self.listing else gemini_answer(parsed, self.model)).encode()

    def stream(self, response: aiohttp.ClientResponse, limits: Limits) -> "GeminiStream":
        return GeminiStream(response, limits, self.model)


def carry(upstream: Upstream, method: str, path: str, request: dict[str, Any]) -> Carried | None:
    """How a call on `upstream` goes to its chat-completions server: None when it goes as it came (another kind of
    upstream, or a path that is not Gemini's). `path`: the decoded path the client asked for (under the
    upstream's base path, no query); `request`: its screened body ({} for a GET)."""
    if upstream.kind != GEMINI_TO_OPENAI:
        return None
    base = urlsplit(upstream.url).path.rstrip("/")
    call = GEMINI_CALL.fullmatch(path[len(base) :]) if path.startswith(base + "/") else None
    if method == "GET" and path[len(base) :] in GEMINI_LISTS:
        return Carried(f"{base}/models", b"", "", listing=True)
    if call is None or method != "POST":
        return None
    model, how = call.groups()
    if how == "countTokens":
        inner = request.get("generateContentRequest")
        counted = {"totalTokens": tokens_of(inner if isinstance(inner, dict) else request)}
        return Carried("", b"", model, local=json.dumps(counted).encode())
    chat = chat_request(request, model, stream=how == "streamGenerateContent")
    return Carried(f"{base}/chat/completions", json.dumps(chat).encode(), model)


# --- the answer ---------------------------------------------------------------------------------------------
def gemini_answer(chat: dict[str, Any], model: str) -> dict[str, Any]:
    """A chat completion as a GenerateContentResponse (its first choice: Gemini's candidateCount is 1 here)."""
    choice = next((c for c in chat["choices"] if isinstance(c, dict)), {})
    said = choice.get("message")
    message: dict[str, Any] = said if isinstance(said, dict) else {}
    calls, malformed = function_calls(message.get("tool_calls"))
    parts = _text_parts(message) + calls
    finish = MALFORMED if malformed else _finish(choice.get("finish_reason"))
    return _response(parts, chat.get("model") or model, chat.get("id"), finishReason=finish) | usage_metadata(
        chat.get("usage")
    )


def function_calls(tool_calls: Any) -> tuple[list[dict[str, Any]], bool]:
    """Chat tool calls (whole) as functionCall parts, and whether any was malformed (its arguments not a JSON
    object: left out)."""
    parts, malformed = [], False
    for call in tool_calls if isinstance(tool_calls, list) else []:
        named = call.get("function") if isinstance(call, dict) else None
        function: dict[str, Any] = named if isinstance(named, dict) else {}
        raw = function.get("arguments") or "{}"
        args = raw if isinstance(raw, dict) else json_or_none(raw.encode()) if isinstance(raw, str) else None
        if not isinstance(args, dict) or not function.get("name"):
            malformed = True
            continue
        parts.append(
            {"functionCall": {**({"id": call["id"]} if call.get("id") else {}), "name": function["name"], "args": args}}
        )
    return parts, malformed


def usage_metadata(usage: Any) -> dict[str, Any]:
    """Chat usage as {"usageMetadata": ...} (reasoning tokens apart, as Gemini counts its thoughts), or {}."""
    if not isinstance(usage, dict) or usage.get("prompt_tokens") is None:
        return {}
    prompt, completion = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    thoughts = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    metadata = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": completion - thoughts,
        "totalTokenCount": usage.get("total_tokens") or prompt + completion,
    }
    if thoughts:
        metadata["thoughtsTokenCount"] = thoughts
    if cached is not None:
        metadata["cachedContentTokenCount"] = cached
    return {"usageMetadata": metadata}


def model_list(listing: dict[str, Any]) -> dict[str, Any]:
    """The server's model list ({"data": [{"id"}]}) as Gemini's ({"models": [{"name": "models/<id>", ...}]})."""
    ids = [str(m.get("id")) for m in listing["data"] if isinstance(m, dict) and m.get("id")]
    return {"models": [{"name": f"models/{i}", "displayName": i, "supportedGenerationMethods": GENERATES} for i in ids]}


class GeminiStream(Stream):
    """A chat-completions SSE stream read as Gemini's: the relay (relay.py) writes and meters the Gemini chunks it
    hands out; faults, timeouts and the server's end marker are the chat stream's own (Stream)."""

    def __init__(self, response: aiohttp.ClientResponse, limits: Limits, model: str):
        super().__init__(response, limits)
        self.model, self.id = model, None
        self.calls: dict[Any, dict[str, str]] = {}  # index -> {"id", "name", "arguments"}, gathered piece by piece
        self.finish: str | None = None
        self.usage: Any = None
        self.done = False

    async def start(self) -> "GeminiStream":
        """Ready at once, its first event a blank line (which Gemini's SDKs skip): the relay then sends the answer's
        headers before the server's first token, which a local server reading a long prompt may take minutes to
        give, and the Gemini CLI gives up on headers after 60 s. So a stream that breaks before its first event
        is not retried here (its status was: a 429 or 5xx still is); it ends with Google's error chunk, and the
        CLI retries it."""
        self.first = [(b"\n", None)]
        return self

    async def next(self) -> list[tuple[bytes, Any]]:
        while not self.done:
            events = await super().next()
            chunks = [chunk for _, data in events for chunk in self._chunks(data)]
            if self.ended:  # [DONE], or the server's error event
                self.done = True
                if self.upstream_error is None:
                    chunks.append(self._last())
            if chunks:
                return [(b"data: " + json.dumps(chunk).encode() + b"\n\n", chunk) for chunk in chunks]
        return []

    def _chunks(self, data: Any) -> list[dict[str, Any]]:
        if not isinstance(data, dict):  # [DONE]
            return []
        error = data.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            return [gemini_error(self.upstream_error[0] if self.upstream_error else 502, str(message or error))]
        self.id, self.model = self.id or data.get("id"), data.get("model") or self.model
        self.usage = data.get("usage") or self.usage
        parts: list[dict[str, Any]] = []
        for choice in data.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            given = choice.get("delta")
            delta: dict[str, Any] = given if isinstance(given, dict) else {}
            parts += _text_parts(delta)
            for i, piece in enumerate(delta.get("tool_calls") or []):
                function = piece.get("function") or {}
                call = self.calls.setdefault(piece.get("index", i), {"id": "", "name": "", "arguments": ""})
                call["id"] = call["id"] or piece.get("id") or ""
                call["name"] = call["name"] or function.get("name") or ""
                call["arguments"] += function.get("arguments") or ""
            self.finish = choice.get("finish_reason") or self.finish
        return [_response(parts, self.model, self.id)] if parts else []

    def _last(self) -> dict[str, Any]:
        whole = [
            {"id": c["id"], "function": {"name": c["name"], "arguments": c["arguments"]}} for c in self.calls.values()
        ]
        calls, malformed = function_calls(whole)
        finish = MALFORMED if malformed else _finish(self.finish)
        return _response(calls, self.model, self.id, finishReason=finish) | usage_metadata(self.usage)


# --- small parts ----------------------------------------------------------------------------------------------
def _text_parts(message: dict) -> list[dict[str, Any]]:
    """A chat message's (or delta's) reasoning as a thought part and its text as a text part."""
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    content = message.get("content")
    parts = [{"text": reasoning, "thought": True}] if isinstance(reasoning, str) and reasoning else []
    return parts + ([{"text": content}] if isinstance(content, str) and content else [])


def _finish(reason: Any) -> str:
    return FINISH.get(reason, "OTHER") if reason else "STOP"


def _response(parts: list[dict], model: str, response_id: Any, **candidate: Any) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0, **candidate}],
        "modelVersion": model,
        **({"responseId": response_id} if response_id else {}),
    }


def _error_message(parsed: Any, body: bytes, status: int) -> str:
    error = parsed.get("error") if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or body[:300].decode("utf-8", errors="replace").strip() or f"HTTP {status}")


__all__ = ["carry", "Carried", "GeminiStream", "gemini_answer"]  # documented in CODE_APPENDIX.md
