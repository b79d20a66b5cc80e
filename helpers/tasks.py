"""Tasks: SWE-bench Lite (or any file of SWE-bench rows), the house suite, and train/test splits.

    tasks = load_tasks("house")                                   # or "SWE-bench/SWE-bench_Lite", or a file
    train_df, test_df = split_dataset(tasks, 6, 6, strategy="by_repo", seed=0)

Every loader returns a DataFrame of task rows with SWE-bench's fields (helpers.protocols.TASK_FIELDS),
FAIL_TO_PASS / PASS_TO_PASS as lists, and `suite` ("swebench" or "house").
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from helpers import config
from helpers.workspaces import swebench_repo_path

REQUIRED_FIELDS = ("instance_id", "repo", "base_commit", "problem_statement", "patch", "test_patch",
                   "FAIL_TO_PASS", "PASS_TO_PASS")
LOCAL_SUFFIXES = (".json", ".jsonl", ".parquet")
STRATEGIES = ("random", "by_repo", "chronological")
HUB_PROBE_URL = "https://huggingface.co/api/datasets"


class OfflineError(ConnectionError):
    """The Hugging Face hub cannot be reached; point the loader at a local file instead."""


def load_tasks(source: str, *, split: str = config.SWEBENCH_SPLIT, mirrors_dir: Path | str | None = None) -> pd.DataFrame:
    """"house" -> the bundled house suite; anything else -> load_swebench(source, split)."""
    if str(source).lower() == "house":
        return load_house_suite()
    return load_swebench(source, split, mirrors_dir=mirrors_dir)


def load_house_suite(root: Path | str | None = None) -> pd.DataFrame:
    """The bundled house-conventions suite (see helpers.house_suite)."""
    from helpers.house_suite import load_house_suite as load

    return load(root)


def load_swebench(name_or_path: str = config.SWEBENCH_DATASET, split: str = config.SWEBENCH_SPLIT, *,
                  mirrors_dir: Path | str | None = None) -> pd.DataFrame:
    """SWE-bench rows from a data-set id on the Hugging Face hub, or from a local .json/.jsonl/.parquet file.

    With `mirrors_dir` (a folder of `git clone --mirror` copies named owner__name) each row gets the
    `repo_path` its workspace is cloned from. Offline, a data-set id fails at once with what to do.
    """
    path = Path(str(name_or_path)).expanduser()
    if path.suffix in LOCAL_SUFFIXES or path.exists():
        frame = read_local_tasks(path)
    else:
        frame = _read_hub(str(name_or_path), split)
    return normalize_tasks(frame, mirrors_dir=mirrors_dir)


def read_local_tasks(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"No task file at {path}: give a .json, .jsonl or .parquet file of SWE-bench rows.")
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    text = path.read_text(encoding="utf-8").lstrip()
    records = json.loads(text) if text.startswith("[") else [json.loads(line) for line in text.splitlines() if line.strip()]
    return pd.DataFrame(records)


def _hub_reachable(timeout_s: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return False
    import httpx

    try:
        httpx.head(HUB_PROBE_URL, timeout=timeout_s)
    except httpx.HTTPError:
        return False
    return True


def _read_hub(name: str, split: str) -> pd.DataFrame:
    if not _hub_reachable():
        raise OfflineError(
            f"Cannot reach the Hugging Face hub to load {name!r}. Download it where you have network "
            f"(`datasets.load_dataset({name!r}, split={split!r}).to_json('swe-bench-lite.jsonl')`) and pass the "
            "file's path instead, e.g. TASK_SOURCE='data/swe-bench-lite.jsonl'; or use TASK_SOURCE='house'."
        )
    from datasets import load_dataset

    return load_dataset(name, split=split).to_pandas()


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    return [str(v) for v in (value if value is not None else [])]


def normalize_tasks(frame: pd.DataFrame, *, mirrors_dir: Path | str | None = None) -> pd.DataFrame:
    """Check the fields and ids, decode FAIL_TO_PASS/PASS_TO_PASS, set `suite` and `repo_path`."""
    missing = [f for f in REQUIRED_FIELDS if f not in frame.columns]
    if missing:
        raise ValueError(f"The task rows lack the field(s) {missing}; SWE-bench rows need {list(REQUIRED_FIELDS)}.")
    for field in REQUIRED_FIELDS:
        empty = frame[field].isna()
        if empty.any():
            raise ValueError(f"Field {field!r} is missing on task(s) {list(frame.loc[empty, 'instance_id'])[:10]}.")
    duplicated = sorted(set(frame.loc[frame["instance_id"].duplicated(), "instance_id"]))
    if duplicated:
        raise ValueError(f"Duplicate instance_id(s) {duplicated[:10]}: each task must appear once.")
    frame = frame.copy()
    for column in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        try:
            frame[column] = frame[column].map(_as_list)
        except json.JSONDecodeError as error:
            raise ValueError(f"{column} must be a list of test ids or a JSON string of one: {error}") from None
    if "suite" not in frame.columns:
        frame["suite"] = "swebench"
    if "created_at" not in frame.columns:
        frame["created_at"] = ""
    frame["created_at"] = frame["created_at"].astype(str)
    if mirrors_dir is not None:
        frame["repo_path"] = [str(swebench_repo_path(repo, mirrors_dir)) for repo in frame["repo"]]
    return frame.reset_index(drop=True)


def select_tasks(frame: pd.DataFrame, instance_ids: Iterable[str]) -> pd.DataFrame:
    """The rows of `instance_ids`, in that order; unknown ids raise KeyError naming them."""
    ids = list(instance_ids)
    by_id = frame.set_index("instance_id", drop=False)
    unknown = [i for i in ids if i not in by_id.index]
    if unknown:
        raise KeyError(f"Unknown instance id(s) {unknown[:10]} (of {len(unknown)}); check the ids or the task source.")
    return by_id.loc[ids].reset_index(drop=True)


def split_dataset(frame: pd.DataFrame, train_size: int, test_size: int, strategy: str = "random",
                  seed: int = config.SEED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Disjoint (train, test) of exactly the asked sizes, the same for the same seed.

    random: a seeded shuffle. by_repo: no repository on both sides. chronological: within each
    repository older tasks train and newer ones test (by created_at).
    """
    _check_sizes(len(frame), train_size, test_size)
    if strategy not in STRATEGIES:
        raise ValueError(f"Unknown split strategy {strategy!r}: choose one of {list(STRATEGIES)}.")
    split = {"random": _split_random, "by_repo": _split_by_repo, "chronological": _split_chronological}[strategy]
    train, test = split(frame, train_size, test_size, seed)
    return train.reset_index(drop=True), test.reset_index(drop=True)


