"""How a sandboxed run reaches the gateway and nothing else: the host's side of its one way out and the URL it uses.

As root, the host makes the run's own network (run_network: helpers.isolation.netns) with a relay listening in it on
the gateway's address and port; otherwise bwrap makes it, and the relay (reach_relay) listens on a Unix socket in the
run's home (RELAY_SOCKET), which sandbox.py binds in for the forwarder inside (sandbox_forwarder.py). Either way the
relay (helpers.isolation.relay) connects each connection to the gateway. A gateway on another machine cannot be given
its own address inside: the run is handed 127.0.0.1 on the same port (inside_url).

Apart from sandbox.py, which builds the bwrap command, because this is what stays open on the host while the run
lasts, and the address a run's configuration names.
"""

from __future__ import annotations

import ipaddress
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from helpers.isolation.netns import own_network
from helpers.isolation.relay import Relay

LOOPBACK = "127.0.0.1"
RELAY_SOCKET = ".gateway.sock"  # in the run's home: the relay listens there, the forwarder connects


def relay_socket(home: Path | str) -> Path:
    """The Unix socket, in the run's `home`, that the relay listens on and the forwarder connects to."""
    return Path(home) / RELAY_SOCKET


def reach_address(url: str) -> tuple[str, int]:
    """The host and port of `reach` (a URL with a host; its scheme's port when it names none)."""
    parts = urlsplit(url)
    if not parts.hostname:
        raise ValueError(f"reach must be a URL with a host (the gateway's), not {url!r}")
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def listen_host(host: str) -> str:
    """Where the forwarder listens for `host`: the host itself when it is a loopback address, else 127.0.0.1
    (inside, only `lo` exists: a remote gateway's address cannot be bound there)."""
    try:
        return host if ipaddress.ip_address(host).is_loopback else LOOPBACK
    except ValueError:
        return LOOPBACK  # a name (localhost, a driver's host name)


def inside_url(url: str) -> str:
    """The URL a command in the sandbox uses for `url` when it is the sandbox's `reach`: `url` itself when
    its host is a loopback address; else (a remote gateway, PL_GATEWAY_HOST) `url` with its host swapped for
    127.0.0.1, where the forwarder listens, on the same port. The relay still connects to the real host."""
    host, port = reach_address(url)
    if listen_host(host) == host:
        return url
    parts = urlsplit(url)
    return parts._replace(netloc=f"{LOOPBACK}:{port}").geturl()


@contextmanager
def run_network(reach: str | None, network: bool = False) -> Iterator[str | None]:
    """While open, the run's own network made by the host (helpers.isolation.netns.own_network), with the relay to
    `reach` listening in it at inside_url(reach): the path sandbox_command(network_namespace=) takes; None when the
    run shares the host's network (`network`) or the host cannot make one (not root: sandbox_command then has bwrap
    make it, with a forwarder inside and reach_relay)."""
    if network:
        yield None
        return
    target = None
    if reach:
        host, port = reach_address(reach)
        target = (listen_host(host), port, (host, port))
    with own_network(target) as path:
        yield path


@contextmanager
def reach_relay(reach: str | None, home: Path | str) -> Iterator[None]:
    """While open, a sandbox started with `reach` (sandbox_command) reaches it: each connection its
    forwarder makes to the socket in `home` is connected to reach's host and port, and bytes pass both
    ways as they come, by one thread (helpers.isolation.relay.Relay: at most config.RELAY_MAX_CONNECTIONS at once,
    one more closed at once, so the driver's threads, descriptors and buffers stay bounded whatever the run
    opens). On leaving, every connection is ended, the thread joined, the socket removed.
    A no-op without `reach`."""
    if not reach:
        yield
        return
    relay = Relay(relay_socket(home), reach_address(reach))
    try:
        yield
    finally:
        relay.close()


__all__ = ["inside_url", "run_network", "reach_relay", "RELAY_SOCKET"]  # documented in CODE_APPENDIX.md
