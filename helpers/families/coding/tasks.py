"""Tasks: SWE-bench Lite (or any file of SWE-bench rows), the house suite, and train/test splits.

    tasks = load_tasks("house")                                   # or "SWE-bench/SWE-bench_Lite", or a file
    train_df, test_df = split_dataset(tasks, 6, 6, strategy="by_repo", seed=0)

Every loader returns a DataFrame of task rows with SWE-bench's fields (helpers.core.protocols.TASK_FIELDS),
FAIL_TO_PASS / PASS_TO_PASS as lists, and `suite` ("swebench" or "house").
"""

from __future__ import annotations

import ast
import json
import numbers
import os
import re
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from helpers.core import config
from helpers.families.coding.workspaces import swebench_repo_path

REQUIRED_FIELDS = (
    "instance_id",
    "repo",
    "base_commit",
    "problem_statement",
    "patch",
    "test_patch",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
)
LOCAL_SUFFIXES = (".json", ".jsonl", ".parquet", ".csv")
SOURCES = (
    "TASK_SOURCE takes 'house', 'mined:<experiment>', a Hugging Face data-set id 'owner/name', "
    "or a .json, .jsonl, .parquet or .csv file of SWE-bench rows"
)
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")  # owner/name, as the hub spells data-set ids
FILE_SUFFIX = re.compile(r"\.[A-Za-z]\w*")  # .csv, .jsonl: a file; "-v1.1" in a data-set name is not
SHOWN_CHARS = 80  # of a bad value quoted in an error
STRATEGIES = ("random", "by_repo", "chronological")
HUB_PROBE_URL = "https://huggingface.co/api/datasets"


class OfflineError(ConnectionError):
    """The Hugging Face hub cannot be reached; point the loader at a local file instead."""


def load_tasks(
    source: str, *, split: str = config.SWEBENCH_SPLIT, mirrors_dir: Path | str | None = None
) -> pd.DataFrame:
    """ "house" -> the bundled house suite; "mined:<experiment>" -> the tasks mined from a team's repository
    for that experiment (helpers.families.coding.mining); anything else -> load_swebench(source, split)."""
    if str(source).lower() == "house":
        return load_house_suite()
    if str(source).startswith("mined:"):
        return load_mined_tasks(str(source)[len("mined:") :])
    return load_swebench(source, split, mirrors_dir=mirrors_dir)


def load_mined_tasks(experiment: str, results_root: Path | str | None = None) -> pd.DataFrame:
    """The tasks mined from a team's repository for `experiment` (helpers.families.coding.mining), or one
    clear error saying to mine them first."""
    from helpers.families.coding.mining import mined_tasks_path

    path = mined_tasks_path(experiment, results_root)
    if not path.exists() or not path.stat().st_size:
        raise FileNotFoundError(
            f"No mined tasks at {path}: mine them first (mine_repository(repo, {experiment!r}), "
            "or the notebook 07_your_repo)."
        )
    return normalize_tasks(read_local_tasks(path))


def load_house_suite(root: Path | str | None = None) -> pd.DataFrame:
    """The bundled house-conventions suite (see helpers.families.coding.house_suite)."""
    from helpers.families.coding.house_suite import load_house_suite as load

    return load(root)


def load_swebench(
    name_or_path: str = config.SWEBENCH_DATASET,
    split: str = config.SWEBENCH_SPLIT,
    *,
    mirrors_dir: Path | str | None = None,
) -> pd.DataFrame:
    """SWE-bench rows from a data-set id on the Hugging Face hub, or from a local .json/.jsonl/.parquet/.csv file.

    Only a bare "owner/name" that is not a local path goes to the hub. With `mirrors_dir` (a folder of
    `git clone --mirror` copies named owner__name) each row gets the `repo_path` its workspace is cloned
    from. Offline, a data-set id fails at once with what to do. A bad file raises one ValueError (or
    FileNotFoundError) naming the file and the fault: torn lines by number, bad test lists by task.
    """
    source = str(name_or_path)
    if _is_hub_id(source):
        frame = _read_hub(source, split)
    else:
        frame = read_local_tasks(Path(source).expanduser())
    return normalize_tasks(frame, mirrors_dir=mirrors_dir)


