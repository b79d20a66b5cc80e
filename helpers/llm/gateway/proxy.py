"""The gateway's proxy: a loopback aiohttp server that swaps a run's token for the provider's key, keeps to
each upstream's concurrency and Retry-After pauses, retries with the one policy (helpers.llm.retries),
meters every call and enforces the budget; relay.py ends a broken answer cleanly, upstream_leg.py makes the
upstream call. See the package docstring for the contract."""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from time import perf_counter
from typing import Any, Callable, Mapping, cast
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from helpers.core import config
from helpers.llm.gateway.checks import checked_call
from helpers.llm.gateway.budget import Ledger, worst_case_usd
from helpers.llm.gateway.gemini_to_openai import carry
from helpers.llm.gateway.intake import BodyBytes, BodyRefused, capped, read_body
from helpers.llm.gateway.metering import Meter, decoded_body
from helpers.llm.gateway.policy import Refusal, api_of, error_response, healthz, model_of, no_more_retries, streams
from helpers.llm.gateway.records import COUNTS, CallRecords, call_record
from helpers.llm.gateway.relay import Limits, Stream, UpstreamFault, client_left, relay
from helpers.llm.gateway.stages import StageTimes
from helpers.llm.gateway.upstreams import Upstream, client_headers, scrub_bytes, token_of, upstream_headers
from helpers.llm.gateway.tracing import RECORD_FIELDS
from helpers.llm.gateway.upstream_leg import GatewayLoop, UpstreamLeg
from helpers.llm.retries import is_retryable

GATEWAY_CONCURRENCY = config.GATEWAY_CONCURRENCY
BACKOFF_S = config.GATEWAY_BACKOFF_S
IDLE_TIMEOUT_S = config.GATEWAY_IDLE_TIMEOUT_S
CALL_TIMEOUT_S = config.GATEWAY_CALL_TIMEOUT_S
TRACE_CHARS = config.GATEWAY_TRACE_CHARS


