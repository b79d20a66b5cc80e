"""Inside the sandbox: the one way out. Listens on HOST:PORT, pipes each connection to the Unix socket
SOCKET (the relay on the host side, helpers.core.sandbox.reach_relay, which connects it to the gateway),
and runs COMMAND as its child; exits with COMMAND's status.

    python -I -S sandbox_forwarder.py SOCKET HOST PORT -- COMMAND...

The sandbox has a network namespace of its own (only `lo`), so HOST:PORT is free there, and an agent keeps
its base URL. It listens before COMMAND starts, so the first model call finds it. Bytes are passed on as
they come (a streamed answer arrives in pieces, as the gateway sends them).

Standard library only, and no import from this repository: it runs with the sandbox's interpreter in
isolated mode (-I -S), where the checkout is not visible.
"""

import signal
import socket
import subprocess
import sys
import threading

CHUNK = 65536


def pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copy `source` to `sink` until `source` ends, then end `sink`'s sending side (HTTP half-close)."""
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass  # either side went away: the other end sees its connection close
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def carry(client: socket.socket, path: str) -> None:
    """Both directions of one connection between `client` and the relay at `path`."""
    with client, socket.socket(socket.AF_UNIX) as relay:
        try:
            relay.connect(path)
        except OSError as error:
            print(f"sandbox forwarder: the gateway relay is not there ({error})", file=sys.stderr)
            return
        back = threading.Thread(target=pipe, args=(relay, client), daemon=True)
        back.start()
        pipe(client, relay)
        back.join()


def serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # small SSE events leave at once
        threading.Thread(target=carry, args=(client, path), daemon=True).start()


def main(argv: list[str]) -> int:
    path, host, port, separator, *command = argv
    if separator != "--" or not command:
        print("usage: sandbox_forwarder.py SOCKET HOST PORT -- COMMAND...", file=sys.stderr)
        return 2
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listener.bind((host, int(port)))
    listener.listen(128)
    threading.Thread(target=serve, args=(listener, path), daemon=True).start()
    # An interrupt goes to the whole process group: the command decides how it stops, and we carry its
    # last calls until it has. (A handler, not SIG_IGN, so the command starts with the default.)
    signal.signal(signal.SIGINT, lambda *_: None)
    # close_fds=False: descriptors the caller passed on (a key's pipe) reach the command; ours are
    # close-on-exec, so the command inherits none of the forwarder's sockets.
    status = subprocess.Popen(command, close_fds=False).wait()
    return status if status >= 0 else 128 - status  # killed by signal N: 128 + N, as a shell says


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
