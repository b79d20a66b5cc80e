"""Agent runs on a real Ray cluster (issue #27): the same records as on threads here, a killed worker costs
nothing, a spent budget stops every node's runs, and the driver stays the one writer of the store.

The cluster is real and local: `ray start --head` on loopback and a second `ray start --address` worker
node, both on this machine (what two machines add, the network between them, is not tested here)."""

import os
import re
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
from helpers.engine.executors import parse_executor
from helpers.engine.runs import run_tasks
from helpers.families.coding.tasks import load_house_suite
from helpers.store.records import read_jsonl, run_records_path

# one xdist worker holds the cluster (make test runs with --dist loadgroup): two would stop each other's
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray-cluster")]
RAY = str(Path(sys.executable).parent / "ray")
START_ATTEMPTS = 3
START_WITHIN_S = 180  # no new attempt after this: a machine this starved fails the next one too
DETERMINISTIC = ["instance_id", "status", "pass_or_fail", "output", "agent", "model"]
# Ray's own limits on a starting node, which no setting lengthens (measured with Ray 2.60: an agent held back 20 s
# aborts its raylet at 15 s with RAY_agent_register_timeout_ms=120000 or RAY_raylet_start_wait_time_s=120 set):
# the raylet waits 15 s for its dashboard agent (a Python process) to write its port file, `ray start` 30 s for the
# raylet to register (ray/_private/node.py). A machine too loaded to start a Python process in 15 s fails them.
RAY_START_LIMITS = re.compile(r"Timed out waiting for file \S*dashboard_agent_listen_port|"
                              r"The current node timed out during startup")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


NODE_PORTS = ("--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
              "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port")


