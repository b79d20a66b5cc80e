"""Relaying an upstream's answer when the model server misbehaves: a stream that ends early or breaks, an
event or a body that is not JSON, a stall, a call that runs too long.

A stream is relayed event by event (only whole SSE events, so an error event never lands inside a torn
one). Each fault becomes an UpstreamFault saying what happened ("the model server ended the stream early
after 3 chunks"); the proxy retries it while nothing reached the client, else ends the client's stream
with `error_event` in the client's own wire format. A Gemini stream has no end marker: it is complete once
a chunk carried a finishReason (the upstream may still send chunks until it closes, and what breaks after
that loses nothing). Every fault is logged as one line, without a traceback. A client that leaves gets
its upstream call cancelled at once (aiohttp cancels the handler; closing the upstream connection stops
the model server).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from time import perf_counter
from typing import Any, Callable

import aiohttp
from aiohttp import web

from helpers.llm.gateway.metering import loads
from helpers.llm.gateway.policy import ClientGone, api_of
from helpers.llm.gemini_errors import gemini_error
from helpers.llm.gateway.stages import StageTimes
from helpers.llm.gateway.upstreams import scrub

log = logging.getLogger("helpers.llm.gateway")

# Events after which a stream is complete (besides chat's `data: [DONE]` and a chat `{"error": ...}`).
END_TYPES = {"message_stop", "response.completed", "response.failed", "response.incomplete", "error"}
READ_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError, OSError)
# The keys of an event that Stream._note reads: an event with none of them is passed by one set operation.
_NOTED_KEYS = frozenset({"type", "error", "candidates", "response", "sequence_number"})
# A model server's own error event mid-stream, by its type, as the status a whole answer would have had: the
# call's record then says what failed, and whether a later retry may succeed (policy.is_transient).
STREAM_ERROR_STATUS = {
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "api_error": 500,
    "server_error": 500,
    "internal_error": 500,
    "RESOURCE_EXHAUSTED": 429,
    "UNAVAILABLE": 503,
    "INTERNAL": 500,
}  # the last: Gemini's


class UpstreamFault(Exception):
    """The upstream failed to give a whole answer: `message` for the client, the record and the log; `status`
    502 or 504 for the record (and the client, when nothing was sent yet); `kind` for the error body."""

    def __init__(self, message: str, status: int = 502, kind: str = "upstream_fault"):
        super().__init__(message)
        self.message, self.status, self.kind = message, status, kind


class Limits:
    """The gateway's time limits, to say which one a timeout was."""

    def __init__(self, idle_s: float, call_s: float):
        self.idle_s, self.call_s = idle_s, call_s


def chunks_text(chunks: int) -> str:
    return f"{chunks} chunk{'' if chunks == 1 else 's'}"


def read_fault(error: BaseException, limits: Limits, chunks: int | None = None, answered: bool = True) -> UpstreamFault:
    """What a failed read of the upstream means, in words that name what happened (never the HTTP library's
    class names). `chunks`: events of a stream relayed so far (None: a whole answer); `answered`: whether its
    status line had come."""
    after = "" if chunks is None else f" after {chunks_text(chunks)}"
    if isinstance(error, aiohttp.SocketTimeoutError):
        return UpstreamFault(f"the model server sent nothing for {limits.idle_s:g} s{after}", 504, "upstream_timeout")
    if isinstance(error, asyncio.TimeoutError) and not isinstance(error, aiohttp.ConnectionTimeoutError):
        return UpstreamFault(
            f"the call took longer than the gateway's limit of {limits.call_s:g} s{after}", 504, "upstream_timeout"
        )
    if not answered:
        return UpstreamFault(f"upstream unreachable: {connection_trouble(error)}", 502, "upstream_unreachable")
    if chunks is None:
        return UpstreamFault(f"the model server ended its answer early: {connection_trouble(error)}")
    return UpstreamFault(f"the model server ended the stream early{after}: {connection_trouble(error)}")


def connection_trouble(error: BaseException) -> str:
    """What went wrong with the connection to a model server, in plain words ("the connection closed before
    the answer was complete", "nothing answers at 127.0.0.1:9 (connection refused)")."""
    if isinstance(error, aiohttp.ClientPayloadError):
        return "the connection closed before the answer was complete"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    if isinstance(error, aiohttp.ClientConnectorDNSError):
        return f"the host name {error.host} does not resolve"
    if isinstance(error, aiohttp.ClientConnectorCertificateError):
        return f"the TLS certificate of {error.host} was not accepted"
    if isinstance(error, aiohttp.ClientConnectorError):
        cause = error.os_error
        why = "connection refused" if isinstance(cause, ConnectionRefusedError) else (cause.strerror or "no connection")
        return f"nothing answers at {error.host}:{error.port} ({why.lower()})"
    if isinstance(error, ConnectionResetError) or isinstance(getattr(error, "__cause__", None), ConnectionResetError):
        return "the connection was reset"
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return "connecting took too long"
    return "the connection failed"


