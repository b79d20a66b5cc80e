"""An experiment's train/test split: made once, saved (the store's split.json), reused by every later
notebook and rerun, summarised, and uploaded to Phoenix as datasets."""

from __future__ import annotations

from typing import Any

import pandas as pd

from helpers.core import config
from helpers.store.loops import load_split, save_split


def load_or_make_split(experiment: str, source: str, train_size: int, test_size: int,
                       strategy: str = "random", seed: int = config.SEED,
                       mirrors_dir: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The experiment's saved split if it has one (sizes must match), else a new one, saved.
    `mirrors_dir` locates SWE-bench repositories for the agent's workspaces (None: mirrors cloned on first use)."""
    from helpers.families.coding.tasks import load_tasks, split_dataset

    tasks = load_tasks(source, mirrors_dir=mirrors_dir)
    split = load_split(experiment)
    if split is not None:
        if (len(split["train"]), len(split["test"])) != (train_size, test_size):
            raise ValueError(
                f"Experiment {experiment!r} was split {len(split['train'])}/{len(split['test'])}, not "
                f"{train_size}/{test_size}. Use the saved sizes, or another EXPERIMENT name for a new split."
            )
        by_id = tasks.set_index("instance_id", drop=False)
        missing = [i for i in split["train"] + split["test"] if i not in by_id.index]
        if missing:
            raise ValueError(f"The saved split of {experiment!r} names tasks {source!r} does not have: {missing[:5]}")
        return (by_id.loc[split["train"]].reset_index(drop=True), by_id.loc[split["test"]].reset_index(drop=True))
    train_df, test_df = split_dataset(tasks, train_size, test_size, strategy=strategy, seed=seed)
    save_split(experiment, list(train_df["instance_id"]), list(test_df["instance_id"]), source=source,
               strategy=strategy, seed=seed)
    return train_df, test_df


def split_summary(train_df: pd.DataFrame, test_df: pd.DataFrame) -> pd.DataFrame:
    """One row per side: how many tasks and repositories, and the span of creation dates."""
    rows = []
    for side, frame in (("train", train_df), ("test", test_df)):
        dates = pd.to_datetime(frame.get("created_at"), errors="coerce", utc=True) if "created_at" in frame else None
        rows.append({"split": side, "tasks": len(frame), "repositories": frame["repo"].nunique(),
                     "oldest": dates.min() if dates is not None else None,
                     "newest": dates.max() if dates is not None else None})
    return pd.DataFrame(rows).set_index("split")


def upload_split(session: Any, experiment: str, train_df: pd.DataFrame, test_df: pd.DataFrame,
                 agent: str = config.AGENT) -> dict[str, Any] | None:
    """Both sides as Phoenix datasets ("<agent>: <experiment> train|test"); None without Phoenix."""
    if not session.phoenix_url:
        return None
    from helpers.tracking.phoenix_experiments import upload_dataset

    return {side: upload_dataset(session.phoenix_url, f"{agent}: {experiment} {side}", frame,
                                 api_key=session.phoenix_api_key)
            for side, frame in (("train", train_df), ("test", test_df))}


__all__ = ["load_or_make_split", "split_summary", "upload_split"]  # documented in CODE_APPENDIX.md
