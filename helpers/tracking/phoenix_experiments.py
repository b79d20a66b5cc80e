"""Experiment tracking in Phoenix: task sets as datasets, each split of each loop as an experiment
(one run per task, with its evaluations), and each ruleset as a prompt version.

    train_ds = upload_dataset(url, "house-demo train", train_df)        # re-running reuses it
    log_experiment_to_phoenix(hostname=url, api_key=None, dataset_obj=train_ds,
                              experiment_name="Train 0", experiment_df=judged_train_df,
                              metadata={"loop": 0, "train_accuracy": 0.5, ...}, experiment="house-demo")
    log_ruleset_version(url, None, "house-demo", 0, ruleset_text, loop=0)
    flush_pending("house-demo", hostname=url)                             # after Phoenix was down

It talks to Phoenix through the official client (phoenix.client, arize-phoenix-client); the few
calls the client lacks are plain REST, each with a comment naming the gap. `dataset_obj` may be what
`upload_dataset` returns or a phoenix.client Dataset (the cookbook's `client.datasets.create_dataset`).

What a person sees in Phoenix's compare view: Phoenix renders a lone string as Markdown, so the
reference output is the gold patch as a ```diff block, a run's output is the agent's patch (or plan)
as a code block followed by a short list (tests, agent status, tokens, cost, ruleset), and the
judge's explanation sits on its `correctness` evaluation (the tests' failures on `resolved`).

Contracts:
- Idempotent: a dataset re-uploaded with the same tasks keeps its version; an experiment is found
  again by dataset + name + metadata (the metadata carries a hash of the logged rows); runs already
  there are skipped and only missing evaluations are posted. Logging the same loop twice adds nothing.
- Transient errors (connection errors, 429, 5xx) are retried with backoff. If Phoenix stays
  unreachable (or refuses the key) the call warns once per experiment and URL, appends what it could
  not log to act_results/<experiment>/phoenix_pending.jsonl and returns; `flush_pending` logs it later.
  Other 4xx answers mean a bad request and raise PhoenixRequestError.
- Scripted dry runs are labeled in the experiment name, description and metadata.
- Rows: the agent's output is the `output` column (the patch, or the plan when `mode == "plan"`);
  older rows carry `cline_patch` / `plan` instead, which are read when `output` is absent.
"""

from __future__ import annotations

import json
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from helpers.core import config
from helpers.store.records import read_jsonl, write_atomic
from helpers.tracking.phoenix_client import (
    DRY_RUN_LABEL,
    DRY_RUN_NOTE,
    RETRIES,  # noqa: F401
    WORKERS,
    PhoenixRequestError,
    PhoenixUnavailable,
    PhoenixUnavailableWarning,
    _connect,
    _job_key,
    _keep_pending,
    _Phoenix,
    _warn_once,
    pending_path,
)
from helpers.tracking.phoenix_client import _sha
from helpers.tracking.phoenix_datasets import (
    DatasetRef,
    _as_dataset_ref,
    _dataset_here,
    _jsonable,  # noqa: F401
    upload_dataset,
)
from helpers.tracking.phoenix_runs import _evaluations, _run
from helpers.tracking.phoenix_prompts import _log_ruleset_job, _ruleset_job, log_ruleset_version, prompt_name  # noqa: F401


# Columns of a run_act / evaluate_results row that go into a Phoenix run (output and evaluations).
RUN_FIELDS = (
    "instance_id",
    "output",
    "mode",
    "cline_patch",
    "plan",
    "status",
    "error",
    "pass_or_fail",
    "eval_error",
    "failed_tests",
    "iterations",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "duration_s",
    "run_id",
    "ruleset_sha",
    "correctness",
    "explanation",
    "judge_error",
    "judge_cost_usd",
    "split",
)


# --- experiments --------------------------------------------------------------------------------


@dataclass
class LogResult:
    """What one log_experiment_to_phoenix call did."""

    experiment_name: str
    experiment_id: str | None = None
    dataset_id: str | None = None
    url: str | None = None  # the experiment in the Phoenix UI (its compare view)
    runs_created: int = 0
    runs_existing: int = 0
    evaluations_created: int = 0
    not_in_dataset: list[str] = field(default_factory=list)  # instance ids the dataset lacks
    pending_path: str | None = None  # set when Phoenix was down and the job was kept for later

    @property
    def logged(self) -> bool:
        return self.pending_path is None


