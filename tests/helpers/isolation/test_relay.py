"""The relay carries a run's connections to the gateway from one thread, at most RELAY_MAX_CONNECTIONS at once:
whatever a run opens, the driver's threads, descriptors and buffers stay bounded, and what it carries arrives whole."""

import os
import socket
import threading
import time
from contextlib import contextmanager

import pytest

from helpers.core import config
from helpers.isolation.sandbox_reach import RELAY_SOCKET, reach_relay


def fds() -> set[str]:
    """The process's open descriptors, by number (a set: other threads of a test worker may close theirs meanwhile)."""
    return set(os.listdir("/proc/self/fd"))


def sockets() -> set[str]:
    """The process's open sockets, by descriptor number."""
    return {fd for fd in fds() if _link(fd).startswith("socket:")}


def _link(fd: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # closed meanwhile
        return ""


def threads() -> set[str]:
    """The process's threads, by id (a set, for the same reason)."""
    return set(os.listdir("/proc/self/task"))


def relay_threads() -> list[threading.Thread]:
    """The relay's own threads, by name: a test worker's threads left by earlier tests may start or end meanwhile."""
    return [thread for thread in threading.enumerate() if thread.name == "sandbox-relay"]


STRAYS = 2  # native threads an earlier test's leftovers may start meanwhile: 1,000 connections would show as 1,000


@contextmanager
def gateway(serve=None):
    """A TCP listener on loopback: `serve(connection)` for each connection in a thread of its own, or, without
    `serve`, a gateway that never accepts (connections wait in its backlog, as on a stalled server)."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=4096)
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True) if serve else None
    if thread:
        thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        if thread:
            thread.join()
        listener.close()


def connect(home) -> socket.socket:
    client = socket.socket(socket.AF_UNIX)
    client.connect(str(home / RELAY_SOCKET))
    return client


def closed_at_once(client: socket.socket, wait_s: float = 5.0) -> bool:
    client.settimeout(wait_s)
    try:
        return client.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def test_a_thousand_connections_cost_the_driver_one_thread_and_a_bounded_number_of_descriptors(tmp_path):
    """The issue's example: 1,000 connections took the driver from 4 to 2,012 threads and 10 to 3,018 descriptors."""
    cap = config.RELAY_MAX_CONNECTIONS
    with gateway() as url:
        threads_before, fds_before, sockets_before = threads(), fds(), sockets()
        with reach_relay(url, tmp_path):
            clients = [connect(tmp_path) for _ in range(1000)]
            time.sleep(0.5)
            relays = len(relay_threads())
            added_threads, added_fds = len(threads() - threads_before), len(fds() - fds_before) - len(clients)
            refused = sum(closed_at_once(client, 0.5) for client in clients[cap:])
            carried = [client for client in clients[:cap] if not closed_at_once(client, 0.01)]
            for client in clients:
                client.close()
        assert relays == 1 and added_threads <= 1 + STRAYS, (relays, added_threads)
        assert added_fds <= 2 * cap + 4 + STRAYS, added_fds  # listener, a wake-up pair, two per connection carried
        assert refused == 1000 - cap and len(carried) == cap
        assert not relay_threads() and not sockets() - sockets_before  # the relay's thread and sockets are gone
        assert len(threads() - threads_before) <= STRAYS


def test_half_open_connections_that_never_send_hold_only_their_slots_and_end_with_the_run(tmp_path):
    def echo(connection: socket.socket) -> None:
        with connection:
            while data := connection.recv(65536):
                connection.sendall(data)

    cap = config.RELAY_MAX_CONNECTIONS
    with gateway(echo) as url:
        threads_before = threads()
        with reach_relay(url, tmp_path):
            idle = [connect(tmp_path) for _ in range(cap - 1)]  # connected, never a byte
            working = connect(tmp_path)  # the last slot still carries
            working.sendall(b"ping")
            working.settimeout(10)
            assert working.recv(4) == b"ping"
            assert closed_at_once(connect(tmp_path))  # past the cap: closed at once
            working.close()
            time.sleep(0.3)
            again = connect(tmp_path)  # its slot is free again
            again.sendall(b"pong")
            again.settimeout(10)
            assert again.recv(4) == b"pong"
        assert all(closed_at_once(client) for client in idle)  # the run's end ends them
        for client in [*idle, again]:
            client.close()
    assert not relay_threads()
    deadline = time.monotonic() + 10  # the echo threads end as their connections close, on a loaded machine
    while len(threads() - threads_before) > STRAYS and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(threads() - threads_before) <= STRAYS


def test_a_large_answer_and_a_half_closed_request_arrive_whole_in_order(tmp_path):
    body = os.urandom(3 * 2**20 + 17)  # larger than every buffer on the way: the relay reads as it can send

    def answer(connection: socket.socket) -> None:
        with connection:
            request = b""
            while data := connection.recv(65536):  # the whole request: the client half-closes after it
                request += data
            connection.sendall(len(request).to_bytes(8, "big") + body)

    with gateway(answer) as url, reach_relay(url, tmp_path):
        client = connect(tmp_path)
        client.sendall(b"x" * 500_000)
        client.shutdown(socket.SHUT_WR)
        client.settimeout(30)
        received = b""
        while data := client.recv(2**20):
            received += data
        client.close()
    assert int.from_bytes(received[:8], "big") == 500_000 and received[8:] == body


@pytest.mark.parametrize("reach", ["http://127.0.0.1:{closed}", "https://no-such-host.invalid:443"])
def test_a_gateway_not_there_closes_the_connection_at_once(tmp_path, reach):
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    with reach_relay(reach.format(closed=port), tmp_path):
        client = connect(tmp_path)
        assert closed_at_once(client)
        client.close()