def check_json(body: bytes, status: int) -> None:
    """A success that is not JSON is a fault (every endpoint the gateway forwards answers JSON)."""
    if 200 <= status < 300:
        try:
            loads(body)
        except ValueError:
            raise UpstreamFault(
                f"the model server answered {status} with a body that is not JSON ({body[:40]!r})"
            ) from None


class Stream:
    """An upstream's SSE stream as whole, checked events: `first` (read while retrying is still possible),
    then `next()` until it returns [] at the end; either raises UpstreamFault when the stream breaks."""

    def __init__(self, response: aiohttp.ClientResponse, limits: Limits):
        self.response, self.limits = response, limits
        self.chunks = 0  # events handed out
        self.ended = False  # the end marker came
        self.finished = False  # Gemini: a chunk carried a finishReason, so the stream may end at any time
        self.about: dict[str, Any] = {}  # Responses API: the response the stream is about, for response.failed
        self.sequence = -1
        self.upstream_error: tuple[int, str] | None = None  # the server's own error event: (status, message)
        self.first: list[tuple[bytes, Any]] = []
        self._pending = b""
        self._fault: UpstreamFault | None = None
        self.checked_s = 0.0  # seconds spent splitting and checking events

    async def start(self) -> "Stream":
        self.first = await self.next()
        return self

    async def next(self) -> list[tuple[bytes, Any]]:
        """The next whole events as (raw bytes, parsed data or None), [] once the stream is complete."""
        while not self.ended:
            if self._fault is not None:
                raise self._fault
            try:
                chunk = await self.response.content.readany()
            except READ_ERRORS as error:
                if self.finished:  # the answer was whole: what broke after it loses nothing
                    self.ended = True
                    break
                raise read_fault(error, self.limits, self.chunks) from None
            if not chunk and self.finished:  # closed cleanly after the last chunk
                self.ended = True
                break
            if not chunk:
                raise UpstreamFault(
                    f"the model server ended the stream early after {chunks_text(self.chunks)} (no end marker)"
                )
            begun = perf_counter()
            events = self._split(chunk)
            self.checked_s += perf_counter() - begun
            if events:
                return events
        return []

    def _split(self, chunk: bytes) -> list[tuple[bytes, Any]]:
        self._pending += chunk
        if b"\r" in self._pending:
            self._pending = self._pending.replace(b"\r\n", b"\n")
        *raws, self._pending = self._pending.split(b"\n\n")
        events = []
        for raw in raws:
            if self.ended or self._fault is not None:
                break
            if raw.startswith(b"data:") and b"\n" not in raw:  # one data line, as nearly every event is
                data = raw[5:].lstrip()
            else:
                data = b"\n".join(line[5:].lstrip() for line in raw.split(b"\n") if line.startswith(b"data:"))
            parsed = None
            if data == b"[DONE]":
                self.ended = True
            elif data:
                try:
                    parsed = loads(data)
                except ValueError:
                    self._fault = UpstreamFault(
                        f"the model server sent an event that is not JSON after {chunks_text(self.chunks)} "
                        f"({data[:40]!r})"
                    )
                    break
                if isinstance(parsed, dict) and not parsed.keys().isdisjoint(_NOTED_KEYS):
                    self._note(parsed)  # (not a chat chunk: it may say the stream ended, finished or failed)
            events.append((raw + b"\n\n", parsed))
            self.chunks += bool(data)
        return events

    def _note(self, parsed: dict) -> None:
        self.ended = self.ended or parsed.get("type") in END_TYPES or bool(parsed.get("error"))
        candidates = parsed.get("candidates")
        self.finished = self.finished or (
            isinstance(candidates, list) and any(isinstance(c, dict) and c.get("finishReason") for c in candidates)
        )
        if isinstance(parsed.get("response"), dict):
            self.about = parsed["response"]
        if isinstance(parsed.get("sequence_number"), int):
            self.sequence = parsed["sequence_number"]
        error = parsed.get("error") or (parsed.get("response") or {}).get("error")
        if isinstance(error, dict) and self.upstream_error is None:
            kind = str(error.get("type") or error.get("status") or error.get("code") or "")
            code = error.get("code")  # Gemini's: the HTTP status a whole answer would have had
            status = code if isinstance(code, int) and 400 <= code < 600 else STREAM_ERROR_STATUS.get(kind, 502)
            self.upstream_error = (
                status,
                f"the model server sent an error mid-stream "
                f"({kind or 'no type'}): {str(error.get('message') or '')[:300]}",
            )


