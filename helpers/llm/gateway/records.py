"""The gateway's call records and what is read from them: one record per finished call (its token's attributes,
what the gateway changed in the request, tokens, cost, latency, retries), the usage they sum to, each token's last
status and its client's conversation as of its last call (kept as the request's bytes, parsed only when asked for).
`CallRecords` is the part of the Gateway that keeps them (proxy.py)."""

from __future__ import annotations

import secrets
import threading
import time
import warnings
from time import perf_counter
from typing import Any, Callable

from helpers.core import config
from helpers.llm.gateway.metering import Meter, body_text, input_messages, json_or_none
from helpers.llm.gateway.stages import StageTimes
from helpers.llm.pricing import call_cost_usd

TRACE_MESSAGE_CHARS = config.GATEWAY_TRACE_MESSAGE_CHARS
SETTLE_S = 10.0  # how long a reader of records waits for calls under way to be written
COUNTS = (":countTokens", "/count_tokens")  # token counts: free at both providers, nothing generated


class CallRecords:
    """The records of a Gateway's calls; thread-safe (the gateway's loop writes, any thread reads). `trace` is
    called (in a worker thread) with each finished call, its request and answer cut to `trace_chars`."""

    _loop: Any  # the gateway's event loop, once it serves
    _stages: StageTimes  # the gateway's stage times (stages.py)

    def __init__(self, trace: Callable[[dict], Any] | None, trace_chars: int):
        self.trace, self.trace_chars = trace, trace_chars
        self._lock = threading.Lock()
        # calls under way, by token: a reader of records waits for them (a client may read its last chunk
        # an instant before its call's record is written)
        self._inflight: dict[str, int] = {}
        self._settled = threading.Condition(self._lock)
        self._tokens: dict[str, dict[str, Any]] = {}  # token -> {"upstream", "client", attributes...}
        self._records: list[dict[str, Any]] = []
        self._last_status: dict[str, int | str] = {}
        self._last_exchange: dict[str, tuple[bytes, str, list]] = {}  # the request as bytes: parsed when asked for
        self._trace_failed = False

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
        return input_messages(json_or_none(request), limit) + [
            {"role": "assistant", "content": text[:limit], "tool_calls": tool_calls}
        ]

    def forget(self, token: str) -> None:
        """Drop what is kept of `token`'s conversation (its call records stay)."""
        with self._lock:
            self._last_exchange.pop(token, None)

    # --- records ---------------------------------------------------------------------------------
    def calls(self, token: str | None = None, **filters: Any) -> list[dict[str, Any]]:
        """Copies of the finished call records whose fields equal every filter (e.g. task="t1");
        `token` keeps one client's calls. Calls still under way (of `token`, or of anyone) are waited
        for, up to SETTLE_S: a client can read its answer's last chunk just before its record is written."""
        client = None
        if token is not None:
            with self._lock:
                client = (self._tokens.get(token) or {}).get("client", "no such client")
        with self._lock:
            key = None if token is None else token
            self._settled.wait_for(
                lambda: not (self._inflight.get(key, 0) if key is not None else sum(self._inflight.values())),
                timeout=SETTLE_S,
            )
            records = list(self._records)
        return [
            dict(r)
            for r in records
            if (client is None or r["client"] == client) and all(r.get(k) == v for k, v in filters.items())
        ]

    def usage(self, token: str | None = None, **filters: Any) -> dict[str, Any]:
        """Sums over `calls(token, **filters)`: calls, input_tokens, cached_tokens (the part of input_tokens
        read from the provider's prompt cache, as far as answers said), output_tokens and cost_usd (None when
        any of those calls is unpriced)."""
        records = self.calls(token, **filters)
        costs = [r["cost_usd"] for r in records]
        return {
            "calls": len(records),
            "input_tokens": sum(r["input_tokens"] or 0 for r in records),
            "cached_tokens": sum(r.get("cached_tokens") or 0 for r in records),
            "output_tokens": sum(r["output_tokens"] or 0 for r in records),
            "cost_usd": None if any(c is None for c in costs) else sum(costs),
        }

    def _meter_record(self, record: dict, meter: "Meter") -> None:
        counts = record["path"].partition("?")[0].endswith(COUNTS)  # free at both providers
        if record["status"] is None or record["status"] >= 400 or record["method"] == "GET" or counts:
            record.update(input_tokens=0, output_tokens=0, cost_usd=0.0)  # failed calls, the model list, token counts
            return
        record["model"] = meter.model or record["model"]
        record.update(
            input_tokens=meter.input_tokens, cached_tokens=meter.cached_tokens, output_tokens=meter.output_tokens
        )
        if meter.input_tokens is not None and meter.output_tokens is not None:
            record["cost_usd"] = call_cost_usd(
                record["model"], meter.input_tokens, meter.output_tokens, cached_tokens=meter.cached_tokens
            )

    def _finish(
        self,
        token: str | None,
        record: dict,
        started: float,
        request_body: bytes,
        request_json: Any,
        response_body: bytes,
        meter: "Meter",
    ) -> None:
        lap = perf_counter()
        record["latency_s"] = time.monotonic() - started
        with self._lock:
            self._records.append(record)
            self._last_status[token or ""] = record["status"]
            if token and request_body:
                # an agent's last request carries its whole conversation: its trajectory so far (kept as bytes)
                self._last_exchange[token] = (request_body, meter.text(), meter.tool_calls())
        lap = self._stages.lap("record", lap)
        if self.trace is not None and self._loop is not None:
            payload = {
                **record,
                "request_body": body_text(request_body, self.trace_chars),
                "response_body": body_text(response_body, self.trace_chars),
                "output_text": meter.text()[: self.trace_chars],
                "output_tool_calls": meter.tool_calls(),
            }
            self._loop.run_in_executor(None, self._call_trace, self.trace, payload, request_json)
            self._stages.lap("tracing", lap)

    def _call_trace(self, trace: Callable[[dict], Any], payload: dict, request_json: Any) -> None:
        try:
            payload["input_messages"] = input_messages(request_json, TRACE_MESSAGE_CHARS)
            trace(payload)
        except Exception as error:  # noqa: BLE001 - a broken trace must not break model calls
            if not self._trace_failed:
                self._trace_failed = True
                warnings.warn(
                    f"gateway trace failed, calls are served anyway: {type(error).__name__}: {error}",
                    RuntimeWarning,
                    stacklevel=1,
                )


__all__ = ["CallRecords", "call_record"]  # documented in CODE_APPENDIX.md


def call_record(
    client: dict, name: str, method: str, path: str, model: Any, stream: bool, changed: list[str], started_at: float
) -> dict[str, Any]:
    """A call's record before it is answered: its token's attributes, where it goes and what was changed."""
    return {
        **{k: v for k, v in client.items() if k not in ("upstream", "revoked", "models")},
        "id": secrets.token_hex(8),
        "upstream": name,
        "method": method,
        "path": path,
        "model": model,
        "stream": stream,
        "status": None,
        "input_tokens": None,
        "cached_tokens": None,
        "output_tokens": None,
        "cost_usd": None,
        "latency_s": None,
        "retries": 0,
        "waited_s": 0.0,
        "started_at": started_at,
        "error": None,
        "changed": changed,
    }
