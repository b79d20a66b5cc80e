"""Benchmark: what the sandbox costs an agent run.

1. Start-up: the sandbox adds at most 0.25 s to a run's start (median of 20 starts of `node -e 0`,
   sandboxed against direct); its own network namespace with the forwarder and the relay (the gateway
   the only address in reach) adds at most 0.1 s more, against the sandbox sharing the host's network.
2. Per model call: the relay and the forwarder add at most 2 ms at the median and 10 ms at the 99th
   percentile to a small HTTP call (N_CALLS calls to a local server from inside the sandbox, through them
   against straight to the server with the host's network shared), on a fresh connection per call (as a
   client without keep-alive) and on kept-alive connections (as the agents' SDKs). A model call takes
   hundreds of milliseconds at least.
3. Privilege and caps (helpers.isolation.confinement): an agent run (`node -e 0` with the gateway in reach) and a
   grading (`bash -c true`), each in an empty workspace and in one of WORKSPACE_FILES files, started as run_cli
   starts them (`relayed`: the run's own uid, its workspace and home made overlays on a tmpfs of the disk cap
   (as root) and handed to it and back, the mounts detached after, its cgroup made and removed, its rlimits set
   and root given up inside, the seccomp filter, the watcher's last check)
   against the same sandbox without them: at most CONFINE_TARGET_S added per run (median of STARTS, in turns).
4. The disk cap (helpers.isolation.disks, as root): a grading-shaped run in a workspace of WORKSPACE_FILES files with
   the kernel's cap (overlays on a tmpfs, detached after) against the sampled cap it replaces (the same run in
   a folder outside the scratch folder: handed over and back, walked by the watcher): at most DISK_TARGET_S more.

    .venv/bin/python benchmarks/bench_sandbox.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from helpers.isolation.disks import detach_mounts
from helpers.isolation.processes import relayed, remove_scratch, scratch_dir
from helpers.isolation.sandbox import reach_relay, sandbox_command, unavailable_reason

START_TARGET_S = 0.25
NETWORK_START_TARGET_S = 0.1
CALL_TARGET_P50_S, CALL_TARGET_P99_S = 0.002, 0.010  # added per call
STARTS = 30
CONFINE_TARGET_S = 0.25
DISK_TARGET_S = 0.02
WORKSPACE_FILES = 2000  # a mid-sized repository's checkout
N_CALLS, BATCHES = 1000, 10
# Run inside the sandbox: N calls to URL, each timed; prints the latencies (seconds) as JSON.
CLIENT = """
import http.client, json, sys, time, urllib.parse
url, n, fresh = urllib.parse.urlsplit(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "fresh"
times, connection = [], None
for _ in range(n):
    started = time.perf_counter()
    if fresh or connection is None:
        connection = http.client.HTTPConnection(url.hostname, url.port)
    connection.request("POST", url.path, body=b'{"model": "m", "messages": []}')
    connection.getresponse().read()
    times.append(time.perf_counter() - started)
    if fresh:
        connection.close()
print(json.dumps(times))
"""


class _Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the gateway
    disable_nagle_algorithm = True  # as aiohttp: else headers and body, written apart, wait on a delayed ACK

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"choices": [{"message": {"content": "ok"}}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def median_starts(variants: list[tuple[list[str], str | None, Path]]) -> list[float]:
    """Median wall time of STARTS runs of each (command, reach, home), the relay opened and closed around
    each as a run does. Taken in turns, so a machine whose load changes meanwhile weighs on all alike."""
    times: list[list[float]] = [[] for _ in variants]
    for _ in range(STARTS):
        for (command, reach, home), taken in zip(variants, times):
            started = time.perf_counter()
            with reach_relay(reach, home):
                subprocess.run(command, check=True, capture_output=True)
            taken.append(time.perf_counter() - started)
    return [statistics.median(taken) for taken in times]


def call_times(url: str, fresh: bool, workspace: Path, home: Path) -> tuple[list[float], list[float]]:
    """Latencies of N_CALLS calls to `url` from inside the sandbox: (straight, through forwarder and relay),
    in batches taken in turns."""
    straight: list[float] = []
    relayed: list[float] = []
    for _ in range(BATCHES):
        for reach, into in ((None, straight), (url, relayed)):
            args = [sys.executable, "-I", "-S", "-c", CLIENT, url, str(N_CALLS // BATCHES),
                    "fresh" if fresh else "kept"]
            command = sandbox_command(args, workspace, home, read_only=[sys.prefix], reach=reach,
                                      network=reach is None)
            with reach_relay(reach, home):
                into += json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    return straight, relayed


def confinement_costs(workspace: Path, home: Path, url: str) -> list[float]:
    """Median wall time of an agent run and a grading, each without and with privilege dropped and caps."""
    node, grading = ["node", "-e", "0"], ["bash", "-c", "true"]

    def plain(args: list[str], reach: str | None) -> None:
        with reach_relay(reach, home):
            subprocess.run(sandbox_command(args, workspace, home, read_only=[sys.prefix], reach=reach), check=True,
                           capture_output=True)

    def confined(args: list[str], reach: str | None) -> None:
        with relayed(args, workspace, home, reach=reach) as command:
            subprocess.run(command, check=True, capture_output=True)
        detach_mounts(workspace), detach_mounts(home)  # a run's capped disk goes with its folders: a fresh one each

    runs = [lambda: plain(node, url), lambda: confined(node, url), lambda: plain(grading, None),
            lambda: confined(grading, None)]
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(STARTS):
        for run, taken in zip(runs, times):
            started = time.perf_counter()
            run()
            taken.append(time.perf_counter() - started)
    return [statistics.median(taken) for taken in times]


def disk_cap_costs(files: int) -> tuple[float, float]:
    """Median wall time of a grading-shaped run (`bash -c true`, confined) with the kernel's disk cap and with the
    sampled one, each in a workspace of `files` files, in turns."""
    kernel_scratch, sampled_scratch = scratch_dir("bench"), Path(tempfile.mkdtemp(prefix="bench-sampled-"))
    pairs = []
    for root in (kernel_scratch, sampled_scratch):
        workspace, home = root / "ws", root / "home"
        workspace.mkdir(), home.mkdir()
        for i in range(files):
            (workspace / f"pkg{i // 100}").mkdir(exist_ok=True)
            (workspace / f"pkg{i // 100}" / f"module{i}.py").write_text("x = 1\n" * 20)
        pairs.append((workspace, home))
    times: list[list[float]] = [[], []]
    try:
        for _ in range(STARTS):
            for (workspace, home), taken in zip(pairs, times):
                started = time.perf_counter()
                with relayed(["bash", "-c", "true"], workspace, home) as command:
                    subprocess.run(command, check=True, capture_output=True)
                detach_mounts(workspace), detach_mounts(home)
                taken.append(time.perf_counter() - started)
    finally:
        remove_scratch(kernel_scratch), remove_scratch(sampled_scratch)
    return statistics.median(times[0]), statistics.median(times[1])


def percentile(times: list[float], p: float) -> float:
    return sorted(times)[min(len(times) - 1, int(p / 100 * len(times)))]


def main() -> int:
    reason = unavailable_reason()
    if reason:
        print(f"no sandbox here: {reason}")
        return 1
    ok = True
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/u/agent/v1/chat/completions"
    scratch = scratch_dir("bench")  # the process's scratch: where a run's disk cap is the kernel's, as in real runs
    try:
        workspace, home = Path(scratch, "ws"), Path(scratch, "home")
        workspace.mkdir(), home.mkdir()
        node = ["node", "-e", "0"]
        direct, shared, alone, reaching = median_starts([
            (node, None, home),
            (sandbox_command(node, workspace, home, read_only=[sys.prefix], network=True), None, home),
            (sandbox_command(node, workspace, home, read_only=[sys.prefix]), None, home),
            (sandbox_command(node, workspace, home, read_only=[sys.prefix], reach=url), url, home)])
        added, added_network = shared - direct, reaching - shared
        ok &= added <= START_TARGET_S and added_network <= NETWORK_START_TARGET_S
        print(f"start (node -e 0, median of {STARTS}): direct {direct * 1000:.0f} ms; sandboxed, host's network "
              f"{shared * 1000:.0f} ms (+{added * 1000:.0f} ms, target <= {START_TARGET_S * 1000:.0f}); own network "
              f"{alone * 1000:.0f} ms; own network, forwarder and relay {reaching * 1000:.0f} ms "
              f"(+{added_network * 1000:.0f} ms more than the host's network, target <= "
              f"{NETWORK_START_TARGET_S * 1000:.0f})")
        for fresh in (True, False):
            straight, relayed = call_times(url, fresh, workspace, home)
            p50 = percentile(relayed, 50) - percentile(straight, 50)
            p99 = percentile(relayed, 99) - percentile(straight, 99)
            ok &= p50 <= CALL_TARGET_P50_S and p99 <= CALL_TARGET_P99_S
            how = "a fresh connection each" if fresh else "a kept-alive connection per batch"
            print(f"calls ({N_CALLS}, {how}): straight "
                  f"p50 {percentile(straight, 50) * 1000:.2f} ms p99 {percentile(straight, 99) * 1000:.2f} ms; through "
                  f"forwarder and relay p50 {percentile(relayed, 50) * 1000:.2f} ms p99 "
                  f"{percentile(relayed, 99) * 1000:.2f} ms; added p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms "
                  f"(targets <= {CALL_TARGET_P50_S * 1000:.0f} and {CALL_TARGET_P99_S * 1000:.0f})")
        for files in (0, WORKSPACE_FILES):  # the walks that hand the folders over and back grow with the files
            for i in range(files):
                folder = workspace / f"pkg{i // 100}"
                folder.mkdir(exist_ok=True)
                (folder / f"module{i}.py").write_text("x = 1\n" * 20)
            agent, agent_confined, grading, grading_confined = confinement_costs(workspace, home, url)
            for what, before, after in (("agent run", agent, agent_confined), ("grading", grading, grading_confined)):
                ok &= after - before <= CONFINE_TARGET_S
                print(f"privilege dropped and caps ({what}, {files} files in the workspace, median of {STARTS}): "
                      f"without {before * 1000:.0f} ms, with {after * 1000:.0f} ms (+{(after - before) * 1000:.0f} "
                      f"ms, target <= {CONFINE_TARGET_S * 1000:.0f})")
    finally:
        remove_scratch(scratch)
    if os.geteuid() == 0:
        kernel, sampled = disk_cap_costs(WORKSPACE_FILES)
        ok &= kernel - sampled <= DISK_TARGET_S
        print(f"disk cap ({WORKSPACE_FILES} files, a grading-shaped run, median of {STARTS} in turns): the kernel's "
              f"{kernel * 1000:.0f} ms, sampled {sampled * 1000:.0f} ms ({(kernel - sampled) * 1000:+.0f} ms, target "
              f"<= {DISK_TARGET_S * 1000:+.0f})")
    server.shutdown()
    print("OK" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