class Gateway(CallRecords):
    """A loopback HTTP proxy in a background thread; start()/stop() or use it as a context manager.

    Thread-safe: tokens, records and usage may be read and issued from any thread while it serves.
    """

    def __init__(
        self,
        upstreams: Mapping[str, Upstream | tuple],
        *,
        max_retry_after_s: float = config.LLM_MAX_RETRY_AFTER_S,
        concurrency: int = GATEWAY_CONCURRENCY,
        budget_usd: float | None = None,
        trace: Callable[[dict], Any] | None = None,
        max_retries: int = config.LLM_MAX_RETRIES,
        backoff_s: float = BACKOFF_S,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        call_timeout_s: float = CALL_TIMEOUT_S,
        trace_chars: int = TRACE_CHARS,
        models: Mapping[str, Any] | None = None,
        host: str = "127.0.0.1",
    ):
        self.host = host  # loopback; a cluster with remote nodes binds an address they reach (README)
        self.upstreams = {name: u if isinstance(u, Upstream) else Upstream(*u) for name, u in upstreams.items()}
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.max_retry_after_s, self.concurrency, self.budget_usd = max_retry_after_s, concurrency, budget_usd
        self._ledger = Ledger(budget_usd)  # spent and reserved (budget.py)
        self.max_request_bytes, self.max_connections = config.GATEWAY_MAX_REQUEST_BYTES, config.GATEWAY_MAX_CONNECTIONS
        self.token_concurrency = config.GATEWAY_TOKEN_CONCURRENCY
        self.max_output_tokens = config.max_output_tokens()  # the model server's own limit, for every role (or None)
        self._held = BodyBytes(config.GATEWAY_MAX_HELD_BYTES)  # request bytes of all calls under way
        self._stages = StageTimes()  # where each call's time goes (stage_times)
        super().__init__(trace, trace_chars)  # records, tokens, calls under way (records.py)
        self.max_retries, self.backoff_s = max_retries, backoff_s
        # a silent upstream (between any two bytes) and a call that runs too long are both cut
        self.idle_timeout_s, self.call_timeout_s = idle_timeout_s, call_timeout_s
        self._limits = Limits(idle_timeout_s, call_timeout_s)
        # upstream -> the model ids its tokens may call (an upstream not named here: any model)
        self.models = {name: set(ids) for name, ids in (models or {}).items()}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    def __repr__(self) -> str:  # names and URL only, never a key or a token
        where = f"http://{self.host}:{self._port}" if self._port else "not started"
        return f"Gateway({where}, upstreams={sorted(self.upstreams)}, calls={len(self._records)})"

    # --- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "Gateway":
        """Serve on a free loopback port; returns once it accepts connections."""
        if self._thread is not None:
            return self
        started = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = GatewayLoop()  # uvloop's, connecting upstream without a thread hop
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
        """http://<host>:<port> (host: 127.0.0.1 unless given)"""
        if self._port is None:
            raise RuntimeError("The gateway is not started.")
        return f"http://{self.host}:{self._port}"

    # --- clients ---------------------------------------------------------------------------------
    def url_for(self, upstream: str) -> str:
        """The URL a client uses in place of `upstream`'s base URL (same path, gateway origin)."""
        path = urlsplit(self._upstream(upstream).url).path.rstrip("/")
        return f"{self.url}/u/{upstream}{path}"

    def issue_token(self, upstream: str, *, models: list[str] | None = None, **attributes: Any) -> str:
        """A new token for one client of `upstream`; `attributes` (experiment, split, loop, task, role,
        ...) are copied into every record of its calls. `models`: the only models it may call (else the
        upstream's `models`, else any); its `role` sets its output cap (output_cap)."""
        self._upstream(upstream)
        clash = sorted(set(attributes) & set(RECORD_FIELDS + ("token",)))
        if clash:
            raise ValueError(f"Token attributes may not be named {', '.join(clash)} (call record fields).")
        token = "gw-" + secrets.token_urlsafe(24)
        with self._lock:
            self._tokens[token] = {
                **attributes,
                "upstream": upstream,
                "client": secrets.token_hex(6),
                **({"models": set(models)} if models is not None else {}),
            }
        return token

    def revoke_token(self, token: str) -> None:
        """Refuse `token` from now on (its records stay)."""
        with self._lock:
            info = self._tokens.get(token)
            if info is not None:
                info["revoked"] = True

    def output_cap(self, role: str | None) -> int:
        """The most one answer of `role`'s calls may take: its GATEWAY_OUTPUT_TOKENS, lowered to the model server's
        own limit when one was given (PL_MAX_OUTPUT_TOKENS, read when the gateway was made)."""
        cap = config.GATEWAY_OUTPUT_TOKENS.get(role or "", config.GATEWAY_DEFAULT_OUTPUT_TOKENS)
        return min(cap, self.max_output_tokens) if self.max_output_tokens else cap

    @property
    def spent_usd(self) -> float:
        """The cost of every priced call so far."""
        return self._ledger.spent_usd

    def stage_times(self, reset: bool = False) -> dict[str, float]:
        """Where the calls' time went: {"calls": n, "<stage>_ms": mean ms per call} for each stage of the request path
        (stages.STAGES: read, policy, budget, key_swap, upstream, forward, metering, tracing, record); `reset`
        starts the sums again."""
        return self._stages.per_call_ms(reset)

    def _upstream(self, name: str) -> Upstream:
        if name not in self.upstreams:
            raise KeyError(f"No upstream named {name!r}; the gateway has {', '.join(sorted(self.upstreams))}.")
        return self.upstreams[name]

    # --- the server (runs on the gateway's own event loop) --------------------------------------
    async def _open(self) -> None:
        self._leg = UpstreamLeg(
            self.upstreams,
            self.concurrency,
            self._limits,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
            max_retry_after_s=self.max_retry_after_s,
        )
        app = web.Application(client_max_size=self.max_request_bytes)
        app.router.add_get("/healthz", healthz)
        app.router.add_route("*", "/u/{name}/{tail:.*}", self._handle)
        app.router.add_route("*", "/u/{name}", self._handle)
        # stop() cuts calls in flight; a client that leaves cancels its handler, and so its upstream call
        self._runner = web.AppRunner(
            app,
            access_log=None,
            shutdown_timeout=1.0,
            handler_cancellation=True,
            keepalive_timeout=config.GATEWAY_IDLE_CONNECTION_S,
            lingering_time=0,
        )  # a body refused is never read on: its connection closes
        await self._runner.setup()
        self._listener = await asyncio.get_running_loop().create_server(
            capped(cast(web.Server, self._runner.server), lambda: self.max_connections),  # setup() made it
            self.host,
            0,
            backlog=1024,
        )
        self._port = self._listener.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        self._listener.close()
        await self._runner.cleanup()
        await self._leg.close()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        """One model call, counted as under way until its record is written (see calls())."""
        key = token_of(request.headers, request.query_string) or ""
        with self._lock:
            over = self._inflight.get(key, 0) >= self.token_concurrency
            if not over:
                self._inflight[key] = self._inflight.get(key, 0) + 1
        if over:  # one client's calls at once are capped: its others wait for a slot of their own
            return error_response(
                429,
                f"gateway: more than {self.token_concurrency} calls at once with one token",
                "too_many_requests",
                api=api_of(request.path, request.headers),
            )
        try:
            return await self._answer(request)
        finally:
            self._stages.count()
            with self._lock:
                self._inflight[key] -= 1
                if not self._inflight[key]:
                    del self._inflight[key]
                self._settled.notify_all()

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        started, started_at, lap = time.monotonic(), time.time(), perf_counter()
        name, api = request.match_info["name"], api_of(request.path, request.headers)  # api: the error shape
        upstream = self.upstreams.get(name)
        if upstream is None:
            return error_response(404, f"gateway: no upstream named {name!r}", "unknown_upstream", api=api)
        token = token_of(request.headers, request.query_string)
        with self._lock:
            client = self._tokens.get(token or "")
        if client is None or client["upstream"] != name or client.get("revoked"):
            return error_response(
                401, f"gateway: unknown or revoked token for upstream {name!r}", "invalid_token", api=api
            )
        try:
            body = await read_body(request, self.max_request_bytes, config.GATEWAY_BODY_TIMEOUT_S, self._held)
        except BodyRefused as refused:
            kind = {413: "request_too_large", 408: "request_timeout"}.get(refused.status, "gateway_busy")
            answer = error_response(
                refused.status,
                f"gateway: refused: {refused.message}",
                kind,
                api=api,
                headers={"retry-after": "1"} if refused.status == 503 else None,
            )
            answer.force_close()  # the rest of the body is never read
            return answer
        lap = self._stages.lap("read", lap)
        try:
            return await self._forward(request, name, upstream, token, client, body, started, started_at, lap)
        finally:
            self._held.give(len(body))

    def _unsent(
        self,
        token: str | None,
        record: dict,
        started: float,
        body: bytes,
        asked: Any,
        answer: bytes = b"",
        **outcome: Any,
    ) -> None:
        """The record of a call answered here, never sent upstream: counted and named like any, nothing spent."""
        record.update(input_tokens=0, output_tokens=0, cost_usd=0.0, **outcome)
        self._finish(token, record, started, body, asked, answer, Meter())

    async def _forward(
        self,
        request: web.Request,
        name: str,
        upstream: Upstream,
        token: str | None,
        client: dict,
        body: bytes,
        started: float,
        started_at: float,
        lap: float,
    ) -> web.StreamResponse:
        api = api_of(request.path, request.headers)
        checked = checked_call(
            request.method,
            request.raw_path,
            request.path,
            name,
            upstream,
            body,
            cap=self.output_cap(client.get("role")),
            models=client.get("models", self.models.get(name)),
            budget_usd=self.budget_usd,
        )
        if isinstance(checked, Refusal):  # recorded like any call (counted, named); nothing of it is kept or sent
            record = call_record(
                client,
                name,
                request.method,
                request.path.removeprefix(f"/u/{name}")[:300],
                checked.model,
                False,
                [],
                started_at,
            )
            self._unsent(token, record, started, b"", None, status=checked.status, error=checked.message)
            return error_response(checked.status, f"gateway: {checked.message}", checked.kind, api=api)
        path, query, asked, screened, body = checked  # body: what was checked, as it is sent
        record = call_record(
            client,
            name,
            request.method,
            path + (f"?{query}" if query else ""),
            model_of(path, asked),
            streams(path, asked),
            screened.changes if screened is not None else [],
            started_at,
        )
        carried = carry(upstream, request.method, path, screened.body if screened is not None else {})
        if carried is not None and carried.local is not None:  # a token count for a chat server: answered here
            self._unsent(token, record, started, body, asked, carried.local, status=200)
            return web.Response(status=200, body=carried.local, content_type="application/json")
        counts = path.endswith(COUNTS) or screened is None
        lap = self._stages.lap("policy", lap)
        worst = (
            0.0
            if counts or screened is None or self.budget_usd is None
            else worst_case_usd(record["model"], len(body), screened.media_parts, screened.output_tokens)
        )
        refused = await self._ledger.admit(worst, api)
        if refused is not None:  # over the whole budget (413) or the ledger's own budget ("budget", 429)
            status, error, reply = refused
            self._unsent(token, record, started, body, asked, status=status, error=error)
            return reply
        lap = self._stages.lap("budget", lap)
        meter, kept = Meter(output=self.trace is not None), [b""]
        response: aiohttp.ClientResponse | None = None
        finished = False

        def finish() -> None:  # once, and before the client can see the end of its answer
            nonlocal finished
            if not finished:
                finished = True
                if response is not None:  # closes the upstream connection unless its answer was read whole
                    response.release()
                    self._leg.pools[name].slots.release()
                lap = perf_counter()
                self._meter_record(record, meter)
                lap = self._stages.lap("metering", lap)
                self._ledger.settle(worst, record["cost_usd"] or 0.0)
                self._stages.lap("budget", lap)
                self._finish(token, record, started, body, asked, kept[0], meter)

        tracing = self.trace is not None

        def take(raw: bytes, data: Any) -> None:  # a relayed event
            if isinstance(data, dict):
                meter.event(data)
            if tracing and len(kept[0]) < self.trace_chars:
                kept[0] += raw[: self.trace_chars - len(kept[0])]

        try:
            sent = upstream_headers(request.headers, upstream)  # the client's credentials out, the key in
            lap = self._stages.lap("key_swap", lap)
            response, head = await self._leg.send(request.method, upstream, sent, body, record, carried)
            lap = self._stages.lap("upstream", lap)
            record["status"] = response.status
            headers = client_headers(response.headers)
            if is_retryable(response.status):  # we retried it as far as the policy allows: clients must not
                headers.update(no_more_retries(record))
            if isinstance(head, Stream):
                return await relay(
                    request, response, head, headers, record, upstream.api_key, take, finish, self._stages
                )
            kept[0] = answer = scrub_bytes(head, upstream.api_key)
            meter.feed_json(decoded_body(answer, response.headers.get("Content-Encoding")))
            self._stages.lap("metering", lap)
            return web.Response(status=response.status, headers=headers, body=answer)
        except UpstreamFault as fault:  # nothing reached the client yet: a plain JSON error
            record.update(status=fault.status, error=fault.message)
            return error_response(
                fault.status, f"gateway: {fault.message}", fault.kind, no_more_retries(record), api=api
            )
        except asyncio.CancelledError:  # the client left (aiohttp cancels its handler): stop the upstream at once
            if not finished:  # (after its record was written, the client had its whole answer)
                client_left(record)
            raise
        finally:
            finish()