def _experiment_job(
    dataset: DatasetRef,
    experiment_name: str,
    experiment_df: Any,
    metadata: dict[str, Any] | None,
    dry_run: bool | None,
    description: str | None,
) -> dict[str, Any]:
    """Everything one experiment needs, as plain JSON: what gets logged, or kept for later."""
    if "instance_id" not in experiment_df.columns:
        raise ValueError(
            "experiment_df has no 'instance_id' column: pass the DataFrame run_act / evaluate_results returned."
        )
    rows = _jsonable(experiment_df, RUN_FIELDS)
    meta = json.loads(json.dumps(dict(metadata or {}), default=str))
    dry_run = bool(meta.get("dry_run")) if dry_run is None else dry_run
    judged = "correctness" in experiment_df.columns
    meta.update(
        dry_run=dry_run,
        runs=len(rows),
        judged=judged,
        results_sha=_sha(rows),
        resolved_rate=(sum(r.get("pass_or_fail") == "pass" for r in rows) / len(rows)) if rows else 0.0,
    )
    shas = {r.get("ruleset_sha") for r in rows} - {None, ""}
    if len(shas) == 1 and "ruleset_sha" not in meta:  # the ruleset all runs used (records.ruleset_sha)
        meta["ruleset_sha"] = shas.pop()
    if "split" not in meta and rows and rows[0].get("split"):
        meta["split"] = rows[0]["split"]
    name = experiment_name
    if dry_run:
        meta["data_source"] = DRY_RUN_NOTE
        if DRY_RUN_LABEL not in name.lower():
            name = f"{name} ({DRY_RUN_LABEL})"
        description = f"{DRY_RUN_NOTE} {description or ''}".strip()
    return {
        "kind": "experiment",
        "dataset": dataset.to_json(),
        "experiment_name": name,
        "description": description or "",
        "metadata": meta,
        "rows": rows,
        "judged": judged,
    }


def _find_or_create_experiment(phoenix: _Phoenix, dataset: DatasetRef, job: dict[str, Any]) -> dict[str, Any]:
    experiments = phoenix.client.experiments
    for experiment in phoenix.call(experiments.list, dataset_id=dataset.id):
        if experiment.get("name") == job["experiment_name"] and experiment.get("metadata") == job["metadata"]:
            return experiment
    return phoenix.call(
        experiments.create,
        dataset_id=dataset.id,
        dataset_version_id=dataset.version_id,
        experiment_name=job["experiment_name"],
        experiment_description=job["description"],
        experiment_metadata=job["metadata"],
        repetitions=1,
    )


def _logged(phoenix: _Phoenix, experiment_id: str) -> tuple[dict[str, str], dict[str, set[str]]]:
    """What the experiment holds already: run id by example id, and evaluation names by example id."""
    ran = phoenix.call(phoenix.client.experiments.get_experiment, experiment_id=experiment_id)
    runs = {r["dataset_example_id"]: r["id"] for r in ran["task_runs"]}
    if not runs:
        return runs, {}
    # Gap: get_experiment leaves out evaluations that hold only an error (a judge that failed), so
    # the names come from the experiment's JSON export, which lists every annotation.
    records = phoenix.rest("GET", f"v1/experiments/{experiment_id}/json")
    return runs, {r["example_id"]: {a["name"] for a in r.get("annotations", [])} for r in records}


def _log_experiment_job(phoenix: _Phoenix, job: dict[str, Any]) -> LogResult:
    dataset = _dataset_here(phoenix, DatasetRef(**job["dataset"]))
    experiment = _find_or_create_experiment(phoenix, dataset, job)
    eid = experiment["id"]
    experiments = phoenix.client.experiments
    result = LogResult(job["experiment_name"], eid, dataset.id, experiments.get_experiment_url(dataset.id, eid))
    runs, done_evals = _logged(phoenix, eid)
    todo = []
    for row in job["rows"]:
        example_id = dataset.example_ids.get(str(row["instance_id"]))
        if example_id is None:
            result.not_in_dataset.append(str(row["instance_id"]))
        else:
            todo.append((row, example_id))
    if result.not_in_dataset:
        warnings.warn(
            f"{len(result.not_in_dataset)} tasks are not in Phoenix dataset {dataset.name!r} and were "
            f"not logged: {result.not_in_dataset[:5]}",
            stacklevel=3,
        )
    lock = threading.Lock()

    def log_one(item: tuple[dict[str, Any], str]) -> None:
        row, example_id = item
        run_id = runs.get(example_id)
        created = False
        if run_id is None:
            try:
                run_id = phoenix.call(
                    experiments.log_run, experiment_id=eid, dataset_example_id=example_id, **_run(row)
                )["id"]
                created = True
            except PhoenixRequestError as e:
                if e.status_code != 409:
                    raise
                run_id = _logged(phoenix, eid)[0][example_id]  # logged meanwhile by another call
        have = done_evals.get(example_id, set())
        posted = 0
        for evaluation in _evaluations(row, job["judged"]):
            if evaluation["name"] not in have:
                phoenix.call(experiments.log_evaluation, experiment_run_id=run_id, **evaluation)
                posted += 1
        with lock:
            result.runs_created += created
            result.runs_existing += not created
            result.evaluations_created += posted

    with ThreadPoolExecutor(max_workers=phoenix.workers) as pool:
        list(pool.map(log_one, todo))  # list() re-raises the first error
    return result