def _is_hub_id(source: str) -> bool:
    """Whether `source` names a Hugging Face data set ("owner/name") rather than a local file."""
    path = Path(source).expanduser()
    return bool(HUB_ID.fullmatch(source)) and not FILE_SUFFIX.fullmatch(path.suffix) and not path.exists()


def read_local_tasks(path: Path) -> pd.DataFrame:
    """The rows of a .json (a list or JSON lines), .jsonl, .parquet or .csv file, at least one.

    CSV cells are read as text, so FAIL_TO_PASS/PASS_TO_PASS stay JSON strings for normalize_tasks.
    """
    path = path.resolve()
    if not path.exists():
        raise FileNotFoundError(f"No such file: {path}. {SOURCES}.")
    if not path.is_file():
        raise FileNotFoundError(f"{path} is a folder, not a task file. {SOURCES}.")
    if path.suffix.lower() not in LOCAL_SUFFIXES:
        raise ValueError(
            f"Cannot read {path}: {path.suffix or 'a file without a suffix'} is not a task file format. {SOURCES}."
        )
    if path.stat().st_size == 0:
        raise ValueError(f"{path} is empty: it holds no task rows.")
    read = {".parquet": _read_parquet, ".csv": _read_csv}.get(path.suffix.lower(), _read_json)
    frame = read(path)
    if len(frame) == 0:
        raise ValueError(f"{path} holds no task rows.")
    return frame


def _read_parquet(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except (ValueError, OSError) as error:  # pyarrow's ArrowInvalid is a ValueError
        raise ValueError(f"Cannot read {path} as Parquet: {error}") from None


def _read_csv(path: Path) -> pd.DataFrame:
    try:  # only empty cells are missing; "NA" or "null" in a cell is text
        return pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""], encoding="utf-8-sig")
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path} is empty: it holds no task rows.") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        raise ValueError(f"Cannot read {path} as CSV: {str(error).strip()}") from None


def _read_json(path: Path) -> pd.DataFrame:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text; a {path.suffix} file must hold JSON task rows.") from None
    if not text.strip():
        raise ValueError(f"{path} is empty: it holds no task rows.")
    if text.lstrip().startswith("["):  # a JSON list of rows; else JSON lines, as datasets' to_json writes
        try:
            numbered = list(enumerate(json.loads(text), 1))
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}, line {error.lineno}: not valid JSON ({error.msg}).") from None
        where = "item"
    else:
        numbered = [
            (number, _json_line(path, number, line)) for number, line in enumerate(text.split("\n"), 1) if line.strip()
        ]  # not at U+2028 in a row
        where = "line"
    for number, record in numbered:
        if not isinstance(record, dict):
            raise ValueError(f"{path}, {where} {number}: a task row must be a JSON object, not {_shown(record)}.")
    return pd.DataFrame([record for _, record in numbered])


def _json_line(path: Path, number: int, line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{path}, line {number}: not valid JSON ({error.msg}); each line must be one whole task row."
        ) from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


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
    try:
        from datasets import load_dataset
    except ImportError:
        from helpers.families.coding.swebench_harness import SWEBENCH_EXTRA

        raise ImportError(SWEBENCH_EXTRA) from None
    return load_dataset(name, split=split).to_pandas()


def _test_ids(value: Any, instance_id: Any, field: str) -> list[str]:
    """A FAIL_TO_PASS/PASS_TO_PASS cell as a list: a list or array, or a JSON string of one (or the
    Python repr of one, as pandas writes lists to CSV); anything else names the task and the value."""
    given = value
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                pass
    if hasattr(value, "tolist"):  # numpy arrays, as parquet gives lists back
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise ValueError(
            f"Task {instance_id!r}: {field} must be a list of test ids or a JSON string of one, not {_shown(given)}."
        )
    return [str(v) for v in value]


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
        frame[column] = [
            _test_ids(value, instance_id, column) for value, instance_id in zip(frame[column], frame["instance_id"])
        ]
    if "suite" not in frame.columns:
        frame["suite"] = "swebench"
    if "created_at" not in frame.columns:
        frame["created_at"] = ""
    frame["created_at"] = frame["created_at"].astype(str)
    if mirrors_dir is not None:
        frame["repo_path"] = [str(swebench_repo_path(repo, mirrors_dir)) for repo in frame["repo"]]
    return frame.reset_index(drop=True)


