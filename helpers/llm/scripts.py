"""What the scripted model server answers: a Script of Rules over requests seen in one chat-shaped form.

`normalize_request(api, body, path)` turns an OpenAI chat-completions, Anthropic Messages, Responses or
Gemini request into {"api", "model", "stream", "tools", "messages"} (a Gemini request names its model and
whether it streams in its path, not its body); a Rule's conditions (system_contains, user_contains,
model, match, the turn count) read that form, and its reply is a Reply, a list of Replies indexed by the
assistant turns already in the request, or a function of the request. See helpers.llm.scripted_server.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, Union

from helpers.llm.gemini_errors import gemini_error

TEXT_CHUNK = 64  # characters per streamed text delta, as real servers send several
ANTHROPIC_STOP = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}


def _estimate_tokens(text: str) -> int:
    """A request's or answer's size in tokens when no tokenizer is at hand: 4 characters a token."""
    return max(1, len(text) // 4)


@dataclass
class Reply:
    """One answer. status != 200 answers with the API's error body instead."""

    content: str = ""
    tool_calls: Sequence[dict[str, Any]] = ()  # {"name": str, "arguments": dict | str}
    status: int = 200
    error_message: str = ""
    retry_after: float | None = None  # seconds, sent as the Retry-After header
    delay_s: float = 0.0  # wait before answering; a long delay is a hang
    finish_reason: str | None = None  # default: "tool_calls" with tool calls, else "stop"
    # prompt_tokens, completion_tokens (and the chat API's nested prompt_tokens_details, completion_tokens_details);
    # default: estimated from lengths
    usage: dict[str, Any] | None = None
    fault: str | None = None  # misbehave as real model servers do: one of FAULTS
    fault_after: int = 0  # events of a stream sent before the fault

    def __post_init__(self) -> None:
        if self.fault is not None and self.fault not in FAULTS:
            raise ValueError(f"Reply fault {self.fault!r} is not one of {', '.join(FAULTS)}.")


# How a Reply can misbehave (Reply.fault), for streams of every API and for whole answers:
FAULTS = {
    "end_early": "after `fault_after` events the connection closes without the stream's end marker ([DONE], "
    "message_stop, response.completed, Gemini's chunk with a finishReason) or HTTP's last chunk, "
    "as an ASGI app that returned without completing its response; a whole answer ends halfway "
    "through its body",
    "reset": "as end_early, but the connection is reset (TCP RST) instead of closed",
    "no_end_marker": "the HTTP answer completes after `fault_after` events, without the stream's end marker",
    "stall": "after `fault_after` events (a whole answer: its headers and half its body) nothing more is sent "
    "until the client goes away",
    "hang": "nothing at all is sent, not even a status line, until the client goes away",
    "malformed": "after `fault_after` events a data: line that is not JSON, then the rest of the stream; a whole "
    "answer: status 200 with a body that is not JSON",
    "wrong_api": "status 200 and valid JSON, but in another API's shape (a chat-completions request is answered "
    "with an Anthropic message, the others with a chat completion), as a server or proxy that "
    "serves one API on another's path",
}
WRONG_API = {
    "chat": "anthropic",
    "anthropic": "chat",
    "responses": "chat",
    "gemini": "chat",
}  # the shape a "wrong_api" fault answers in


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    """A tool call for Reply.tool_calls, e.g. tool_call("editor", path="a.py", old_text=..., new_text=...)."""
    return {"name": name, "arguments": arguments}


Responder = Union[Reply, Sequence[Reply], Callable[[dict], Reply]]


@dataclass
class Rule:
    """Answers with `reply` when every condition given holds for the (normalised) request."""

    reply: Responder
    contains: str | None = None  # anywhere in the messages' text
    system_contains: str | None = None  # in the system message(s)
    system_lacks: str | None = None  # not in the system message(s)
    user_contains: str | None = None  # in the user message(s)
    model: str | None = None
    match: Callable[[dict], bool] | None = None
    times: int | None = None  # fire at most this many times
    fired: int = field(default=0, init=False)

    def matches(self, request: dict) -> bool:
        if self.times is not None and self.fired >= self.times:
            return False
        if self.model is not None and request.get("model") != self.model:
            return False
        system, user = message_text(request, "system"), message_text(request, "user")
        checks = [
            self.contains is None or self.contains in message_text(request),
            self.system_contains is None or self.system_contains in system,
            self.system_lacks is None or self.system_lacks not in system,
            self.user_contains is None or self.user_contains in user,
            self.match is None or self.match(request),
        ]
        return all(checks)

    def answer(self, request: dict) -> Reply:
        if isinstance(self.reply, Reply):
            return self.reply
        if callable(self.reply):
            return self.reply(request)
        steps = list(self.reply)
        return steps[min(assistant_turns(request), len(steps) - 1)]


