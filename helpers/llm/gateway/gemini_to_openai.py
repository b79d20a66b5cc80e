"""A Gemini client's calls carried to an OpenAI chat-completions server: the upstream kind "gemini-to-openai".

The Gemini CLI speaks only Google's Gemini API; llama.cpp's llama-server, vLLM, Ollama and OpenRouter speak chat
completions. On an upstream of this kind the gateway screens each Gemini call as it came (policy.py, allowlist.py:
its model from the path, its fields, its output cap), then translates it, both ways:
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
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from helpers.core.tokens import count_message_tokens, count_tokens
from helpers.llm.gateway.metering import json_or_none
from helpers.llm.gateway.policy import GEMINI_CALL, GEMINI_LISTS, gemini_error
from helpers.llm.gateway.relay import Limits, Stream, UpstreamFault
from helpers.llm.gateway.upstreams import GEMINI_TO_OPENAI, Upstream

FINISH = {"stop": "STOP", "tool_calls": "STOP", "function_call": "STOP", "length": "MAX_TOKENS",
          "content_filter": "SAFETY"}  # chat's finish_reason -> Gemini's finishReason (anything else: OTHER)
MALFORMED = "MALFORMED_FUNCTION_CALL"
CHOICE_MODES = {"AUTO": "auto", "ANY": "required", "NONE": "none", "VALIDATED": "auto"}
# generationConfig -> chat completions, the fields every OpenAI-compatible server takes
GENERATION = (("maxOutputTokens", "max_tokens"), ("temperature", "temperature"), ("topP", "top_p"),
              ("stopSequences", "stop"), ("seed", "seed"), ("presencePenalty", "presence_penalty"),
              ("frequencyPenalty", "frequency_penalty"))
GENERATES = ["generateContent", "streamGenerateContent", "countTokens"]  # what the model list says each model does
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


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
            raise UpstreamFault(f"the model server answered {status} without {wanted!r}: not a chat completions "
                                f"{'model list' if self.listing else 'answer'}")
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
    call = GEMINI_CALL.fullmatch(path[len(base):]) if path.startswith(base + "/") else None
    if method == "GET" and path[len(base):] in GEMINI_LISTS:
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


# --- the request --------------------------------------------------------------------------------------------
def chat_request(request: dict[str, Any], model: str, stream: bool = False) -> dict[str, Any]:
    """A Gemini generateContent request as a chat-completions request for `model`."""
    chat: dict[str, Any] = {"model": model, "messages": chat_messages(request)}
    tools = function_tools(_field(request, "tools"))
    if tools:
        chat["tools"] = tools
        choice = tool_choice(_field(request, "toolConfig"))
        if choice is not None:
            chat["tool_choice"] = choice
    chat.update(generation(_field(request, "generationConfig")))
    if stream:
        chat.update(stream=True, stream_options={"include_usage": True})  # so the call is metered
    return chat


def chat_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """`systemInstruction` and `contents` as chat messages (see the module docstring)."""
    messages: list[dict[str, Any]] = []
    system = _field(request, "systemInstruction")
    system_text = system if isinstance(system, str) else _text(_parts(system))
    if system_text:
        messages.append({"role": "system", "content": system_text})
    contents = _field(request, "contents")
    if isinstance(contents, str):
        contents = [{"role": "user", "parts": [{"text": contents}]}]
    if isinstance(contents, dict):  # one Content, as countTokens may send it
        contents = [contents]
    open_calls: list[tuple[str, str]] = []  # (id, name) of the calls not yet answered, oldest first
    for turn, content in enumerate(contents if isinstance(contents, list) else []):
        if not isinstance(content, dict):
            continue
        if content.get("role") == "model":
            messages.append(_assistant(_parts(content), turn, open_calls))
        else:
            messages += _user(_parts(content), open_calls)
    return messages


def _assistant(parts: list[dict], turn: int, open_calls: list[tuple[str, str]]) -> dict[str, Any]:
    calls = []
    for i, part in enumerate(parts):
        call = _field(part, "functionCall")
        if isinstance(call, dict):
            call_id, name = str(call.get("id") or f"call_{turn}_{i}"), str(call.get("name") or "")
            open_calls.append((call_id, name))
            calls.append({"id": call_id, "type": "function",
                          "function": {"name": name, "arguments": json.dumps(call.get("args") or {})}})
    text = _text(parts)
    message: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return message


def _user(parts: list[dict], open_calls: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """A user turn: a tool message per functionResponse part, then the turn's text and images, if any."""
    messages: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    for part in parts:
        answer = _field(part, "functionResponse")
        inline = _field(part, "inlineData")
        if isinstance(answer, dict):
            messages.append({"role": "tool", "tool_call_id": _answered(answer, open_calls),
                             "content": _tool_output(answer.get("response"))})
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            content.append({"type": "text", "text": part["text"]})
        elif isinstance(inline, dict):
            content.append(_inline(inline))
    if content:
        plain = all(c["type"] == "text" for c in content)
        joined: str | list[dict[str, Any]] = "\n\n".join(c["text"] for c in content) if plain else content
        messages.append({"role": "user", "content": joined})
    return messages


