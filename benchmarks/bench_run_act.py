"""Benchmark: run_act on N=24 tasks at W=4 workers, the scripted model adding a fixed latency per turn.

Target: wall time <= 1.25 x ideal, where ideal = ceil(N / W) x (one task's wall time alone).

    .venv/bin/python benchmarks/bench_run_act.py [--tasks 24 --workers 4 --latency 3.0 --startup-slots N]

Each task is two model turns (an edit, then "done"). The ideal assumes the W runs never compete for the
CPU, but a Cline CLI run burns ~3 CPU-seconds of its own (start-up, then a file-index worker), so
N runs need at least N x cpu_per_run / cores seconds whatever run_act does. The script prints that
floor: when it is above the target (few cores, fast model) no scheduling can meet the target.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from cline import run_act, runner
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call
from calc_tasks import BUGGY, FIXED, tasks

TARGET_RATIO = 1.25


def timed_run(frame: pd.DataFrame, workers: int, url: str, results: Path, run_id: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds per task of the Cline runs and the git calls)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    df = run_act(tasks=frame, run_id=run_id, workers=workers, model="scripted-dry-run", base_url=url, api_key="k",
                 evaluate=False, results_root=results, progress=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert set(df.status) == {"completed"}, df[["instance_id", "status", "error"]]
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu / len(frame)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--latency", type=float, default=3.0,
                        help="seconds the model takes per turn (hosted models take several; default 3)")
    parser.add_argument("--startup-slots", type=int, default=None,
                        help="Cline runs allowed to start at once (default: runner.STARTUP_SLOTS, the core count)")
    args = parser.parse_args()
    if args.startup_slots:
        runner.STARTUP_SLOTS = args.startup_slots
    script = Script([Rule(reply=[
        Reply("Fixing.", delay_s=args.latency, tool_calls=[tool_call("editor", path="calc.py", old_text=BUGGY, new_text=FIXED)]),
        Reply("Done.", delay_s=args.latency)])])
    with tempfile.TemporaryDirectory(prefix="bench-act-") as tmp, ScriptedModelServer(script) as server:
        frame = tasks(Path(tmp), args.tasks)
        alone = min(timed_run(frame.head(1).assign(instance_id=f"alone-{i}"), 1, server.base_url, Path(tmp) / "r",
                              f"alone{i}")[0] for i in range(2))
        wall, cpu_per_task = timed_run(frame, args.workers, server.base_url, Path(tmp) / "r", "bench")
    ideal = math.ceil(args.tasks / args.workers) * alone
    ratio = wall / ideal
    cores = os.cpu_count() or 1
    floor = args.tasks * cpu_per_task / cores
    print(f"latency {args.latency:.1f} s per turn, {cores} cores, startup slots {runner.STARTUP_SLOTS or cores}")
    print(f"CPU per task {cpu_per_task:.2f} s; CPU floor for {args.tasks} tasks {floor:.2f} s "
          f"({'above' if floor > TARGET_RATIO * ideal else 'below'} the target's {TARGET_RATIO * ideal:.2f} s)")
    print(f"one task alone: {alone:.2f} s; {args.tasks} tasks at {args.workers} workers: {wall:.2f} s; "
          f"ideal {ideal:.2f} s; ratio {ratio:.2f} (target <= {TARGET_RATIO}): {'OK' if ratio <= TARGET_RATIO else 'MISSED'}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