def error_event(api: str, message: str, stream: Stream, status: int = 502) -> bytes:
    """The end of a broken stream in the client's wire format, as its SDK reads an error: chat completions a
    `{"error": ...}` event then [DONE]; Anthropic an `error` event; Responses `response.failed`; Gemini a
    `data: {"error": {"code", "message", "status"}}` chunk (no end marker: the google-genai SDK raises it)."""
    if api == "gemini":
        return b"data: " + json.dumps(gemini_error(status, message)).encode() + b"\n\n"
    if api == "anthropic":
        body = {"type": "error", "error": {"type": "api_error", "message": message}}
        return b"event: error\ndata: " + json.dumps(body).encode() + b"\n\n"
    if api == "responses":
        response = {
            "id": f"resp_gateway_{secrets.token_hex(8)}",
            "object": "response",
            "created_at": int(time.time()),
            "output": [],
            **stream.about,
        }
        response.update(status="failed", error={"code": "server_error", "message": message})
        event = {"type": "response.failed", "sequence_number": stream.sequence + 1, "response": response}
        return b"event: response.failed\ndata: " + json.dumps(event).encode() + b"\n\n"
    body = {"error": {"message": message, "type": "server_error", "code": "upstream_fault"}}
    return b"data: " + json.dumps(body).encode() + b"\n\ndata: [DONE]\n\n"


def note(record: dict, message: str, level: int = logging.WARNING) -> None:
    """One log line about one call (never a traceback, never a key: `message` is scrubbed by the caller)."""
    where = f"{record['upstream']} {record['method']} {record['path']}"
    who = ", ".join(f"{k}={record[k]}" for k in ("task", "role") if record.get(k) is not None)
    log.log(level, "model gateway: %s%s: %s", where, f" ({who})" if who else "", message)


class _Relayed(web.StreamResponse):
    """A streamed answer whose head goes out with its first events: one write to the client, not two."""

    _send_headers_immediately = False  # aiohttp's own switch (its web.Response sets it so too)


async def relay(
    request: web.Request,
    response: aiohttp.ClientResponse,
    stream: Stream,
    headers: dict[str, str],
    record: dict,
    key: str | None,
    take: Callable[[bytes, Any], None],
    finish: Callable[[], None],
    stages: StageTimes | None = None,
) -> web.StreamResponse:
    """Write the events to the client as they arrive, all that arrived together in one write (a write is a system
    call that also wakes the client: one per event cost more than the rest of the relay), and `take` each (metering,
    traces); a stream that breaks ends with an error event in the client's wire format. `finish` writes the record
        before the client can see the end of its answer: the last events go out with the end of the answer. `stages`
    times the forwarding (checks and writes) and the metering."""
    stages = stages or StageTimes()
    lap, checked = perf_counter(), stream.checked_s
    out = _Relayed(status=response.status, headers=headers)
    await out.prepare(request)
    events, fault, last = stream.first, None, b""
    try:
        while events:
            lap = stages.lap("forward", lap)
            for raw, data in events:
                take(raw, data)
            lap = stages.lap("metering", lap)
            written = b"".join([raw for raw, _ in events])
            if stream.ended:  # goes out with the end of the answer, after the record is written
                last = written
                break
            await _write(out, written)
            lap = stages.lap("forward", lap)
            events = await stream.next()
            lap = perf_counter()  # the wait for the upstream is not the gateway's
    except UpstreamFault as broken:
        fault = broken
        record.update(status=fault.status, error=scrub(fault.message, key))
        note(record, record["error"])
    except ClientGone:
        client_left(record)
    if fault is None and stream.upstream_error is not None:  # relayed as it came; recorded as what it was
        record.update(status=stream.upstream_error[0], error=scrub(stream.upstream_error[1], key))
        note(record, record["error"])
    finish()
    if fault is not None:
        last = error_event(api_of(record["path"], request.headers), record["error"], stream, fault.status)
    lap = perf_counter()
    try:
        await out.write_eof(last)
    except (ConnectionError, ClientGone):  # the client hung up once it had what it was sent: nothing is lost
        pass
    stages.lap("forward", lap)
    stages.add("forward", stream.checked_s - checked)  # the events' checks since the first ones (those: upstream)
    return out


def client_left(record: dict) -> None:
    record["error"] = "client disconnected"
    note(record, "the client went away; its upstream call is cancelled", logging.INFO)


async def _write(out: web.StreamResponse, data: bytes) -> None:
    try:
        await out.write(data)
    except ConnectionError:
        raise ClientGone from None
