"""The sandbox: a command inside sees no other process, no key, none of the checkout's secrets or
hidden data, and nothing it starts outlives it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.core import sandbox
from helpers.core.processes import die_with_parent
from helpers.core.sandbox import SandboxUnavailable, require_sandbox, sandbox_command, unavailable_reason

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
REPO = Path(__file__).resolve().parents[3]
KEY = "plk-test-" + "7" * 24  # shaped like nothing real; the probes look for it


def run_inside(script: str, tmp_path: Path, monkeypatch) -> str:
    """`script` in the sandbox, with KEY in this process's environment (as a notebook kernel may hold it)."""
    monkeypatch.setenv("PROBE_KEY", KEY)
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir(), home.mkdir()
    command = sandbox_command(["sh", "-c", script], workspace, home, read_only=[Path(sys.prefix)])
    done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env={"PATH": f"{sys.prefix}/bin:/usr/bin:/bin", "HOME": str(home)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_no_process_outside_the_sandbox_is_visible_so_no_environment_or_memory_holds_the_key(tmp_path, monkeypatch):
    out = run_inside("for p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null; done | tr '\\0' '\\n';"
                     " ls /proc | grep -c '^[0-9]'", tmp_path, monkeypatch)
    assert KEY not in out
    assert int(out.strip().splitlines()[-1]) <= 5  # bwrap's init, the shell, its pipeline


def test_the_checkout_its_env_file_cache_and_the_users_home_are_out_of_sight(tmp_path, monkeypatch):
    out = run_inside(f"ls -a {REPO} {Path.home()} 2>&1; cat {REPO}/.env 2>&1; find / -name tasks.json 2>/dev/null;"
                     f" ls {REPO}/.cache 2>&1; echo end", tmp_path, monkeypatch)
    listed = set(out.split())
    assert "tasks.json" not in out and "pyproject.toml" not in listed and "helpers" not in listed
    assert "No such file" in out and out.strip().endswith("end")


def test_a_daemon_started_with_setsid_does_not_outlive_the_run(tmp_path, monkeypatch):
    marker = f"sleep {7000 + os.getpid() % 1000}"
    run_inside(f"(setsid {marker} >/dev/null 2>&1 &); (nohup {marker} >/dev/null 2>&1 &); echo started",
               tmp_path, monkeypatch)
    survivors = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert survivors == []


def test_the_workspace_is_writable_and_the_system_read_only(tmp_path, monkeypatch):
    out = run_inside("echo x > made.txt && cat made.txt; touch /usr/probe 2>&1 || echo refused;"
                     f" {sys.prefix}/bin/python -c 'import pytest; print(\"tests can run\")'", tmp_path, monkeypatch)
    assert (tmp_path / "ws" / "made.txt").read_text() == "x\n"
    assert "refused" in out and "tests can run" in out


def test_without_a_sandbox_a_run_refuses_to_start_unless_the_unsafe_opt_out_is_set(monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "unavailable_reason", lambda: "bwrap was not found: install bubblewrap")
    monkeypatch.delenv(sandbox.UNSAFE_OPT_OUT, raising=False)
    with pytest.raises(SandboxUnavailable, match=f"install bubblewrap.*{sandbox.UNSAFE_OPT_OUT}=1"):
        require_sandbox()
    monkeypatch.setenv(sandbox.UNSAFE_OPT_OUT, "1")
    assert require_sandbox() is False
    assert "unsandboxed" in capsys.readouterr().err


def _wait_for(path: Path, deadline_s: float = 60.0) -> None:
    import time

    stop = time.monotonic() + deadline_s
    while not path.exists():
        assert time.monotonic() < stop, f"{path} never appeared"
        time.sleep(0.05)


def _start(script: str, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir(), home.mkdir()
    process = subprocess.Popen(sandbox_command(["sh", "-c", script], workspace, home), start_new_session=True,
                               env={"PATH": "/usr/bin:/bin", "HOME": str(home)}, preexec_fn=die_with_parent())
    return process, workspace


@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])  # a timeout interrupts, then kills
def test_stopping_the_sandbox_ends_every_process_it_started(tmp_path, how):
    import signal

    marker = f"sleep {8000 + os.getpid() % 1000}.{len(how)}"  # its own per case
    process, workspace = _start(f"(setsid {marker} &); touch ready; {marker}", tmp_path)
    _wait_for(workspace / "ready")
    os.killpg(process.pid, getattr(signal, how))
    process.wait(timeout=60)
    import time

    stop = time.monotonic() + 60  # the kernel tears the namespace down asynchronously
    while subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0:
        assert time.monotonic() < stop, "a process of the killed sandbox survived"
        time.sleep(0.05)


