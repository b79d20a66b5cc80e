"""The loops of an experiment as saved: loops.jsonl records, each loop's result rows per split, and the
experiment's split (split.json).

The store is the one reader and writer of these files; the engine, analysis and the task families ask it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from helpers.store.records import (
    append_jsonl,
    experiment_dir,
    loops_path,
    read_jsonl,
    split_results_path,
    write_csv,
    write_json,
)

LIST_COLUMNS = ("failed_tests", "FAIL_TO_PASS", "PASS_TO_PASS", "set_aside", "suspect")  # cells saved as JSON lists


def loop_records(experiment: str, results_root: Any = None) -> list[dict[str, Any]]:
    """The finished loops' records (loops.jsonl), in loop order."""
    return sorted(read_jsonl(loops_path(experiment, results_root)), key=lambda r: r["loop"])


def completed_loops(experiment: str, results_root: Any = None) -> dict[int, dict[str, Any]]:
    """loop number -> its record, for the loops already finished."""
    return {r["loop"]: r for r in loop_records(experiment, results_root)}


def finished_experiments(results_root: Any = None) -> list[str]:
    """The experiments with at least one finished loop, the most recently finished first (by their
    loops.jsonl's modification time): what a results notebook can read."""
    from pathlib import Path

    from helpers.core import config

    root = Path(results_root or config.results_root())
    found = [path for path in root.glob("*/loops.jsonl") if path.is_file() and path.stat().st_size]
    return [path.parent.name for path in sorted(found, key=lambda path: path.stat().st_mtime, reverse=True)]


def resolve_experiment(
    experiment: str | None, preferred: tuple[str, ...] = ("quickstart", "quickstart-dry-run"), results_root: Any = None
) -> str:
    """The experiment a results notebook reads: `experiment` when given; else the first of `preferred` that
    has a finished loop (the quickstart's, real before scripted), else the most recently finished one.
    Raises ValueError naming the experiments that exist when the one asked has no finished loop, or none has."""
    finished = finished_experiments(results_root)
    if experiment is None:
        chosen = next((name for name in preferred if name in finished), finished[0] if finished else None)
        if chosen is None:
            raise ValueError(
                "No experiment has a finished loop yet: run the quickstart (make quickstart) or "
                "02_optimize_cline_act first."
            )
        return chosen
    if experiment not in finished:
        listed = ", ".join(finished[:10]) or "none yet"
        raise ValueError(
            f"Experiment {experiment!r} has no finished loop. Experiments with results: {listed}. "
            "Set EXPERIMENT to one of them, or None for the quickstart's."
        )
    return experiment


def save_loop(experiment: str, record: dict[str, Any], rows: dict[str, pd.DataFrame], results_root: Any = None) -> None:
    """A finished loop: each split's rows (train_results_<loop>.csv, ...), then its record (loops.jsonl),
    last, so that a loop counts as finished only once everything of it is on disk."""
    for split, frame in rows.items():
        write_csv(frame, split_results_path(experiment, split, record["loop"], results_root))
    append_jsonl(loops_path(experiment, results_root), record)


def load_results(experiment: str, split: str, loop: int, results_root: Any = None) -> pd.DataFrame:
    """A loop's saved rows of one split, list cells decoded; FileNotFoundError naming the file when missing."""
    import json

    path = split_results_path(experiment, split, loop, results_root)
    if not path.exists():
        raise FileNotFoundError(f"No {split} results for loop {loop} of {experiment!r} at {path}.")
    frame = pd.read_csv(path, keep_default_na=False)
    for column in LIST_COLUMNS:
        if column in frame:
            frame[column] = frame[column].map(
                lambda v: json.loads(v) if isinstance(v, str) and v.startswith("[") else v
            )
    return frame


def save_split(
    experiment: str, train_ids: list[str], test_ids: list[str], results_root: Any = None, **how: Any
) -> None:
    """Which tasks are on which side (split.json; `how` holds "validation" ids, source, strategy, seed), so
    later notebooks and reruns use the same split."""
    write_json(experiment_dir(experiment, results_root) / "split.json", {"train": train_ids, "test": test_ids, **how})


def load_split(experiment: str, results_root: Any = None) -> dict[str, Any] | None:
    """The experiment's saved split ({"train": ids, "validation": ids, "test": ids, "source", ...}), or None
    (splits saved before validation existed have no "validation")."""
    import json

    path = experiment_dir(experiment, results_root) / "split.json"
    return json.loads(path.read_text()) if path.exists() else None


def loop_rows(experiment: str, split: str, loop: int, results_root: Any = None) -> pd.DataFrame | None:
    """A finished loop's saved rows of one split, or None when it has none."""
    path = split_results_path(experiment, split, loop, results_root)
    return pd.read_csv(path, keep_default_na=False) if path.exists() else None


def save_one_test(experiment: str, record: dict[str, Any], results_root: Any = None) -> None:
    """The one test's record (one_test.json): its design, order and rulesets declared before its first run,
    then where it stopped and why (helpers.engine.one_test)."""
    write_json(experiment_dir(experiment, results_root) / "one_test.json", record)


def load_one_test(experiment: str, results_root: Any = None) -> dict[str, Any] | None:
    """The one test's record, or None when the experiment ran none (its loops ran the test split instead)."""
    import json

    path = experiment_dir(experiment, results_root) / "one_test.json"
    return json.loads(path.read_text()) if path.exists() else None


def save_one_test_rows(experiment: str, side: str, frame: pd.DataFrame, results_root: Any = None) -> None:
    """The one test's rows of one side ("start" or "kept"), the tasks it ran, in its order (one_test_<side>.csv)."""
    write_csv(frame, experiment_dir(experiment, results_root) / f"one_test_{side}.csv")


def one_test_rows(experiment: str, side: str, results_root: Any = None) -> pd.DataFrame | None:
    """The one test's rows of one side, or None when it ran none."""
    path = experiment_dir(experiment, results_root) / f"one_test_{side}.csv"
    return pd.read_csv(path, keep_default_na=False) if path.exists() else None


def kept_version(experiment: str, before_loop: int | None = None, results_root: Any = None) -> Any:
    """The version kept so far (helpers.stats.selection.Choice: version, how, candidates) from the finished
    loops' validation rows, each version by its first measurement; None when no loop has finished.
    `before_loop`: only loops before it."""
    from helpers.stats.selection import choose_on_validation

    done = [r for r in loop_records(experiment, results_root) if before_loop is None or r["loop"] < before_loop]
    if not done:
        return None
    measured, seen = [], set()
    for record in done:
        version = record["ruleset_version"]
        rows = loop_rows(experiment, "val", record["loop"], results_root)
        if version in seen or rows is None:
            continue
        seen.add(version)
        measured.append((version, record["loop"], rows))
    return choose_on_validation(measured, done[0]["ruleset_version"], done[-1]["ruleset_version"])


__all__ = [
    "loop_records",
    "completed_loops",
    "finished_experiments",
    "resolve_experiment",
    "save_loop",
    "load_results",
    "save_split",
    "load_split",
    "loop_rows",
    "kept_version",
    "save_one_test",
    "load_one_test",
    "save_one_test_rows",
    "one_test_rows",
]  # documented in CODE_APPENDIX.md
