"""A scripted model server: the stand-in for every LLM in tests and the dry run.

It speaks four APIs from one Script, streaming (SSE) and not (the answers on the wire: helpers.llm.scripted_wire):
- OpenAI chat completions, POST /v1/chat/completions;
- Anthropic Messages, POST /v1/messages: text and tool_use blocks, input_json_delta, usage;
- the OpenAI Responses API, POST /v1/responses: message and function_call items, usage;
- Google's Gemini API (generativelanguage, v1beta or v1), POST .../models/<model>:generateContent,
  :streamGenerateContent (SSE, no end marker: the chunk with a finishReason is the last) and :countTokens:
  text and functionCall parts, usageMetadata; errors as {"error": {"code", "message", "status"}}.

    script = Script([
        Rule(system_contains="Always add a changelog entry", reply=[edit_step, Reply("Done.")]),
        Rule(reply=[naive_step, Reply("Done.")]),           # no condition: matches everything
    ])
    with ScriptedModelServer(script) as server:
        client = OpenAI(base_url=server.base_url, api_key="test")
        ...
        server.requests   # every request received, in order (its path, raw body, `api` and `headers`)

Rules (helpers.llm.scripts) see every request in one chat-shaped form (`normalize_request`): {"api", "model", "stream",
"tools", "messages"} where messages are {"role": "system" | "user" | "assistant" | "tool", "content": str}
(assistant turns also carry "tool_calls"). Anthropic's top-level `system` and the Responses API's
`instructions` and developer messages and Gemini's `systemInstruction` become system messages, tool results
(Gemini's functionResponse parts) become "tool" messages; a Gemini request's model and streaming come from
its path. So system_contains / user_contains and the turn count work the same for every API.

The first rule whose conditions all hold answers. A rule's reply is a Reply, a list of Replies indexed
by the number of assistant turns already in the request (so the server keeps no per-conversation
state and parallel conversations never mix), or a function of the (normalised) request. `times=N` lets
a rule fire N times only (e.g. one 429 then normal answers).

A Reply can also misbehave as real model servers do (Reply.fault, helpers.llm.scripts.FAULTS). Each request's
record says how many stream events were `written` and whether its client was `gone` before the answer was
complete (`wait_gone(n)`). `answers_as` makes answers name one model id, as a one-model server does. Its model
list (GET /v1/models, Gemini's GET /v1beta/models) names `models`, else `answers_as`, else `model`;
`lists_models=False`: a 404, as some servers.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping, Sequence

from helpers.core.config import SCRIPTED_MODEL
from helpers.llm.scripted_wire import WHOLE, sse_events
from helpers.llm import scripts
from helpers.llm.loopback import LoopbackURLs
from helpers.llm.scripts import *  # noqa: F403  (re-exported: a script's every name, scripts.__all__)
from helpers.llm.scripts import (
    WRONG_API,
    Reply,
    Script,
    _api_of,
    _error_body,
    _estimate_tokens,
    _model_list,
    normalize_request,
)

NOT_JSON_EVENT = b"data: {this is not JSON\n\n"
NOT_JSON_BODY = b"<html><body>upstream busy</body></html>"


# --- the server ---------------------------------------------------------------------------------------
class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default backlog of 5 drops concurrent connections
    allow_reuse_address = True


class ScriptedModelServer(LoopbackURLs):
    """Serves a Script on a free loopback port; use as a context manager or call start()/stop(). Its URLs:
    `base_url` (OpenAI's, ending in /v1) and `origin` (Anthropic's and Gemini's), helpers.llm.loopback's."""

    def __init__(
        self,
        script: Script | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = SCRIPTED_MODEL,
        answers_as: str | None = None,
        models: Sequence[str] = (),
        lists_models: bool = True,
    ):
        self.script = script or Script()
        self.model = model
        self.answers_as = answers_as
        self.models, self.lists_models = list(models) or [answers_as or model], lists_models  # its model list
        self.requests: list[dict[str, Any]] = []
        self._requests_lock = threading.Lock()
        self._went = threading.Condition(self._requests_lock)
        self.gone = 0  # clients that went away before their answer was complete
        self._host, self._port = host, port
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---
    def start(self) -> "ScriptedModelServer":
        self._httpd = _Server((self._host, self._port), _handler_for(self))
        # stop() waits for serve_forever's next poll: at its default 0.5 s, half a second per server stopped
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-model-server", daemon=True
        )
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

    # --- records ---
    def record(self, entry: dict[str, Any]) -> None:
        with self._requests_lock:
            self.requests.append(entry)

    def chat_requests(self) -> list[dict[str, Any]]:
        """The bodies of the chat completion requests received so far."""
        with self._requests_lock:
            return [r["body"] for r in self.requests if r.get("api") == "chat"]

    def model_requests(self, api: str | None = None) -> list[dict[str, Any]]:
        """Every model request so far (of one API: "chat", "anthropic", "responses", "gemini"), normalised as
        rules see them."""
        with self._requests_lock:
            return [
                normalize_request(r["api"], r["body"], r["path"])
                for r in self.requests
                if r.get("api") in ("chat", "anthropic", "responses", "gemini") and api in (None, r["api"])
            ]

    def went_away(self, entry: dict[str, Any]) -> None:
        """Note that `entry`'s client closed its connection before its answer was complete."""
        with self._went:
            entry["gone"] = True
            self.gone += 1
            self._went.notify_all()

    def wait_gone(self, count: int = 1, timeout_s: float = 60.0) -> bool:
        """Wait until `count` clients in all went away before their answer was complete; False if they did not."""
        with self._went:
            return self._went.wait_for(lambda: self.gone >= count, timeout=timeout_s)

    def clear(self) -> None:
        with self._requests_lock:
            self.requests.clear()


def send_json(
    handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: Mapping[str, str] | None = None
) -> None:
    """Answer `handler`'s request with `payload` as JSON (with its length) and `headers`: the one way a stdlib HTTP
    handler here writes a JSON answer (this server's, and the independent upstreams tests write)."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)


def _handler_for(server: ScriptedModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def do_HEAD(self) -> None:  # some clients probe the base URL before their first request
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            if self.path.split("?")[0].rstrip("/").endswith("/models") and server.lists_models:
                self._json(200, _model_list(server.models))
            elif self.path.rstrip("/") in ("/health", "/healthz", ""):
                self._json(200, {"status": "ok"})
            else:
                self._json(404, _error_body(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            api = _api_of(self.path)
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._json(400, _error_body("request body is not JSON", "invalid_request_error", api))
                return
            entry = {
                "path": self.path,
                "api": api,
                "body": body,
                "time": time.time(),
                "written": 0,
                "gone": False,
                "headers": dict(self.headers.items()),
                "authorization": self.headers.get("Authorization")
                or self.headers.get("x-api-key")
                or self.headers.get("x-goog-api-key")
                or "",
            }
            server.record(entry)
            if api is None:
                self._json(404, _error_body(f"no route {self.path}", "not_found"))
                return
            if api in ("count_tokens", "gemini_count_tokens"):
                tokens = _estimate_tokens(json.dumps(body))
                self._json(200, {"input_tokens": tokens} if api == "count_tokens" else {"totalTokens": tokens})
                return
            request = normalize_request(api, body, self.path)
            reply = server.script.reply_for(request)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            answered = {**body, "model": server.answers_as or request.get("model")}  # the id its answer names
            try:
                if reply.fault == "hang":
                    self._hold(entry)
                elif reply.status != 200:
                    headers = {"Retry-After": f"{reply.retry_after:g}"} if reply.retry_after is not None else {}
                    kind = "rate_limit_error" if reply.status == 429 else "scripted_error"
                    message = reply.error_message or f"scripted error {reply.status}"
                    self._json(reply.status, _error_body(message, kind, api, reply.status), headers)
                elif request.get("stream"):
                    self._stream(api, answered, reply, entry)
                else:
                    self._whole(api, answered, reply, entry)
            except (BrokenPipeError, ConnectionResetError):
                server.went_away(entry)  # the client gave up (timeouts, killed runs): nothing to answer

        _json = send_json

        def _whole(self, api: str, request: dict, reply: Reply, entry: dict) -> None:
            shape = WRONG_API[api] if reply.fault == "wrong_api" else api
            answer = WHOLE[shape]
            if reply.fault is None or reply.fault in ("no_end_marker", "wrong_api"):
                return self._json(200, answer(request, reply, server.model))
            data = (
                NOT_JSON_BODY
                if reply.fault == "malformed"
                else json.dumps(answer(request, reply, server.model)).encode()
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))  # the whole length, even when less comes
            self.end_headers()
            if reply.fault == "malformed":
                self.wfile.write(data)
                return
            self.wfile.write(data[: len(data) // 2])
            self._misbehave(reply.fault, entry)

        def _stream(self, api: str, request: dict, reply: Reply, entry: dict) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")  # as uvicorn, llama.cpp or vLLM stream
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            shape = WRONG_API[api] if reply.fault == "wrong_api" else api
            for n, event in enumerate(sse_events(shape, request, reply, server.model)):
                if reply.fault is not None and reply.fault != "wrong_api" and n == reply.fault_after:
                    if reply.fault != "malformed":
                        return self._misbehave(reply.fault, entry)
                    self._chunk(NOT_JSON_EVENT)
                self._chunk(event)
                entry["written"] = n + 1
            self._chunk(b"")  # the last chunk: the answer is complete

        def _chunk(self, data: bytes) -> None:  # unbuffered: one send per event, as a real server streams
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        def _misbehave(self, fault: str, entry: dict) -> None:  # "end_early": return, closing without the last chunk
            self.close_connection = True
            if fault == "reset":  # linger 0: close() sends RST, not FIN
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
            elif fault == "stall":
                self._hold(entry)
            elif fault == "no_end_marker":
                self._chunk(b"")

        def _hold(self, entry: dict) -> None:
            """Send nothing until the client closes its connection (or the server stops)."""
            while server._httpd is not None:
                if select.select([self.connection], [], [], 0.05)[0]:
                    try:
                        closed = not self.connection.recv(1, socket.MSG_PEEK)
                    except OSError:
                        closed = True
                    if closed:
                        return server.went_away(entry)

    return Handler


# the public API, documented in CODE_APPENDIX.md: the server, and what a Script is made of (helpers.llm.scripts)
__all__ = ["ScriptedModelServer", "send_json"]
__all__ += scripts.__all__