def _check_sizes(total: int, train_size: int, test_size: int) -> None:
    if int(train_size) < 1 or int(test_size) < 1:
        raise ValueError(f"TRAIN_SIZE and TEST_SIZE must be at least 1 (got {train_size} and {test_size}).")
    if train_size + test_size > total:
        raise ValueError(f"TRAIN_SIZE + TEST_SIZE = {train_size + test_size}, but there are only {total} tasks; "
                         "lower the sizes.")


def _split_random(frame: pd.DataFrame, train_size: int, test_size: int, seed: int):
    shuffled = frame.sample(frac=1.0, random_state=seed)
    return shuffled.iloc[:train_size], shuffled.iloc[train_size:train_size + test_size]


def _split_by_repo(frame: pd.DataFrame, train_size: int, test_size: int, seed: int):
    sizes = frame.groupby("repo").size().sample(frac=1.0, random_state=seed).sort_values(ascending=False, kind="stable")
    sides: dict[str, list[str]] = {"train": [], "test": []}
    have = {"train": 0, "test": 0}
    want = {"train": train_size, "test": test_size}
    for repo, count in sizes.items():  # biggest repos first, each to the side missing the most
        side = max(("train", "test"), key=lambda s: (want[s] - have[s]) / want[s])
        sides[side].append(repo)
        have[side] += count
    if have["train"] < train_size or have["test"] < test_size:
        raise ValueError(
            f"A by_repo split cannot give {train_size}/{test_size} tasks: the repositories divide into "
            f"{have['train']}/{have['test']} here (tasks per repository: {sizes.to_dict()}). Lower the sizes or use strategy='random'."
        )
    pick = lambda side, n: frame[frame["repo"].isin(sides[side])].sample(n=n, random_state=seed)  # noqa: E731
    return pick("train", train_size), pick("test", test_size)


def _split_chronological(frame: pd.DataFrame, train_size: int, test_size: int, seed: int):
    dated = frame.assign(_when=pd.to_datetime(frame["created_at"], errors="coerce", utc=True))
    if dated["_when"].isna().any():
        bad = list(dated.loc[dated["_when"].isna(), "instance_id"][:5])
        raise ValueError(f"A chronological split needs a created_at date on every task; missing or unreadable on {bad}.")
    dated = dated.sort_values(["repo", "_when", "instance_id"])
    # Each task's position within its repository, 0 (oldest) .. 1 (newest): train takes the lowest,
    # test the highest, so inside every repository all training tasks are older than all test tasks.
    dated["_position"] = dated.groupby("repo").cumcount() / dated.groupby("repo")["instance_id"].transform("count")
    ordered = dated.sort_values(["_position", "_when", "instance_id"], kind="stable").drop(columns=["_when", "_position"])
    return ordered.iloc[:train_size], ordered.iloc[len(ordered) - test_size:]

__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "load_tasks", "load_swebench", "load_house_suite", "split_dataset", "select_tasks", "normalize_tasks",
    "OfflineError",
]