def _answered(answer: dict, open_calls: list[tuple[str, str]]) -> str:
    """The id of the call `answer` answers (its own id, else the oldest open call of its name), closing it."""
    given, name = answer.get("id"), str(answer.get("name") or "")
    for i, (call_id, call_name) in enumerate(open_calls):
        if (given and call_id == given) or (not given and call_name == name):
            return open_calls.pop(i)[0]
    return str(given or f"call_{name}")


def _tool_output(response: Any) -> str:
    """A functionResponse's `response` as a tool message's text (the CLI's {"output": text} as that text)."""
    if isinstance(response, dict) and set(response) == {"output"} and isinstance(response["output"], str):
        return response["output"]
    return json.dumps(response)


def _inline(inline: dict) -> dict[str, Any]:
    """Inline data as a chat content part: an image as a data URL; anything else named in text (chat completions
    has no common part for it)."""
    mime, data = str(_field(inline, "mimeType") or ""), str(inline.get("data") or "")
    if mime.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}
    return {"type": "text", "text": f"[inline {mime or 'data'} of {len(data) * 3 // 4:,} bytes left out: the model "
                                    "server speaks chat completions, which carries images only]"}


def function_tools(tools: Any) -> list[dict[str, Any]]:
    """Gemini tools' functionDeclarations as chat function tools."""
    found = []
    for tool in tools if isinstance(tools, list) else []:
        for declaration in _field(tool, "functionDeclarations") or []:
            if not isinstance(declaration, dict):
                continue
            schema = _field(declaration, "parametersJsonSchema")
            if schema is None:
                schema = json_schema(_field(declaration, "parameters"))
            found.append({"type": "function", "function": {
                "name": str(declaration.get("name") or ""), "description": str(declaration.get("description") or ""),
                "parameters": schema if isinstance(schema, dict) else {"type": "object", "properties": {}}}})
    return found


