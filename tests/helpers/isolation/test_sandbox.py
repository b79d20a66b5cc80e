"""The sandbox: a command inside sees no other process, no key, none of the checkout's secrets or
hidden data, and nothing it starts outlives it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.isolation import sandbox
from helpers.isolation.processes import die_with_parent
from helpers.isolation.sandbox import SandboxUnavailable, require_sandbox, sandbox_command, unavailable_reason

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

from helpers.isolation.processes import run_cli  # noqa: E402
from helpers.isolation.sandboxed_command import reached_at  # noqa: E402

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
    # shutdown() waits for the next poll: 0.05 s, not the default 0.5 s, per server stopped
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
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
    out, err, timed_out, *_ = run_cli(python_args(script, tmp_path), workspace, {"PATH": "/usr/bin:/bin"}, "", 120,
                                     set(), threading.Lock(), home=home, sandbox="required", reach=reach, **settings)
    assert not timed_out, err
    return out


@pytest.fixture(params=["host-made", "bwrap's own"])
def own_network(request, monkeypatch) -> str:
    """Each way a run gets its own network: made by the host with the relay listening in it (as root), or made by
    bwrap with a forwarder inside (where the host cannot: util-linux's nsenter missing, or not root)."""
    from helpers.isolation import netns

    if request.param == "bwrap's own":
        monkeypatch.setattr(netns, "nsenter", lambda: None)
    return request.param


def test_a_command_inside_reaches_the_reach_url_and_no_other_loopback_port(tmp_path, own_network):
    with http_server() as gateway, http_server() as other:
        reach = f"http://127.0.0.1:{gateway.server_port}/u/agent/v1"
        out = run_boxed(fetch(reach) + fetch(f"http://127.0.0.1:{other.server_port}/"), tmp_path, reach)
    assert out.splitlines()[0] == PAGE and gateway.hits == ["/u/agent/v1"]
    assert out.splitlines()[1].startswith(f"failed {errno.ECONNREFUSED}") and other.hits == []


def test_without_reach_nothing_is_reachable_and_with_network_the_hosts_network_is_shared(tmp_path, own_network):
    with http_server() as other:
        url = f"http://127.0.0.1:{other.server_port}/"
        assert run_boxed(fetch(url), tmp_path).startswith(f"failed {errno.ECONNREFUSED}")
        assert run_boxed(fetch(url), tmp_path, network=True).strip() == PAGE  # a set-up command the user allowed


def test_names_do_not_resolve_and_outside_addresses_are_unreachable_at_once(tmp_path, own_network):
    # No resolver and no route: both fail on the spot (errors, not timeouts), well within the run's limit; the
    # network holds `lo` alone.
    script = ("import socket\nprint(sorted(name for _, name in socket.if_nameindex()))\n"
              "try: socket.getaddrinfo('pypi.org', 443)\nexcept OSError as e: print('dns failed', e)\n"
              "try: socket.create_connection(('1.1.1.1', 443), timeout=30)\n"
              "except OSError as e: print('connect', e.errno)\n")
    out = run_boxed(script, tmp_path)
    assert out.splitlines()[0] == "['lo']"
    assert "dns failed" in out and f"connect {errno.ENETUNREACH}" in out


def test_a_stream_through_the_relay_and_forwarder_arrives_in_pieces_as_it_is_sent(tmp_path, own_network):
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


def test_a_remote_gateway_is_reached_at_loopback_inside_on_the_same_port(tmp_path, own_network):
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


def test_after_the_run_no_relay_thread_socket_or_forwarder_is_left(tmp_path, own_network):
    with http_server() as gateway:
        url = f"http://127.0.0.1:{gateway.server_port}/"
        assert run_boxed(fetch(url), tmp_path, url).strip() == PAGE
    assert _leftovers(tmp_path) == []


def test_a_run_killed_with_a_call_in_flight_leaves_nothing_either(tmp_path, own_network):
    import signal
    import time

    from helpers.isolation.sandboxed_command import relayed

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


# --- privilege dropped and caps (helpers.isolation.confinement) ---------------------------------------------
from helpers.core import config  # noqa: E402
from helpers.isolation.cgroups import available as _cgroups  # noqa: E402
from helpers.isolation.confinement import CAP_PREFIX, Limits, cap_reached  # noqa: E402
from helpers.stats.outcomes import RULES, run_outcome  # noqa: E402
from helpers.agents.base import CLIAgent, Invocation  # noqa: E402
from helpers.core.protocols import AgentResult  # noqa: E402

ROOT = os.geteuid() == 0


def run_confined(script: str, tmp_path: Path, limits: Limits | None = None, name: str = "run") -> tuple[str, str]:
    """(stdout, stderr) of bash `script` run by run_cli, the one runner, in the sandbox within `limits`."""
    workspace, home = tmp_path / f"{name}-ws", tmp_path / f"{name}-home"
    workspace.mkdir(), home.mkdir()
    out, err, timed_out, *_ = run_cli(["bash", "-c", script], workspace, {"PATH": "/usr/bin:/bin", "HOME": str(home)},
                                     "", 60, set(), threading.Lock(), home=home, sandbox="required", limits=limits)
    assert not timed_out, err
    return out, err


@pytest.mark.parametrize("drop", ["util-linux", "sandbox_drop.py"])
def test_inside_the_agent_is_an_unprivileged_user_reading_no_root_only_file_and_making_no_mount_or_device(
        tmp_path, monkeypatch, drop):
    if drop == "sandbox_drop.py":  # where util-linux's prlimit and setpriv are missing
        monkeypatch.setattr(sandbox, "_drop_tools", lambda: None)
    secret = tmp_path / "bound" / "secret.txt"  # root-only, in a folder bound in read-only: the binds give nothing
    secret.parent.mkdir()
    secret.write_text("root only")
    secret.chmod(0o600)
    script = (f"id -u; grep -E '^(CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs):' /proc/self/status;"
              f" cat /etc/shadow {secret} 2>&1 | grep -c denied;"
              " mount -t tmpfs none /tmp 2>/dev/null && echo mounted; mount --bind /usr /tmp 2>/dev/null && echo bound;"
              # nor as "root" of a user namespace of its own
              " unshare -Urm mount -t tmpfs none /tmp 2>/dev/null && echo mounted;"
              " unshare -U true 2>/dev/null && echo made;"
              " python3 -c 'import os; os.unshare(os.CLONE_NEWUSER)' 2>/dev/null && echo made;"
              " mknod disk b 8 0 2>/dev/null && echo made; mknod /tmp/null c 1 3 2>/dev/null && echo made;"
              " echo x > made.txt; cp /usr/bin/true mine; chmod u+s mine; [ \"$PWD\" = \"$(pwd -P)\" ] && echo end")
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir(), home.mkdir()
    out, err, *_ = run_cli(["bash", "-c", script], workspace, {"PATH": "/usr/bin:/bin", "HOME": str(home)}, "", 60,
                             set(), threading.Lock(), home=home, read_only=[secret.parent], sandbox="required")
    lines = out.split("\n")
    assert lines[-2] == "end", err
    if ROOT:
        assert int(lines[0]) != 0
    caps = dict(line.split(":\t") for line in lines[1:6])
    assert {caps[k] for k in ("CapInh", "CapPrm", "CapEff", "CapAmb")} == {"0000000000000000"}, caps
    assert caps["NoNewPrivs"] == "1"
    assert lines[6] == "2", out  # /etc/shadow and the secret: both refused
    assert not {"mounted", "bound", "made"} & set(lines), out
    # after the run the host has its workspace back: the agent's files are the folder owner's, a set-uid bit
    # the agent left is gone with its owner
    owner = workspace.stat().st_uid
    assert {p.stat().st_uid for p in workspace.iterdir()} == {owner}
    assert not (workspace / "mine").stat().st_mode & 0o4000


@pytest.mark.parametrize("drop", ["util-linux", "sandbox_drop.py"])
def test_the_runs_rlimits_are_set_and_it_starts_in_its_workspace_whichever_gives_up_root(tmp_path, monkeypatch, drop):
    if drop == "sandbox_drop.py":
        monkeypatch.setattr(sandbox, "_drop_tools", lambda: None)
    limits = Limits(processes=77, file_bytes=1000 * 1024)
    out, err = run_confined("awk '/^Max (file size|processes)/ {print $(NF-2), $(NF-1)}' /proc/self/limits;"
                            " pwd -P; echo \"$PWD\"; head -c 2000000 /dev/zero > big; stat -c %s big", tmp_path, limits)
    lines = out.split("\n")
    assert lines[0] == "1024000 1024000" and (lines[1] == "77 77" or not ROOT), out  # NPROC: the run's own uid only
    assert lines[2] == lines[3] == str(tmp_path / "run-ws") and lines[4] == "1024000", (out, err)


def test_runs_over_each_cap_end_named_by_the_cap_while_a_run_beside_them_completes(tmp_path):
    limits = Limits(processes=40, memory_bytes=96 * 2**20, disk_bytes=24 * 2**20, file_bytes=16 * 2**20)
    scripts = {
        "process": "bomb() { bomb | bomb & }; bomb; sleep 30",
        "memory": "python3 -c 'a = []\nwhile True: a.append(bytearray(2**20))'; sleep 30",
        "tmp": "for i in $(seq 4); do head -c 10000000 /dev/zero > /tmp/f$i; done; du -sck /tmp/f* | tail -1",  # a tmpfs
        "disk": "for i in 1 2 3 4 5 6; do head -c 8000000 /dev/zero > f$i; done; sleep 30",
        "file-size": "head -c 30000000 /dev/zero > big; sleep 30",
        "beside": "sleep 2; for i in $(seq 20); do (echo $i > n$i) & done; wait; ls | wc -l",
    }
    results: dict[str, tuple[str, str, float]] = {}

    def run(name: str) -> None:
        import time

        started = time.monotonic()
        out, err = run_confined(scripts[name], tmp_path, limits, name.replace(" ", "-").replace("/", ""))
        results[name] = (out, err, time.monotonic() - started)

    threads = [threading.Thread(target=run, args=(name,)) for name in scripts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["beside"][0].strip() == "20" and not cap_reached(results["beside"][1]), results["beside"]
    out, err, _ = results["tmp"]  # /tmp is a tmpfs of the disk cap's size: a write past it fails
    assert "No space left" in err and int(out.split()[0]) <= 24 * 1024 + 64, (out, err)  # + its folders
    groups = _cgroups()
    enforced = {"disk", "file-size", *(["process"] if groups and "pids" in groups.parents or ROOT else []),
                *(["memory"] if groups and "memory" in groups.parents else [])}
    for name in enforced:
        out, err, _ = results[name]
        cap = cap_reached(err)
        # named by its cap: each script would otherwise end by itself after its `sleep 30`, naming nothing
        assert cap.startswith(CAP_PREFIX) and f"the {name.split()[0]} cap" in cap, (name, err[-500:])
    # nothing of them is left: no process of a run's own uid, no cgroup
    for parent in set(groups.parents.values()) if groups else ():
        assert not [p for p in parent.iterdir() if p.is_dir() and p.name.startswith(f"{os.getpid()}-")]


class _Bomb(CLIAgent):
    """An agent whose every run starts processes without end."""

    name = "bomb"

    def invoke(self, task, workspace, state):
        return Invocation(["bash", "-c", "bomb() { bomb | bomb & }; bomb; sleep 30"], {"PATH": "/usr/bin:/bin"})

    def result(self, task, out, err, timed_out, duration):
        return AgentResult(task["instance_id"], "completed", final_text="all done")


@pytest.mark.skipif(not (ROOT or _cgroups()), reason="nothing caps processes here")
def test_an_agent_run_and_a_grading_over_the_process_cap_are_named_and_the_agents_counts_as_rule_induced(
        tmp_path, monkeypatch):
    from helpers.families.coding.repo_tests import run_repo_tests

    monkeypatch.setattr(config, "SANDBOX_PROCESSES", 40)  # config's caps, as every run and grading gets them
    _Bomb.package_dir = tmp_path / "package"
    _Bomb.package_dir.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = _Bomb(sandbox="required").run({"instance_id": "t-1", "problem_statement": "x"}, workspace, "")
    assert result.status == "error"
    assert result.error.startswith(f"{CAP_PREFIX} the process cap (40 ") and run_outcome(result.to_dict()) == RULES
    graded = tmp_path / "graded"
    graded.mkdir()
    bomb = "bomb() { bomb | bomb & }; bomb; sleep 30"
    (graded / "test_x.py").write_text(f"import subprocess\n\ndef test_x():\n    subprocess.run(['bash', '-c', {bomb!r}])\n")
    run = run_repo_tests(graded, ["test_x.py::test_x"], timeout_s=60)
    assert f"{CAP_PREFIX} the process cap (40 " in run.log and run.tests.get("test_x.py::test_x") != "PASSED"


@pytest.mark.skipif(not _cgroups(), reason="no cgroup can be made here")
def test_a_killed_drivers_cgroup_and_what_runs_in_it_are_swept_at_the_next_start():
    from helpers.isolation.processes import sweep_stale

    groups = _cgroups()
    parent = next(iter(groups.parents.values()))
    stale = parent / "999999999-1-1"  # no process has this owner tag
    stale.mkdir(exist_ok=True)
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        (stale / "cgroup.procs").write_text(str(sleeper.pid))
        sweep_stale()
        assert sleeper.wait(timeout=10) == -9 and not stale.exists()
    finally:
        sleeper.kill()
        if stale.exists():
            stale.rmdir()


def test_a_gateway_on_a_port_below_1024_is_still_reached_inside_by_the_unprivileged_run(tmp_path, own_network):
    # the host binds it in the run's own network; or the forwarder listens there before root is given up, holding
    # only the capability to, and the relay's socket lets it connect; the run itself holds nothing
    script = ("import socket; socket.create_connection(('127.0.0.1', 443), 5); print('reached', open("
              "'/proc/self/status').read().split('CapEff:')[1].split()[0])")
    assert run_boxed(script, tmp_path, "https://gateway.example:443/u/agent/v1").split() == ["reached", "0" * 16]