def start_node(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """`ray start ... --block` in a session of its own: killing its process group ends that node and everything
    it started, and nothing else (`ray stop` would end every Ray on the machine). Every port is a free one,
    so two nodes, or another Ray on this machine, never collide on Ray's fixed defaults.

    A starting node must bring up its Python agents within Ray's fixed limits (RAY_START_LIMITS), so it starts
    at the highest CPU priority where the user may raise it (root, as in CI; elsewhere `nice` says it cannot
    and runs it as is), and `settle` lowers it once the node is up: the agent runs it starts later share the
    machine like any other work."""
    ports = [item for name in NODE_PORTS for item in (name, str(free_port()))]
    with open(log, "ab") as out:
        return subprocess.Popen(["nice", "-n", "-20", RAY, "start", *args, *ports, "--block"], env=env,
                                start_new_session=True, stdout=out, stderr=subprocess.STDOUT)


def parents() -> dict[int, int]:
    """Each process's parent, from /proc (no process started to ask)."""
    found = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # gone meanwhile
            continue
        found[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def node_of(pid: int, nodes: list[int], parent: dict[int, int]) -> int | None:
    """Which of `nodes` (their `ray start` pids) started `pid`, by its ancestry; None: none of them."""
    while pid > 1:
        if pid in nodes:
            return pid
        pid = parent.get(pid, 0)
    return None


def settle(node: subprocess.Popen) -> None:
    """Every process of a started node back at the usual priority (the workers it starts later inherit it)."""
    parent = parents()
    for pid in parent:
        if node_of(pid, [node.pid], parent):
            try:
                os.setpriority(os.PRIO_PROCESS, pid, 0)
            except OSError:  # gone meanwhile
                continue


def wait_for_start(node: subprocess.Popen, log: Path) -> bool:
    """True once `ray start` says its node registered; False if it exited first, or once a raylet of this
    session aborted at its 15 s wait (`ray start` would wait 30 s more for it to register). Reading logs costs
    nothing, where polling `ray status` would start a Python process a second on the cores the node needs."""
    deadline = time.monotonic() + 120  # Ray's own limits end a start long before
    while time.monotonic() < deadline:
        if "Ray runtime started." in log.read_text(errors="replace"):
            return True
        if node.poll() is not None or ray_said(log.parent, ("raylet.out",)):
            return False
        time.sleep(0.5)
    raise AssertionError(f"a Ray node neither started nor exited in 120 s: {tails(log.parent, [log])}")


def ray_said(temp: Path, names: tuple[str, ...]) -> str:
    """The first line of the latest session's `names` logs (and the given paths) saying a start hit Ray's
    fixed limits, or ""."""
    session = temp / "session_latest" / "logs"
    for path in (name if isinstance(name, Path) else session / name for name in names):
        if path.exists():
            found = RAY_START_LIMITS.search(path.read_text(errors="replace"))
            if found:
                text = path.read_text(errors="replace")
                line = text[text.rfind("\n", 0, found.start()) + 1:text.find("\n", found.end())]
                return f"{path.name}: {line.strip()[-300:]}"
    return ""


RAY_LOGS = ("raylet.out", "raylet.err", "gcs_server.err", "dashboard_agent.log", "dashboard_agent.err",
            "runtime_env_agent.log", "runtime_env_agent.err")


def tails(temp: Path, logs: list[Path]) -> str:
    """What a failed start left: each `ray start`'s output and Ray's own logs of its latest session, with the
    machine's load, so a failure on another machine (CI) names its cause."""
    session = temp / "session_latest" / "logs"
    found = [*logs, *(session / name for name in RAY_LOGS)]
    text = " | ".join(f"{log.name}: {log.read_text(errors='replace')[-1200:]}" for log in found
                      if log.exists() and log.stat().st_size)
    return f"load average {os.getloadavg()} on {os.cpu_count()} CPUs; {text}"


def stop_nodes(nodes: list[subprocess.Popen]) -> None:
    """Each node's whole process group, at once: nothing of a test cluster is worth a graceful drain (`ray start`
    asks the GCS to drain its node on SIGTERM, which took 35 s at the session's end)."""
    for node in reversed(nodes):
        try:
            os.killpg(node.pid, signal.SIGKILL)
        except ProcessLookupError:  # the group is gone already
            pass
        node.wait(timeout=60)


# no idle workers started ahead of the tasks (each is a Python process importing Ray: ~3 CPU-seconds; 2 cores)
LEAN = {"RAY_enable_worker_prestart": "0", "RAY_prestart_worker_first_driver": "0"}


def start_cluster(temp: Path, auth: dict[str, str], port: int, attempt: int) -> list[subprocess.Popen]:
    """A head node, then a worker node joined to it; the nodes, or an empty list if one exited while starting
    (each node registered with the head before its `ray start` says so: no `ray status` is needed)."""
    env = {**os.environ, **auth, **LEAN}
    # no autoscaler monitor and no log monitor: two Python processes fewer starting beside the agents
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "2", "--disable-usage-stats",
              "--include-log-monitor", "false"]
    head = {k: v for k, v in env.items() if k != "RAY_ADDRESS"}
    logs = [temp / f"head-{attempt}.log", temp / f"worker-{attempt}.log"]
    (temp / "session_latest").unlink(missing_ok=True)  # a failed attempt's logs say nothing of this one
    nodes = [start_node(["--head", "--port", str(port), "--temp-dir", str(temp), "--include-dashboard", "false",
                         "--no-monitor", "--dashboard-port", str(free_port()),
                         "--ray-client-server-port", str(free_port()), *common], head, logs[0])]
    if wait_for_start(nodes[0], logs[0]):
        settle(nodes[0])
        nodes.append(start_node(["--address", f"127.0.0.1:{port}", *common], env, logs[1]))
        if wait_for_start(nodes[1], logs[1]):
            settle(nodes[1])
            return nodes
    stop_nodes(nodes)
    return []


# once per session, not per module: under xdist another module's tests may run between this module's, and each
# restart costs a minute and is one more chance of a start failing on a loaded machine
@pytest.fixture(scope="session")
def cluster():
    """A head node and a second worker node on loopback, each with 2 CPUs; stopped however the tests end.

    A node that exits while starting is started again, on fresh ports (another test's server may take a free
    port before Ray binds it). When every attempt ended at Ray's fixed start limits (RAY_START_LIMITS: the
    machine is too loaded to start a Python process in 15 s), the tests that need the cluster are skipped,
    each saying so with the load and Ray's own words; any other failure to start is an error."""
    import secrets
    import shutil
    import tempfile

    # Ray's sockets live under its temp dir, and a unix socket's path may not exceed 107 bytes: pytest's own
    # temporary folders (…/pytest-of-root/pytest-N/popen-gw0/…) are too deep for it
    temp = Path(tempfile.mkdtemp(prefix="rt-"))
    nodes: list[subprocess.Popen] = []
    saved = {name: os.environ.get(name) for name in ("RAY_USAGE_STATS_ENABLED", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN",
                                                     "RAY_ADDRESS")}
    began = time.monotonic()
    try:
        for attempt in range(START_ATTEMPTS):
            port = free_port()
            # Ray's token authentication, as a cluster should run: every node and the driver hold the token
            auth = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16),
                    "RAY_ADDRESS": f"127.0.0.1:{port}"}
            nodes = start_cluster(temp, auth, port, attempt)
            if nodes or time.monotonic() - began > START_WITHIN_S:
                break
        if not nodes:
            logs = sorted(temp.glob("*.log"))
            why, said = tails(temp, logs), ray_said(temp, ("raylet.out", *logs))
            if said:
                pytest.skip(f"the Ray cluster did not start here, {attempt + 1} times, at Ray's fixed start limits "
                            f"(a node's Python agent must start within 15 s: this machine is too loaded for it), so "
                            f"the Ray executor tests did not run. Ray said: {said}; {why[:1200]}")
            raise AssertionError(f"a Ray node exited while starting, {attempt + 1} times: {why}")
        os.environ.update(auth)
        yield {"address": f"127.0.0.1:{port}", "nodes": [node.pid for node in nodes]}
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
        if "ray" in sys.modules:
            sys.modules["ray"].shutdown()
        stop_nodes(nodes)  # (then the temp dir goes too)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def house():
    return load_house_suite().head(4)  # a run of each on the cluster's 4 CPUs, 2 on each node


