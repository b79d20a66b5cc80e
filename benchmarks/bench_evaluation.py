"""Benchmark: evaluating one house-suite task (clone, apply, run its tests) takes at most 3 s.

    .venv/bin/python benchmarks/bench_evaluation.py
"""

from __future__ import annotations

import sys
import tempfile
import time

from helpers.families.coding.evaluation import evaluate_patch
from helpers.families.coding.house_suite import load_house_suite

TARGET_S = 3.0


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as root:
        tasks = load_house_suite(root)
        times = []
        for _, row in tasks.iterrows():
            started = time.perf_counter()
            result = evaluate_patch(row, row["patch"])
            times.append(time.perf_counter() - started)
            assert result.resolved, result.log
            print(f"{row['instance_id']}: {times[-1]:.2f} s")
    print(f"{len(times)} tasks: mean {sum(times) / len(times):.2f} s, max {max(times):.2f} s; "
          f"target <= {TARGET_S:.0f} s each: {'OK' if max(times) <= TARGET_S else 'MISSED'}")
    return 0 if max(times) <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
