"""The host side of a run's one way out: a relay from the Unix socket in its home to the gateway, bounded in what one
run can make the driver spend (helpers.isolation.sandbox_reach.reach_relay opens one per run).

One thread per run whatever it does: a selector loop over non-blocking sockets. At most
config.RELAY_MAX_CONNECTIONS connections at once are carried; one more is accepted and closed at once (the agent
sees its connection close, as when the gateway is away), so a run opening a thousand costs the driver one thread,
at most 2 * RELAY_MAX_CONNECTIONS + 3 descriptors and RELAY_BUFFER_BYTES per direction of each connection carried
(a side is read only once what it sent before has been passed on). A connection that never sends holds its slot
and nothing more: the run starves only itself. Bytes pass as they come (a streamed answer arrives in pieces), and
each side's end is passed on as a half-close, as HTTP clients expect.
"""

from __future__ import annotations

import errno
import os
import selectors
import socket
import threading
import time
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

from helpers.core import config

CONNECT_S = 10.0  # a gateway that does not answer a connect by then is not there


@dataclass(eq=False)
class _Side:
    sock: socket.socket
    pending: bytearray = field(default_factory=bytearray)  # read from the other side, not yet sent to this one
    ended: bool = False  # the other side sent its end: passed on (SHUT_WR) once `pending` is out
    shut: bool = False  # passed on
    other: "_Side | None" = None
    pair: "_Pair | None" = None

    @property
    def peer(self) -> "_Side":
        """The other side, linked as the pair is made (before any event can reach this one)."""
        assert self.other is not None
        return self.other


@dataclass(eq=False)
class _Pair:
    inside: _Side
    outside: _Side
    connected: bool = False
    deadline: float = 0.0


