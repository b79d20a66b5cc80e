"""A Gemini generateContent request as a chat-completions request: the request's direction of the upstream kind
"gemini-to-openai" (gemini_to_openai.py says what is carried and how, both ways, and translates the answers back).

Apart from the answer's direction because it reads only Google's JSON (under either spelling of a field name, as
Google's parser takes both) and writes only the chat request; a countTokens answer is counted from the same
translation, offline.
"""

from __future__ import annotations

import json
import re
from typing import Any

from helpers.core.tokens import count_message_tokens, count_tokens

CHOICE_MODES = {"AUTO": "auto", "ANY": "required", "NONE": "none", "VALIDATED": "auto"}
# generationConfig -> chat completions, the fields every OpenAI-compatible server takes
GENERATION = (
    ("maxOutputTokens", "max_tokens"),
    ("temperature", "temperature"),
    ("topP", "top_p"),
    ("stopSequences", "stop"),
    ("seed", "seed"),
    ("presencePenalty", "presence_penalty"),
    ("frequencyPenalty", "frequency_penalty"),
)
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


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
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(call.get("args") or {})},
                }
            )
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
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": _answered(answer, open_calls),
                    "content": _tool_output(answer.get("response")),
                }
            )
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
    return {
        "type": "text",
        "text": f"[inline {mime or 'data'} of {len(data) * 3 // 4:,} bytes left out: the model "
        "server speaks chat completions, which carries images only]",
    }


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
            found.append(
                {
                    "type": "function",
                    "function": {
                        "name": str(declaration.get("name") or ""),
                        "description": str(declaration.get("description") or ""),
                        "parameters": schema if isinstance(schema, dict) else {"type": "object", "properties": {}},
                    },
                }
            )
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
        chat["response_format"] = (
            {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
            if isinstance(schema, dict)
            else {"type": "json_object"}
        )
    return chat


def tokens_of(request: dict[str, Any]) -> int:
    """A countTokens answer, offline: the request's messages, tool calls and tools in cl100k tokens (an estimate
    for any model, as Gemini's own count is for its tokenizer)."""
    messages = chat_messages(request)
    calls = [c["function"]["arguments"] for m in messages for c in m.get("tool_calls") or []]
    tools = function_tools(_field(request, "tools"))
    return (
        count_message_tokens(messages)
        + sum(map(count_tokens, calls))
        + (count_tokens(json.dumps(tools)) if tools else 0)
    )


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


__all__ = ["chat_request", "json_schema", "tokens_of"]  # documented in CODE_APPENDIX.md