# --- the network: only `reach` (the gateway) is in reach ----------------------------------------------
import errno  # noqa: E402
import threading  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402

from helpers.core.processes import reached_at, run_cli  # noqa: E402

PAGE = "page-of-the-server-" + "3" * 12


class _Handler(BaseHTTPRequestHandler):
    """GET / answers PAGE; GET /stream sends one event, waits for GET /ack, then a second one."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        if self.path == "/stream":
            self.wfile.write(b"data: first\n\n")
            self.wfile.flush()
            self.server.acked_before_the_end = self.server.acked.wait(60)
            self.wfile.write(b"data: second\n\n")
        elif self.path == "/ack":
            self.server.acked.set()
        elif self.path == "/hold":
            self.server.held.wait(60)  # a call in flight when the run ends
        else:
            self.wfile.write(PAGE.encode())


@contextmanager
def http_server(host: str = "127.0.0.1"):
    server = ThreadingHTTPServer((host, 0), _Handler)
    server.daemon_threads = True
    server.hits, server.acked, server.held, server.acked_before_the_end = [], threading.Event(), threading.Event(), None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.held.set()
        server.shutdown()
        server.server_close()


def fetch(url: str) -> str:
    """A Python one-liner that prints what GET `url` answers, or the error's errno and text."""
    return (f"import urllib.request as u\ntry: print(u.urlopen({url!r}, timeout=30).read().decode())\n"
            "except Exception as e: print('failed', getattr(getattr(e, 'reason', e), 'errno', None), e)\n")


def python_args(script: str, tmp_path: Path) -> list[str]:
    return [sys.executable, "-I", "-c", script, "marker-" + tmp_path.name]  # the marker finds its processes


def run_boxed(script: str, tmp_path: Path, reach: str | None = None, **settings) -> str:
    """What `script` (Python) prints when run_cli runs it in the sandbox with `reach`."""
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir(exist_ok=True), home.mkdir(exist_ok=True)
    out, err, timed_out, _ = run_cli(python_args(script, tmp_path), workspace, {"PATH": "/usr/bin:/bin"}, "", 120,
                                     set(), threading.Lock(), home=home, sandbox="required", reach=reach, **settings)
    assert not timed_out, err
    return out


def test_a_command_inside_reaches_the_reach_url_and_no_other_loopback_port(tmp_path):
    with http_server() as gateway, http_server() as other:
        reach = f"http://127.0.0.1:{gateway.server_port}/u/agent/v1"
        out = run_boxed(fetch(reach) + fetch(f"http://127.0.0.1:{other.server_port}/"), tmp_path, reach)
    assert out.splitlines()[0] == PAGE and gateway.hits == ["/u/agent/v1"]
    assert out.splitlines()[1].startswith(f"failed {errno.ECONNREFUSED}") and other.hits == []


def test_without_reach_nothing_is_reachable_and_with_network_the_hosts_network_is_shared(tmp_path):
    with http_server() as other:
        url = f"http://127.0.0.1:{other.server_port}/"
        assert run_boxed(fetch(url), tmp_path).startswith(f"failed {errno.ECONNREFUSED}")
        assert run_boxed(fetch(url), tmp_path, network=True).strip() == PAGE  # a set-up command the user allowed


