"""A run's own network, made by the host (as root) ahead of the run: a new network namespace holding only `lo`,
up, and, when the run reaches the gateway, the relay's listener on the gateway's address and port inside it.

    with own_network(reach) as path:     # None where the host cannot make one (not root): bwrap makes it then
        command = sandbox_command(args, ..., reach=reach, network_namespace=path)

The sandbox joins it (util-linux's nsenter, before bwrap starts), and the agent's connections to the gateway's
address are accepted by the relay on the host (helpers.isolation.relay: one thread, at most RELAY_MAX_CONNECTIONS
at once) straight from that listener: no forwarder inside, so no interpreter starts with the run, and a port below
1024 needs no capability inside (the host binds it). Making a namespace is a slow kernel step (20 ms on a loaded
machine): one is made ahead in the background (helpers.isolation.ahead), each used by one run only and gone with
its descriptor when the run ends. Nothing else of the host's is in it: no other loopback service, no other host,
no DNS, as with bwrap's own (--unshare-net).
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import os
import shutil
import socket
import struct
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

from helpers.isolation.ahead import MadeAhead
from helpers.isolation.relay import Relay

_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
T = TypeVar("T")


def _in_thread(work: Callable[[], T]) -> T:
    """`work()` run by a thread of its own (a namespace it enters or makes is that thread's alone, and goes with
    it): its result, or what it raised."""
    done: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(work())
        except BaseException as error:  # handed to the caller
            failed.append(error)

    thread = threading.Thread(target=run, name="sandbox-netns")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


def _make() -> int:
    """(In a thread of its own.) A new network namespace with `lo` up: a descriptor of it."""
    if ctypes.CDLL(None, use_errno=True).unshare(_CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        name, flags = struct.unpack("16sH14x", fcntl.ioctl(sock, _SIOCGIFFLAGS, struct.pack("16sH14x", b"lo", 0)))
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14x", name, flags | _IFF_UP))
    return os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)


def _new() -> int:
    """A descriptor of a new network namespace (lo up), or -1 where this process cannot make one."""
    try:
        return _in_thread(_make)
    except OSError:
        return -1


_ahead = MadeAhead(_new, "sandbox-next-netns")


@functools.lru_cache(maxsize=1)
def host_makes_network() -> bool:
    """Whether this process makes a run's network itself (root, with nsenter): then no forwarder runs inside."""
    return os.geteuid() == 0 and nsenter() is not None


def nsenter() -> str | None:
    """util-linux's nsenter (what joins the sandbox to its namespace before bwrap starts), or None."""
    return shutil.which("nsenter", path="/usr/bin:/bin:/usr/sbin:/sbin")


def _listen(namespace: int, host: str, port: int) -> socket.socket:
    """A listener on (host, port) inside the network namespace `namespace`."""

    def bind() -> socket.socket:
        if ctypes.CDLL(None, use_errno=True).setns(namespace, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns(CLONE_NEWNET)")
        listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind((host, port))
            listener.listen(128)
        except OSError:
            listener.close()
            raise
        return listener

    return _in_thread(bind)


@contextmanager
def own_network(reach: tuple[str, int, tuple[str, int]] | None) -> Iterator[str | None]:
    """While open, a network namespace of this run's own: the path a root process opens to join it (for
    nsenter --net), or None where this process cannot make one (not root: the sandbox then makes its own, with a
    forwarder inside). `reach`: (the address the run connects to inside, its port, the gateway's (host, port)):
    a relay accepts there and carries each connection to the gateway. On leaving, the relay is closed and the
    namespace let go (nothing of the run is in it by then)."""
    namespace = _ahead.take() if host_makes_network() else -1
    if namespace < 0:
        yield None
        return
    relay = None
    try:
        if reach:
            relay = Relay(_listen(namespace, reach[0], reach[1]), reach[2])
        _ahead.refill()  # the next run's, made while this one runs
        yield f"/proc/{os.getpid()}/fd/{namespace}"
    finally:
        if relay:
            relay.close()
        os.close(namespace)


__all__ = ["own_network", "host_makes_network", "nsenter"]  # documented in CODE_APPENDIX.md (helpers.isolation.sandbox)
