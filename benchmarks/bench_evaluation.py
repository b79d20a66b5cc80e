"""Benchmark: evaluating one house-suite task (clone, set aside, apply, run its tests in the sandbox) takes
at most 3 s; the harness's isolated pytest start (repo_tests.BOOTSTRAP: -I -S, sys.path built, the harness-first
finder) adds at most 0.1 s to a grading against the command it replaced (PREVIOUS_COMMAND); the grade from a
channel the code under test cannot write (tripwires planted and run, the hidden tests bound read-only, the report
read through the no-follow reader) adds at most 0.3 s to an honest grading (INTEGRITY_TARGET_S), against the same
grading with no tripwire and nothing protected.

    .venv/bin/python benchmarks/bench_evaluation.py [rounds]     # rounds: each task graded that many times (3)

Prints each task's median over the rounds, then the mean and worst median, then the median of the test run
alone (one house task's named tests, in the sandbox) with the previous command and with the harness's, then an
honest grading's time with and without the integrity measures (paired rounds, in turns).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

from helpers.families.coding import evaluation, repo_tests
from helpers.families.coding.evaluation import evaluate_patch
from helpers.families.coding.git import git
from helpers.families.coding.house_suite import load_house_suite
from helpers.families.coding.tripwires import Tripwires
from helpers.families.coding.workspaces import prepare_workspace

TARGET_S = 3.0
ADDED_TARGET_S = 0.1
INTEGRITY_TARGET_S = 0.3
# The house suite's test command before one grading path (commit 15a40de): the baseline of the added cost.
PREVIOUS_COMMAND = ("PYTHONPATH= PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {python} -P -m pytest -c /dev/null --rootdir . "
                    "--confcutdir . -o \"pythonpath='$PWD' '$PWD/src'\" -p no:cacheprovider -q -rA --tb=short "
                    "--junitxml={report} -o junit_family=xunit1 {tests}")


def test_run_times(task, rounds: int, scratch: str) -> tuple[float, float, float]:
    """(median seconds of the previous command, of the harness's, median of the paired differences) running
    `task`'s named tests after its gold patch and test patch, in the sandbox, alternated round by round so that
    load on the machine falls on both alike."""
    workspace = prepare_workspace(task, scratch)
    for patch in (task["patch"], task["test_patch"]):
        git("apply", "-", cwd=workspace, input=patch)
    names = list(task["FAIL_TO_PASS"]) + list(task["PASS_TO_PASS"])
    home = repo_tests.scratch_dir("bench-grading-home")
    env = repo_tests._environment(workspace, home)
    report = home / "report.xml"
    commands = {"previous": ["bash", "-c", repo_tests._filled(PREVIOUS_COMMAND, names, report)],
                "harness": repo_tests.run_pytest_args(workspace, names, report)}
    times: dict[str, list[float]] = {name: [] for name in commands}
    try:
        for _ in range(rounds):
            for name, command in commands.items():
                started = time.perf_counter()
                out, err, _, status = repo_tests._run(command, workspace, env, home, 120, "required")
                times[name].append(time.perf_counter() - started)
                assert status == 0, out + err
    finally:
        repo_tests.remove_scratch(home)
    added = statistics.median(h - p for p, h in zip(times["previous"], times["harness"]))
    return statistics.median(times["previous"]), statistics.median(times["harness"]), added


def integrity_times(task, rounds: int) -> tuple[float, float, float]:
    """(median seconds of an honest grading of `task`'s gold patch with no tripwire and nothing protected, with
    the integrity measures, median of the paired differences), in turns."""
    plant, protect = evaluation.plant_tripwires, evaluation.protected_paths
    times: dict[bool, list[float]] = {False: [], True: []}
    try:
        for _ in range(rounds):
            for measures in (False, True):
                evaluation.plant_tripwires = plant if measures else (lambda repo, names: Tripwires())
                evaluation.protected_paths = protect if measures else (lambda paths: [])
                started = time.perf_counter()
                result = evaluate_patch(task, task["patch"])
                times[measures].append(time.perf_counter() - started)
                assert result.resolved and not result.forged, result.log
    finally:
        evaluation.plant_tripwires, evaluation.protected_paths = plant, protect
    added = statistics.median(w - o for o, w in zip(times[False], times[True]))
    return statistics.median(times[False]), statistics.median(times[True]), added


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
        previous, harness, added = test_run_times(tasks.iloc[0].to_dict(), max(20, rounds), root)
        plain, guarded, integrity = integrity_times(tasks.iloc[0].to_dict(), max(20, rounds))
    medians = {task: statistics.median(runs) for task, runs in times.items()}
    for task, median in medians.items():
        print(f"{task}: median {median:.2f} s of {rounds}")
    worst = max(medians.values())
    print(f"{len(medians)} tasks x {rounds} rounds: mean {statistics.mean(medians.values()):.2f} s, worst median "
          f"{worst:.2f} s; target <= {TARGET_S:.0f} s each: {'OK' if worst <= TARGET_S else 'MISSED'}")
    print(f"test run alone: previous command {previous:.3f} s, harness's isolated start {harness:.3f} s (median); "
          f"added {added:+.3f} s per grading (median of paired rounds); target <= {ADDED_TARGET_S} s: {'OK' if added <= ADDED_TARGET_S else 'MISSED'}")
    print(f"honest grading: without tripwires or protection {plain:.3f} s, with them {guarded:.3f} s (median); added "
          f"{integrity:+.3f} s (median of paired rounds); target <= {INTEGRITY_TARGET_S} s: "
          f"{'OK' if integrity <= INTEGRITY_TARGET_S else 'MISSED'}")
    return 0 if worst <= TARGET_S and added <= ADDED_TARGET_S and integrity <= INTEGRITY_TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
