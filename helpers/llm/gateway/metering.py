"""Reading a model call: model, token usage, output text and tool calls from a JSON or SSE answer of any of
the four wire formats (chat completions, Anthropic messages, Responses, Gemini generateContent), and the
conversation a request carries (an agent's trajectory so far).

Token counts, the same in all four formats: `input_tokens` is every prompt token of the call (Anthropic
reports cache reads and cache writes apart from its `input_tokens`: they are added back), `cached_tokens`
the part of them read from the provider's prompt cache (OpenAI `prompt_tokens_details.cached_tokens` or
`input_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`, Gemini `cachedContentTokenCount`;
None when the answer does not say), and `output_tokens` what the model wrote (Gemini's usageMetadata counts
its thinking apart: output is candidatesTokenCount + thoughtsTokenCount). Gemini names the model that
answered in `modelVersion`."""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

import orjson

from helpers.core import config

TRACE_MESSAGE_CHARS = config.GATEWAY_TRACE_MESSAGE_CHARS
# The keys of an event that can say anything Meter.event reads once it knows the model (a streamed chat chunk has
# none of them until its usage comes): an event without them is skipped when no output is read.
_METERED_KEYS = frozenset({"message", "response", "usage", "usageMetadata"})


class Meter:
    """Reads model, usage, output text and tool calls from a JSON or SSE answer of any of the four APIs."""

    def __init__(self, output: bool = True) -> None:
        self.output = output  # False: read only model and usage (cheaper: most stream events are skipped)
        self.model: str | None = None
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cached_tokens: int | None = None  # of input_tokens, read from the provider's prompt cache
        self._text: list[str] = []
        self._tools: dict[Any, dict[str, str]] = {}  # (api, index) -> {"name", "arguments"}
        self._pending = b""

    def text(self) -> str:
        return "".join(self._text)

    def tool_calls(self) -> list[dict[str, str]]:
        return list(self._tools.values())

    def feed_json(self, body: bytes) -> None:
        event = json_or_none(body)
        if isinstance(event, dict):
            self.event(event)

    def feed_sse(self, chunk: bytes) -> None:
        self._pending += chunk.replace(b"\r\n", b"\n")
        *events, self._pending = self._pending.split(b"\n\n")
        for raw in events:
            data = b"\n".join(line[5:].lstrip() for line in raw.split(b"\n") if line.startswith(b"data:"))
            if data and data != b"[DONE]" and (self.output or self.model is None or b'"usage' in data):
                self.feed_json(data)

    def event(self, event: dict) -> None:
        if not self.output and self.model is not None and event.keys().isdisjoint(_METERED_KEYS):
            return  # nothing here to read: most events of a stream
        inner = event.get("message") or event.get("response")
        inner = inner if isinstance(inner, dict) else {}
        self.model = self.model or event.get("model") or inner.get("model") or event.get("modelVersion")
        usage = event.get("usage") or inner.get("usage") or _gemini_usage(event.get("usageMetadata"))
        if isinstance(usage, dict):
            self._take_usage(usage)
        if self.output:
            self._take_output(event)

    def _take_usage(self, usage: dict) -> None:
        given_in = usage.get("prompt_tokens", usage.get("input_tokens"))
        if given_in is not None:
            given_in += (usage.get("cache_creation_input_tokens") or 0) + (usage.get("cache_read_input_tokens") or 0)
            self.input_tokens = max(self.input_tokens or 0, given_in)  # stream usage is cumulative
        details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
        given_cached = usage.get(
            "cache_read_input_tokens", details.get("cached_tokens") if isinstance(details, dict) else None
        )
        if given_cached is not None:
            self.cached_tokens = max(self.cached_tokens or 0, given_cached)
        given_out = usage.get("completion_tokens", usage.get("output_tokens"))
        if given_out is not None:
            self.output_tokens = max(self.output_tokens or 0, given_out)

    def _tool(self, key: Any, name: str | None = None, arguments: str = "") -> None:
        call = self._tools.setdefault(key, {"name": "", "arguments": ""})
        call["name"] = call["name"] or (name or "")
        call["arguments"] += arguments

    def _take_output(self, event: dict) -> None:
        kind = event.get("type")
        for choice in event.get("choices") or []:  # chat completions, streamed (delta) or not (message)
            part = choice.get("delta") or choice.get("message") or {}
            if isinstance(part.get("content"), str):
                self._text.append(part["content"])
            for i, call in enumerate(part.get("tool_calls") or []):
                function = call.get("function") or {}
                self._tool(("chat", call.get("index", i)), function.get("name"), function.get("arguments") or "")
        if kind == "message":  # Anthropic, not streamed
            self._anthropic_blocks(event.get("content") or [])
        elif kind == "content_block_start":
            self._anthropic_blocks([event.get("content_block") or {}], event.get("index", 0))
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                self._text.append(delta.get("text", ""))
            elif delta.get("type") == "input_json_delta":
                self._tool(("anthropic", event.get("index", 0)), None, delta.get("partial_json", ""))
        elif kind == "response.completed" or event.get("object") == "response":  # Responses API
            response = event.get("response") if kind else event
            for i, item in enumerate((response or {}).get("output") or []):
                if item.get("type") == "function_call":
                    self._tool(("responses", i), item.get("name"), item.get("arguments") or "")
                for content in item.get("content") or [] if item.get("type") == "message" else []:
                    self._text.append(content.get("text") or "")

        candidates = found if isinstance(found := event.get("candidates"), list) else []
        for candidate in (c for c in candidates if isinstance(c, dict)):  # Gemini, streamed or not
            parts = (candidate.get("content") or {}).get("parts") or []
            for part in (p for p in parts if isinstance(p, dict)):
                if isinstance(part.get("text"), str) and not part.get("thought"):
                    self._text.append(part["text"])
                call = part.get("functionCall")
                if isinstance(call, dict):  # each call comes whole, never in pieces
                    self._tool(("gemini", len(self._tools)), call.get("name"), json.dumps(call.get("args") or {}))

    def _anthropic_blocks(self, blocks: list, first_index: int = 0) -> None:
        for i, block in enumerate(blocks, start=first_index):
            if block.get("type") == "text":
                self._text.append(block.get("text", ""))
            elif block.get("type") == "tool_use":
                given = block.get("input")
                self._tool(("anthropic", i), block.get("name"), json.dumps(given) if given else "")