class Script:
    """Ordered rules; the first that matches answers, else `default`."""

    def __init__(self, rules: Sequence[Rule] = (), default: Reply | None = None):
        self.rules = list(rules)
        self.default = default or Reply("OK")
        self._lock = threading.Lock()

    def reply_for(self, request: dict) -> Reply:
        with self._lock:  # `times` counting must be exact under concurrency
            for rule in self.rules:
                if rule.matches(request):
                    rule.fired += 1
                    break
            else:
                return self.default
        return rule.answer(request)


# --- one request shape for every API ------------------------------------------------------------------
def message_text(request: dict, role: str | None = None) -> str:
    """All text of the request's messages (of one role, if given), content parts joined."""
    parts = []
    for message in request.get("messages") or []:
        if role is not None and message.get("role") != role:
            continue
        parts.append(_text_of(message.get("content")))
    return "\n".join(parts)


def assistant_turns(request: dict) -> int:
    return sum(1 for m in request.get("messages") or [] if m.get("role") == "assistant")


def tool_names(request: dict) -> list[str]:
    """The names of the tools a request offers, whatever the API's tool shape."""
    names = []
    for tool in request.get("tools") or []:
        if isinstance(tool, dict) and tool.get("functionDeclarations"):  # Gemini: one tool, many functions
            names += [str(f.get("name")) for f in tool["functionDeclarations"] if isinstance(f, dict)]
        elif isinstance(tool, dict):
            name = tool.get("name") or (tool.get("function") or {}).get("name") or tool.get("type")
            if name:
                names.append(str(name))
    return names


def normalize_request(api: str, body: dict, path: str = "") -> dict:
    """`body` of an "anthropic" / "responses" / "gemini" / "chat" request in the chat shape rules read (module
    doc); `path`: where a Gemini request names its model (.../models/<model>:streamGenerateContent)."""
    if api == "gemini":
        model, _, method = path.split("?")[0].rpartition("/models/")[2].partition(":")
        return {
            **body,
            "api": api,
            "model": model,
            "stream": method == "streamGenerateContent",
            "messages": _gemini_messages(body),
        }
    if api == "anthropic":
        messages = _anthropic_messages(body)
    elif api == "responses":
        messages = _responses_messages(body)
    else:
        messages = list(body.get("messages") or [])
    return {**body, "api": api, "messages": messages}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(p.get("text", p.get("content", ""))) for p in content if isinstance(p, dict))
    return ""


def _anthropic_messages(body: dict) -> list[dict]:
    system = _text_of(body.get("system"))
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
        if message.get("role") == "assistant":
            calls = [
                {
                    "id": b.get("id"),
                    "type": "function",
                    "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {})},
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            messages.append(
                {"role": "assistant", "content": "\n".join(texts), **({"tool_calls": calls} if calls else {})}
            )
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": block.get("tool_use_id"),
                        "content": _text_of(block.get("content")),
                    }
                )
        if texts:
            messages.append({"role": "user", "content": "\n".join(texts)})
    return messages


def _responses_messages(body: dict) -> list[dict]:
    instructions = body.get("instructions")
    messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    items = body.get("input")
    items = [{"type": "message", "role": "user", "content": items}] if isinstance(items, str) else list(items or [])
    for item in items:
        kind = item.get("type", "message")
        previous = messages[-1] if messages else {}
        if kind == "message":
            role = {"developer": "system"}.get(item.get("role"), item.get("role"))
            messages.append({"role": role, "content": _text_of(item.get("content"))})
        elif kind in ("function_call", "custom_tool_call"):
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments") or item.get("input") or ""},
            }
            if previous.get("role") == "assistant":  # one turn: its text and every call it made
                previous.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            messages.append(
                {"role": "tool", "tool_call_id": item.get("call_id"), "content": _text_of(item.get("output"))}
            )
    return messages


