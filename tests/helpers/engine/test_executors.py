"""Agent runs on a real Ray cluster (issue #27): the same records as on threads here, a killed worker costs
nothing, a spent budget stops every node's runs, and the driver stays the one writer of the store.

The cluster is real and local: `ray start --head` on loopback and a second `ray start --address` worker
node, both on this machine (what two machines add, the network between them, is not tested here)."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from helpers.app.session import open_session
from helpers.core import config
from helpers.core.registry import make_agent
from helpers.engine.executors import RAY_AGENT_START_TIMEOUT_MS, parse_executor
from helpers.engine.runs import run_tasks
from helpers.families.coding.tasks import load_house_suite
from helpers.store.records import read_jsonl, run_records_path

# one xdist worker holds the cluster (make test runs with --dist loadgroup): two would stop each other's
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray-cluster")]
RAY = str(Path(sys.executable).parent / "ray")
START_ATTEMPTS = 4
DETERMINISTIC = ["instance_id", "status", "pass_or_fail", "output", "agent", "model"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


NODE_PORTS = ("--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
              "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port")


def start_node(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """`ray start ... --block` in a process group of its own: killing the group ends that node and everything
    it started, and nothing else (`ray stop` would end every Ray on the machine). Every port is a free one,
    so two nodes, or another Ray on this machine, never collide on Ray's fixed defaults.

    A starting node waits for its Python agents: its raylet for its dashboard agent (15 s unless
    RAY_agent_register_timeout_ms says more; CI's runs and a fresh clone's here aborted there), `ray start` for
    the raylet to register (a fixed 30 s, ray/_private/node.py). On a 2-core machine the other pytest worker's
    agent runs can starve those agents longer, so the wait is lengthened and the node runs at a raised CPU
    priority where the user may raise it (root, as in CI; elsewhere `nice` says it cannot and runs it as is).
    Measured here with six busy processes: a head started in 44.8 s as is, 17.5 s at nice -10."""
    ports = [item for name in NODE_PORTS for item in (name, str(free_port()))]
    with open(log, "ab") as out:
        env = {**env, "RAY_agent_register_timeout_ms": str(RAY_AGENT_START_TIMEOUT_MS)}
        return subprocess.Popen(["nice", "-n", "-10", RAY, "start", *args, *ports, "--block"], env=env,
                                start_new_session=True, stdout=out, stderr=subprocess.STDOUT)


def wait_for_start(node: subprocess.Popen, log: Path) -> bool:
    """True once `ray start` says its node registered; False if it exited first (its log says why). Reading its
    log costs nothing, where polling `ray status` would start a Python process a second on the cores the
    starting node needs."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if "Ray runtime started." in log.read_text(errors="replace"):
            return True
        if node.poll() is not None:
            return False
        time.sleep(0.5)
    raise AssertionError(f"a Ray node neither started nor exited in 240 s: {tails(log.parent, [log])}")


def count_nodes(env: dict[str, str]) -> int:
    status = subprocess.run([RAY, "status"], env=env, capture_output=True, text=True, timeout=120)
    return status.stdout.count(" node_") if status.returncode == 0 else 0


RAY_LOGS = ("raylet.out", "raylet.err", "gcs_server.err", "dashboard_agent.log", "dashboard_agent.err",
            "runtime_env_agent.log", "runtime_env_agent.err")


def tails(temp: Path, logs: list[Path]) -> str:
    """What a failed start left: each `ray start`'s output and Ray's own logs of its latest session, with the
    machine's load, so a failure on another machine (CI) names its cause."""
    session = temp / "session_latest" / "logs"
    found = [*logs, *(session / name for name in RAY_LOGS)]
    text = " | ".join(f"{log.name}: {log.read_text(errors='replace')[-1200:]}" for log in found
                      if log.exists() and log.stat().st_size)
    return f"load average {os.getloadavg()}; {text}"


