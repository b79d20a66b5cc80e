"""Task sets as Phoenix datasets: each task an example (its problem statement in, the gold patch as a
```diff block out), uploaded once and found again by name and content."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable


from helpers.tracking.phoenix_client import (
    TIMEOUT_S,
    PhoenixRequestError,
    PhoenixUnavailable,
    _connect,
    _Phoenix,
    _warn_once,
)

EXAMPLE_METADATA_FIELDS = ("instance_id", "repo", "base_commit", "suite")
GOLD_PATCH_FIELDS = ("patch", "ground_truth_patch")


# --- plain data ---------------------------------------------------------------------------------


def _jsonable(frame: Any, columns: Iterable[str]) -> list[dict[str, Any]]:
    """Rows as JSON-safe dicts (NaN -> None, numpy -> Python), keeping only `columns` present."""
    keep = [c for c in dict.fromkeys(columns) if c in frame.columns]
    return json.loads(frame[keep].to_json(orient="records", date_format="iso", default_handler=str))


def code_block(text: str | None, language: str = "diff") -> str:
    """`text` as a Markdown code block, fenced with more backticks than it contains (a patch of a
    README may hold ``` itself)."""
    text = (text or "").rstrip("\n")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


@dataclass
class DatasetRef:
    """A Phoenix dataset as this module needs it. `id` is None when Phoenix was down at upload time:
    `examples` (the upload spec) lets a later call or `flush_pending` create it."""

    name: str
    id: str | None = None
    version_id: str | None = None
    example_ids: dict[str, str] = field(default_factory=dict)  # instance_id -> example node id
    description: str = ""
    examples: list[dict[str, Any]] = field(default_factory=list, repr=False)  # {id, input, output, metadata}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def dataset_examples(df: Any) -> list[dict[str, Any]]:
    """Dataset examples from a task (or results) DataFrame: input the problem statement, output the
    gold patch as a ```diff block where there is one, metadata the instance id and repository (and
    base commit, suite). The instance id is the example's stable id."""
    for column in ("instance_id", "problem_statement"):
        if column not in df.columns:
            raise ValueError(f"The task DataFrame has no {column!r} column; pass tasks with SWE-bench fields.")
    if df["instance_id"].duplicated().any():
        dupes = sorted(set(df.loc[df["instance_id"].duplicated(), "instance_id"]))[:5]
        raise ValueError(f"The task DataFrame repeats instance ids {dupes}; each task must appear once.")
    gold = next((c for c in GOLD_PATCH_FIELDS if c in df.columns), None)
    rows = _jsonable(df, ("instance_id", "problem_statement", *EXAMPLE_METADATA_FIELDS, *GOLD_PATCH_FIELDS))
    examples = []
    for row in rows:
        patch = row.get(gold) if gold else None
        examples.append(
            {
                "id": str(row["instance_id"]),
                "input": {"problem_statement": row["problem_statement"] or ""},
                # One string, so the compare view renders it as Markdown: the diff as a code block.
                "output": {"patch": code_block(patch)} if patch else {},
                "metadata": {k: row[k] for k in EXAMPLE_METADATA_FIELDS if row.get(k) is not None},
            }
        )
    return examples


def _ref_from_dataset(dataset: Any, description: str = "", examples: list[dict[str, Any]] | None = None) -> DatasetRef:
    """DatasetRef from a phoenix.client Dataset: example node ids by instance id (metadata, else the example id)."""
    ref = DatasetRef(
        name=dataset.name,
        id=dataset.id,
        version_id=dataset.version_id,
        description=description or getattr(dataset, "description", None) or "",
    )
    for example in dataset.examples:
        instance_id = str((example.get("metadata") or {}).get("instance_id") or example["id"])
        ref.example_ids[instance_id] = example.get("node_id") or example["id"]
        if examples is None:
            ref.examples.append(
                {
                    "id": instance_id,
                    "input": dict(example["input"]),
                    "output": dict(example["output"]),
                    "metadata": dict(example["metadata"] or {}),
                }
            )
    if examples is not None:
        ref.examples = examples
    return ref


def _as_dataset_ref(dataset_obj: Any) -> DatasetRef:
    """DatasetRef from a DatasetRef, a phoenix.client Dataset, or a dict of DatasetRef fields."""
    if isinstance(dataset_obj, DatasetRef):
        return dataset_obj
    if isinstance(dataset_obj, dict):
        return DatasetRef(**dataset_obj)
    if hasattr(dataset_obj, "id") and hasattr(dataset_obj, "examples"):  # phoenix.client Dataset
        return _ref_from_dataset(dataset_obj)
    raise ValueError(
        f"dataset_obj must be what upload_dataset() or client.datasets.create_dataset() returned, not {dataset_obj!r}."
    )


# --- datasets -----------------------------------------------------------------------------------


def _upload(phoenix: _Phoenix, spec: DatasetRef) -> DatasetRef:
    """The dataset named spec.name holding exactly spec.examples. Phoenix upserts by name: the same
    examples keep the current version, other ones become a new version (earlier experiments keep theirs)."""
    dataset = phoenix.call(
        phoenix.client.datasets.create_dataset,
        name=spec.name,
        examples=spec.examples,
        dataset_description=spec.description,
        timeout=TIMEOUT_S,
    )
    return _ref_from_dataset(dataset, spec.description, spec.examples)


def upload_dataset(
    client_or_url: Any, name: str, df: Any, *, api_key: str | None = None, description: str | None = None
) -> DatasetRef:
    """Upload a task set as the Phoenix dataset `name`; re-running with the same tasks reuses it
    (no duplicate, no new version). Returns a DatasetRef to pass as `dataset_obj`.

    input: {"problem_statement"}; output: {"patch": the gold patch as a ```diff block} where the rows
    carry one (`patch` or `ground_truth_patch`); metadata: instance_id, repo (and base_commit, suite
    when present); the instance id is the example's stable id. Other tasks under the same name become
    the dataset's new version. If Phoenix is unreachable this warns and returns a DatasetRef with id
    None, which log_experiment_to_phoenix / flush_pending upload later.
    """
    spec = DatasetRef(name=name, description=description or f"{name}: {len(df)} tasks", examples=dataset_examples(df))
    with _connect(client_or_url, api_key) as phoenix:
        try:
            return _upload(phoenix, spec)
        except PhoenixUnavailable as e:
            _warn_once(phoenix.url, name, f"{e}. Dataset {name!r} will be uploaded when its experiments are logged.")
            return spec


def _dataset_here(phoenix: _Phoenix, dataset: DatasetRef) -> DatasetRef:
    """The dataset on this server: by id when this server has it under that name, else uploaded
    from its examples (found again if it is there already)."""
    if dataset.id:
        try:
            found = phoenix.call(
                phoenix.client.datasets.get_dataset,
                dataset=dataset.id,
                version_id=dataset.version_id,
                timeout=TIMEOUT_S,
            )
        except PhoenixRequestError as e:
            if e.status_code not in (404, 422):
                raise
        else:
            if found.name == dataset.name:  # ids are per server: another server's id may name another dataset
                return _ref_from_dataset(found, dataset.description, dataset.examples or None)
    if not dataset.examples:
        raise PhoenixRequestError(f"Dataset {dataset.name!r} is not on {phoenix.url} and its examples are unknown.")
    return _upload(phoenix, DatasetRef(dataset.name, description=dataset.description, examples=dataset.examples))
