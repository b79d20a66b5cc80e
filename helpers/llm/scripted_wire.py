"""The scripted model server's answers on the wire: each API's whole answer and its stream of SSE events,
built from one Reply (helpers.llm.scripts). Plain functions of (request, reply, model) -> JSON-ready data;
the server (helpers.llm.scripted_server) writes them, and misbehaves around them when a Reply's fault asks.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from helpers.llm.scripts import ANTHROPIC_STOP, TEXT_CHUNK, Reply, _calls, _estimate_tokens, _text_of


def sse_events(api: str, request: dict, reply: Reply, model: str) -> list[bytes]:
    """The whole stream of an answer in `api`'s wire format, one SSE event each, end marker included."""
    if api == "chat":
        chunks = [b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in _stream_chunks(request, reply, model)]
        return chunks + [b"data: [DONE]\n\n"]
    if api == "gemini":  # no end marker: the chunk with a finishReason is the last
        return [b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in _gemini_chunks(request, reply, model)]
    events = _anthropic_events if api == "anthropic" else _responses_events
    return [
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events(request, reply, model)
    ]


def _usage(request: dict, reply: Reply, calls: list[dict]) -> dict[str, Any]:
    """Chat-style usage (prompt_tokens, completion_tokens, total_tokens)."""
    if reply.usage:
        usage = dict(reply.usage)
        usage.setdefault("total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
        return usage
    sent = request.get("messages") or request.get("input") or request.get("contents") or []
    system = _text_of(request.get("system")) + _text_of((request.get("systemInstruction") or {}).get("parts"))
    prompt = _estimate_tokens(json.dumps(sent) + system + str(request.get("instructions") or ""))
    completion = _estimate_tokens(reply.content + "".join(c["arguments"] for c in calls))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _pieces(text: str) -> list[str]:
    return [text[start : start + TEXT_CHUNK] for start in range(0, len(text), TEXT_CHUNK)]


# --- chat completions ---
def _tool_call_entries(calls: list[dict]) -> list[dict]:
    return [
        {"index": i, "id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for i, c in enumerate(calls)
    ]


def _completion(request: dict, reply: Reply, model: str) -> dict:
    calls = _calls(reply)
    entries = _tool_call_entries(calls)
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or (None if entries else "")}
    if entries:
        message["tool_calls"] = [{k: v for k, v in e.items() if k != "index"} for e in entries]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
        "usage": _usage(request, reply, calls),
    }


def _stream_chunks(request: dict, reply: Reply, model: str) -> list[dict]:
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": request.get("model") or model,
    }

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    calls = _calls(reply)
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _pieces(reply.content)]
    if calls:
        chunks.append(chunk({"tool_calls": _tool_call_entries(calls)}))
    chunks.append(chunk({}, _finish_reason(reply)))
    if (request.get("stream_options") or {}).get("include_usage", True):
        chunks.append({**base, "choices": [], "usage": _usage(request, reply, calls)})
    return chunks


# --- Anthropic Messages ---
def _anthropic_blocks(reply: Reply, calls: list[dict]) -> list[dict]:
    blocks = [{"type": "text", "text": reply.content}] if reply.content or not calls else []
    return blocks + [
        {"type": "tool_use", "id": "toolu_" + c["id"].removeprefix("call_"), "name": c["name"], "input": c["input"]}
        for c in calls
    ]


