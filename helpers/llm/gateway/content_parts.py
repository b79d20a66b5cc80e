"""What a request's conversation may hold, per wire format: the content part types that pass (PART_TYPES), a chat
message's own fields (MESSAGE_FIELDS), no part the provider would fetch or read from its own store (a URL in any
shape, a stored file), no object whose keys differ in case only; its media parts counted for the budget.

Apart from allowlist.py, which screens a request's top-level fields, tools and output cap and calls this for its
content: the walk over nested messages and parts is a concern of its own, with tables of its own.
"""

from __future__ import annotations

from typing import Any

ANY = None  # a field whose every value passes

# Content parts by wire format: the types that pass (a provider fetches none of them)
PART_TYPES: dict[str, set[Any]] = {
    "chat": {"message", "text", "image_url", "input_audio", "file", "refusal"},
    "responses": {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "custom_tool_call",
        "custom_tool_call_output",
        "input_text",
        "output_text",
        "input_image",
        "input_file",
        "refusal",
        "summary_text",
        "reasoning_text",
    },
    "anthropic": {
        "message",
        "text",
        "image",
        "document",
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "search_result",
        "tool_reference",
    },
    "gemini": {
        "message",
        "text",
        "inlineData",
        "inline_data",
        "functionCall",
        "function_call",
        "functionResponse",
        "function_response",
        None,
    },
}
_GEMINI_PART_EXTRAS = {
    "thought",
    "thoughtSignature",
    "thought_signature",
    "videoMetadata",
    "video_metadata",
    "partMetadata",
    "part_metadata",
}  # what a Gemini part may carry beside its kind
MEDIA_PARTS = {
    "image_url",
    "input_audio",
    "file",
    "input_image",
    "input_file",
    "image",
    "document",
    "inlineData",
    "inline_data",
}
# Fields of a part that make the provider fetch or read something of its own: only inline data passes
_REFERENCES = ("file_id", "file_url", "fileUri", "file_uri")
_CHECKED_KEYS = {"type", "name", "role", "url", "image_url", "source", "file_id", "file_url", "content", "output"}
# A chat message's own fields that pass, each with ANY or the values that pass: what the product's clients send
# and echo back (the OpenAI SDK's assistant message carries `refusal`, `annotations`, `audio: null`); a reference
# to something the provider stored (`audio: {id}`) is none of them.
MESSAGE_FIELDS: dict[str, dict[str, tuple[Any, ...] | None]] = {
    "chat": {
        "role": ANY,
        "content": ANY,
        "name": ANY,
        "tool_calls": ANY,
        "tool_call_id": ANY,
        "function_call": ANY,
        "refusal": ANY,
        "annotations": ANY,
        "reasoning_content": ANY,
        "reasoning": ANY,
        "reasoning_details": ANY,
        "cache_control": ANY,
        "audio": (None,),
    }
}
# Keys of a content part (or of the object its kind names) that point the provider at something to fetch, as a
# string or as an object holding one: only an inline `data:` URL passes
_URL_KEYS = ("url", "uri", "image_url", "audio_url", "video_url", "file_url", "document_url", "fileUri", "file_uri")


def ambiguous(api: str, part: dict[str, Any]) -> str | None:
    """A part with two keys that differ in case only, or a 'Type' beside 'type' (a provider whose parser matches
    field names without case, as Go's encoding/json does, could read the one the gateway did not check); for
    Gemini, whose parser takes both spellings of a name, a field given in both (`maxOutputTokens`,
    `max_output_tokens`)."""
    if api == "gemini":
        folded = {key.replace("_", "").lower() for key in part}
        return f"an object naming one field twice ({', '.join(sorted(part))})" if len(folded) != len(part) else None
    folded = {key.lower() for key in part}
    if folded == part.keys():  # every key is lower-case already: none can be read as another
        return None
    if len(folded) != len(part) or any(key != key.lower() and key.lower() in _CHECKED_KEYS for key in part):
        return f"an object with keys that differ in case only ({', '.join(sorted(part))})"
    return None


