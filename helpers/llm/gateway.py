"""The model gateway: one loopback proxy in front of every model, so no client ever holds a provider key.

    upstreams = {"openai": Upstream("https://api.openai.com/v1", key, "openai")}
    with Gateway(upstreams, budget_usd=20) as gateway:
        token = gateway.issue_token("openai", experiment="lite", split="train", loop=0, task="t1", role="agent")
        client = OpenAI(base_url=gateway.url_for("openai"), api_key=token)   # http://127.0.0.1:P/u/openai/v1
        ...
        gateway.usage(experiment="lite", role="agent")     # {"calls", "input_tokens", "output_tokens", "cost_usd"}
        gateway.last_status(token)                          # 200, 429, 502, "budget", ... or None

- URLs: `url_for(name)` is the upstream's base URL with its origin swapped for
  `http://127.0.0.1:<port>/u/<name>`, and `/u/<name><path>` is forwarded to `<origin><path>`: any path,
  any method. So an OpenAI-style client takes `url_for` as its base URL (".../v1"), an Anthropic client
  takes it as ANTHROPIC_BASE_URL (Anthropic's base URL has no /v1) and a client of Anthropic's API that
  posts `{baseUrl}/messages`, takes `url_for(name) + "/v1"`.
- Keys: a client sends its token as `Authorization: Bearer <token>` or `x-api-key: <token>`; the gateway
  drops every credential header the client sent and adds the real key the way the upstream expects it
  (Bearer for "openai" and "openai-compatible", x-api-key for "anthropic"). Unknown tokens get 401. The
  key is in no repr, log, record or error, and is scrubbed from non-streaming answers.
- Streaming: an SSE answer is written to the client chunk by chunk as it arrives; any other answer is
  passed on whole. Status codes and end-to-end headers are kept (the upstream is asked for
  `Accept-Encoding: identity` so the gateway can read usage).
- Rate limits: at most `concurrency` requests in flight per upstream, for all clients together. A 429 or
  5xx (or a dropped connection) is retried up to `max_retries` times, but only before any byte went to the
  client, waiting what Retry-After asks (an ask above `max_retry_after_s` is passed on at once) or a
  jittered exponential backoff. A 429/503/529 or any Retry-After pauses the whole upstream pool (a shared
  "not before" time), so a storm slows everyone instead of every client hammering on its own. After the
  last retry the last error is passed on as it came.
- Metering: one record per call (`calls()`), with the token's attributes, tokens from the upstream's usage
  (JSON body, the final SSE usage chunk, Anthropic message_start/message_delta, Responses
  response.completed), cost from `config.price_for` (None: unpriced or no usage reported), latency and
  retries. Cached input tokens count at the full input price (an upper bound).
- Budget: once the priced calls' cost reaches `budget_usd`, new calls get 429 with a JSON error saying the
  budget is spent and the header `x-gateway-budget: spent`; their record says status "budget". Calls in
  flight finish, so the spend can overshoot by what they cost.
- Traces: `trace(payload)` is called (in a worker thread) for every finished call, with the record plus
  the request and response cut to `trace_chars`; `phoenix_tracer(endpoint, project)` makes one that sends
  OpenInference LLM spans to Phoenix.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import secrets
import threading
import time
import warnings
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web
from yarl import URL

from helpers.core import config

# Defaults that belong in helpers/core/config.py (asked for in the gateway's report).
GATEWAY_CONCURRENCY = config.GATEWAY_CONCURRENCY
BACKOFF_S = config.GATEWAY_BACKOFF_S
MAX_BACKOFF_S = config.GATEWAY_MAX_BACKOFF_S
CONNECT_TIMEOUT_S = config.GATEWAY_CONNECT_TIMEOUT_S
TRACE_CHARS = config.GATEWAY_TRACE_CHARS
TRACE_MESSAGE_CHARS = config.GATEWAY_TRACE_MESSAGE_CHARS
MAX_REQUEST_BYTES = 256 * 2**20  # long agent conversations exceed aiohttp's 1 MiB default

KINDS = ("openai", "anthropic", "openai-compatible")
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
POOL_PAUSE_STATUS = {429, 503, 529}  # the upstream says it is overloaded: slow every client
BUDGET_HEADER = "x-gateway-budget"
# Per-call fields of a record; token attributes may not take these names.
RECORD_FIELDS = ("id", "client", "upstream", "method", "path", "model", "stream", "status", "input_tokens",
                 "output_tokens", "cost_usd", "latency_s", "retries", "waited_s", "started_at", "error")
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
               "trailers", "transfer-encoding", "upgrade", "host", "content-length"}
_CREDENTIAL_HEADERS = {"authorization", "x-api-key", "api-key"}


@dataclass(frozen=True)
class Upstream:
    """One model provider: where it is, its real key (never shown) and how it wants the key."""

    base_url: str | None = None  # None: the kind's public URL (OpenAI .../v1, Anthropic without /v1)
    api_key: str | None = field(default=None, repr=False)  # None: send no key (e.g. the scripted server)
    kind: str = "openai"  # "openai" | "anthropic" | "openai-compatible"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Upstream kind {self.kind!r} is not one of {', '.join(KINDS)}.")
        if not (self.base_url or DEFAULT_BASE_URLS.get(self.kind)):
            raise ValueError(f"An {self.kind!r} upstream needs a base_url.")

    @property
    def url(self) -> str:
        return (self.base_url or DEFAULT_BASE_URLS[self.kind]).rstrip("/")


def upstream_for(settings: Any) -> Upstream:
    """The Upstream of a role's `config.LLMSettings` (its base URL, key and provider kind)."""
    return Upstream(settings.base_url, settings.api_key, settings.provider)


