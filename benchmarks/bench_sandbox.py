"""Benchmark: the sandbox adds at most 0.25 s to an agent run's start (median of 20 starts of `node -e 0`,
sandboxed against direct).

    .venv/bin/python benchmarks/bench_sandbox.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from helpers.core.sandbox import sandbox_command, unavailable_reason

TARGET_S = 0.25
STARTS = 20


def median_start(command: list[str]) -> float:
    times = []
    for _ in range(STARTS):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    reason = unavailable_reason()
    if reason:
        print(f"no sandbox here: {reason}")
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as scratch:
        workspace, home = Path(scratch, "ws"), Path(scratch, "home")
        workspace.mkdir(), home.mkdir()
        direct = median_start(["node", "-e", "0"])
        boxed = median_start(sandbox_command(["node", "-e", "0"], workspace, home, read_only=[sys.prefix]))
    added = boxed - direct
    print(f"node -e 0: direct {direct * 1000:.0f} ms, sandboxed {boxed * 1000:.0f} ms (median of {STARTS}); "
          f"added {added * 1000:.0f} ms; target <= {TARGET_S * 1000:.0f} ms: {'OK' if added <= TARGET_S else 'MISSED'}")
    return 0 if added <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
