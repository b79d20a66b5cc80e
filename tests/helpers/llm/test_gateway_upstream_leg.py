"""The gateway's event loop connects upstream without a thread hop: uvloop's own sock_connect resolves even a numeric
address in libuv's thread pool, once per new upstream connection (helpers.llm.gateway.upstream_leg.GatewayLoop)."""

import asyncio
import socket

import pytest

from helpers.llm.gateway.upstream_leg import GatewayLoop


class CountingLoop(GatewayLoop):
    """The gateway's loop, counting the addresses it resolves."""

    resolved: list[str]

    async def getaddrinfo(self, host, port, **kwargs):  # type: ignore[override]
        self.resolved.append(host)
        return await super().getaddrinfo(host, port, **kwargs)


def run(coroutine_of):
    loop = CountingLoop()
    loop.resolved = []
    try:
        return loop.run_until_complete(coroutine_of(loop)), loop.resolved
    finally:
        loop.close()


@pytest.fixture
def listener():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(5)
        yield server


def connector() -> socket.socket:
    sock = socket.socket()
    sock.setblocking(False)
    return sock


def test_a_numeric_address_is_connected_at_once_and_a_name_is_still_resolved(listener):
    port = listener.getsockname()[1]

    async def connect_both(loop):
        with connector() as by_number, connector() as by_name:
            await loop.sock_connect(by_number, ("127.0.0.1", port))
            await loop.sock_connect(by_name, ("localhost", port))
            for sock in (by_number, by_name):
                await loop.sock_sendall(sock, b"ping")
            accepted = [listener.accept()[0] for _ in range(2)]
            received = []
            for conn in accepted:
                conn.settimeout(5)
                received.append(conn.recv(4))
                conn.close()
            return by_number.getpeername(), received

    (peer, received), resolved = run(connect_both)
    assert peer == ("127.0.0.1", port) and received == [b"ping", b"ping"]
    assert resolved == ["localhost"]  # the number went straight to connect(); only the name was looked up


async def connects_after(loop, listener) -> bytes:
    """A connection made after a failed one (its socket likely takes the same descriptor) carries bytes."""
    with connector() as sock:
        await loop.sock_connect(sock, listener.getsockname())
        await loop.sock_sendall(sock, b"ping")
        conn = listener.accept()[0]
        with conn:
            conn.settimeout(5)
            return conn.recv(4)


def test_a_refused_connection_raises_connection_refused_and_the_loop_connects_on(listener):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: nothing answers there

    async def connect(loop):
        with connector() as sock:
            with pytest.raises(ConnectionRefusedError):
                await loop.sock_connect(sock, ("127.0.0.1", port))
        return await connects_after(loop, listener)

    after, resolved = run(connect)
    assert after == b"ping" and resolved == []


def test_a_connection_cut_by_a_timeout_leaves_the_loop_connecting_on(listener):
    with socket.socket() as full:  # a listener whose queue is full drops every new connection's first packet
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        waiting = [connector() for _ in range(3)]
        for sock in waiting:
            sock.connect_ex(full.getsockname())

        async def connect(loop):
            with connector() as sock:
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(loop.sock_connect(sock, full.getsockname()), 0.1)
            return await connects_after(loop, listener)

        after, resolved = run(connect)
        for sock in waiting:
            sock.close()
    assert after == b"ping" and resolved == []