def _anthropic_usage(request: dict, reply: Reply, calls: list[dict]) -> dict[str, int]:
    usage = _usage(request, reply, calls)
    return {
        "input_tokens": usage.get("prompt_tokens", 0),
        "output_tokens": usage.get("completion_tokens", 0),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _anthropic_message(request: dict, reply: Reply, model: str) -> dict:
    calls = _calls(reply)
    return {
        "id": f"msg_{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": request.get("model") or model,
        "content": _anthropic_blocks(reply, calls),
        "stop_reason": ANTHROPIC_STOP.get(_finish_reason(reply), "end_turn"),
        "stop_sequence": None,
        "usage": _anthropic_usage(request, reply, calls),
    }


def _anthropic_events(request: dict, reply: Reply, model: str) -> list[dict]:
    """message_start, per block start / deltas / stop, message_delta (stop_reason, usage), message_stop."""
    message = _anthropic_message(request, reply, model)
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[dict] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            events += [
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
                for piece in _pieces(block["text"])
            ]
        else:
            events.append({"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}})
            events += [
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
                for piece in _pieces(json.dumps(block["input"]))
            ]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return events


# --- OpenAI Responses ---
def _response_items(reply: Reply, calls: list[dict]) -> list[dict]:
    items = []
    if reply.content or not calls:
        items.append(
            {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex[:16]}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
            }
        )
    items += [
        {
            "type": "function_call",
            "id": f"fc_{uuid.uuid4().hex[:16]}",
            "status": "completed",
            "call_id": c["id"],
            "name": c["name"],
            "arguments": c["arguments"],
        }
        for c in calls
    ]
    return items


def _response(request: dict, reply: Reply, model: str) -> dict:
    calls = _calls(reply)
    usage = _usage(request, reply, calls)
    return {
        "id": f"resp_{uuid.uuid4().hex[:16]}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": request.get("model") or model,
        "output": _response_items(reply, calls),
        "usage": {
            "input_tokens": usage.get("prompt_tokens", 0),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage.get("completion_tokens", 0),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.get("total_tokens", 0),
        },
    }


def _responses_events(request: dict, reply: Reply, model: str) -> list[dict]:
    """response.created, per item output_item.added / deltas / output_item.done, response.completed."""
    response = _response(request, reply, model)
    events: list[dict] = [{"type": "response.created", "response": {**response, "status": "in_progress", "output": []}}]
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            )
            part = {"item_id": item["id"], "output_index": index, "content_index": 0}
            events.append({"type": "response.content_part.added", **part, "part": {**item["content"][0], "text": ""}})
            events += [{"type": "response.output_text.delta", **part, "delta": piece} for piece in _pieces(text)]
            events.append({"type": "response.output_text.done", **part, "text": text})
            events.append({"type": "response.content_part.done", **part, "part": item["content"][0]})
        else:
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "arguments": ""},
                }
            )
            events += [
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "delta": piece,
                }
                for piece in _pieces(item["arguments"])
            ]
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": index,
                    "arguments": item["arguments"],
                }
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


# --- Gemini generateContent ---
GEMINI_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"}


def _gemini_usage(request: dict, reply: Reply, calls: list[dict]) -> dict[str, int]:
    """usageMetadata; a Reply's chat-style cached (prompt_tokens_details) and reasoning tokens
    (completion_tokens_details) become cachedContentTokenCount and thoughtsTokenCount, which Gemini counts
    apart from candidatesTokenCount."""
    usage = _usage(request, reply, calls)
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    thoughts = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    metadata = {
        "promptTokenCount": usage.get("prompt_tokens", 0),
        "candidatesTokenCount": usage.get("completion_tokens", 0) - (thoughts or 0),
        "totalTokenCount": usage.get("total_tokens", 0),
    }
    return {
        **metadata,
        **({"cachedContentTokenCount": cached} if cached else {}),
        **({"thoughtsTokenCount": thoughts} if thoughts else {}),
    }


def _gemini_parts(reply: Reply, calls: list[dict]) -> list[dict]:
    parts = [{"text": reply.content}] if reply.content or not calls else []
    return parts + [{"functionCall": {"name": c["name"], "args": c["input"]}} for c in calls]


def _gemini_response(request: dict, reply: Reply, model: str) -> dict:
    calls = _calls(reply)
    candidate = {
        "content": {"role": "model", "parts": _gemini_parts(reply, calls)},
        "finishReason": GEMINI_FINISH.get(_finish_reason(reply), "STOP"),
        "index": 0,
    }
    return {
        "candidates": [candidate],
        "usageMetadata": _gemini_usage(request, reply, calls),
        "modelVersion": request.get("model") or model,
        "responseId": uuid.uuid4().hex[:22],
    }


def _gemini_chunks(request: dict, reply: Reply, model: str) -> list[dict]:
    """Each a whole GenerateContentResponse: text in pieces, then each function call whole (Gemini streams
    no partial arguments); the last carries finishReason and usageMetadata."""
    whole = _gemini_response(request, reply, model)
    base = {"modelVersion": whole["modelVersion"], "responseId": whole["responseId"]}
    parts = [{"text": piece} for piece in _pieces(reply.content)]
    parts += [part for part in whole["candidates"][0]["content"]["parts"] if "functionCall" in part]
    parts = parts or [{"text": ""}]  # an empty answer: one empty text part
    chunks = [{**base, "candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]} for part in parts]
    chunks[-1]["candidates"][0]["finishReason"] = whole["candidates"][0]["finishReason"]
    chunks[-1]["usageMetadata"] = whole["usageMetadata"]
    return chunks


WHOLE = {
    "chat": _completion,
    "anthropic": _anthropic_message,
    "responses": _response,  # api -> its whole answer
    "gemini": _gemini_response,
}

__all__ = ["sse_events", "WHOLE"]
