"""An experiment's train/validation/test split: made once, saved (the store's split.json), reused by every later
notebook and rerun, summarised, and uploaded to Phoenix as datasets."""

from __future__ import annotations

from typing import Any

import pandas as pd

from helpers.core import config
from helpers.core.protocols import RunContext, WorkspaceFamily
from helpers.families.registry import default_family
from helpers.store.loops import load_split, save_split


def load_or_make_split(
    experiment: str,
    source: str,
    train_size: int,
    test_size: int,
    strategy: str = "random",
    seed: int = config.SEED,
    mirrors_dir: str | None = None,
    val_size: int | None = None,
    *,
    family: WorkspaceFamily | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(train, validation, test): the experiment's saved split if it has one (sizes must match), else a new
    one, saved. `train_size` tasks form the train pool, of which `val_size` (None: the saved size, or a
    third of the pool, rounded down, for a new split) are the validation side: they decide which ruleset version is kept
    and the optimizer never sees them. `mirrors_dir` locates SWE-bench repositories for the agent's
    workspaces (None: mirrors cloned on first use). `family` loads and splits the tasks (None: the default
    family, helpers.families.registry)."""
    family = family or default_family()
    tasks = family.load_tasks(source, mirrors_dir=mirrors_dir)
    split = load_split(experiment)
    if split is not None:
        saved = (
            len(split["train"]) + len(split.get("validation", [])),
            len(split.get("validation", [])),
            len(split["test"]),
        )
        if (saved[0], saved[2]) != (train_size, test_size) or val_size not in (None, saved[1]):
            raise ValueError(
                f"Experiment {experiment!r} was split {saved[0]} train (of which {saved[1]} validation) / {saved[2]} "
                f"test, not {train_size} ({val_size}) / {test_size}. Use the saved sizes (VAL_SIZE=None keeps the "
                "saved one), or another EXPERIMENT name for a new split."
            )
        by_id = tasks.set_index("instance_id", drop=False)
        sides = [split["train"], split.get("validation", []), split["test"]]
        missing = [i for side in sides for i in side if i not in by_id.index]
        if missing:
            raise ValueError(f"The saved split of {experiment!r} names tasks {source!r} does not have: {missing[:5]}")
        return tuple(by_id.loc[side].reset_index(drop=True) for side in sides)
    val_size = _val_size(train_size, val_size)
    pool, test_df = family.split_tasks(tasks, train_size, test_size, strategy, seed)
    train_df, val_df = carve_validation(pool, val_size, strategy, seed)
    save_split(
        experiment,
        list(train_df["instance_id"]),
        list(test_df["instance_id"]),
        source=source,
        strategy=strategy,
        seed=seed,
        validation=list(val_df["instance_id"]),
    )
    return train_df, val_df, test_df


def _val_size(train_size: int, val_size: int | None) -> int:
    """The validation side's size, checked. By default a third of the pool, rounded down (training keeps the
    larger share: the optimizer needs it more), and at least one task when the pool has two or more; a pool
    of one task has no validation side."""
    if val_size is None:
        return max(1, int(train_size * config.VAL_FRACTION)) if train_size > 1 else 0
    if isinstance(val_size, bool) or not isinstance(val_size, int) or not 0 <= val_size < train_size:
        raise ValueError(
            f"val_size must be a whole number from 0 to train_size - 1 ({train_size - 1}): the "
            f"validation tasks come out of the train pool, and one must be left to learn from; "
            f"got {val_size!r}."
        )
    return val_size


def carve_validation(pool: pd.DataFrame, val_size: int, strategy: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, validation) out of the train pool: the newest `val_size` tasks when the split is chronological
    (closest to the test period), else a seeded sample."""
    if val_size == 0:
        return pool.reset_index(drop=True), pool.iloc[:0].reset_index(drop=True)
    if strategy == "chronological" and "created_at" in pool:
        order = pd.to_datetime(pool["created_at"], errors="coerce", utc=True).sort_values(kind="stable").index
        val_index = list(order[-val_size:])
    else:
        val_index = list(pool.sample(n=val_size, random_state=seed).index)
    return pool.drop(index=val_index).reset_index(drop=True), pool.loc[val_index].reset_index(drop=True)


def split_summary(train_df: pd.DataFrame, test_df: pd.DataFrame, val_df: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per side: how many tasks and repositories, the tasks per repository ("house/ledger 2, house/rows 2"),
    and the span of creation dates."""
    rows = []
    sides = (("train", train_df), ("validation", val_df), ("test", test_df))
    for side, frame in ((side, frame) for side, frame in sides if frame is not None):
        dates = pd.to_datetime(frame.get("created_at"), errors="coerce", utc=True) if "created_at" in frame else None
        per_repo = frame["repo"].value_counts().sort_index() if len(frame) else pd.Series(dtype=int)
        rows.append(
            {
                "split": side,
                "tasks": len(frame),
                "repositories": len(per_repo),
                "per repository": ", ".join(f"{repo} {count}" for repo, count in per_repo.items()),
                "oldest": dates.min() if dates is not None else None,
                "newest": dates.max() if dates is not None else None,
            }
        )
    return pd.DataFrame(rows).set_index("split")


def validation_note(train_df: pd.DataFrame, val_df: pd.DataFrame | None) -> str:
    """What the validation side does in this split, in one sentence; without one (VAL_SIZE=0, or a pool of
    one task), what that costs: the version kept is the latest, not one chosen by data."""
    if val_df is not None and len(val_df):
        return (
            f"Validation: {len(val_df)} of the pool's {len(train_df) + len(val_df)} tasks decide which ruleset "
            "version is kept; the optimizer never sees them."
        )
    tasks = f"{len(train_df)} train task{'' if len(train_df) == 1 else 's'}"
    return (
        f"No validation side ({tasks}, none held out): the version kept is simply the "
        "latest, not one chosen by data, and the final test compares it with no rules. Give VAL_SIZE (at "
        "least 1, with a pool of 2 or more) to choose on held-out tasks."
    )


def upload_split(
    session: RunContext,
    experiment: str,
    train_df: pd.DataFrame,
    test_df: pd.DataFrame,
    agent: str = config.AGENT,
    val_df: pd.DataFrame | None = None,
) -> dict[str, Any] | None:
    """Every side as a Phoenix dataset ("<agent>: <experiment> train|val|test"); None without Phoenix."""
    if not session.phoenix_url:
        return None
    from helpers.tracking.phoenix_experiments import upload_dataset

    return {
        side: upload_dataset(
            session.phoenix_url, f"{agent}: {experiment} {side}", frame, api_key=session.phoenix_api_key
        )
        for side, frame in (("train", train_df), ("val", val_df), ("test", test_df))
        if frame is not None and len(frame)
    }


__all__ = [
    "load_or_make_split",
    "carve_validation",
    "split_summary",
    "validation_note",
    "upload_split",
]  # documented in CODE_APPENDIX.md