def json_schema(schema: Any) -> Any:
    """Google's schema (OpenAPI 3.0's subset: upper-case types, `nullable`) as JSON Schema."""
    if isinstance(schema, list):
        return [json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("nullable", "propertyOrdering", "property_ordering"):
            continue
        if key == "type" and isinstance(value, str):
            value = value.lower()
        elif key == "properties" and isinstance(value, dict):
            value = {name: json_schema(inner) for name, inner in value.items()}
        elif key in ("items", "anyOf", "any_of"):
            value = json_schema(value)
        converted["anyOf" if key == "any_of" else key] = value
    if schema.get("nullable") and isinstance(converted.get("type"), str):
        converted["type"] = [converted["type"], "null"]
    return converted


def tool_choice(config: Any) -> Any:
    """toolConfig's functionCallingConfig as tool_choice (one allowed function under ANY: that function)."""
    calling = _field(config, "functionCallingConfig") if isinstance(config, dict) else None
    if not isinstance(calling, dict) or str(calling.get("mode")).upper() not in CHOICE_MODES:
        return None
    mode = CHOICE_MODES[str(calling["mode"]).upper()]
    allowed = _field(calling, "allowedFunctionNames") or []
    if mode == "required" and isinstance(allowed, list) and len(allowed) == 1:
        return {"type": "function", "function": {"name": str(allowed[0])}}
    return mode


def generation(config: Any) -> dict[str, Any]:
    """generationConfig's fields that chat completions has (GENERATION), and a JSON answer as response_format."""
    if not isinstance(config, dict):
        return {}
    chat = {ours: _field(config, theirs) for theirs, ours in GENERATION if _field(config, theirs) is not None}
    if _field(config, "responseMimeType") == "application/json":
        schema = _field(config, "responseJsonSchema") or json_schema(_field(config, "responseSchema"))
        chat["response_format"] = ({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
                                   if isinstance(schema, dict) else {"type": "json_object"})
    return chat


def tokens_of(request: dict[str, Any]) -> int:
    """A countTokens answer, offline: the request's messages, tool calls and tools in cl100k tokens (an estimate
    for any model, as Gemini's own count is for its tokenizer)."""
    messages = chat_messages(request)
    calls = [c["function"]["arguments"] for m in messages for c in m.get("tool_calls") or []]
    tools = function_tools(_field(request, "tools"))
    return count_message_tokens(messages) + sum(map(count_tokens, calls)) + (count_tokens(json.dumps(tools)) if tools else 0)


# --- the answer ---------------------------------------------------------------------------------------------
def gemini_answer(chat: dict[str, Any], model: str) -> dict[str, Any]:
    """A chat completion as a GenerateContentResponse (its first choice: Gemini's candidateCount is 1 here)."""
    choice = next((c for c in chat["choices"] if isinstance(c, dict)), {})
    said = choice.get("message")
    message: dict[str, Any] = said if isinstance(said, dict) else {}
    calls, malformed = function_calls(message.get("tool_calls"))
    parts = _text_parts(message) + calls
    finish = MALFORMED if malformed else _finish(choice.get("finish_reason"))
    return _response(parts, chat.get("model") or model, chat.get("id"), finishReason=finish) | usage_metadata(chat.get("usage"))


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
        parts.append({"functionCall": {**({"id": call["id"]} if call.get("id") else {}), "name": function["name"],
                                       "args": args}})
    return parts, malformed


def usage_metadata(usage: Any) -> dict[str, Any]:
    """Chat usage as {"usageMetadata": ...} (reasoning tokens apart, as Gemini counts its thoughts), or {}."""
    if not isinstance(usage, dict) or usage.get("prompt_tokens") is None:
        return {}
    prompt, completion = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    thoughts = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    metadata = {"promptTokenCount": prompt, "candidatesTokenCount": completion - thoughts,
                "totalTokenCount": usage.get("total_tokens") or prompt + completion}
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
        whole = [{"id": c["id"], "function": {"name": c["name"], "arguments": c["arguments"]}} for c in self.calls.values()]
        calls, malformed = function_calls(whole)
        finish = MALFORMED if malformed else _finish(self.finish)
        return _response(calls, self.model, self.id, finishReason=finish) | usage_metadata(self.usage)


# --- small parts ----------------------------------------------------------------------------------------------
def _field(data: Any, name: str) -> Any:
    """A field of Google's JSON under its camelCase name or its snake_case one (its parser takes both)."""
    if not isinstance(data, dict):
        return None
    value = data.get(name)
    return data.get(_CAMEL.sub("_", name).lower()) if value is None else value


def _parts(content: Any) -> list[dict]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _text(parts: list[dict]) -> str:
    return "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))


def _text_parts(message: dict) -> list[dict[str, Any]]:
    """A chat message's (or delta's) reasoning as a thought part and its text as a text part."""
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    content = message.get("content")
    parts = [{"text": reasoning, "thought": True}] if isinstance(reasoning, str) and reasoning else []
    return parts + ([{"text": content}] if isinstance(content, str) and content else [])


def _finish(reason: Any) -> str:
    return FINISH.get(reason, "OTHER") if reason else "STOP"


def _response(parts: list[dict], model: str, response_id: Any, **candidate: Any) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0, **candidate}],
            "modelVersion": model, **({"responseId": response_id} if response_id else {})}


def _error_message(parsed: Any, body: bytes, status: int) -> str:
    error = parsed.get("error") if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or body[:300].decode("utf-8", errors="replace").strip() or f"HTTP {status}")


__all__ = ["carry", "Carried", "GeminiStream", "chat_request", "gemini_answer", "json_schema"]  # documented in CODE_APPENDIX.md
