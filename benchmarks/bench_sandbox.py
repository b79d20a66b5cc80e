"""Benchmark: what the sandbox costs an agent run and a grading.

1. The whole added start (issue #51): an agent run (`node -e 0`, the gateway in reach) and a grading (`bash -c
   true`), each in a workspace of WORKSPACE_FILES files, started as run_cli starts them (`relayed`: its own
   network with the relay to the gateway, the run's own uid, its workspace and home made overlays on a tmpfs of
   the disk cap, its cgroup made and removed, its rlimits set and root given up inside, the seccomp filter, the
   watcher's last check, the mounts detached after as the folders' removal does) against the same command in
   bwrap sharing the host's network with none of that: at most AGENT_TARGET_S and GRADING_TARGET_S added (the
   median of ROUNDS paired differences, taken in turns, so a machine whose load changes weighs on both alike).
   On a miss it prints which stage took the time: each step of the host's set-up and end
   (helpers.isolation.confinement's stages; its own network and relay), what runs inside before the command
   (joining its network and cgroup, the seccomp filter, the drop), the mounts' detach.
2. Per model call: the way out (the relay, listening in the run's own network) adds at most 2 ms at the median
   and 10 ms at the 99th percentile to a small HTTP call (N_CALLS calls to a local server from inside the
   sandbox, through it against straight to the server with the host's network shared), on a fresh connection
   per call (as a client without keep-alive) and on kept-alive connections (as the agents' SDKs). A model
   call takes hundreds of milliseconds at least.

    .venv/bin/python benchmarks/bench_sandbox.py [--rounds 20] [--no-calls]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from helpers.isolation.disks import detach_mounts
from helpers.isolation.processes import remove_scratch, scratch_dir
from helpers.isolation.sandboxed_command import relayed
from helpers.isolation.sandbox import sandbox_command, unavailable_reason
from helpers.isolation.sandbox_reach import reach_relay, run_network

AGENT_TARGET_S, GRADING_TARGET_S = 0.050, 0.030  # the whole added start (issue #51)
CALL_TARGET_P50_S, CALL_TARGET_P99_S = 0.002, 0.010  # added per call
ROUNDS = 20
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


def call_times(url: str, fresh: bool, workspace: Path, home: Path) -> tuple[list[float], list[float]]:
    """Latencies of N_CALLS calls to `url` from inside the sandbox: (straight, through the relay, as a run reaches
    the gateway: in its own network), in batches taken in turns."""
    straight: list[float] = []
    relayed_: list[float] = []
    for _ in range(BATCHES):
        for reach, into in ((None, straight), (url, relayed_)):
            args = [sys.executable, "-I", "-S", "-c", CLIENT, url, str(N_CALLS // BATCHES),
                    "fresh" if fresh else "kept"]
            with run_network(reach, network=reach is None) as namespace:
                command = sandbox_command(args, workspace, home, read_only=[sys.prefix], reach=reach,
                                          network=reach is None, network_namespace=namespace)
                with reach_relay(None if namespace else reach, home):
                    into += json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    return straight, relayed_


def timed(command: list[str], reach: str | None, home: Path) -> float:
    """Wall time of one sandboxed run of `command`, its relay (if it reaches the gateway) open around it."""
    started = time.perf_counter()
    with reach_relay(reach, home):
        subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def confined_run(args: list[str], reach: str | None, workspace: Path, home: Path) -> dict[str, float]:
    """One run as run_cli starts it (`relayed`), then its folders' mounts detached (as their removal does): the
    seconds of each stage, and "total"."""
    started = time.perf_counter()
    with relayed(args, workspace, home, reach=reach) as command:
        entered = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        ran = time.perf_counter()
    ended = time.perf_counter()
    detach_mounts(workspace), detach_mounts(home)  # a run's capped disk goes with its folders: a fresh one each
    done = time.perf_counter()
    stages = {f"host: {name}": seconds for name, seconds in getattr(command, "stages", {}).items() if name != "the run"}
    other = (ended - started) - (ran - entered) - sum(stages.values())  # its network and relay, the command built
    return {**stages, "host: own network and relay, the command built": other, "inside": ran - entered,
            "host: mounts detached after": done - ended, "total": done - started}


def added_start(args: list[str], reach: str | None, workspace: Path, home: Path, rounds: int) -> dict[str, float]:
    """Medians over `rounds` rounds, each taking in turn the command in bwrap with the host's network and nothing
    else (the baseline), then confined (`relayed`): "added" is the median of the paired differences; the rest
    break it down (the host's stages, and what runs inside before the command: the time inside over the
    baseline's)."""
    plain = sandbox_command(args, workspace, home, read_only=[sys.prefix], network=True)
    rows: list[dict[str, float]] = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run(["true"], check=True)  # the machine's unit: one bare process start, now
        unit = time.perf_counter() - started
        base = timed(plain, None, home)
        confined = confined_run(args, reach, workspace, home)
        inside = confined.pop("inside") - base
        rows.append({"baseline": base, "added": confined["total"] - base, "process start": unit,
                     "inside: nsenter, the cgroup join, the seccomp filter, the drop": inside, **confined})
    return {key: statistics.median(row.get(key, 0.0) for row in rows) for key in rows[0]}


def make_files(workspace: Path, files: int) -> None:
    for i in range(files):
        folder = workspace / f"pkg{i // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"module{i}.py").write_text("x = 1\n" * 20)


def percentile(times: list[float], p: float) -> float:
    return sorted(times)[min(len(times) - 1, int(p / 100 * len(times)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--no-calls", action="store_true", help="only the start (part 1)")
    options = parser.parse_args()
    reason = unavailable_reason()
    if reason:
        print(f"no sandbox here: {reason}")
        return 1
    ok = True
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/u/agent/v1/chat/completions"
    scratch = scratch_dir("bench")  # the process's scratch: where a run's disk cap is the kernel's, as in real runs
    try:
        workspace, home = Path(scratch, "ws"), Path(scratch, "home")
        workspace.mkdir(), home.mkdir()
        make_files(workspace, WORKSPACE_FILES)
        for what, args, reach, target in (("agent run", ["node", "-e", "0"], url, AGENT_TARGET_S),
                                          ("grading", ["bash", "-c", "true"], None, GRADING_TARGET_S)):
            found = added_start(args, reach, workspace, home, options.rounds)
            hit = found["added"] <= target
            ok &= hit
            print(f"whole added start ({what}, {WORKSPACE_FILES} files, median of {options.rounds} paired rounds): "
                  f"baseline (bwrap, host's network) {found['baseline'] * 1000:.0f} ms, added "
                  f"{found['added'] * 1000:+.1f} ms (target <= {target * 1000:.0f}): {'OK' if hit else 'MISSED'}; "
                  f"a bare process start here takes {found['process start'] * 1000:.1f} ms (the added start is "
                  f"{found['added'] / found['process start']:.0f} of them)")
            if not hit:
                stages = {k: v for k, v in found.items() if k not in ("baseline", "added", "total", "process start")}
                print("  where it went (medians, ms): " + "; ".join(
                    f"{name} {seconds * 1000:.1f}" for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1])))
        if not options.no_calls:
            for fresh in (True, False):
                straight, relayed_ = call_times(url, fresh, workspace, home)
                p50 = percentile(relayed_, 50) - percentile(straight, 50)
                p99 = percentile(relayed_, 99) - percentile(straight, 99)
                ok &= p50 <= CALL_TARGET_P50_S and p99 <= CALL_TARGET_P99_S
                how = "a fresh connection each" if fresh else "a kept-alive connection per batch"
                print(f"calls ({N_CALLS}, {how}): straight p50 {percentile(straight, 50) * 1000:.2f} ms p99 "
                      f"{percentile(straight, 99) * 1000:.2f} ms; through the relay p50 "
                      f"{percentile(relayed_, 50) * 1000:.2f} ms p99 {percentile(relayed_, 99) * 1000:.2f} ms; added "
                      f"p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms (targets <= {CALL_TARGET_P50_S * 1000:.0f} "
                      f"and {CALL_TARGET_P99_S * 1000:.0f})")
    finally:
        remove_scratch(scratch)
    server.shutdown()
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("OK" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
