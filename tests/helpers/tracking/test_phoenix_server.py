"""The embedded Phoenix: started from its own environment, healthy, stopped with nothing left behind; clear errors
when it can't be; and the notebooks' environment carries only the light client."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.core.config import REPO_ROOT
from helpers.tracking.phoenix_server import (SERVER_ENV, PhoenixError, PhoenixServer, ensure_phoenix, is_healthy,
                                            server_command, server_environment)

pytestmark = pytest.mark.slow


def server_processes(working_dir: Path) -> set[int]:
    """Every process on this machine whose environment names `working_dir` as Phoenix's folder (a server and
    anything it started, wherever it went), found by /proc."""
    wanted = f"PHOENIX_WORKING_DIR={Path(working_dir).resolve()}".encode()
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.add(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


# One Phoenix server per test session (tests/conftest.py): a started server is asked about on that one, and
# stopping a server is tried on one stopped during its start, so this module starts no healthy server of its own.
def test_the_started_server_runs_from_its_own_environment_answers_and_keeps_its_database_in_its_folder(phoenix_server):
    assert phoenix_server.owned
    assert is_healthy(phoenix_server.url, timeout_s=30)  # (a loaded machine can take seconds to answer)
    assert (phoenix_server.working_dir / "phoenix.db").exists()
    command = Path(f"/proc/{phoenix_server.process.pid}/cmdline").read_bytes().decode()
    assert str(SERVER_ENV) in command and "serve" in command  # the server's own environment, not the notebooks'
    assert phoenix_server.process.pid in server_processes(phoenix_server.working_dir)  # (what the probe below sees)


def test_a_busy_port_is_a_clear_error_at_once(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PhoenixError, match=f"{port} .*already in use"):  # checked before a server starts
            PhoenixServer(working_dir=tmp_path, port=port, start_timeout_s=600).start()


def test_a_server_that_does_not_come_up_fails_within_the_time_given_and_is_stopped_leaving_no_process(tmp_path):
    server = PhoenixServer(working_dir=tmp_path, start_timeout_s=2)
    with pytest.raises(PhoenixError, match="did not answer|exited"):  # it gives up instead of waiting forever
        server.start()
    assert server.log_path.exists()  # a real server process was started (its log) ...
    assert server_processes(tmp_path) == set() and not server.owned  # ... and stopped: nothing of it is left
    server.stop()  # stopping again is a no-op


def test_an_existing_phoenix_is_reached_by_url_and_a_dead_url_is_named(phoenix_url):
    connected = PhoenixServer.connect(phoenix_url)
    assert connected.url == phoenix_url and not connected.owned
    connected.stop()  # a no-op for a server we did not start
    assert is_healthy(phoenix_url)
    with pytest.raises(PhoenixError, match="127.0.0.1:9"):
        PhoenixServer.connect("http://127.0.0.1:9")
    assert ensure_phoenix(phoenix_url).url == phoenix_url


def test_without_a_server_install_the_error_says_how_to_get_one(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `phoenix` on PATH either
    with pytest.raises(PhoenixError, match="make setup"):
        server_command(tmp_path / "no-env")
    assert server_command(SERVER_ENV)[1:] == [str(REPO_ROOT / "helpers/tracking/phoenix_loopback.py"), "serve"]


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp* shows them) with a socket listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.rpartition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def test_the_server_process_gets_no_provider_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "probe-key-" + "5" * 20)
    monkeypatch.setenv("PHOENIX_API_KEY", "a-phoenix-setting")
    env = server_environment(tmp_path, "127.0.0.1", 1, 2)
    assert "OPENAI_API_KEY" not in env and not any("probe-key-" in v for v in env.values())
    assert env["PHOENIX_API_KEY"] == "a-phoenix-setting" and env["PHOENIX_HOST"] == "127.0.0.1"


def test_the_embedded_phoenix_listens_on_loopback_only_http_and_grpc(phoenix_server):
    loopback = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}  # 127.0.0.1, ::1, ::ffff:127.0.0.1
    for port in (phoenix_server.port, phoenix_server.grpc_port):
        addresses = listening_addresses(port)
        assert addresses and addresses <= loopback, (port, addresses)


def test_importing_the_helpers_does_not_import_phoenix():
    code = "import sys, helpers.tracking.phoenix_server, helpers.tracking.phoenix_experiments; print('phoenix' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_the_notebooks_environment_has_the_client_without_the_server_so_it_imports_in_a_second():
    # ~0.3-0.5 s to import; with the server package installed here it is ~15 s (benchmarks/bench_phoenix_logging.py)
    code = "import importlib.util, phoenix.client; print(importlib.util.find_spec('phoenix.server') is None)"
    no_server = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip()
    assert no_server == "True", "arize-phoenix is in the notebooks' environment: run `make setup` (it moves it to .venv-phoenix)"


# A stand-in for `phoenix serve` that honours its contract here: it binds PHOENIX_GRPC_PORT, then serves /healthz
# on PHOENIX_PORT, and when a port is taken exits saying so in gRPC's words. It proves start()'s handling of
# that exit; it cannot prove Phoenix's own wording, which PORT_TAKEN_SIGNS quotes from a real failed start.
STAND_IN = """
import http.server, os, socket, sys
grpc = socket.socket()
try:
    grpc.bind(("127.0.0.1", int(os.environ["PHOENIX_GRPC_PORT"])))
except OSError:
    sys.exit("RuntimeError: Failed to bind to address 127.0.0.1:" + os.environ["PHOENIX_GRPC_PORT"])
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"OK")
http.server.HTTPServer(("127.0.0.1", int(os.environ["PHOENIX_PORT"])), Health).serve_forever()
"""


def test_a_port_taken_between_its_pick_and_phoenixs_bind_is_tried_again_on_new_ones(tmp_path, monkeypatch):
    import helpers.tracking.phoenix_server as phoenix_server

    (tmp_path / "serve.py").write_text(STAND_IN)
    monkeypatch.setattr(phoenix_server, "server_command", lambda: [sys.executable, str(tmp_path / "serve.py")])
    with socket.socket() as taken, socket.socket() as also_taken:
        for sock in (taken, also_taken):
            sock.bind(("127.0.0.1", 0))
        picks = iter([phoenix_server.free_port(), taken.getsockname()[1],  # the first start's gRPC port: taken
                      phoenix_server.free_port(), also_taken.getsockname()[1]])  # and the second's
        monkeypatch.setattr(phoenix_server, "free_port", lambda host="127.0.0.1": next(picks, None) or socket_port())
        server = PhoenixServer(working_dir=tmp_path / "phoenix", start_timeout_s=60).start()
        try:
            assert is_healthy(server.url) and server.grpc_port not in (taken.getsockname()[1], also_taken.getsockname()[1])
        finally:
            server.stop()
        assert server_processes(tmp_path / "phoenix") == set()
        picks = iter([socket_port(), taken.getsockname()[1]] * 3)  # taken every time: named after three starts
        with pytest.raises(PhoenixError, match="Failed to bind"):
            PhoenixServer(working_dir=tmp_path / "again", start_timeout_s=60).start()
        assert next(picks, None) is None  # all three tried


def socket_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