def select_tasks(frame: pd.DataFrame, instance_ids: Iterable[str] | str) -> pd.DataFrame:
    """The rows of `instance_ids`, in that order; one string is one id (never split, not even at commas).
    Unknown ids raise KeyError naming them."""
    ids = [instance_ids] if isinstance(instance_ids, str) else list(instance_ids)
    by_id = frame.set_index("instance_id", drop=False)
    unknown = [i for i in ids if i not in by_id.index]
    if unknown:
        raise KeyError(
            f"Unknown instance id(s) {unknown[:10]} ({len(unknown)} of the {len(ids)} asked); "
            "check the ids or the task source."
        )
    return by_id.loc[ids].reset_index(drop=True)


def split_dataset(
    frame: pd.DataFrame, train_size: int, test_size: int, strategy: str = "random", seed: int = config.SEED
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Disjoint (train, test) of exactly the asked sizes, the same for the same seed.

    random: a seeded shuffle. by_repo: no repository on both sides. chronological: within each
    repository older tasks train and newer ones test (by created_at). Sizes are positive whole
    numbers (3 or 3.0, not 2.5 or "3"); anything else, or more tasks than the frame has, is a ValueError.
    """
    train_size, test_size = _split_size("train_size", train_size), _split_size("test_size", test_size)
    if train_size + test_size > len(frame):
        raise ValueError(
            f"train_size + test_size = {train_size + test_size}, but the source has {len(frame)} tasks: "
            f"{largest_split(len(frame), train_size, test_size)}"
        )
    if strategy not in STRATEGIES:
        raise ValueError(f"Unknown split strategy {strategy!r}: choose one of {list(STRATEGIES)}.")
    split = {"random": _split_random, "by_repo": _split_by_repo, "chronological": _split_chronological}[strategy]
    train, test = split(frame, train_size, test_size, seed)
    return train.reset_index(drop=True), test.reset_index(drop=True)


def largest_split(available: int, train_size: int, test_size: int) -> str:
    """The sentence naming the largest split `available` tasks can fill, in the asked proportions."""
    if available < 2:
        return "a split needs at least 2 tasks (1 to train, 1 to test); choose a larger source."
    train = min(available - 1, max(1, round(available * train_size / (train_size + test_size))))
    return (
        f"the largest split that fits is TRAIN_SIZE + TEST_SIZE = {available}, e.g. TRAIN_SIZE={train}, "
        f"TEST_SIZE={available - train} in the proportions asked."
    )


def _split_size(name: str, value: Any) -> int:
    whole = isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole or value < 1:
        raise ValueError(f"{name} must be a positive whole number of tasks (e.g. 6), got {value!r}.")
    return int(value)


def _split_random(frame: pd.DataFrame, train_size: int, test_size: int, seed: int):
    shuffled = frame.sample(frac=1.0, random_state=seed)
    return shuffled.iloc[:train_size], shuffled.iloc[train_size : train_size + test_size]


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
        raise ValueError(
            f"A chronological split needs a created_at date on every task; missing or unreadable on {bad}."
        )
    dated = dated.sort_values(["repo", "_when", "instance_id"])
    # Each task's position within its repository, 0 (oldest) .. 1 (newest): train takes the lowest,
    # test the highest, so inside every repository all training tasks are older than all test tasks.
    dated["_position"] = dated.groupby("repo").cumcount() / dated.groupby("repo")["instance_id"].transform("count")
    ordered = dated.sort_values(["_position", "_when", "instance_id"], kind="stable").drop(
        columns=["_when", "_position"]
    )
    return ordered.iloc[:train_size], ordered.iloc[len(ordered) - test_size :]


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "load_tasks",
    "load_swebench",
    "load_house_suite",
    "load_mined_tasks",
    "split_dataset",
    "select_tasks",
    "normalize_tasks",
    "OfflineError",
]