def is_transient(status: int | str | None) -> bool:
    """True for a call that failed for a reason a later retry may not meet: rate limit, outage, timeout,
    unreachable upstream (502 from the gateway). A spent budget ("budget") is not transient by itself."""
    return isinstance(status, int) and status in RETRYABLE_STATUS


class Gateway:
    """A loopback HTTP proxy in a background thread; start()/stop() or use it as a context manager.

    Thread-safe: tokens, records and usage may be read and issued from any thread while it serves.
    """

    def __init__(self, upstreams: Mapping[str, Upstream | tuple], *,
                 max_retry_after_s: float = config.LLM_MAX_RETRY_AFTER_S,
                 concurrency: int = GATEWAY_CONCURRENCY, budget_usd: float | None = None,
                 trace: Callable[[dict], Any] | None = None, max_retries: int = config.LLM_MAX_RETRIES,
                 backoff_s: float = BACKOFF_S, request_timeout_s: float = config.LLM_REQUEST_TIMEOUT_S,
                 trace_chars: int = TRACE_CHARS):
        self.upstreams = {name: u if isinstance(u, Upstream) else Upstream(*u) for name, u in upstreams.items()}
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.max_retry_after_s, self.concurrency, self.budget_usd = max_retry_after_s, concurrency, budget_usd
        self.trace, self.max_retries, self.backoff_s = trace, max_retries, backoff_s
        self.request_timeout_s, self.trace_chars = request_timeout_s, trace_chars
        self._lock = threading.Lock()
        self._tokens: dict[str, dict[str, Any]] = {}  # token -> {"upstream", "client", attributes...}
        self._records: list[dict[str, Any]] = []
        self._last_status: dict[str, int | str] = {}
        self._last_exchange: dict[str, tuple[Any, str, list]] = {}
        self._spent_usd = 0.0
        self._trace_failed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    def __repr__(self) -> str:  # names and URL only, never a key or a token
        where = f"http://127.0.0.1:{self._port}" if self._port else "not started"
        return f"Gateway({where}, upstreams={sorted(self.upstreams)}, calls={len(self._records)})"

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "Gateway":
        """Serve on a free loopback port; returns once it accepts connections."""
        if self._thread is not None:
            return self
        started = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            try:
                loop.run_until_complete(self._open())
            except BaseException as error:  # noqa: BLE001 - reported to start()'s caller
                failure.append(error)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self._close())
            loop.close()

        self._thread = threading.Thread(target=serve, name="model-gateway", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            self._thread = None
            raise RuntimeError(f"The model gateway could not start: {failure[0]}") from None
        return self

    def stop(self) -> None:
        """Stop serving (calls in flight are cut); records stay readable."""
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._thread, self._loop, self._port = None, None, None

    def __enter__(self) -> "Gateway":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """http://127.0.0.1:<port>"""
        if self._port is None:
            raise RuntimeError("The gateway is not started.")
        return f"http://127.0.0.1:{self._port}"

    # --- clients ---------------------------------------------------------------------------------
    def url_for(self, upstream: str) -> str:
        """The URL a client uses in place of `upstream`'s base URL (same path, gateway origin)."""
        path = urlsplit(self._upstream(upstream).url).path.rstrip("/")
        return f"{self.url}/u/{upstream}{path}"

    def issue_token(self, upstream: str, **attributes: Any) -> str:
        """A new token for one client of `upstream`; `attributes` (experiment, split, loop, task, role,
        ...) are copied into every record of its calls."""
        self._upstream(upstream)
        clash = sorted(set(attributes) & set(RECORD_FIELDS + ("token",)))
        if clash:
            raise ValueError(f"Token attributes may not be named {', '.join(clash)} (call record fields).")
        token = "gw-" + secrets.token_urlsafe(24)
        with self._lock:
            self._tokens[token] = {**attributes, "upstream": upstream, "client": secrets.token_hex(6)}
        return token

    def revoke_token(self, token: str) -> None:
        """Refuse `token` from now on (its records stay)."""
        with self._lock:
            info = self._tokens.get(token)
            if info is not None:
                info["revoked"] = True

    def last_status(self, token: str) -> int | str | None:
        """The status of `token`'s latest finished call: the HTTP status its client got, "budget", or None
        (no call yet). With `is_transient` it tells a provider failure from the agent's own."""
        with self._lock:
            return self._last_status.get(token)

    def conversation(self, token: str, limit: int = TRACE_MESSAGE_CHARS) -> list[dict[str, Any]]:
        """The conversation of `token`'s client as of its last call: every message it sent (input_messages,
        each cut to `limit`) and the last answer; [] before any call. For an agent: its trajectory."""
        with self._lock:
            exchange = self._last_exchange.get(token)
        if exchange is None:
            return []
        request, text, tool_calls = exchange
        return input_messages(request, limit) + [{"role": "assistant", "content": text[:limit], "tool_calls": tool_calls}]

    def forget(self, token: str) -> None:
        """Drop what is kept of `token`'s conversation (its call records stay)."""
        with self._lock:
            self._last_exchange.pop(token, None)

    # --- records ---------------------------------------------------------------------------------
    def calls(self, token: str | None = None, **filters: Any) -> list[dict[str, Any]]:
        """Copies of the finished call records whose fields equal every filter (e.g. task="t1");
        `token` keeps one client's calls."""
        client = None
        if token is not None:
            with self._lock:
                client = (self._tokens.get(token) or {}).get("client", "no such client")
        with self._lock:
            records = list(self._records)
        return [dict(r) for r in records
                if (client is None or r["client"] == client) and all(r.get(k) == v for k, v in filters.items())]

    def usage(self, token: str | None = None, **filters: Any) -> dict[str, Any]:
        """Sums over `calls(token, **filters)`: calls, input_tokens, output_tokens and cost_usd (None when any
        of those calls is unpriced)."""
        records = self.calls(token, **filters)
        costs = [r["cost_usd"] for r in records]
        return {"calls": len(records),
                "input_tokens": sum(r["input_tokens"] or 0 for r in records),
                "output_tokens": sum(r["output_tokens"] or 0 for r in records),
                "cost_usd": None if any(c is None for c in costs) else sum(costs)}

    @property
    def spent_usd(self) -> float:
        """The cost of every priced call so far."""
        with self._lock:
            return self._spent_usd

    def _upstream(self, name: str) -> Upstream:
        if name not in self.upstreams:
            raise KeyError(f"No upstream named {name!r}; the gateway has {', '.join(sorted(self.upstreams))}.")
        return self.upstreams[name]

    # --- the server (runs on the gateway's own event loop) --------------------------------------
    async def _open(self) -> None:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S,
                                          sock_read=self.request_timeout_s))
        self._pools = {name: _Pool(self.concurrency) for name in self.upstreams}
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_get("/healthz", _healthz)
        app.router.add_route("*", "/u/{name}/{tail:.*}", self._handle)
        app.router.add_route("*", "/u/{name}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)  # stop() cuts calls in flight
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        self._port = self._runner.addresses[0][1]

    async def _close(self) -> None:
        await self._runner.cleanup()
        await self._session.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started, started_at = time.monotonic(), time.time()
        name = request.match_info["name"]
        upstream = self.upstreams.get(name)
        if upstream is None:
            return _error(404, f"gateway: no upstream named {name!r}", "unknown_upstream")
        token = _token_of(request.headers)
        with self._lock:
            client = self._tokens.get(token or "")
        if client is None or client["upstream"] != name or client.get("revoked"):
            return _error(401, f"gateway: unknown or revoked token for upstream {name!r}", "invalid_token")
        body = await request.read()
        asked = _json_or_none(body) or {}
        record = {**{k: v for k, v in client.items() if k not in ("upstream", "revoked")},
                  "id": secrets.token_hex(8), "upstream": name, "method": request.method,
                  "path": request.raw_path[len(f"/u/{name}"):] or "/", "model": asked.get("model"),
                  "stream": bool(asked.get("stream")), "status": None, "input_tokens": None,
                  "output_tokens": None, "cost_usd": None, "latency_s": None, "retries": 0, "waited_s": 0.0,
                  "started_at": started_at, "error": None}
        if self._budget_spent():
            record.update(status="budget", input_tokens=0, output_tokens=0, cost_usd=0.0,
                          error=f"budget of ${self.budget_usd:.2f} spent")
            self._finish(token, record, started, body, asked, b"", _Meter())
            return _error(429, f"gateway: the budget of ${self.budget_usd:.2f} for model calls is spent "
                          f"(${self.spent_usd:.2f} used); no new model calls are made.", "budget_exceeded",
                          {BUDGET_HEADER: "spent"})
        meter, kept = _Meter(output=self.trace is not None), [b""]
        try:
            response = await self._send(request, upstream, body, record)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as error:
            record.update(status=502, input_tokens=0, output_tokens=0, cost_usd=0.0,
                          error=_scrub(f"upstream unreachable: {type(error).__name__}: {error}", upstream.api_key))
            self._finish(token, record, started, body, asked, b"", meter)
            return _error(502, f"gateway: {record['error']}", "upstream_unreachable")
        record["status"] = response.status
        finished = False

        def finish() -> None:  # once, and before the client can see the end of its answer
            nonlocal finished
            if not finished:
                finished = True
                response.release()
                self._pools[name].slots.release()
                self._meter_record(record, meter)
                self._finish(token, record, started, body, asked, kept[0], meter)

        try:
            headers = _client_headers(response.headers)
            if response.headers.get("Content-Type", "").startswith("text/event-stream"):
                out = await self._relay_stream(request, response, headers, meter, kept)
                finish()
                await out.write_eof()
                return out
            kept[0] = answer = _scrub_bytes(await response.read(), upstream.api_key)
            meter.feed_json(_decoded(answer, response.headers.get("Content-Encoding")))
            return web.Response(status=response.status, headers=headers, body=answer)
        except (aiohttp.ClientError, asyncio.TimeoutError) as error:
            # The upstream broke off mid-answer: cut the client's connection too, so a truncated stream
            # never looks complete.
            record["error"] = _scrub(f"upstream broke off: {type(error).__name__}: {error}", upstream.api_key)
            raise
        except _ClientGone:
            record["error"] = "client disconnected"
            return web.Response(status=499)  # nobody reads it; the client is gone
        finally:
            finish()

    async def _relay_stream(self, request: web.Request, response: aiohttp.ClientResponse,
                            headers: dict[str, str], meter: "_Meter", kept: list[bytes]) -> web.StreamResponse:
        """Write each chunk to the client as it arrives (the caller ends the stream); the first
        `trace_chars` bytes go to kept[0]."""
        out = web.StreamResponse(status=response.status, headers=headers)
        await out.prepare(request)
        async for chunk in response.content.iter_any():
            try:
                await out.write(chunk)  # first, so metering never delays a chunk
            except ConnectionError:
                raise _ClientGone from None
            meter.feed_sse(chunk)
            if len(kept[0]) < self.trace_chars:
                kept[0] += chunk[: self.trace_chars - len(kept[0])]
        return out

    async def _send(self, request: web.Request, upstream: Upstream, body: bytes,
                    record: dict) -> aiohttp.ClientResponse:
        """The upstream's answer to be relayed, holding one of the pool's slots (released by the caller).
        Retries 429/5xx and dropped connections while nothing has been sent to the client."""
        pool = self._pools[record["upstream"]]
        target = urlsplit(upstream.url)
        url = f"{target.scheme}://{target.netloc}{record['path']}"
        headers = _upstream_headers(request.headers, upstream)
        for attempt in range(self.max_retries + 1):
            await pool.slots.acquire()
            record["waited_s"] += await pool.wait_turn()
            try:
                response = await self._session.request(request.method, URL(url, encoded=True),
                                                        headers=headers, data=body, allow_redirects=False)
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
                pool.slots.release()
                if attempt == self.max_retries:
                    raise
                wait = _backoff(self.backoff_s, attempt)
            else:
                if response.status not in RETRYABLE_STATUS or attempt == self.max_retries:
                    return response
                asked = _retry_after(response.headers)
                if asked is not None and asked > self.max_retry_after_s:
                    return response  # the upstream wants longer than we may wait: pass it on now
                await response.read()
                response.release()
                pool.slots.release()
                wait = (asked if asked is not None else _backoff(self.backoff_s, attempt)) * random.uniform(1.0, 1.2)
                if asked is not None or response.status in POOL_PAUSE_STATUS:
                    pool.pause(wait)  # everyone waits, not only this request
                    wait = 0.0
            record["retries"] += 1
            record["waited_s"] += wait
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    # --- bookkeeping -----------------------------------------------------------------------------
    def _budget_spent(self) -> bool:
        with self._lock:
            return self.budget_usd is not None and self._spent_usd >= self.budget_usd

    def _meter_record(self, record: dict, meter: "_Meter") -> None:
        if record["status"] is None or record["status"] >= 400:
            record.update(input_tokens=0, output_tokens=0, cost_usd=0.0)  # failed calls are not billed
            return
        record["model"] = meter.model or record["model"]
        record.update(input_tokens=meter.input_tokens, output_tokens=meter.output_tokens)
        price = config.price_for(record["model"] or "")
        if price is not None and meter.input_tokens is not None and meter.output_tokens is not None:
            record["cost_usd"] = (meter.input_tokens * price[0] + meter.output_tokens * price[1]) / 1_000_000

    def _finish(self, token: str | None, record: dict, started: float, request_body: bytes,
                request_json: Any, response_body: bytes, meter: "_Meter") -> None:
        record["latency_s"] = time.monotonic() - started
        with self._lock:
            self._records.append(record)
            self._last_status[token or ""] = record["status"]
            self._spent_usd += record["cost_usd"] or 0.0
            if token and isinstance(request_json, dict):
                # an agent's last request carries its whole conversation: its trajectory so far
                self._last_exchange[token] = (request_json, meter.text(), meter.tool_calls())
        if self.trace is not None and self._loop is not None:
            payload = {**record, "request_body": _text(request_body, self.trace_chars),
                       "response_body": _text(response_body, self.trace_chars),
                       "output_text": meter.text()[: self.trace_chars], "output_tool_calls": meter.tool_calls()}
            self._loop.run_in_executor(None, self._call_trace, payload, request_json)

    def _call_trace(self, payload: dict, request_json: Any) -> None:
        try:
            payload["input_messages"] = input_messages(request_json, TRACE_MESSAGE_CHARS)
            self.trace(payload)
        except Exception as error:  # noqa: BLE001 - a broken trace must not break model calls
            if not self._trace_failed:
                self._trace_failed = True
                warnings.warn(f"gateway trace failed, calls are served anyway: {type(error).__name__}: {error}",
                              RuntimeWarning, stacklevel=1)


class _ClientGone(Exception):
    """The client closed its connection while its answer was streaming."""


class _Pool:
    """One upstream's shared limits: a concurrency cap and a "not before" time set by rate limits."""

    def __init__(self, concurrency: int):
        self.slots = asyncio.Semaphore(concurrency)
        self.not_before = 0.0  # loop time

    def pause(self, seconds: float) -> None:
        loop_now = asyncio.get_running_loop().time()
        self.not_before = max(self.not_before, loop_now + seconds)

    async def wait_turn(self) -> float:
        """Sleep while the pool is paused; after a pause, a small random stagger so the waiters do not
        all hit the upstream in the same instant. Returns the seconds waited."""
        loop = asyncio.get_running_loop()
        begin = loop.time()
        while (delay := self.not_before - loop.time()) > 0:
            await asyncio.sleep(delay + random.uniform(0, min(1.0, 0.1 * delay)))
        return loop.time() - begin


class _Meter:
    """Reads model, usage, output text and tool calls from a JSON or SSE answer of any of the three APIs."""

    def __init__(self, output: bool = True) -> None:
        self.output = output  # False: read only model and usage (cheaper: most stream events are skipped)
        self.model: str | None = None
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self._text: list[str] = []
        self._tools: dict[Any, dict[str, str]] = {}  # (api, index) -> {"name", "arguments"}
        self._pending = b""

    def text(self) -> str:
        return "".join(self._text)

    def tool_calls(self) -> list[dict[str, str]]:
        return list(self._tools.values())

    def feed_json(self, body: bytes) -> None:
        event = _json_or_none(body)
        if isinstance(event, dict):
            self.event(event)

    def feed_sse(self, chunk: bytes) -> None:
        self._pending += chunk.replace(b"\r\n", b"\n")
        *events, self._pending = self._pending.split(b"\n\n")
        for raw in events:
            data = b"\n".join(line[5:].lstrip() for line in raw.split(b"\n") if line.startswith(b"data:"))
            if data and data != b"[DONE]" and (self.output or self.model is None or b'"usage"' in data):
                self.feed_json(data)

    def event(self, event: dict) -> None:
        inner = event.get("message") or event.get("response")
        inner = inner if isinstance(inner, dict) else {}
        self.model = self.model or event.get("model") or inner.get("model")
        usage = event.get("usage") or inner.get("usage")
        if isinstance(usage, dict):
            self._take_usage(usage)
        if self.output:
            self._take_output(event)

    def _take_usage(self, usage: dict) -> None:
        given_in = usage.get("prompt_tokens", usage.get("input_tokens"))
        if given_in is not None:
            given_in += (usage.get("cache_creation_input_tokens") or 0) + (usage.get("cache_read_input_tokens") or 0)
            self.input_tokens = max(self.input_tokens or 0, given_in)  # stream usage is cumulative
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

    def _anthropic_blocks(self, blocks: list, first_index: int = 0) -> None:
        for i, block in enumerate(blocks, start=first_index):
            if block.get("type") == "text":
                self._text.append(block.get("text", ""))
            elif block.get("type") == "tool_use":
                given = block.get("input")
                self._tool(("anthropic", i), block.get("name"), json.dumps(given) if given else "")


# --- traces ----------------------------------------------------------------------------------------
def input_messages(request: Any, limit: int = TRACE_MESSAGE_CHARS) -> list[dict[str, Any]]:
    """The conversation of a chat-completions, Anthropic messages or Responses request as
    [{"role", "content" (cut to `limit`), "tool_calls": [{"name", "arguments"}]}]; [] for anything else."""
    if not isinstance(request, dict):
        return []
    messages: list[dict[str, Any]] = []

    def add(role: str, content: Any, tool_calls: list | None = None) -> None:
        messages.append({"role": role, "content": _plain(content)[:limit], "tool_calls": tool_calls or []})

    system = request.get("system") or request.get("instructions")
    if system:
        add("system", system)
    items = request.get("messages") or request.get("input") or []
    if isinstance(items, str):
        add("user", items)
        return messages
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":  # Responses API input items
            add("assistant", "", [{"name": item.get("name"), "arguments": item.get("arguments")}])
        elif item.get("type") == "function_call_output":
            add("tool", item.get("output"))
        else:
            content = item.get("content")
            calls = [{"name": (c.get("function") or {}).get("name"), "arguments": (c.get("function") or {}).get("arguments")}
                     for c in item.get("tool_calls") or []]
            calls += [{"name": b.get("name"), "arguments": json.dumps(b.get("input"))}
                      for b in (content if isinstance(content, list) else []) if isinstance(b, dict) and b.get("type") == "tool_use"]
            add(item.get("role") or "user", content, calls)
    return messages


def _plain(content: Any) -> str:
    """Text of a message content: a string, or the text of its parts (text, tool results)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part if isinstance(part, str) else _plain(part.get("text") or part.get("content") or part.get("output"))
                 for part in content if isinstance(part, (str, dict))]
        return "\n".join(p for p in parts if p)
    return json.dumps(content)


class PhoenixTracer:
    """A Gateway `trace`: each call becomes an OpenInference LLM span in one Phoenix project, sent in batches
    from a background thread. Phoenix down: spans are dropped with one warning, calls go on."""

    def __init__(self, endpoint: str, project: str, *, api_key: str | None = None, timeout_s: float = 5.0):
        from openinference.semconv.resource import ResourceAttributes
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.project = project
        self._provider = TracerProvider(resource=Resource.create({ResourceAttributes.PROJECT_NAME: project}))
        self._provider.add_span_processor(BatchSpanProcessor(_OtlpExporter(endpoint, api_key, timeout_s)))
        self._tracer = self._provider.get_tracer("helpers.llm.gateway")

    def __repr__(self) -> str:
        return f"PhoenixTracer(project={self.project!r})"

    def __call__(self, payload: dict) -> None:
        from opentelemetry.trace import Status, StatusCode

        start = int(payload["started_at"] * 1e9)
        name = f"{payload.get('role') or 'llm'} {payload['method']} {payload['path'].split('?')[0]}"
        span = self._tracer.start_span(name, start_time=start, attributes=span_attributes(payload))
        if payload["status"] != 200:
            span.set_status(Status(StatusCode.ERROR, str(payload.get("error") or payload["status"])))
        span.end(end_time=start + int((payload["latency_s"] or 0) * 1e9))

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Send the spans waiting in the batch now; False if that did not finish in time."""
        return self._provider.force_flush(int(timeout_s * 1000))

    def close(self) -> None:
        self._provider.shutdown()


def phoenix_tracer(endpoint: str, project: str, *, api_key: str | None = None) -> PhoenixTracer:
    """A Gateway `trace` sending OpenInference LLM spans to the Phoenix at `endpoint` (its base URL, e.g.
    http://127.0.0.1:6006, or the full .../v1/traces) into project `project`."""
    return PhoenixTracer(endpoint, project, api_key=api_key)


def span_attributes(payload: dict) -> dict[str, Any]:
    """OpenInference attributes of one call: kind LLM, model, token counts, input messages, output
    (text and tool calls), and the token's attributes both as span attributes and as metadata."""
    from openinference.semconv.trace import MessageAttributes as M
    from openinference.semconv.trace import SpanAttributes as S
    from openinference.semconv.trace import ToolCallAttributes as T

    attributes: dict[str, Any] = {S.OPENINFERENCE_SPAN_KIND: "LLM", S.INPUT_VALUE: payload["request_body"],
                                  S.INPUT_MIME_TYPE: "application/json",
                                  S.OUTPUT_VALUE: payload["output_text"] or payload["response_body"],
                                  S.SESSION_ID: payload["client"]}
    if payload.get("model"):
        attributes[S.LLM_MODEL_NAME] = payload["model"]
    counts = {S.LLM_TOKEN_COUNT_PROMPT: payload.get("input_tokens"),
              S.LLM_TOKEN_COUNT_COMPLETION: payload.get("output_tokens")}
    if None not in counts.values():
        counts[S.LLM_TOKEN_COUNT_TOTAL] = sum(counts.values())
    attributes.update({k: v for k, v in counts.items() if v is not None})
    output = {"role": "assistant", "content": payload["output_text"], "tool_calls": payload["output_tool_calls"]}
    for prefix, messages in ((S.LLM_INPUT_MESSAGES, payload.get("input_messages") or []),
                             (S.LLM_OUTPUT_MESSAGES, [output])):
        for i, message in enumerate(messages):
            attributes[f"{prefix}.{i}.{M.MESSAGE_ROLE}"] = message["role"]
            attributes[f"{prefix}.{i}.{M.MESSAGE_CONTENT}"] = message["content"]
            for j, call in enumerate(message["tool_calls"]):
                base = f"{prefix}.{i}.{M.MESSAGE_TOOL_CALLS}.{j}."
                attributes[base + T.TOOL_CALL_FUNCTION_NAME] = call.get("name") or ""
                attributes[base + T.TOOL_CALL_FUNCTION_ARGUMENTS_JSON] = call.get("arguments") or ""
    metadata = {k: v for k, v in payload.items()
                if k not in ("request_body", "response_body", "output_text", "output_tool_calls", "input_messages")}
    attributes[S.METADATA] = json.dumps(metadata, default=str)
    for key in set(metadata) - set(RECORD_FIELDS):  # the token's attributes: task, split, loop, role, ...
        value = metadata[key]
        if value is not None:
            attributes[key] = value if isinstance(value, (str, bool, int, float)) else str(value)
    return attributes


class _OtlpExporter:
    """Posts spans to Phoenix's OTLP/HTTP endpoint once, without retries; warns once when it cannot."""

    def __init__(self, endpoint: str, api_key: str | None, timeout_s: float):
        endpoint = endpoint.rstrip("/")
        self.url = endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"
        self._headers = {"Content-Type": "application/x-protobuf",
                         **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
        self._timeout_s = timeout_s
        self._warned = False

    def export(self, spans: Any) -> Any:
        import httpx
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult

        try:
            response = httpx.post(self.url, content=encode_spans(spans).SerializePartialToString(),
                                  headers=self._headers, timeout=self._timeout_s)
            response.raise_for_status()
            return SpanExportResult.SUCCESS
        except httpx.HTTPError as error:
            if not self._warned:
                self._warned = True
                warnings.warn(f"Phoenix at {self.url} did not take the gateway's spans ({type(error).__name__}); "
                              "spans are dropped until it does. Model calls are not affected.",
                              RuntimeWarning, stacklevel=1)
            return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


# --- small pure helpers ----------------------------------------------------------------------------
async def _healthz(_: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def _error(status: int, message: str, kind: str, headers: Mapping[str, str] | None = None) -> web.Response:
    """An error in the OpenAI/Anthropic shape both SDKs read ({"error": {"message", "type"}})."""
    body = {"type": "error", "error": {"message": message, "type": kind, "code": kind}}
    return web.json_response(body, status=status, headers=dict(headers or {}))


def _token_of(headers: Mapping[str, str]) -> str | None:
    authorization = headers.get("Authorization", "")
    if authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return headers.get("x-api-key") or None


def _upstream_headers(client_headers: Mapping[str, str], upstream: Upstream) -> dict[str, str]:
    """The client's headers without hop-by-hop or credential headers, plus the real key and identity coding."""
    headers = {k: v for k, v in client_headers.items()
               if k.lower() not in _HOP_BY_HOP | _CREDENTIAL_HEADERS | {"accept-encoding"}}
    headers["Accept-Encoding"] = "identity"
    if upstream.api_key:
        if upstream.kind == "anthropic":
            headers["x-api-key"] = upstream.api_key
        else:
            headers["Authorization"] = f"Bearer {upstream.api_key}"
    return headers


def _client_headers(upstream_headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in upstream_headers.items() if k.lower() not in _HOP_BY_HOP}


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the upstream asks to wait (retry-after-ms, Retry-After seconds or HTTP date), else None."""
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("Retry-After")
        if not value:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _backoff(base_s: float, attempt: int) -> float:
    """Full-jitter exponential backoff: uniform in [base * 2^attempt / 2, base * 2^attempt], capped."""
    ceiling = min(MAX_BACKOFF_S, base_s * 2 ** attempt)
    return random.uniform(ceiling / 2, ceiling)


def _json_or_none(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def _decoded(body: bytes, encoding: str | None) -> bytes:
    """`body` without its gzip/deflate coding, for metering only (the client gets it as it came)."""
    if encoding in ("gzip", "deflate"):
        try:
            return zlib.decompress(body, 47)  # 32 + 15: gzip or zlib header
        except zlib.error:
            return b""
    return body


def _scrub(text: str, key: str | None) -> str:
    return text.replace(key, "[key]") if key else text


def _scrub_bytes(body: bytes, key: str | None) -> bytes:
    return body.replace(key.encode(), b"[key]") if key else body


def _text(data: bytes, limit: int) -> str:
    return data[:limit].decode("utf-8", errors="replace")


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "Gateway", "Upstream", "upstream_for", "is_transient", "phoenix_tracer", "PhoenixTracer", "span_attributes",
    "input_messages",
]
