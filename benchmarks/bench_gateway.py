"""Benchmark: what the model gateway adds to a streaming call, against the scripted model server.

In one run, the same client calls the scripted server straight and through the gateway:
- latency per call, one call at a time (direct and gateway calls alternate): p50, p99, and the p50 of
  the per-pair difference, the overhead;
- 64 concurrent streaming calls: throughput (calls/s) and p50/p99 latency of each path;
- every stream checked: the content reassembled in order, as many events as the direct answer, [DONE] last.
The server and the gateway run in processes of their own, as in use (agents are other processes), so
the load generator does not share their interpreter. The gateway is held as a session holds it: a budget (each call
reserved at its worst case, priced), the run's model only, each concurrent client a token of its own (a token's
calls at once are capped), every request screened by the allow-list and forwarded as the gateway serialises it.

Goal: p50 overhead <= 5 ms; no lost or reordered chunks.

    .venv/bin/python benchmarks/bench_gateway.py
    .venv/bin/python benchmarks/bench_gateway.py --calls 200 --concurrency 64 --rounds 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parent.parent
TARGET_OVERHEAD_MS = 5.0
# 400 numbered words, so a lost or reordered chunk changes the reassembled text.
CONTENT = " ".join(f"w{i:04d}" for i in range(400))

SERVER = f"""
import json, sys
from helpers.llm.scripted_server import Reply, Script, ScriptedModelServer
server = ScriptedModelServer(Script(default=Reply({CONTENT!r}))).start()
print(json.dumps({{"url": server.base_url}}), flush=True)
sys.stdin.read()
"""

MODEL = "gpt-4.1"  # priced: every call's reservation is priced, as in a real run
GATEWAY = f"""
import json, sys
from helpers.llm.gateway import Gateway, Upstream
gateway = Gateway({{"scripted": Upstream(sys.argv[1], "sk-bench-key", "openai-compatible")}}, concurrency=1024,
                  budget_usd=1e6, models={{"scripted": [{MODEL!r}]}}).start()
tokens = [gateway.issue_token("scripted", role="agent", task=f"t{{i}}") for i in range(int(sys.argv[2]))]
print(json.dumps({{"url": gateway.url_for("scripted"), "tokens": tokens}}), flush=True)
sys.stdin.read()
"""


def start(code: str, *args: str) -> tuple[subprocess.Popen, dict]:
    """A child process running `code`; returns it with the JSON line it printed when ready."""
    child = subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    return child, json.loads(child.stdout.readline())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def check_stream(body: bytes) -> str | None:
    """None when the stream is whole and in order, else what is wrong."""
    events = [e[len(b"data: "):] for e in body.split(b"\n\n") if e.startswith(b"data: ")]
    if not events or events[-1] != b"[DONE]":
        return "no [DONE] at the end"
    text = "".join((c["choices"][0]["delta"].get("content") or "") for c in map(json.loads, events[:-1])
                   if c.get("choices"))
    return None if text == CONTENT else "content lost or reordered"


async def one_call(session: aiohttp.ClientSession, url: str, key: str) -> tuple[float, bytes]:
    body = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "go"}]}
    started = time.perf_counter()
    async with session.post(url + "/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}) as answer:
        assert answer.status == 200, answer.status
        data = b"".join([chunk async for chunk in answer.content.iter_any()])
    return time.perf_counter() - started, data


async def sequential(session, direct, through, calls: int) -> tuple[list[float], list[float], list[bytes]]:
    plain, proxied, bodies = [], [], []
    for _ in range(calls):
        seconds, body = await one_call(session, *direct)
        plain.append(seconds)
        bodies.append(body)
        seconds, body = await one_call(session, *through)
        proxied.append(seconds)
        bodies.append(body)
    return plain, proxied, bodies


async def concurrent(session, target, concurrency: int, rounds: int) -> tuple[float, list[float], list[bytes]]:
    """(calls per second, latencies, bodies) of concurrency x rounds calls, `concurrency` at a time, each of the
    `concurrency` clients with a key of its own (`target`: url and keys)."""
    url, keys = target
    started = time.perf_counter()
    results = []
    for _ in range(rounds):
        results += await asyncio.gather(*(one_call(session, url, keys[i % len(keys)]) for i in range(concurrency)))
    elapsed = time.perf_counter() - started
    return len(results) / elapsed, [r[0] for r in results], [r[1] for r in results]


async def measure(direct, through, calls: int, concurrency: int, rounds: int) -> dict:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
        for url, keys in (direct, through):  # warm both paths (connections, imports)
            await one_call(session, url, keys[0])
        plain, proxied, bodies = await sequential(session, (direct[0], direct[1][0]), (through[0], through[1][0]), calls)
        direct_rate, direct_lat, direct_bodies = await concurrent(session, direct, concurrency, rounds)
        gateway_rate, gateway_lat, gateway_bodies = await concurrent(session, through, concurrency, rounds)
    checked = bodies + direct_bodies + gateway_bodies
    event_counts = {body.count(b"\n\ndata: ") for body in checked}
    faults = [fault for fault in map(check_stream, checked) if fault]
    pairs = [p - d for d, p in zip(plain, proxied)]
    return {
        "sequential": {"direct_p50_ms": percentile(plain, 0.5) * 1e3, "direct_p99_ms": percentile(plain, 0.99) * 1e3,
                       "gateway_p50_ms": percentile(proxied, 0.5) * 1e3,
                       "gateway_p99_ms": percentile(proxied, 0.99) * 1e3,
                       "overhead_p50_ms": statistics.median(pairs) * 1e3,
                       "overhead_p99_ms": percentile(pairs, 0.99) * 1e3},
        f"concurrent_{concurrency}": {
            "direct_calls_per_s": direct_rate, "gateway_calls_per_s": gateway_rate,
            "direct_p50_ms": percentile(direct_lat, 0.5) * 1e3, "direct_p99_ms": percentile(direct_lat, 0.99) * 1e3,
            "gateway_p50_ms": percentile(gateway_lat, 0.5) * 1e3,
            "gateway_p99_ms": percentile(gateway_lat, 0.99) * 1e3},
        "streams_checked": len(checked), "faulty_streams": len(faults), "event_counts_seen": sorted(event_counts),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200, help="sequential calls per path")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=10, help="batches of --concurrency calls per path")
    args = parser.parse_args()
    server, served = start(SERVER)
    gateway, gate = start(GATEWAY, served["url"], str(args.concurrency))
    try:
        result = asyncio.run(measure((served["url"], ["sk-bench-key"]), (gate["url"], gate["tokens"]),
                                     args.calls, args.concurrency, args.rounds))
    finally:
        for child in (gateway, server):
            child.stdin.close()
            child.terminate()
            child.wait(timeout=10)
    print(json.dumps(result, indent=2))
    overhead = result["sequential"]["overhead_p50_ms"]
    ok = overhead <= TARGET_OVERHEAD_MS and result["faulty_streams"] == 0 and len(result["event_counts_seen"]) == 1
    print(f"p50 overhead {overhead:.2f} ms (goal <= {TARGET_OVERHEAD_MS} ms), "
          f"{result['faulty_streams']} faulty of {result['streams_checked']} streams: {'OK' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
