"""A scripted, OpenAI-compatible model server: the stand-in for every LLM in tests and the dry run.

It answers POST /v1/chat/completions, streaming (SSE, as Cline needs) and not, from a Script:

    script = Script([
        Rule(system_contains="Always add a changelog entry", reply=[edit_step, Reply("Done.")]),
        Rule(reply=[naive_step, Reply("Done.")]),           # no condition: matches everything
    ])
    with ScriptedModelServer(script) as server:
        client = OpenAI(base_url=server.base_url, api_key="test")
        ...
        server.requests   # every request received, in order

The first rule whose conditions all hold answers. A rule's reply is a Reply, a list of Replies indexed
by the number of assistant messages already in the request (so the server keeps no per-conversation
state and parallel conversations never mix), or a function of the request. `times=N` lets a rule
fire N times only (e.g. one 429 then normal answers).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Sequence, Union

from helpers.config import SCRIPTED_MODEL


@dataclass
class Reply:
    """One answer. status != 200 answers with an OpenAI-style error body instead."""

    content: str = ""
    tool_calls: Sequence[dict[str, Any]] = ()  # {"name": str, "arguments": dict | str}
    status: int = 200
    error_message: str = ""
    retry_after: float | None = None  # seconds, sent as the Retry-After header
    delay_s: float = 0.0  # wait before answering; a long delay is a hang
    finish_reason: str | None = None  # default: "tool_calls" with tool calls, else "stop"
    usage: dict[str, int] | None = None  # default: estimated from the text lengths


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    """A tool call for Reply.tool_calls, e.g. tool_call("editor", path="a.py", old_text=..., new_text=...)."""
    return {"name": name, "arguments": arguments}


Responder = Union[Reply, Sequence[Reply], Callable[[dict], Reply]]


@dataclass
class Rule:
    """Answers with `reply` when every condition given holds for the request."""

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


def message_text(request: dict, role: str | None = None) -> str:
    """All text of the request's messages (of one role, if given), content parts joined."""
    parts = []
    for message in request.get("messages") or []:
        if role is not None and message.get("role") != role:
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


def assistant_turns(request: dict) -> int:
    return sum(1 for m in request.get("messages") or [] if m.get("role") == "assistant")


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default backlog of 5 drops concurrent connections
    allow_reuse_address = True


class ScriptedModelServer:
    """Serves a Script on a free loopback port; use as a context manager or call start()/stop()."""

    def __init__(self, script: Script | None = None, host: str = "127.0.0.1", port: int = 0,
                 model: str = SCRIPTED_MODEL):
        self.script = script or Script()
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._requests_lock = threading.Lock()
        self._host, self._port = host, port
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---
    def start(self) -> "ScriptedModelServer":
        self._httpd = _Server((self._host, self._port), _handler_for(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-model-server",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "ScriptedModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in /v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    # --- records ---
    def record(self, entry: dict[str, Any]) -> None:
        with self._requests_lock:
            self.requests.append(entry)

    def chat_requests(self) -> list[dict[str, Any]]:
        """The bodies of the chat completion requests received so far."""
        with self._requests_lock:
            return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def clear(self) -> None:
        with self._requests_lock:
            self.requests.clear()


def _handler_for(server: ScriptedModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
            elif self.path.rstrip("/") in ("/health", "/healthz", ""):
                self._json(200, {"status": "ok"})
            else:
                self._json(404, _error_body(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._json(400, _error_body("request body is not JSON", "invalid_request_error"))
                return
            server.record({"path": self.path, "body": body, "time": time.time(),
                           "authorization": self.headers.get("Authorization", "")})
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, _error_body(f"no route {self.path}", "not_found"))
                return
            reply = server.script.reply_for(body)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            try:
                if reply.status != 200:
                    headers = {"Retry-After": f"{reply.retry_after:g}"} if reply.retry_after is not None else {}
                    kind = "rate_limit_error" if reply.status == 429 else "scripted_error"
                    message = reply.error_message or f"scripted error {reply.status}"
                    self._json(reply.status, _error_body(message, kind), headers)
                elif body.get("stream"):
                    self._stream(body, reply)
                else:
                    self._json(200, _completion(body, reply, server.model))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeouts, killed runs): nothing to answer

        def _json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, request: dict, reply: Reply) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for chunk in _stream_chunks(request, reply, server.model):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler


def _error_body(message: str, kind: str) -> dict:
    return {"error": {"message": message, "type": kind, "code": kind}}


def _tool_call_entries(reply: Reply) -> list[dict]:
    entries = []
    for i, call in enumerate(reply.tool_calls):
        arguments = call["arguments"]
        entries.append({
            "index": i,
            "id": call.get("id") or f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": call["name"],
                         "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
        })
    return entries


def _usage(request: dict, reply: Reply, tool_entries: list[dict]) -> dict[str, int]:
    if reply.usage:
        return dict(reply.usage)
    prompt = _estimate_tokens(json.dumps(request.get("messages") or []))
    completion = _estimate_tokens(reply.content + "".join(e["function"]["arguments"] for e in tool_entries))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _completion(request: dict, reply: Reply, model: str) -> dict:
    entries = _tool_call_entries(reply)
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or (None if entries else "")}
    if entries:
        message["tool_calls"] = [{k: v for k, v in e.items() if k != "index"} for e in entries]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
        "usage": _usage(request, reply, entries),
    }


def _stream_chunks(request: dict, reply: Reply, model: str) -> list[dict]:
    base = {"id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": request.get("model") or model}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    entries = _tool_call_entries(reply)
    chunks = [chunk({"role": "assistant", "content": ""})]
    text = reply.content
    for start in range(0, len(text), 64):  # several deltas, as real servers send
        chunks.append(chunk({"content": text[start:start + 64]}))
    if entries:
        chunks.append(chunk({"tool_calls": entries}))
    chunks.append(chunk({}, _finish_reason(reply)))
    if (request.get("stream_options") or {}).get("include_usage", True):
        chunks.append({**base, "choices": [], "usage": _usage(request, reply, entries)})
    return chunks

__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "ScriptedModelServer", "Script", "Rule", "Reply", "tool_call", "message_text",
]
