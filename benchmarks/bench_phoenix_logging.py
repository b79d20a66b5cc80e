"""Benchmark: log one loop of 300 tasks (300 runs, 2 evaluations each) to a local Phoenix.

Target: <= 15 s for the logging call (the server's start-up is not counted).

    .venv/bin/python benchmarks/bench_phoenix_logging.py            # starts a Phoenix in a temp dir
    .venv/bin/python benchmarks/bench_phoenix_logging.py --url http://127.0.0.1:6006 --tasks 300
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid

import pandas as pd

from helpers.tracking.phoenix_experiments import WORKERS, log_experiment_to_phoenix, upload_dataset
from helpers.tracking.phoenix_server import PhoenixServer
from helpers.store.records import ruleset_sha

TARGET_S = 15.0


def synthetic_results(n: int) -> pd.DataFrame:
    """n judged run_act rows, half passing, with SWE-bench-sized text fields."""
    return pd.DataFrame({
        "instance_id": [f"bench__repo-{i}" for i in range(n)],
        "repo": [f"org/repo{i % 5}" for i in range(n)],
        "problem_statement": [f"Issue {i}: " + "the widget breaks when given an empty list. " * 20 for i in range(n)],
        "ground_truth_patch": ["diff --git a/x.py b/x.py\n" + "+fixed line\n" * 30] * n,
        "output": ["diff --git a/x.py b/x.py\n" + "+attempted line\n" * 30] * n,
        "mode": ["act"] * n,
        "status": ["completed"] * n,
        "error": [""] * n,
        "pass_or_fail": ["pass" if i % 2 else "fail" for i in range(n)],
        "eval_error": [""] * n,
        "failed_tests": [[] if i % 2 else ["tests/test_x.py::test_empty"] for i in range(n)],
        "iterations": [7] * n,
        "input_tokens": [12000] * n,
        "output_tokens": [900] * n,
        "cost_usd": [0.031] * n,
        "duration_s": [95.0] * n,
        "run_id": ["train_0"] * n,
        "ruleset_sha": [ruleset_sha("- [R1] Add a changelog entry.\n")] * n,
        "correctness": ["correct" if i % 2 else "incorrect" for i in range(n)],
        "explanation": ["The patch handles the empty list but skips the changelog entry. " * 5] * n,
        "judge_error": [""] * n,
        "judge_cost_usd": [0.002] * n,
    })


def bench(url: str, tasks: int, workers: int) -> float:
    df = synthetic_results(tasks)
    name = f"bench-{uuid.uuid4().hex[:8]}"
    dataset = upload_dataset(url, name, df)
    start = time.perf_counter()
    result = log_experiment_to_phoenix(hostname=url, api_key=None, dataset_obj=dataset, experiment_name="Train 0",
                                       experiment_df=df, metadata={"loop": 0, "bench": True},
                                       experiment=name, workers=workers)
    elapsed = time.perf_counter() - start
    assert result.logged and result.runs_created == tasks and result.evaluations_created == 2 * tasks, result
    again = time.perf_counter()
    repeat = log_experiment_to_phoenix(hostname=url, api_key=None, dataset_obj=dataset, experiment_name="Train 0",
                                       experiment_df=df, metadata={"loop": 0, "bench": True},
                                       experiment=name, workers=workers)
    assert repeat.runs_created == 0 and repeat.evaluations_created == 0, repeat
    print(f"logged {tasks} runs + {2 * tasks} evaluations in {elapsed:.2f} s "
          f"({3 * tasks / elapsed:.0f} requests/s, {workers} workers); target <= {TARGET_S:.0f} s: "
          f"{'OK' if elapsed <= TARGET_S else 'MISSED'}")
    print(f"re-logging the same loop (finds everything, adds nothing): {time.perf_counter() - again:.2f} s")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="an already running Phoenix (default: start one in a temp dir)")
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--workers", type=int, default=WORKERS)
    args = parser.parse_args()
    if args.url:
        elapsed = bench(args.url, args.tasks, args.workers)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-phoenix-") as tmp:
            started = time.perf_counter()
            with PhoenixServer(working_dir=tmp, start_timeout_s=180) as server:
                print(f"Phoenix up at {server.url} in {time.perf_counter() - started:.1f} s (not counted)")
                elapsed = bench(server.url, args.tasks, args.workers)
    return 0 if elapsed <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
