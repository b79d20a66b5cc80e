"""A local Phoenix server run as a subprocess, or a connection to an existing one.

    with PhoenixServer() as phoenix:           # SQLite in .phoenix/, loopback only, free port
        print(phoenix.url)                      # http://127.0.0.1:<port>
    phoenix = ensure_phoenix()                  # PHOENIX_COLLECTOR_ENDPOINT if it answers, else embedded

The server (arize-phoenix) lives in an environment of its own, .venv-phoenix/ (`make setup` makes
it): importing it costs ~15 s, and in the notebooks' environment its package would make every
`import phoenix.client` pay that too. So the notebooks carry only the light client (~0.3 s) and this
module starts `.venv-phoenix/bin/phoenix serve` (or a `phoenix` found on PATH) in its own process;
health checks use httpx. A team server (e.g. Phoenix on PostgreSQL via PHOENIX_SQL_DATABASE_URL) is
just a URL and an API key here.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import httpx

from helpers.core.config import PHOENIX_DIR, REPO_ROOT, read_env
from helpers.isolation.processes import safe_environment

CONNECT_CHECK_S = 15.0  # a Phoenix that is up but busy (a loaded machine) may answer its health check slowly
START_TIMEOUT_S = 60.0  # Phoenix needs ~13-16 s to import and migrate its database on this machine
PORT_ATTEMPTS = 3  # starts tried when a port picked free is taken before Phoenix binds it
# What Phoenix's log says when a port it was given is taken: gRPC's words, and uvicorn's errno 98
PORT_TAKEN_SIGNS = ("Failed to bind to address", "address already in use")
STOP_TIMEOUT_S = 10.0
SERVER_ENV = REPO_ROOT / ".venv-phoenix"  # made by `make setup` (the Makefile's PHOENIX_VENV)
# Variables that would point the embedded server somewhere other than its own SQLite file.
_DROPPED_ENV = ("PHOENIX_SQL_DATABASE_URL", "PHOENIX_SQL_DATABASE_SCHEMA", "PHOENIX_HOST_ROOT_PATH")


class PhoenixError(RuntimeError):
    """The Phoenix server could not be started or reached."""


class _PortTaken(PhoenixError):
    """The server exited because a port it was given was taken meanwhile (start() tries new ones)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def server_command(server_env: Path | str = SERVER_ENV) -> list[str]:
    """The command that serves Phoenix: `server_env`'s `phoenix serve` with every port on loopback
    (phoenix_loopback.py), else a `phoenix` on PATH.
    Raises PhoenixError, saying how to install it, when there is neither."""
    python = Path(server_env) / "bin" / "python"
    if os.access(python, os.X_OK) and (Path(server_env) / "bin" / "phoenix").exists():
        return [str(python), str(Path(__file__).with_name("phoenix_loopback.py")), "serve"]  # gRPC on loopback too
    found = shutil.which("phoenix")  # a Phoenix of the user's own: its gRPC port listens on every interface
    if found and os.access(found, os.X_OK):
        return [found, "serve"]
    raise PhoenixError(
        f"The Phoenix server is not installed: no {Path(server_env) / 'bin' / 'phoenix'} and no `phoenix` on "
        "PATH. Run `make setup` (or `make phoenix-server`), which puts arize-phoenix in .venv-phoenix/, or "
        "point PHOENIX_COLLECTOR_ENDPOINT at a running Phoenix."
    )


