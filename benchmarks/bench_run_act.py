"""Benchmark: run_act on N=24 tasks at W=4 workers, the scripted model adding a fixed latency per turn.

Target (issue #51): wall time <= 1.10 x ideal, where ideal = ceil(N / W) x (one task's wall time alone), both
measured in the same run. On a miss it prints where each task's worker time went (medians, alone and at W
workers): the workspace made, the agent's run (its CLI's own time, and the rest: waiting for a start-up slot, the
sandbox's set-up and end), the patch taken, the workspace removed; and the driver's gap between a worker coming
free and its next task starting.

    .venv/bin/python benchmarks/bench_run_act.py [--tasks 24 --workers 4 --latency 3.0 --startup-slots N]

Each task is two model turns (an edit, then "done"). The ideal assumes the W runs never compete for the
CPU, but a Cline CLI run burns ~3 CPU-seconds of its own (start-up, then a file-index worker), so
N runs need at least N x cpu_per_run / cores seconds whatever run_act does. The script prints that
floor: when it is above the target (few cores, fast model) no scheduling can meet the target.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import pandas as pd

from cline import run_act, runner
from helpers.engine import executors
from helpers.families.coding.family import CodingFamily
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call
from calc_tasks import BUGGY, FIXED, tasks

TARGET_RATIO = 1.10


class Stages:
    """Seconds each stage of each task's attempt took on its worker (run_attempt's steps, timed by wrapping
    them where run_attempt calls them), and when each worker started and ended each attempt."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seconds: dict[str, list[float]] = defaultdict(list)
        self.spans: dict[str, list[tuple[float, float]]] = defaultdict(list)  # worker thread -> (start, end)

    def wrap(self, module, name: str, label: str) -> None:
        def note(started: float, ended: float) -> None:
            self.seconds[label].append(ended - started)
        setattr(module, name, self._timed(getattr(module, name), note))

    def attempt(self, original):
        def note(started: float, ended: float) -> None:
            self.spans[threading.current_thread().name].append((started, ended))
        return self._timed(original, note)

    def _timed(self, original, note):
        """`original`, its start and end handed to `note` (under the lock: workers call at once)."""
        @functools.wraps(original)
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                with self.lock:
                    note(started, time.perf_counter())
        return timed

    def reset(self) -> None:
        self.seconds.clear(), self.spans.clear()

    def gaps(self) -> list[float]:
        """Per worker, the time between the end of one attempt and the start of its next."""
        return [b[0] - a[1] for spans in self.spans.values() for a, b in zip(sorted(spans), sorted(spans)[1:])]

    def summary(self, durations: list[float]) -> dict[str, float]:
        median = {k: statistics.median(v) for k, v in self.seconds.items()}
        cli = statistics.median(durations) if durations else 0.0
        return {"workspace made": median.get("workspace", 0.0), "agent CLI's own run": cli,
                "agent run besides its CLI (start-up slot, sandbox set-up and end)": median.get("agent", 0.0) - cli,
                "patch taken": median.get("patch", 0.0), "workspace removed": median.get("remove", 0.0),
                "worker's gap before its next task": statistics.median(self.gaps()) if self.gaps() else 0.0}


STAGES = Stages()


def timed_run(frame: pd.DataFrame, workers: int, url: str, results: Path,
              run_id: str) -> tuple[float, float, dict[str, float]]:
    """(wall seconds, CPU seconds per task of the Cline runs and the git calls, the median seconds of each stage)."""
    STAGES.reset()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    df = run_act(tasks=frame, run_id=run_id, workers=workers, model="scripted-dry-run", base_url=url, api_key="k",
                 evaluate=False, results_root=results, progress=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert set(df.status) == {"completed"}, df[["instance_id", "status", "error"]]
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu / len(frame), STAGES.summary(list(df.duration_s))


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
    for name, label in (("prepare_workspace", "workspace"), ("take_patch", "patch"),
                        ("remove_workspace", "remove")):
        STAGES.wrap(CodingFamily, name, label)  # the family makes, reads and removes each attempt's workspace
    STAGES.wrap(runner.ClineAgent, "run", "agent")
    executors.run_attempt = STAGES.attempt(executors.run_attempt)
    script = Script([Rule(reply=[
        Reply("Fixing.", delay_s=args.latency, tool_calls=[tool_call("editor", path="calc.py", old_text=BUGGY, new_text=FIXED)]),
        Reply("Done.", delay_s=args.latency)])])
    with tempfile.TemporaryDirectory(prefix="bench-act-") as tmp, ScriptedModelServer(script) as server:
        frame = tasks(Path(tmp), args.tasks)
        alone_runs = [timed_run(frame.head(1).assign(instance_id=f"alone-{i}"), 1, server.base_url, Path(tmp) / "r",
                                f"alone{i}") for i in range(2)]
        alone, _, alone_stages = min(alone_runs, key=lambda run: run[0])
        wall, cpu_per_task, stages = timed_run(frame, args.workers, server.base_url, Path(tmp) / "r", "bench")
    ideal = math.ceil(args.tasks / args.workers) * alone
    ratio = wall / ideal
    cores = os.cpu_count() or 1
    floor = args.tasks * cpu_per_task / cores
    print(f"latency {args.latency:.1f} s per turn, {cores} cores, startup slots {runner.STARTUP_SLOTS or cores}; load "
          f"average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"CPU per task {cpu_per_task:.2f} s; CPU floor for {args.tasks} tasks {floor:.2f} s "
          f"({'above' if floor > TARGET_RATIO * ideal else 'below'} the target's {TARGET_RATIO * ideal:.2f} s)")
    print(f"one task alone: {alone:.2f} s; {args.tasks} tasks at {args.workers} workers: {wall:.2f} s; "
          f"ideal {ideal:.2f} s; ratio {ratio:.2f} (target <= {TARGET_RATIO}): {'OK' if ratio <= TARGET_RATIO else 'MISSED'}")
    if ratio > TARGET_RATIO:
        print("  where a task's time went (medians, seconds; alone -> at "
              f"{args.workers} workers): " + "; ".join(f"{name} {alone_stages[name]:.2f} -> {stages[name]:.2f}"
                                                      for name in stages))
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