def stop_nodes(nodes: list[subprocess.Popen]) -> None:
    for node in reversed(nodes):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(node.pid, sig)
                node.wait(timeout=60)
                break
            except ProcessLookupError:  # the group is gone already
                break
            except subprocess.TimeoutExpired:
                continue


def start_cluster(temp: Path, auth: dict[str, str], port: int, attempt: int) -> list[subprocess.Popen]:
    """A head node, then a worker node joined to it; the nodes, or an empty list if one exited while starting."""
    env = {**os.environ, **auth}
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "2", "--disable-usage-stats"]
    head = {k: v for k, v in env.items() if k != "RAY_ADDRESS"}
    logs = [temp / f"head-{attempt}.log", temp / f"worker-{attempt}.log"]
    nodes = [start_node(["--head", "--port", str(port), "--temp-dir", str(temp), "--include-dashboard", "false",
                         "--ray-client-server-port", str(free_port()), *common], head, logs[0])]
    if wait_for_start(nodes[0], logs[0]):
        nodes.append(start_node(["--address", f"127.0.0.1:{port}", *common], env, logs[1]))
        if wait_for_start(nodes[1], logs[1]):
            # each node registered before saying so; the head's view of the two is read once or twice
            for _ in range(30):
                if count_nodes(env) >= 2:
                    return nodes
                time.sleep(2)
            raise AssertionError(f"the Ray cluster did not reach 2 nodes: {tails(temp, logs)}")
    stop_nodes(nodes)
    return []


# once per session, not per module: under xdist another module's tests may run between this module's, and each
# module-scope restart costs a minute and is one more chance of a start failing on a loaded machine
@pytest.fixture(scope="session")
def cluster():
    """A head node and a second worker node on loopback, each with 2 CPUs; stopped however the tests end."""
    import secrets

    import shutil
    import tempfile

    # Ray's sockets live under its temp dir, and a unix socket's path may not exceed 107 bytes: pytest's own
    # temporary folders (…/pytest-of-root/pytest-N/popen-gw0/…) are too deep for it
    temp = Path(tempfile.mkdtemp(prefix="rt-"))
    nodes: list[subprocess.Popen] = []
    saved = {name: os.environ.get(name) for name in ("RAY_USAGE_STATS_ENABLED", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN",
                                                     "RAY_ADDRESS")}
    try:
        # a node that exits while starting is started again, on fresh ports: another test's server may take a
        # free port before Ray binds it, and on a loaded machine a raylet can miss Ray's own fixed 30 s limit
        # for registering (ray/_private/node.py), which no setting lengthens
        for attempt in range(START_ATTEMPTS):
            port = free_port()
            # Ray's token authentication, as a cluster should run: every node and the driver hold the token
            auth = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16),
                    "RAY_ADDRESS": f"127.0.0.1:{port}"}
            nodes = start_cluster(temp, auth, port, attempt)
            if nodes:
                break
        assert nodes, (f"a Ray node exited while starting, {START_ATTEMPTS} times: "
                       f"{tails(temp, sorted(temp.glob('*.log')))}")
        os.environ.update(auth)
        yield f"127.0.0.1:{port}"
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
        import ray

        ray.shutdown()
        stop_nodes(nodes)  # (then the temp dir goes too)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def house():
    return load_house_suite().head(8)


def run(house, tmp_path, executor, run_id="r", **kw):
    """The house tasks with the real Cline agent on the scripted server, through the session's gateway."""
    with open_session(dry_run=True, phoenix=False, dry_run_tasks=house, budget_usd=kw.pop("budget_usd", None)) as session:
        agent = make_agent("cline", **session.agent_kwargs())
        frame = run_tasks(house, agent, run_id=run_id, experiment="ray", results_root=tmp_path, gateway=session.gateway,
                          executor=executor, workers=2, progress=False, **kw)
        return frame, session.gateway.calls()


