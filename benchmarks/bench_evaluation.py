"""Benchmark: evaluating one house-suite task (clone, set aside, apply, run its tests in the sandbox) takes
at most 3 s.

    .venv/bin/python benchmarks/bench_evaluation.py [rounds]     # rounds: each task graded that many times (3)

Prints each task's median over the rounds, then the mean and worst median.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

from helpers.families.coding.evaluation import evaluate_patch
from helpers.families.coding.house_suite import load_house_suite

TARGET_S = 3.0


def main(rounds: int = 3) -> int:
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as root:
        tasks = load_house_suite(root)
        evaluate_patch(tasks.iloc[0], tasks.iloc[0]["patch"])  # warm-up: the sandbox probe, first imports
        times: dict[str, list[float]] = {row["instance_id"]: [] for _, row in tasks.iterrows()}
        for _ in range(rounds):
            for _, row in tasks.iterrows():
                started = time.perf_counter()
                result = evaluate_patch(row, row["patch"])
                times[row["instance_id"]].append(time.perf_counter() - started)
                assert result.resolved, result.log
    medians = {task: statistics.median(runs) for task, runs in times.items()}
    for task, median in medians.items():
        print(f"{task}: median {median:.2f} s of {rounds}")
    worst = max(medians.values())
    print(f"{len(medians)} tasks x {rounds} rounds: mean {statistics.mean(medians.values()):.2f} s, worst median "
          f"{worst:.2f} s; target <= {TARGET_S:.0f} s each: {'OK' if worst <= TARGET_S else 'MISSED'}")
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
