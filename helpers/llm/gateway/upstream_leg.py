"""The gateway's leg towards the providers: one HTTP client session, one pool per upstream, and a call's attempts
under the one retry policy (helpers.llm.retries), each holding a pool slot.

Apart from proxy.py because it is the other side of the request path: proxy.py decides whether and what a client's
call may send and answers the client; this module only gets the upstream's answer to it, as often as the policy
allows, and never writes to the client.
"""

from __future__ import annotations

import asyncio
import random
import socket
from typing import Any, Mapping
from urllib.parse import urlsplit

import aiohttp
import uvloop
from tenacity import AsyncRetrying
from yarl import URL

from helpers.core import config
from helpers.llm.gateway.gemini_to_openai import Carried
from helpers.llm.gateway.pool import POOL_PAUSE_STATUS, Pool
from helpers.llm.gateway.relay import READ_ERRORS, Limits, Stream, UpstreamFault, check_json, note, read_fault
from helpers.llm.gateway.upstreams import Upstream, scrub
from helpers.llm.retries import TryAgain, is_retryable, policy, retry_after_s

MAX_BACKOFF_S = config.GATEWAY_MAX_BACKOFF_S
CONNECT_TIMEOUT_S = config.GATEWAY_CONNECT_TIMEOUT_S


class GatewayLoop(uvloop.Loop):
    """uvloop's event loop (its sockets, timers and callbacks cost less CPU a call than asyncio's), connecting to a
    numeric address at once, as asyncio's own loop does. uvloop's `sock_connect` resolves every address, a numeric
    one too, in libuv's thread pool: a hop to a worker thread and back on the way to every new upstream connection
    (aiohttp connects to the addresses its resolver found, so every connection's address is numeric). A name is
    still resolved by uvloop."""

    async def sock_connect(self, sock: socket.socket, address: Any) -> None:
        try:
            socket.inet_pton(sock.family, address[0])
            numeric = sock.gettimeout() == 0  # (a blocking socket's connect would hold the loop: uvloop's way too)
        except (OSError, TypeError, ValueError, IndexError):  # a name, or not an IP socket: uvloop's way
            numeric = False
        if not numeric:
            return await super().sock_connect(sock, address)
        try:
            sock.connect(address)
            return
        except (BlockingIOError, InterruptedError):  # under way: done once the socket is writable
            pass
        done = self.create_future()

        def writable() -> None:
            if not done.done():
                error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if error:  # (OSError makes ConnectionRefusedError and the like of its errno)
                    done.set_exception(OSError(error, f"Connect call failed {address}"))
                else:
                    done.set_result(None)

        descriptor = sock.fileno()  # (the socket's, even once it is closed)
        self.add_writer(descriptor, writable)
        try:
            await done
        finally:
            self.remove_writer(descriptor)


class UpstreamLeg:
    """The session and pools of a running gateway (made on its event loop, `close()`d there) and `send`."""

    def __init__(
        self,
        upstreams: Mapping[str, Upstream],
        concurrency: int,
        limits: Limits,
        *,
        max_retries: int,
        backoff_s: float,
        max_retry_after_s: float,
    ):
        self.upstreams, self.limits = upstreams, limits
        self.max_retries, self.backoff_s, self.max_retry_after_s = max_retries, backoff_s, max_retry_after_s
        self.session = aiohttp.ClientSession(  # no cookie jar: one call's cookies are never another's
            connector=aiohttp.TCPConnector(limit=0),
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=limits.call_s, sock_connect=CONNECT_TIMEOUT_S, sock_read=limits.idle_s),
        )
        self.pools = {name: Pool(concurrency) for name in upstreams}

    async def close(self) -> None:
        await self.session.close()

    async def send(
        self,
        method: str,
        upstream: Upstream,
        headers: dict[str, str],
        body: bytes,
        record: dict,
        carried: Carried | None = None,
    ) -> tuple[aiohttp.ClientResponse, bytes | Stream]:
        """The upstream's answer to be relayed with what of it was read (a whole body, or a stream's first
        events), holding one of the pool's slots (released by the caller). Retries (the one policy,
        helpers.llm.retries) 429/5xx and UpstreamFaults while nothing has been sent to the client; an answer
        passed on after that carries GATEWAY_RETRIES_HEADER, so that clients do not retry it again: one failing
        call reaches the upstream at most 1 + max_retries times. Raises the last UpstreamFault. `carried`: the call
        as it goes to a chat-completions server, its answer translated back (gemini_to_openai.py)."""
        target = urlsplit(upstream.url)
        url = URL(f"{target.scheme}://{target.netloc}{carried.path if carried else record['path']}", encoded=True)
        body = carried.body if carried else body
        headers.pop("Content-Type", None) if method == "GET" else headers.update({"Content-Type": "application/json"})

        async def sleep(seconds: float) -> None:
            record["waited_s"] += seconds
            await asyncio.sleep(seconds)

        try:  # the first attempt outside tenacity, whose machinery costs more than the rest of a call's set-up
            return await self._try(method, url, headers, body, record, self.max_retries == 0, carried)
        except TryAgain as failed:
            first = [failed]
        try:  # the policy from there: the first attempt's failure is its attempt 1 (waits and counts as they were)
            async for attempt in AsyncRetrying(**policy(self.max_retries, self.backoff_s, MAX_BACKOFF_S, sleep=sleep)):
                with attempt:
                    record["retries"] = tried = attempt.retry_state.attempt_number - 1
                    if first:
                        raise first.pop()
                    return await self._try(method, url, headers, body, record, tried == self.max_retries, carried)
        except TryAgain as exhausted:
            raise exhausted.cause
        raise AssertionError("unreachable")  # pragma: no cover

    async def _try(
        self,
        method: str,
        url: URL,
        headers: dict[str, str],
        body: bytes,
        record: dict,
        last: bool,
        carried: Carried | None = None,
    ) -> tuple[aiohttp.ClientResponse, bytes | Stream]:
        """One attempt; on success it keeps its pool slot and the open answer for the caller. A fault is
        logged (one line) and raised as TryAgain, its cause the UpstreamFault."""
        pool, key = self.pools[record["upstream"]], self.upstreams[record["upstream"]].api_key
        await pool.slots.acquire()
        response, kept = None, False
        try:
            record["waited_s"] += await pool.wait_turn()
            response = await self.session.request(method, url, headers=headers, data=body, allow_redirects=False)
            asked = retry_after_s(response.headers)
            if is_retryable(response.status) and not last and (asked is None or asked <= self.max_retry_after_s):
                await response.read()
                if asked is not None or response.status in POOL_PAUSE_STATUS:
                    pool.pause((asked if asked is not None else self.backoff_s) * random.uniform(1.0, 1.2))
                    raise TryAgain(0.0)  # everyone waits on the pool's pause, not only this request
                raise TryAgain(None)
            if response.headers.get("Content-Type", "").startswith("text/event-stream"):
                head: bytes | Stream = await (carried.stream if carried else Stream)(response, self.limits).start()
            else:
                head = await response.read()
                check_json(head, response.status)
                head = carried.answer(response.status, head) if carried else head
            kept = True
            return response, head
        except READ_ERRORS as error:
            fault = read_fault(error, self.limits, answered=response is not None)
        except UpstreamFault as error:
            fault = error
        finally:
            if not kept:  # closes the connection unless the answer was read whole
                if response is not None:
                    response.release()
                pool.slots.release()
        fault.message = scrub(fault.message, key)
        note(record, fault.message + ("" if last else "; retrying"))
        raise TryAgain(None, fault)


__all__ = ["UpstreamLeg", "GatewayLoop"]  # documented in CODE_APPENDIX.md