class Relay:
    """Accepts connections on `listen`, the Unix socket at that path (a forwarder inside connects to it) or a
    listening TCP socket (one in the run's own network namespace: helpers.isolation.netns, taken over and closed
    with the relay), and carries each to `target` (host, port), both ways, from one thread, at most
    `max_connections` at once (default config.RELAY_MAX_CONNECTIONS)."""

    def __init__(self, listen: Path | socket.socket, target: tuple[str, int], max_connections: int | None = None):
        self.path = listen if isinstance(listen, Path) else None
        self.max_connections = max_connections or config.RELAY_MAX_CONNECTIONS
        try:  # resolved once, not per call (the loop never waits on a name server)
            self.address: tuple[Any, ...] | None = socket.getaddrinfo(*target, type=socket.SOCK_STREAM)[0]
        except OSError:
            self.address = None  # no such host: each connection is closed at once, as when the gateway is away
        self.pairs: set[_Pair] = set()
        self.selector = selectors.DefaultSelector()
        self.wake_read, self.wake_write = socket.socketpair()
        self.wake_read.setblocking(False)
        self.listener = listen if isinstance(listen, socket.socket) else self._bind(listen)
        self.listener.listen(self.max_connections)
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wake_read, selectors.EVENT_READ, "wake")
        self.closing = False
        self.thread = threading.Thread(target=self._loop, daemon=True, name="sandbox-relay")
        self.thread.start()

    # --- the loop -------------------------------------------------------------------------------------
    @staticmethod
    def _bind(path: Path) -> socket.socket:
        path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX)
        # A socket's path may not exceed 107 bytes and a run's home can lie deeper: bind it through a
        # descriptor of its folder (/proc/self/fd/N is that folder).
        folder = os.open(path.parent, os.O_PATH)
        try:
            listener.bind(f"/proc/self/fd/{folder}/{path.name}")
            # whoever the run is inside connects to it (its own uid; or root without its capabilities, for a
            # forwarder on a port below 1024); the home it lies in is the run's alone
            os.chmod(path.name, 0o666, dir_fd=folder)
        finally:
            os.close(folder)
        return listener

    def _loop(self) -> None:
        try:
            while not self.closing:
                for key, events in self.selector.select(timeout=1.0):
                    if key.data == "accept":
                        self._accept()
                    elif key.data != "wake":
                        self._serve(key.data, events)
                self._expire()
        finally:
            for pair in list(self.pairs):
                self._drop(pair)
            for sock in (self.listener, self.wake_read, self.wake_write):
                try:
                    self.selector.unregister(sock)
                except (KeyError, ValueError):
                    pass
                sock.close()
            self.selector.close()

    def _accept(self) -> None:
        while True:
            try:
                inside, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # closed: the run is over
            if len(self.pairs) >= self.max_connections or self.address is None:
                inside.close()  # over the cap: the agent sees its connection close
                continue
            inside.setblocking(False)
            if inside.family != socket.AF_UNIX:  # the agent's own TCP connection: small SSE events leave at once
                inside.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            outside = socket.socket(self.address[0], socket.SOCK_STREAM)
            outside.setblocking(False)
            pair = _Pair(_Side(inside), _Side(outside), deadline=time.monotonic() + CONNECT_S)
            pair.inside.other, pair.outside.other = pair.outside, pair.inside
            pair.inside.pair = pair.outside.pair = pair
            self.pairs.add(pair)
            code = outside.connect_ex(self.address[4])
            if code not in (0, errno.EINPROGRESS):
                self._drop(pair)
                continue
            self.selector.register(outside, selectors.EVENT_WRITE, pair.outside)

    def _serve(self, side: _Side, events: int) -> None:
        pair = side.pair
        if pair is None or pair not in self.pairs:
            return
        if not pair.connected:  # the connect to the gateway finished, one way or the other
            if side.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self._drop(pair)
                return
            pair.connected = True
            if pair.outside.sock.family != socket.AF_UNIX:
                pair.outside.sock.setsockopt(
                    socket.IPPROTO_TCP, socket.TCP_NODELAY, 1
                )  # small SSE events leave at once
            self._watch(pair)
            return
        try:
            if events & selectors.EVENT_WRITE and side.pending:
                sent = side.sock.send(side.pending)
                del side.pending[:sent]
            if events & selectors.EVENT_READ and not side.peer.pending and not side.peer.ended:
                data = side.sock.recv(config.RELAY_BUFFER_BYTES)
                if data:
                    side.peer.pending += data
                else:
                    side.peer.ended = True
            for end in (pair.inside, pair.outside):
                if end.ended and not end.pending and not end.shut:
                    end.shut = True
                    try:
                        end.sock.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self._drop(pair)
            return
        if pair.inside.ended and pair.outside.ended and not pair.inside.pending and not pair.outside.pending:
            self._drop(pair)
        else:
            self._watch(pair)

    def _watch(self, pair: _Pair) -> None:
        """Wait on each side for what it can do now: read when the other side's buffer is empty, write when it
        has something to send."""
        for side in (pair.inside, pair.outside):
            events = (selectors.EVENT_READ if not side.peer.pending and not side.peer.ended else 0) | (
                selectors.EVENT_WRITE if side.pending else 0
            )
            try:
                self.selector.modify(side.sock, events, side) if events else self.selector.unregister(side.sock)
            except KeyError:
                if events:
                    self.selector.register(side.sock, events, side)
            except ValueError:
                pass

    def _expire(self) -> None:
        now = time.monotonic()
        for pair in [p for p in self.pairs if not p.connected and p.deadline < now]:
            self._drop(pair)  # the gateway is not there: the agent sees its connection close

    def _drop(self, pair: _Pair) -> None:
        self.pairs.discard(pair)
        for side in (pair.inside, pair.outside):
            try:
                self.selector.unregister(side.sock)
            except (KeyError, ValueError):
                pass
            side.sock.close()

    def close(self) -> None:
        """End every connection, stop the thread, remove the socket."""
        self.closing = True
        try:
            self.wake_write.send(b"x")
        except OSError:
            pass
        self.thread.join()
        if self.path:
            self.path.unlink(missing_ok=True)


__all__ = ["Relay", "CONNECT_S"]  # documented in CODE_APPENDIX.md
