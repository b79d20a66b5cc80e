"""`phoenix serve` with its gRPC collector on loopback, run by the Phoenix environment's Python:

    .venv-phoenix/bin/python helpers/tracking/phoenix_loopback.py serve

Phoenix binds its HTTP server to PHOENIX_HOST, but its OTLP gRPC server always to every interface
("[::]:<port>", phoenix/server/grpc_server.py, with no setting to change it). The cookbook sends spans over
HTTP only, so here the gRPC server is bound to 127.0.0.1 instead: nothing of Phoenix listens beyond this
machine. Runs in the server's own environment: it imports nothing of helpers.
"""

from __future__ import annotations

import sys


def main() -> int:
    import grpc.aio

    make_server = grpc.aio.server

    def loopback_server(*args, **kwargs):
        server = make_server(*args, **kwargs)
        bind_insecure, bind_secure = server.add_insecure_port, server.add_secure_port
        server.add_insecure_port = lambda address: bind_insecure(address.replace("[::]", "127.0.0.1"))
        server.add_secure_port = lambda address, *a: bind_secure(address.replace("[::]", "127.0.0.1"), *a)
        return server

    grpc.aio.server = loopback_server
    from phoenix.server.main import main as phoenix_main

    sys.argv[0] = "phoenix"
    return phoenix_main()


if __name__ == "__main__":
    sys.exit(main())