def log_experiment_to_phoenix(
    hostname: Any = None,
    api_key: str | None = None,
    dataset_obj: Any = None,
    experiment_name: str = "",
    experiment_df: Any = None,
    metadata: dict[str, Any] | None = None,
    *,
    experiment: str | None = None,
    dry_run: bool | None = None,
    description: str | None = None,
    workers: int = WORKERS,
    results_root: Path | str | None = None,
) -> LogResult:
    """Log one split of one loop as a Phoenix experiment on `dataset_obj`: one run per row of
    `experiment_df` (output: the patch, or the plan, as a code block, then the tests' verdict, agent
    status, tokens, cost and ruleset; errored/timed-out agent runs are marked as errors) and its
    evaluations: `resolved` (tests; score 1/0, label pass/fail, the failed tests, or an error when
    unevaluated) and, when the rows were judged, `correctness` (the judge's label, score and
    explanation, or its error).

    `metadata` (loop, accuracies, ruleset version, models, dry_run, ...) is stored on the experiment,
    plus runs, resolved_rate, results_sha and the rows' ruleset_sha when they share one. A scripted
    dry run (metadata["dry_run"] or `dry_run`) says so in the name, description and metadata.
    `experiment` names the results folder (act_results/<experiment>/) for the pending file; default
    metadata["experiment"] or "default".

    Idempotent, retried, and never raises because Phoenix is down: see the module docstring.
    """
    if experiment_df is None or not experiment_name:
        raise ValueError(
            "log_experiment_to_phoenix needs experiment_name=... and experiment_df=... (run_act's DataFrame)."
        )
    if dataset_obj is None:
        raise ValueError(
            "log_experiment_to_phoenix needs dataset_obj=...: what upload_dataset() returned for this split."
        )
    job = _experiment_job(_as_dataset_ref(dataset_obj), experiment_name, experiment_df, metadata, dry_run, description)
    folder = experiment or (metadata or {}).get("experiment") or config.DEFAULT_EXPERIMENT
    with _connect(hostname, api_key, workers) as phoenix:
        try:
            return _log_experiment_job(phoenix, job)
        except PhoenixUnavailable as e:
            path = _keep_pending(folder, job, phoenix.url, e, results_root)
            return LogResult(job["experiment_name"], pending_path=str(path))


# --- when Phoenix is down -----------------------------------------------------------------------


def flush_pending(
    experiment: str,
    hostname: Any = None,
    api_key: str | None = None,
    *,
    results_root: Path | str | None = None,
    workers: int = WORKERS,
) -> list[Any]:
    """Log everything kept in act_results/<experiment>/phoenix_pending.jsonl (datasets, experiments,
    ruleset versions) to Phoenix; what is logged leaves the file, what still fails stays. Safe to
    repeat: logging is idempotent. Returns the LogResults (and prompt versions) of what was logged."""
    path = pending_path(experiment, results_root)
    jobs: dict[str, dict[str, Any]] = {}
    for record in read_jsonl(path):
        jobs[record.get("key") or _job_key(record)] = record  # a job kept twice is logged once
    done: set[str] = set()
    results: list[Any] = []
    with _connect(hostname, api_key, workers) as phoenix:
        for key, job in jobs.items():
            try:
                results.append(
                    _log_experiment_job(phoenix, job) if job["kind"] == "experiment" else _log_ruleset_job(phoenix, job)
                )
            except PhoenixUnavailable as e:
                _warn_once(phoenix.url, f"flush:{experiment}", f"{e}. {len(jobs) - len(done)} jobs stay in {path}.")
                break
            done.add(key)
    # Rewrite from the file as it is now, so jobs kept while we were flushing are not lost.
    remaining = [r for r in read_jsonl(path) if (r.get("key") or _job_key(r)) not in done]
    if remaining:
        write_atomic(path, "".join(json.dumps(r, default=str, ensure_ascii=False) + "\n" for r in remaining))
    elif path.exists():
        path.unlink()
    return results


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "upload_dataset",
    "log_experiment_to_phoenix",
    "log_ruleset_version",
    "flush_pending",
    "pending_path",
    "DatasetRef",
    "LogResult",
    "PhoenixUnavailable",
    "PhoenixUnavailableWarning",
    "PhoenixRequestError",
]