def test_names_do_not_resolve_and_outside_addresses_are_unreachable_at_once(tmp_path):
    # No resolver and no route: both fail on the spot (errors, not timeouts), well within the run's limit.
    script = ("import socket\n"
              "try: socket.getaddrinfo('pypi.org', 443)\nexcept OSError as e: print('dns failed', e)\n"
              "try: socket.create_connection(('1.1.1.1', 443), timeout=30)\n"
              "except OSError as e: print('connect', e.errno)\n")
    out = run_boxed(script, tmp_path)
    assert "dns failed" in out and f"connect {errno.ENETUNREACH}" in out


def test_a_stream_through_the_relay_and_forwarder_arrives_in_pieces_as_it_is_sent(tmp_path):
    # The server holds its answer's end until the client, having read the first event, says so: a stream
    # buffered anywhere on the way would only arrive at its end.
    with http_server() as gateway:
        url = f"http://127.0.0.1:{gateway.server_port}"
        script = (f"import urllib.request as u\nr = u.urlopen('{url}/stream', timeout=90)\nfirst = r.readline()\n"
                  f"u.urlopen('{url}/ack', timeout=30).read()\n"
                  "print(first.decode().strip(), r.read().decode().split())\n")
        out = run_boxed(script, tmp_path, url)
    assert gateway.acked_before_the_end is True
    assert out.split()[:2] == ["data:", "first"] and "'second'" in out


def test_a_remote_gateway_is_reached_at_loopback_inside_on_the_same_port(tmp_path):
    # A host that is not a loopback address (here a name; on a cluster the driver's) cannot exist in the
    # sandbox's namespace: the agent is given 127.0.0.1 on the same port, the relay connects to the host.
    with http_server() as gateway:
        reach = f"http://localhost:{gateway.server_port}/u/agent/v1"
        inside = reached_at(reach, "required")
        out = run_boxed(fetch(inside), tmp_path, reach)
    assert inside == f"http://127.0.0.1:{gateway.server_port}/u/agent/v1"
    assert out.strip() == PAGE and reached_at(reach, None) == reach  # on the host, the URL as it is


def _leftovers(tmp_path: Path) -> list[str]:
    """Relay threads, files in the run's home (the relay's socket) and forwarder processes still there."""
    import time

    stop = time.monotonic() + 60  # the kernel ends a killed sandbox's processes asynchronously
    while forwarders := subprocess.run(["pgrep", "-f", f"forwarder.py .*marker-{tmp_path.name}"],
                                       capture_output=True, text=True).stdout.split():
        if time.monotonic() > stop:
            break
        time.sleep(0.05)
    relay_threads = [t.name for t in threading.enumerate() if t.name == "sandbox-relay"]
    return relay_threads + forwarders + [p.name for p in (tmp_path / "home").iterdir()]


def test_after_the_run_no_relay_thread_socket_or_forwarder_is_left(tmp_path):
    with http_server() as gateway:
        url = f"http://127.0.0.1:{gateway.server_port}/"
        assert run_boxed(fetch(url), tmp_path, url).strip() == PAGE
    assert _leftovers(tmp_path) == []


def test_a_run_killed_with_a_call_in_flight_leaves_nothing_either(tmp_path):
    import signal
    import time

    from helpers.core.processes import relayed

    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir(), home.mkdir()
    with http_server() as gateway:
        url = f"http://127.0.0.1:{gateway.server_port}"
        script = f"import urllib.request as u\nu.urlopen('{url}/hold', timeout=90).read()\n"
        with relayed(python_args(script, tmp_path), workspace, home, reach=url) as command:
            process = subprocess.Popen(command, cwd=workspace, start_new_session=True, preexec_fn=die_with_parent())
            stop = time.monotonic() + 60
            while gateway.hits != ["/hold"]:  # the call is in flight through the relay
                assert time.monotonic() < stop and process.poll() is None, "the call never reached the server"
                time.sleep(0.05)
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
        assert _leftovers(tmp_path) == []
