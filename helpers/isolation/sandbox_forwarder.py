"""Inside the sandbox: the one way out. Listens on HOST:PORT, pipes each connection to the Unix socket
SOCKET (the relay on the host side, helpers.isolation.sandbox_reach.reach_relay, which connects it to the gateway),
and runs COMMAND as its child; exits with COMMAND's status.

    python -I -S sandbox_forwarder.py SOCKET HOST PORT -- COMMAND...

The sandbox has a network namespace of its own (only `lo`), so HOST:PORT is free there, and an agent keeps
its base URL. It listens before COMMAND starts, so the first model call finds it. Bytes are passed on as
they come (a streamed answer arrives in pieces, as the gateway sends them).

No import from this repository: it runs with the sandbox's interpreter in isolated mode (-I -S), where the
checkout is not visible. And only modules built into the interpreter (_socket, _thread, _signal, os, sys):
it starts with every run, and `socket`, `threading`, `signal` and `subprocess` would first load enum, re,
locale and collections from disk, measured at 20 ms on a quiet machine and over 100 ms on a loaded one
(against a few ms for these).
"""

import _signal
import _socket
import _thread
import os
import sys

CHUNK = 65536


def pipe(source: _socket.socket, sink: _socket.socket) -> None:
    """Copy `source` to `sink` until `source` ends, then end `sink`'s sending side (HTTP half-close)."""
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass  # either side went away: the other end sees its connection close
    finally:
        try:
            sink.shutdown(_socket.SHUT_WR)
        except OSError:
            pass


def pipe_then_release(source: _socket.socket, sink: _socket.socket, done: "_thread.LockType") -> None:
    pipe(source, sink)
    done.release()


def carry(client: _socket.socket, path: str) -> None:
    """Both directions of one connection between `client` and the relay at `path`."""
    relay = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        relay.connect(path)
    except OSError as error:
        print(f"sandbox forwarder: the gateway relay is not there ({error})", file=sys.stderr)
    else:
        answered = _thread.allocate_lock()  # held until the answer's direction has ended
        answered.acquire()
        _thread.start_new_thread(pipe_then_release, (relay, client, answered))
        pipe(client, relay)
        answered.acquire()
    relay.close()
    client.close()


def serve(listener: _socket.socket, path: str) -> None:
    while True:
        # the C socket's own accept (a descriptor): socket.py, which wraps it, is not imported here
        fd, _ = listener._accept()  # type: ignore[attr-defined]  # typeshed leaves out _socket's private method
        client = _socket.socket(fileno=fd)
        client.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)  # small SSE events leave at once
        _thread.start_new_thread(carry, (client, path))


def main(argv: list[str]) -> int:
    path, host, port, separator, *command = argv
    if separator != "--" or not command:
        print("usage: sandbox_forwarder.py SOCKET HOST PORT -- COMMAND...", file=sys.stderr)
        return 2
    listener = _socket.socket(_socket.AF_INET6 if ":" in host else _socket.AF_INET, _socket.SOCK_STREAM)
    listener.bind((host, int(port)))
    listener.listen(128)
    _thread.start_new_thread(serve, (listener, path))
    # An interrupt goes to the whole process group: the command decides how it stops, and we carry its
    # last calls until it has. (A handler, not SIG_IGN: the command starts with the default.)
    _signal.signal(_signal.SIGINT, lambda *_: None)
    try:
        # Descriptors the caller passed on (a key's pipe) reach the command; ours are close-on-exec. Python
        # ignores SIGPIPE and SIGXFSZ for itself: the command gets the defaults back, as subprocess does.
        child = os.posix_spawnp(command[0], command, os.environ, setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
    except OSError as error:
        print(f"sandbox forwarder: cannot run {command[0]}: {error}", file=sys.stderr)
        return 127
    status = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    return status if status >= 0 else 128 - status  # killed by signal N: 128 + N, as a shell says


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(status)  # at once: the connection threads need no goodbye, and the sandbox ends with us
