"""What one client can make the gateway spend before its call is even checked (docs/security.md, "Caps outrun"): a
request body is read against a byte cap and a time limit, never whole before it is known to fit (a Content-Length
over the cap is refused before one byte is read, a chunked body as soon as it grows past it); open connections
are capped for all clients together (one more is answered 503 and closed at once, before aiohttp makes it a
request handler); the request bytes all calls under way hold at once are capped (one more is answered 503, a
retry later passes); an idle connection is closed (the keep-alive timeout, which aiohttp also runs on a connection
that has sent nothing yet)."""

from __future__ import annotations

import asyncio
from typing import Callable

from aiohttp import web

_FULL = b'{"error": {"message": "gateway: too many open connections", "type": "too_many_connections"}}'
TOO_MANY_CONNECTIONS = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
    b"Content-Length: %d\r\n\r\n%s" % (len(_FULL), _FULL)
)


class BodyRefused(Exception):
    """A request body the gateway will not read: `status` 413 (too large) or 408 (too slow)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class BodyBytes:
    """Request bytes held at once by all calls under way (read, parsed, forwarded), against one cap."""

    def __init__(self, cap: int):
        self.cap, self.held = cap, 0

    def take(self, size: int) -> bool:
        if self.held + size > self.cap:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        self.held -= size


async def read_body(request: web.Request, limit: int, timeout_s: float, held: BodyBytes) -> bytes:
    """The whole request body, or BodyRefused once it is known not to fit in `limit` bytes or `timeout_s` seconds
    (413, 408), or in what `held` has left (503: the gateway is busy, ask again). Its bytes stay in `held`: the
    caller gives them back when the call ends."""
    if request.content_length is not None and request.content_length > limit:
        raise BodyRefused(
            413, f"the request body ({request.content_length:,} bytes) is over the gateway's limit of {limit:,} bytes"
        )
    chunks, size = [], 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.content.iter_any():
                size += len(chunk)
                if size > limit:
                    raise BodyRefused(413, f"the request body grew past the gateway's limit of {limit:,} bytes")
                if not held.take(len(chunk)):
                    raise BodyRefused(503, "the gateway holds as many request bytes as it may: ask again shortly")
                chunks.append(chunk)
    except TimeoutError:
        held.give(size)
        raise BodyRefused(408, f"the request body did not arrive within {timeout_s:g} s") from None
    except BodyRefused:
        held.give(sum(map(len, chunks)))
        raise
    return b"".join(chunks)


class _Refused:
    """A connection over the cap: answered 503 and closed, never read."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(TOO_MANY_CONNECTIONS)  # type: ignore[attr-defined]
        transport.close()

    def connection_lost(self, exc: BaseException | None) -> None:
        pass

    def data_received(self, data: bytes) -> None:
        pass

    def eof_received(self) -> bool:
        return False


def capped(server: web.Server, max_connections: Callable[[], int]) -> Callable[[], asyncio.Protocol]:
    """A protocol factory for `loop.create_server`: aiohttp's handler while fewer than `max_connections()` are
    open, else one that answers 503 and closes."""

    def connection() -> asyncio.Protocol:
        if len(server.connections) >= max_connections():
            return _Refused()  # type: ignore[return-value]
        return server()

    return connection


__all__ = ["BodyRefused", "BodyBytes", "read_body", "capped"]  # documented in CODE_APPENDIX.md
