"""Benchmark: the same N=24 house tasks (the real Cline CLI, the scripted model, the local evaluator) run with
executor="local" (threads) and executor="ray" (a Ray started on this machine), W runs at a time each.

    .venv/bin/python benchmarks/bench_executors.py [--tasks 24 --workers 2]

Reports each executor's wall time, and Ray's overhead per run: (ray - local) / N. Ray's start-up (a local
Ray instance, ~5-10 s) is timed apart, since a cluster is started once for many runs. On one machine Ray can
only cost: what it buys is more machines (docs/cluster.md has the paper calculation).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.app.session import open_session  # noqa: E402
from helpers.core.registry import make_agent  # noqa: E402
from helpers.engine.runs import run_tasks  # noqa: E402
from helpers.families.coding.tasks import load_house_suite  # noqa: E402


def timed(tasks, executor: str, workers: int, results: Path) -> tuple[float, list[str]]:
    with open_session(dry_run=True, phoenix=False, dry_run_tasks=tasks) as session:
        agent = make_agent("cline", **session.agent_kwargs())
        started = time.perf_counter()
        frame = run_tasks(tasks, agent, run_id=executor.replace(":", "_"), experiment="bench-executors",
                          results_root=results, gateway=session.gateway, executor=executor, workers=workers,
                          progress=False)
        return time.perf_counter() - started, sorted(frame.status)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    house = load_house_suite()
    tasks = house.sample(n=args.tasks, replace=args.tasks > len(house), random_state=0).reset_index(drop=True)
    tasks["instance_id"] = [f"{row}-{i}" for i, row in enumerate(tasks["instance_id"])]  # unique, repeats allowed
    with tempfile.TemporaryDirectory() as tmp:
        local, local_status = timed(tasks, "local", args.workers, Path(tmp))
        import ray

        started = time.perf_counter()
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
        start_up = time.perf_counter() - started
        try:
            on_ray, ray_status = timed(tasks, "ray", args.workers, Path(tmp))
        finally:
            ray.shutdown()
    print(f"N={args.tasks} house tasks, {args.workers} at a time, {os.cpu_count()} cores")
    print(f"  local (threads): {local:7.1f} s wall, {local / args.tasks:5.2f} s per run   statuses {set(local_status)}")
    print(f"  ray (local):     {on_ray:7.1f} s wall, {on_ray / args.tasks:5.2f} s per run   statuses {set(ray_status)}")
    print(f"  Ray start-up {start_up:.1f} s (once per cluster); overhead per run {(on_ray - local) / args.tasks:+.2f} s")
    return 0 if local_status == ray_status else 1


if __name__ == "__main__":
    sys.exit(main())