def _gemini_usage(metadata: Any) -> dict | None:
    """Gemini's usageMetadata in the chat-style keys _take_usage reads (promptTokenCount includes the cached part)."""
    if not isinstance(metadata, dict) or "promptTokenCount" not in metadata:
        return None
    output = (metadata.get("candidatesTokenCount") or 0) + (metadata.get("thoughtsTokenCount") or 0)
    cached = metadata.get("cachedContentTokenCount")
    return {
        "prompt_tokens": metadata["promptTokenCount"],
        "completion_tokens": output,
        **({"prompt_tokens_details": {"cached_tokens": cached}} if cached is not None else {}),
    }


def input_messages(request: Any, limit: int = TRACE_MESSAGE_CHARS) -> list[dict[str, Any]]:
    """The conversation of a chat-completions, Anthropic messages, Responses or Gemini request as
    [{"role", "content" (cut to `limit`), "tool_calls": [{"name", "arguments"}]}]; [] for anything else."""
    if not isinstance(request, dict):
        return []
    messages: list[dict[str, Any]] = []

    def add(role: str, content: Any, tool_calls: list | None = None) -> None:
        messages.append({"role": role, "content": _plain(content)[:limit], "tool_calls": tool_calls or []})

    system = (
        request.get("system") or request.get("instructions") or (request.get("systemInstruction") or {}).get("parts")
    )
    if system:
        add("system", system)
    items = request.get("messages") or request.get("input") or request.get("contents") or []
    if isinstance(items, str):
        add("user", items)
        return messages
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("parts"), list):  # Gemini contents: text, functionCall and functionResponse parts
            parts = [p for p in item["parts"] if isinstance(p, dict)]
            calls = [
                {"name": p["functionCall"].get("name"), "arguments": json.dumps(p["functionCall"].get("args"))}
                for p in parts
                if isinstance(p.get("functionCall"), dict)
            ]
            answers = [
                p["functionResponse"].get("response") for p in parts if isinstance(p.get("functionResponse"), dict)
            ]
            for answer in answers:
                add("tool", answer)
            if calls or not answers:
                add("assistant" if item.get("role") == "model" else "user", [p for p in parts if "text" in p], calls)
        elif item.get("type") == "function_call":  # Responses API input items
            add("assistant", "", [{"name": item.get("name"), "arguments": item.get("arguments")}])
        elif item.get("type") == "function_call_output":
            add("tool", item.get("output"))
        else:
            content = item.get("content")
            calls = [
                {"name": (c.get("function") or {}).get("name"), "arguments": (c.get("function") or {}).get("arguments")}
                for c in item.get("tool_calls") or []
            ]
            calls += [
                {"name": b.get("name"), "arguments": json.dumps(b.get("input"))}
                for b in (content if isinstance(content, list) else [])
                if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            add(item.get("role") or "user", content, calls)
    return messages


def _plain(content: Any) -> str:
    """Text of a message content: a string, or the text of its parts (text, tool results)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part if isinstance(part, str) else _plain(part.get("text") or part.get("content") or part.get("output"))
            for part in content
            if isinstance(part, (str, dict))
        ]
        return "\n".join(p for p in parts if p)
    return json.dumps(content)


# A run of digits that may be an integer past 64 bits, which orjson reads as a rounded float (json.loads exactly)
_LONG_DIGITS = re.compile(rb"\d{19}")


def parsed(data: bytes) -> tuple[Any, bool]:
    """(`data` parsed as JSON, as json.loads takes it, and whether orjson parsed it); ValueError if not JSON,
    RecursionError past json's depth. orjson first, as it parses in a fifth of the time (every request and every
    event of every stream is parsed); json.loads for what orjson refuses (NaN, a lone surrogate) or would round (an
    integer past 64 bits), so that what is JSON to the clients' own parsers stays the same JSON here."""
    if not _LONG_DIGITS.search(data):
        try:
            return orjson.loads(data), True
        except ValueError:
            pass
    return json.loads(data), False


def loads(data: bytes) -> Any:
    """`data` parsed as JSON, as json.loads takes it (see parsed)."""
    return parsed(data)[0]


def json_or_none(data: bytes) -> Any:
    try:
        return loads(data) if data else None
    except (ValueError, RecursionError):  # past json's depth: not a body anything here reads
        return None


def decoded_body(body: bytes, encoding: str | None) -> bytes:
    """`body` without its gzip/deflate coding, for metering only (the client gets it as it came)."""
    if encoding in ("gzip", "deflate"):
        try:
            return zlib.decompress(body, 47)  # 32 + 15: gzip or zlib header
        except zlib.error:
            return b""
    return body


def body_text(data: bytes, limit: int) -> str:
    """The first `limit` bytes of a body as text (for traces)."""
    return data[:limit].decode("utf-8", errors="replace")