def _gemini_messages(body: dict) -> list[dict]:
    """Gemini `systemInstruction` and `contents` (roles user / model; parts text, functionCall,
    functionResponse) as chat messages: a model turn's calls its tool_calls, each functionResponse a tool message."""
    system = _gemini_text((body.get("systemInstruction") or {}).get("parts"))
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    contents = body.get("contents")
    for content in [contents] if isinstance(contents, dict) else contents or []:
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        if content.get("role") == "model":
            calls = [
                {
                    "id": (p["functionCall"].get("id") or ""),
                    "type": "function",
                    "function": {
                        "name": p["functionCall"].get("name"),
                        "arguments": json.dumps(p["functionCall"].get("args") or {}),
                    },
                }
                for p in parts
                if isinstance(p.get("functionCall"), dict)
            ]
            messages.append(
                {"role": "assistant", "content": _gemini_text(parts), **({"tool_calls": calls} if calls else {})}
            )
            continue
        for part in parts:
            if isinstance(part.get("functionResponse"), dict):
                answer = part["functionResponse"]
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": answer.get("id") or answer.get("name"),
                        "content": json.dumps(answer.get("response") or {}),
                    }
                )
        text = _gemini_text(parts)
        if text or not parts:
            messages.append({"role": "user", "content": text})
    return messages


def _gemini_text(parts: Any) -> str:
    return "\n".join(
        p["text"]
        for p in parts or []
        if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
    )


def _model_list(models: Sequence[str]) -> dict:
    """A model list as OpenAI (object, owned_by), Anthropic (type, display_name, has_more) and Gemini
    (`models`: name "models/<id>", supportedGenerationMethods) all read it."""
    data = [
        {
            "id": m,
            "object": "model",
            "type": "model",
            "created": 0,
            "created_at": "2026-01-01T00:00:00Z",
            "display_name": m,
            "owned_by": "scripted",
        }
        for m in models
    ]
    gemini = [
        {
            "name": f"models/{m}",
            "displayName": m,
            "inputTokenLimit": 1_048_576,
            "outputTokenLimit": 65_536,
            "supportedGenerationMethods": ["generateContent", "countTokens"],
        }
        for m in models
    ]
    return {
        "object": "list",
        "data": data,
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
        "models": gemini,
    }


def _api_of(path: str) -> str | None:
    path = path.split("?")[0].rstrip("/")
    if "/models/" in path and ":" in path:  # Gemini: .../models/<model>:<method>
        return {
            "generateContent": "gemini",
            "streamGenerateContent": "gemini",
            "countTokens": "gemini_count_tokens",
        }.get(path.rpartition(":")[2])
    for suffix, api in (
        ("/chat/completions", "chat"),
        ("/messages/count_tokens", "count_tokens"),
        ("/messages", "anthropic"),
        ("/responses", "responses"),
    ):
        if path.endswith(suffix):
            return api
    return None


# --- wire pieces the scripted server shares ---
def _error_body(message: str, kind: str, api: str | None = None, status: int = 400) -> dict:
    if api in ("anthropic", "count_tokens"):
        return {"type": "error", "error": {"type": kind, "message": message}}
    if api in ("gemini", "gemini_count_tokens"):
        return gemini_error(status, message)
    return {"error": {"message": message, "type": kind, "code": kind}}


def _calls(reply: Reply) -> list[dict[str, Any]]:
    """The reply's tool calls as {"id", "name", "arguments" (JSON text), "input" (dict)}."""
    calls = []
    for call in reply.tool_calls:
        arguments = call["arguments"]
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        calls.append(
            {
                "id": call.get("id") or f"call_{uuid.uuid4().hex[:12]}",
                "name": call["name"],
                "arguments": text,
                "input": json.loads(text) if isinstance(arguments, str) else dict(arguments),
            }
        )
    return calls


__all__ = [
    "Script",
    "Rule",
    "Reply",
    "tool_call",
    "message_text",
    "tool_names",
    "normalize_request",
    "assistant_turns",
    "FAULTS",
    "WRONG_API",
]  # documented in CODE_APPENDIX.md