def screen_content(api: str, body: dict[str, Any]) -> tuple[str | None, int]:
    """Why the conversation of `body` may not go (a part the provider would fetch or read from its own store, a
    part type or message field not allowed), else None; and its media parts (image, audio, file, document)."""
    media = 0
    items = body.get({"gemini": "contents", "responses": "input"}.get(api, "messages"))
    if isinstance(items, str) or items is None:
        return None, 0
    if not isinstance(items, list):
        return "the conversation is not a list", 0
    stack = [(item, True) for item in items]  # (part, whether it is a message)
    system = body.get("systemInstruction") or body.get("system_instruction") or body.get("system")
    stack += (
        [(system, True)]
        if isinstance(system, dict)
        else [(p, False) for p in system]
        if isinstance(system, list)
        else []
    )
    inner = ("parts",) if api == "gemini" else ("content", "output") if api == "responses" else ("content",)
    while stack:
        part, message = stack.pop()
        if not isinstance(part, dict):
            continue
        why = ambiguous(api, part)
        if why:
            return f"a content part is {why}", media
        kind = (
            "message"
            if message and (api != "responses" or part.get("type", "message") == "message")
            else _kind(api, part)
        )
        why = _message_fields(api, part) if kind == "message" and message else None
        if why:
            return why, media
        if kind not in PART_TYPES[api]:
            return f"a content part of type {kind!r} is not forwarded (a provider-side item, tool or reference)", media
        media += kind in MEDIA_PARTS
        why = _reference(kind, part)
        if why:
            return why, media
        for key in inner:
            if isinstance(part.get(key), list):
                stack += [(p, False) for p in part[key]]
    return None, media


def _message_fields(api: str, message: dict[str, Any]) -> str | None:
    """Why a message's own fields may not go (one MESSAGE_FIELDS does not name, or a value it does not pass)."""
    fields = MESSAGE_FIELDS.get(api)
    found = None if fields is None else unpassed(message, fields)
    if found is None:
        return None
    name, value, named = found
    if named:
        return f"a message's {name}={value!r} is not forwarded (a reference to what the provider stored)"
    return f"a message's field {name!r} is not one the gateway forwards on the {api} API"


def unpassed(given: dict[str, Any], table: dict[str, Any]) -> tuple[str, Any, bool] | None:
    """The first field of `given` that `table` does not pass, as (name, value, whether the table names it but not
    this value); None when each one passes (a table gives each field it names ANY or the values that pass)."""
    for name, value in given.items():
        if name not in table:
            return name, value, False
        if table[name] is not ANY and value not in table[name]:
            return name, value, True
    return None


def _kind(api: str, part: dict[str, Any]) -> Any:
    if api == "gemini":  # a part is keyed by its kind
        kinds = sorted(set(part) - _GEMINI_PART_EXTRAS)
        return ",".join(kinds) if kinds else None
    return part.get("type")


def _reference(kind: str, part: dict[str, Any]) -> str | None:
    """Why a part makes the provider fetch or read something (a URL in any shape, a stored file), else None."""
    inner = found if isinstance(found := part.get(kind), dict) else part
    source = given if isinstance(given := inner.get("source"), dict) else {}
    for holder in (part, inner):
        if holder.keys().isdisjoint(_URL_KEYS):  # (most parts: one set operation)
            continue
        for key in _URL_KEYS:
            url = holder.get(key)
            url = next((url[k] for k in _URL_KEYS if k in url), None) if isinstance(url, dict) else url
            if url is not None and not (isinstance(url, str) and url.startswith("data:")):
                return f"a {kind} part by URL ({key!r}) is not forwarded (the provider would fetch it): send it inline"
    if source and source.get("type") not in ("base64", "text", "content"):
        return f"a {kind} part whose source is {source.get('type')!r} is not forwarded: send it inline"
    named = [key for key in _REFERENCES if inner.get(key)]
    if named:
        return f"a {kind} part naming {named[0]!r} is not forwarded (the provider would fetch or read it)"
    return None


__all__ = [
    "screen_content",
    "unpassed",
    "ambiguous",
    "PART_TYPES",
    "MESSAGE_FIELDS",
    "MEDIA_PARTS",
]  # documented in CODE_APPENDIX.md