class Watch:
    """What the cluster does as model requests reach the scripted server, seen the moment each arrives: the nodes
    running an attempt then (a Ray worker running one is titled ray::run_attempt), and with kill=True, one such
    worker killed at the first request, so a run is killed mid-way without waiting for one to be seen."""

    def __init__(self, nodes: list[int], kill: bool = False):
        self.nodes, self.kill = nodes, kill
        self.busy: set[int] = set()  # the nodes (their `ray start` pids) seen running an attempt
        self.killed: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, entry: dict) -> None:
        parent = parents()
        running = []
        for pid in parent:
            node = node_of(pid, self.nodes, parent)
            try:
                if node and Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::run_attempt"):
                    running.append((pid, node))
            except OSError:  # gone meanwhile
                continue
        with self._lock:
            self.busy |= {node for _, node in running}
            if self.kill and not self.killed and running:
                os.kill(running[0][0], signal.SIGKILL)
                self.killed.append(running[0][0])


def run(house, tmp_path, executor, run_id="r", watch=None, **kw):
    """The house tasks with the real Codex CLI on the scripted server, through the session's gateway; `watch`
    is called with each request the server receives, before it answers. (Any registered agent shows the executor;
    Codex starts in a tenth of Cline's CPU time, and Cline's own runs are tests/cline's.)"""
    with open_session(dry_run=True, phoenix=False, dry_run_tasks=house, agent="codex",
                      budget_usd=kw.pop("budget_usd", None)) as session:
        if watch is not None:
            server, keep = session.scripted_server, session.scripted_server.record
            server.record = lambda entry: (watch(entry), keep(entry))
        agent = make_agent("codex", **session.agent_kwargs())
        frame = run_tasks(house, agent, run_id=run_id, experiment="ray", results_root=tmp_path, gateway=session.gateway,
                          executor=executor, workers=2, progress=False, **kw)
        return frame, session.gateway.calls()


# one run on the cluster answers both: its records are the threads' records, though a worker died mid-run
def test_the_cluster_gives_the_same_records_as_threads_here_though_a_worker_is_killed_mid_run(cluster, house,
                                                                                                tmp_path):
    import ray

    local, _ = run(house, tmp_path / "local", "local")
    watch = Watch(cluster["nodes"], kill=True)
    on_ray, calls = run(house, tmp_path / "ray", "ray:auto", watch=watch)
    assert len(ray.nodes()) == 2 and sum(n["Resources"].get("CPU", 0) for n in ray.nodes()) == 4
    assert watch.killed, "no attempt was running when the first model request came"
    assert watch.busy == set(cluster["nodes"]), "the runs did not reach both nodes"
    assert on_ray[DETERMINISTIC].to_dict("records") == local[DETERMINISTIC].to_dict("records"), \
        on_ray[["instance_id", "status", "error"]].to_dict("records")
    assert set(on_ray.status) == {"completed"} and all(on_ray.input_tokens > 0)  # metered at the driver's gateway
    # every call answered was a 200; a call the killed worker left has no status and says why, and only such calls
    cut = [c for c in calls if c["status"] is None]
    assert {c["status"] for c in calls} - {None} == {200}
    assert len(cut) <= len(watch.killed) and all(c["error"] == "client disconnected" for c in cut), cut
    written = read_jsonl(run_records_path("ray", "r", tmp_path / "ray"))
    # one record each, by the driver: the killed attempt, run again by Ray, is neither lost nor written twice
    assert Counter(r["instance_id"] for r in written) == Counter(house.instance_id)


def test_a_spent_budget_stops_the_runs_on_every_node(cluster, house, tmp_path, monkeypatch):
    # the gateway reserves each call's worst case before it goes: with an output cap of one token it fits the
    # budget ($0.004: the request's bytes at $0.1 per 1M, one token at $1,000), and the first answer's output spends it
    monkeypatch.setitem(config.PRICE_OVERRIDES, config.SCRIPTED_MODEL, (0.1, 1000.0))
    monkeypatch.setitem(config.GATEWAY_OUTPUT_TOKENS, "agent", 1)
    watch = Watch(cluster["nodes"])
    frame, calls = run(house, tmp_path, "ray:auto", watch=watch, budget_usd=0.01)
    assert set(frame.status) == {"budget"}, frame[["instance_id", "status", "error"]].to_dict("records")
    assert watch.busy == set(cluster["nodes"]), "the runs did not reach both nodes"
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