def test_the_cluster_gives_the_same_records_as_threads_here(cluster, house, tmp_path):
    import ray

    local, _ = run(house, tmp_path / "local", "local")
    on_ray, calls = run(house, tmp_path / "ray", "ray:auto")
    assert len(ray.nodes()) == 2 and sum(n["Resources"].get("CPU", 0) for n in ray.nodes()) == 4
    assert on_ray[DETERMINISTIC].to_dict("records") == local[DETERMINISTIC].to_dict("records")
    assert set(on_ray.status) == {"completed"} and all(on_ray.input_tokens > 0)  # metered at the driver's gateway
    assert {c["status"] for c in calls} == {200}
    written = read_jsonl(run_records_path("ray", "r", tmp_path / "ray"))
    assert sorted(r["instance_id"] for r in written) == sorted(house.instance_id)  # one record each, by the driver


def ray_workers_running_attempts() -> list[int]:
    """Pids of Ray worker processes running an attempt now (their title names the task)."""
    found = subprocess.run(["pgrep", "-f", "ray::run_attempt"], capture_output=True, text=True).stdout.split()
    return [int(pid) for pid in found]


def test_a_worker_killed_mid_run_loses_nothing_and_duplicates_nothing(cluster, house, tmp_path):
    killed = []

    def kill_one():
        deadline = time.monotonic() + 300
        while not killed and time.monotonic() < deadline:
            workers = ray_workers_running_attempts()
            if workers:
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])
            time.sleep(0.2)

    killer = threading.Thread(target=kill_one)
    killer.start()
    try:
        frame, _ = run(house, tmp_path, "ray:auto", run_id="killed")
    finally:
        killer.join()
    assert killed, "no attempt was seen running"
    assert set(frame.status) == {"completed"}, frame[["instance_id", "status", "error"]].to_dict("records")
    written = read_jsonl(run_records_path("ray", "killed", tmp_path))
    assert Counter(r["instance_id"] for r in written) == Counter(house.instance_id)  # each once: none lost, none twice


def test_a_spent_budget_stops_the_runs_on_every_node(cluster, house, tmp_path, monkeypatch):
    monkeypatch.setitem(config.PRICE_OVERRIDES, config.SCRIPTED_MODEL, (1000.0, 1000.0))  # the first call spends it
    frame, calls = run(house, tmp_path, "ray:auto", budget_usd=0.01)
    assert set(frame.status) == {"budget"}, frame[["instance_id", "status", "error"]].to_dict("records")
    # the first charged call spends it: every call answered after that had started before it was spent (an
    # attempt may have more than one call in flight, so no count of them is fixed)
    spent_at = min(c["started_at"] + c["latency_s"] for c in calls if c["cost_usd"])
    late = [c for c in calls if c["status"] == 200 and c["started_at"] > spent_at + 0.05]
    assert not late, [(c["method"], c["path"], c["started_at"] - spent_at) for c in late]
    assert any(c["status"] == "budget" for c in calls)  # and the runs' next calls were refused


@pytest.mark.parametrize("bad", ["ray:", "rays", "ray://", "spark", "", None])
def test_a_bad_executor_is_one_error_naming_the_forms_before_anything_runs(bad, house, tmp_path):
    with pytest.raises(ValueError, match="'local'.*'ray'.*'ray:auto'.*ray://"):
        parse_executor(bad)
    with pytest.raises(ValueError, match="executor must be"):
        run_tasks(house.head(1), make_agent("cline", model="gpt-4.1", api_key="k"), run_id="x", experiment="x",
                  results_root=tmp_path, executor=bad, progress=False)
    assert not (tmp_path / "x").exists()


def test_the_setup_check_says_what_cluster_it_found(cluster):
    from helpers.app.doctor import check_cluster

    found = check_cluster("ray:auto")
    assert found.ok and found.detail == "ray:auto: 2 nodes, 4 CPUs"
    assert check_cluster("local").ok and "this machine" in check_cluster("local").detail
    wrong = check_cluster("spark")
    assert not wrong.ok and "executor must be" in wrong.detail