def server_environment(
    working_dir: Path, host: str, port: int, grpc_port: int, database_url: str | None = None
) -> dict[str, str]:
    """The embedded server's whole environment: an allow-list of ours (no provider key reaches its
    process), the PHOENIX_* settings the user gave, and its own folder, host, ports and privacy settings."""
    given = {k: v for k, v in os.environ.items() if k.startswith("PHOENIX_") and k not in _DROPPED_ENV}
    env = safe_environment(
        {
            **given,
            "PHOENIX_WORKING_DIR": str(Path(working_dir).resolve()),
            "PHOENIX_HOST": host,
            "PHOENIX_PORT": str(port),
            "PHOENIX_GRPC_PORT": str(grpc_port),
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
    )
    if database_url:
        env["PHOENIX_SQL_DATABASE_URL"] = database_url
    return env


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def is_healthy(url: str, api_key: str | None = None, timeout_s: float = 2.0) -> bool:
    """True when GET <url>/healthz answers 200."""
    try:
        response = httpx.get(f"{url.rstrip('/')}/healthz", headers=auth_headers(api_key), timeout=timeout_s)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


class PhoenixServer:
    """A Phoenix server: one this object started (`start()`), or an existing one (`connect()`).

    `.url` is the base URL (no trailing slash), `.api_key` the key to send (None for the embedded
    server, which runs without auth). `stop()` ends a server this object started (process group:
    SIGTERM, then SIGKILL) and does nothing for a connected one. Start-up raises PhoenixError within
    `start_timeout_s` when the port is taken or the server does not come up, quoting its log.
    """

    def __init__(
        self,
        working_dir: Path | str = PHOENIX_DIR,
        host: str = "127.0.0.1",
        port: int | None = None,
        grpc_port: int | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
        database_url: str | None = None,
    ):
        self.working_dir = Path(working_dir)
        self.host = host
        self.port = port
        self.grpc_port = grpc_port
        self.start_timeout_s = start_timeout_s
        self.database_url = database_url  # None: SQLite in working_dir
        self.api_key: str | None = None
        self.process: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self._url: str | None = None

    @classmethod
    def connect(cls, url: str | None = None, api_key: str | None = None, check: bool = True) -> "PhoenixServer":
        """An existing Phoenix at `url` (default PHOENIX_COLLECTOR_ENDPOINT), with `api_key`
        (default PHOENIX_API_KEY). With `check`, raise PhoenixError unless it answers /healthz."""
        url = url or read_env("PHOENIX_COLLECTOR_ENDPOINT")
        if not url:
            raise PhoenixError(
                "No Phoenix URL: pass url=... or set PHOENIX_COLLECTOR_ENDPOINT (e.g. "
                "http://localhost:6006), or start a local one with PhoenixServer().start()."
            )
        server = cls()
        server._url = url.rstrip("/")
        server.api_key = api_key or read_env("PHOENIX_API_KEY")
        if check and not is_healthy(server._url, server.api_key):
            raise PhoenixError(f"Phoenix at {server._url} does not answer GET /healthz; is it running?")
        return server

    @property
    def url(self) -> str:
        if self._url is None:
            raise PhoenixError("This PhoenixServer is not started: call .start() or use it as a context manager.")
        return self._url

    @property
    def owned(self) -> bool:
        """True when this object started the server process (and so stops it)."""
        return self.process is not None

    def start(self) -> "PhoenixServer":
        """Start the server and wait until it answers. Ports left None are picked free, but Phoenix binds them
        only after ~15 s of imports, so on a busy machine another process can take one first: then the start
        is tried again on new ports (PORT_ATTEMPTS in all); a port given is never swapped for another."""
        if self._url is not None:
            return self
        for name, port in (("port", self.port), ("grpc_port", self.grpc_port)):
            if port is not None and not port_is_free(self.host, port):
                raise PhoenixError(
                    f"Cannot start Phoenix: {self.host}:{port} ({name}) is already in use. Stop what "
                    f"listens there, or pass {name}=None to use a free port."
                )
        for _ in range(PORT_ATTEMPTS - 1):
            try:
                return self._start_once()
            except _PortTaken:
                if self.port is not None and self.grpc_port is not None:
                    raise
        return self._start_once()

    def _start_once(self) -> "PhoenixServer":
        command = server_command()
        port = self.port or free_port(self.host)
        grpc_port = self.grpc_port or free_port(self.host)
        self.working_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.working_dir / f"server-{port}.log"
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        env = server_environment(self.working_dir, self.host, port, grpc_port, self.database_url)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so stop() reaches any children
                preexec_fn=_die_with_parent,
            )
        atexit.register(self.stop)
        url = f"http://{self.host}:{port}"
        try:
            self._wait_healthy(url, self.process, self.log_path)
        except BaseException:
            self.stop()
            raise
        self.port, self.grpc_port, self._url = port, grpc_port, url
        return self

    def _wait_healthy(self, url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                this_start = log_path.read_bytes()[self._log_start :].decode(errors="replace")
                error = _PortTaken if any(sign in this_start for sign in PORT_TAKEN_SIGNS) else PhoenixError
                raise error(
                    f"Phoenix exited with code {process.returncode} before answering /healthz "
                    f"(a port in use, or a broken install?). Log {self.log_path}:\n{self.log_tail()}"
                )
            if is_healthy(url, timeout_s=1.0):
                return
            time.sleep(0.25)
        raise PhoenixError(
            f"Phoenix did not answer {url}/healthz within {self.start_timeout_s:.0f} s; stopped it. "
            f"Pass start_timeout_s=... on a slow machine. Log {self.log_path}:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path or not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Stop a server this object started: SIGTERM to its process group, SIGKILL after a wait."""
        process, self.process = self.process, None
        if process is None:
            return
        atexit.unregister(self.stop)
        self._url = None
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait(timeout=STOP_TIMEOUT_S)
        _signal_group(process.pid, signal.SIGKILL)  # anything it left in its group

    def client(self) -> Any:
        """A phoenix.client.Client for this server."""
        from phoenix.client import Client

        return Client(base_url=self.url, api_key=self.api_key)

    def __enter__(self) -> "PhoenixServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "embedded" if self.owned else ("connected" if self._url else "not started")
        return f"PhoenixServer({self._url or self.working_dir!s}, {state})"


def ensure_phoenix(url: str | None = None, api_key: str | None = None, **server_args: Any) -> PhoenixServer:
    """Phoenix at `url` (default PHOENIX_COLLECTOR_ENDPOINT) if it answers; else start the embedded one.

    The embedded server keeps its SQLite database in config.PHOENIX_DIR (git-ignored) unless
    `working_dir=` is given. Call `.stop()` on the result when done (a no-op for a connected server).
    """
    url = url or read_env("PHOENIX_COLLECTOR_ENDPOINT")
    if url:
        key = api_key or read_env("PHOENIX_API_KEY")
        if is_healthy(url, key, timeout_s=CONNECT_CHECK_S):
            return PhoenixServer.connect(url, key, check=False)
        warnings.warn(f"Phoenix at {url} does not answer; starting a local Phoenix instead.", stacklevel=2)
    return PhoenixServer(**server_args).start()


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM it if the notebook kernel dies without calling stop().

    Linux sends it when the *thread* that started the server ends, so start it from the main thread
    (as notebook cells and pytest fixtures do), not from a short-lived worker thread.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "PhoenixServer",
    "ensure_phoenix",
    "is_healthy",
    "server_command",
    "server_environment",
    "PhoenixError",
]
