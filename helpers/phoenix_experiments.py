"""Experiment tracking in Phoenix: task sets as datasets, each split of each loop as an experiment
(one run per task, with its evaluations), and each ruleset as a prompt version.

    train_ds = upload_dataset(url, "house-demo train", train_df)        # re-running reuses it
    log_experiment_to_phoenix(hostname=url, api_key=None, dataset_obj=train_ds,
                              experiment_name="Train 0", experiment_df=judged_train_df,
                              metadata={"loop": 0, "train_accuracy": 0.5, ...}, experiment="house-demo")
    log_ruleset_version(url, None, "house-demo", 0, ruleset_text, loop=0)
    flush_pending("house-demo", hostname=url)                             # after Phoenix was down

It talks to Phoenix's REST API with httpx (the same routes phoenix.client uses), because importing
`phoenix` costs ~13 s and because a pool of concurrent requests logs a loop of 300 tasks in seconds.
`dataset_obj` may be what `upload_dataset` returns or a phoenix.client Dataset (the cookbook's
`client.datasets.create_dataset(...)`).

Contracts:
- Idempotent: an experiment is found again by dataset + name + metadata (the metadata carries a hash
  of the logged rows), runs already there are skipped (Phoenix answers 409 for a duplicate), and only
  missing evaluations are posted. Logging the same loop twice adds nothing.
- Transient errors (connection errors, 429, 5xx) are retried with backoff. If Phoenix stays
  unreachable (or refuses the key) the call warns once per experiment and URL, appends what it could
  not log to act_results/<experiment>/phoenix_pending.jsonl and returns; `flush_pending` logs it later.
  Other 4xx answers mean a bad request and raise PhoenixRequestError.
- Scripted dry runs are labeled in the experiment name, description and metadata.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable

import httpx

from helpers import config
from helpers.records import append_jsonl, experiment_dir, read_jsonl, write_atomic

WORKERS = 8  # concurrent requests; Phoenix on SQLite serialises writes, more buys nothing
RETRIES = 3
BACKOFF_S = 0.5  # doubles per retry: 0.5, 1, 2 s
TIMEOUT_S = 30.0
DRY_RUN_LABEL = "scripted dry run"
DRY_RUN_NOTE = "SCRIPTED DRY RUN - not real results: every model reply came from the scripted model server."
PENDING_FILE = "phoenix_pending.jsonl"

# Columns of a run_act / evaluate_results row that go into a Phoenix run (output and evaluations).
RUN_FIELDS = (
    "instance_id", "repo", "cline_patch", "plan", "status", "error", "pass_or_fail", "eval_error",
    "failed_tests", "iterations", "input_tokens", "output_tokens", "cost_usd", "duration_s", "run_id",
    "ruleset_sha", "correctness", "explanation", "judge_error", "judge_cost_usd", "split", "loop",
)
EXAMPLE_METADATA_FIELDS = ("instance_id", "repo", "base_commit", "suite")
GOLD_PATCH_FIELDS = ("patch", "ground_truth_patch")

_warned: set[tuple[str, str]] = set()
_warn_lock = threading.Lock()


class PhoenixUnavailable(RuntimeError):
    """Phoenix did not answer (or refused the API key) after retries."""


class PhoenixRequestError(RuntimeError):
    """Phoenix rejected a request as bad (4xx other than 401/403/404/409/429)."""


class PhoenixUnavailableWarning(UserWarning):
    """Phoenix is down: results were kept in act_results/<experiment>/phoenix_pending.jsonl."""


# --- HTTP ---------------------------------------------------------------------------------------

class _Rest:
    """httpx with a small connection pool, retries and a shared 'down' flag (so that, once Phoenix
    is known to be unreachable, the other workers give up at once instead of each retrying)."""

    def __init__(self, url: str, api_key: str | None = None, workers: int = WORKERS,
                 retries: int = RETRIES, headers: dict[str, str] | None = None):
        self.url = url.rstrip("/")
        headers = dict(headers or {})
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.http = httpx.Client(
            base_url=self.url, headers=headers, timeout=TIMEOUT_S,
            limits=httpx.Limits(max_connections=workers, max_keepalive_connections=workers),
        )
        self.workers = workers
        self.retries = retries
        self.down = threading.Event()

    def request(self, method: str, path: str, ok: Iterable[int] = (200,), **kwargs: Any) -> httpx.Response:
        """The response when its status is in `ok`; PhoenixUnavailable or PhoenixRequestError otherwise."""
        ok = tuple(ok)
        problem = ""
        for attempt in range(self.retries + 1):
            if self.down.is_set():
                raise PhoenixUnavailable(f"Phoenix at {self.url} is unreachable")
            delay = BACKOFF_S * 2 ** attempt
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError as e:
                problem = f"{type(e).__name__}: {e}"
            else:
                if response.status_code in ok:
                    return response
                if response.status_code in (401, 403):
                    self.down.set()
                    raise PhoenixUnavailable(
                        f"Phoenix at {self.url} refused the request ({response.status_code}): set "
                        "PHOENIX_API_KEY (or pass api_key=...) to a key this server accepts."
                    )
                if response.status_code != 429 and response.status_code < 500:
                    raise PhoenixRequestError(
                        f"Phoenix answered {response.status_code} to {method} {path}: {response.text[:500]}"
                    )
                problem = f"HTTP {response.status_code}"
                retry_after = response.headers.get("retry-after", "")
                delay = float(retry_after) if retry_after.replace(".", "", 1).isdigit() else delay
            if attempt < self.retries:
                time.sleep(min(delay, 30.0))
        self.down.set()
        raise PhoenixUnavailable(f"Phoenix at {self.url} did not answer {method} {path} ({problem})")

    def get_json(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None).json()

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> "_Rest":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _rest(target: Any, api_key: str | None = None, workers: int = WORKERS) -> _Rest:
    """A _Rest for a URL, a PhoenixServer (.url/.api_key) or a phoenix.client.Client."""
    if isinstance(target, str):
        return _Rest(target, api_key or config.read_env("PHOENIX_API_KEY"), workers)
    inner = getattr(target, "_client", None)
    if isinstance(inner, httpx.Client):  # phoenix.client.Client: reuse its base URL and auth header
        return _Rest(str(inner.base_url), api_key, workers, headers=dict(inner.headers))
    if hasattr(target, "url"):
        return _Rest(target.url, api_key or getattr(target, "api_key", None) or config.read_env("PHOENIX_API_KEY"), workers)
    if target is None:
        url = config.read_env("PHOENIX_COLLECTOR_ENDPOINT")
        if url:
            return _Rest(url, api_key or config.read_env("PHOENIX_API_KEY"), workers)
    raise ValueError(
        f"Cannot reach Phoenix through {target!r}: pass its URL (e.g. 'http://127.0.0.1:6006'), a "
        "PhoenixServer, or a phoenix.client.Client; or set PHOENIX_COLLECTOR_ENDPOINT."
    )


def _paged(rest: _Rest, path: str, **params: Any) -> list[dict[str, Any]]:
    items, cursor = [], None
    while True:
        body = rest.get_json(path, **params, **({"cursor": cursor} if cursor else {}))
        items.extend(body["data"])
        cursor = body.get("next_cursor")
        if not cursor:
            return items


# --- plain data ---------------------------------------------------------------------------------

def _jsonable(frame: Any, columns: Iterable[str]) -> list[dict[str, Any]]:
    """Rows as JSON-safe dicts (NaN -> None, numpy -> Python), keeping only `columns` present."""
    keep = [c for c in dict.fromkeys(columns) if c in frame.columns]
    return json.loads(frame[keep].to_json(orient="records", date_format="iso", default_handler=str))


def _sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


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
    gold patch where there is one, metadata the instance id and repository (and base commit, suite)."""
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
        examples.append({
            "id": str(row["instance_id"]),
            "input": {"problem_statement": row["problem_statement"] or ""},
            "output": {"patch": patch} if patch else {},
            "metadata": {k: row[k] for k in EXAMPLE_METADATA_FIELDS if row.get(k) is not None},
        })
    return examples


def _as_dataset_ref(dataset_obj: Any) -> DatasetRef:
    """DatasetRef from a DatasetRef, a phoenix.client Dataset, or a dict of DatasetRef fields."""
    if isinstance(dataset_obj, DatasetRef):
        return dataset_obj
    if isinstance(dataset_obj, dict):
        return DatasetRef(**dataset_obj)
    if hasattr(dataset_obj, "id") and hasattr(dataset_obj, "examples"):  # phoenix.client Dataset
        ref = DatasetRef(name=dataset_obj.name, id=dataset_obj.id, version_id=dataset_obj.version_id,
                         description=getattr(dataset_obj, "description", None) or "")
        for example in dataset_obj.examples:
            instance_id = (example.get("metadata") or {}).get("instance_id") or example["id"]
            ref.example_ids[str(instance_id)] = example.get("node_id") or example["id"]
            ref.examples.append({"id": str(instance_id), "input": dict(example["input"]),
                                 "output": dict(example["output"]), "metadata": dict(example["metadata"])})
        return ref
    raise ValueError(
        f"dataset_obj must be what upload_dataset() or client.datasets.create_dataset() returned, not {dataset_obj!r}."
    )


# --- datasets -----------------------------------------------------------------------------------

def _canonical(examples: Iterable[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps([e["input"], e["output"], e["metadata"]], sort_keys=True) for e in examples)


def _fetch_examples(rest: _Rest, ref: DatasetRef) -> list[dict[str, Any]]:
    body = rest.get_json(f"v1/datasets/{ref.id}/examples", **({"version_id": ref.version_id} if ref.version_id else {}))
    ref.version_id = body["data"]["version_id"]
    examples = body["data"]["examples"]
    ref.example_ids = {
        str((e.get("metadata") or {}).get("instance_id") or e["id"]): e["node_id"] for e in examples
    }
    return examples


def _ensure_dataset(rest: _Rest, spec: DatasetRef) -> DatasetRef:
    """The dataset named spec.name holding exactly spec.examples: found, created, or (when the name
    holds other tasks) updated to a new version."""
    for _ in range(2):  # a second pass if someone else created the name between our look and upload
        found = rest.get_json("v1/datasets", name=spec.name)["data"]
        if found:
            ref = DatasetRef(spec.name, found[0]["id"], None, description=spec.description, examples=spec.examples)
            existing = _fetch_examples(rest, ref)
            if _canonical(existing) == _canonical(spec.examples):
                return ref
            warnings.warn(
                f"Phoenix dataset {spec.name!r} holds other tasks than these; storing these as its new "
                "version (earlier experiments keep the old one). Use another dataset name to keep both.",
                stacklevel=3,
            )
            action = "update"
        else:
            action = "create"
        payload = {
            "action": action, "name": spec.name, "description": spec.description,
            "inputs": [e["input"] for e in spec.examples], "outputs": [e["output"] for e in spec.examples],
            "metadata": [e["metadata"] for e in spec.examples], "example_ids": [e["id"] for e in spec.examples],
        }
        response = rest.request("POST", "v1/datasets/upload", ok=(200, 409), params={"sync": True}, json=payload)
        if response.status_code == 409:
            continue
        data = response.json()["data"]
        ref = DatasetRef(spec.name, data["dataset_id"], data["version_id"], description=spec.description,
                         examples=spec.examples)
        _fetch_examples(rest, ref)
        return ref
    raise PhoenixRequestError(f"Could not create or find Phoenix dataset {spec.name!r}.")


def upload_dataset(client_or_url: Any, name: str, df: Any, *, api_key: str | None = None,
                   description: str | None = None) -> DatasetRef:
    """Upload a task set as the Phoenix dataset `name`; re-running with the same tasks reuses it
    (no duplicate, no new version). Returns a DatasetRef to pass as `dataset_obj`.

    input: {"problem_statement"}; output: {"patch": gold patch} where the rows carry one (`patch` or
    `ground_truth_patch`); metadata: instance_id, repo (and base_commit, suite when present); the
    instance id is the example's stable id. If Phoenix is unreachable this warns and returns a
    DatasetRef with id None, which log_experiment_to_phoenix / flush_pending upload later.
    """
    spec = DatasetRef(name=name, description=description or f"{name}: {len(df)} tasks",
                      examples=dataset_examples(df))
    with _rest(client_or_url, api_key) as rest:
        try:
            return _ensure_dataset(rest, spec)
        except PhoenixUnavailable as e:
            _warn_once(rest.url, name, f"{e}. Dataset {name!r} will be uploaded when its experiments are logged.")
            return spec


# --- experiments --------------------------------------------------------------------------------

@dataclass
class LogResult:
    """What one log_experiment_to_phoenix call did."""

    experiment_name: str
    experiment_id: str | None = None
    dataset_id: str | None = None
    url: str | None = None  # the experiment in the Phoenix UI
    runs_created: int = 0
    runs_existing: int = 0
    evaluations_created: int = 0
    not_in_dataset: list[str] = field(default_factory=list)  # instance ids the dataset lacks
    pending_path: str | None = None  # set when Phoenix was down and the job was kept for later

    @property
    def logged(self) -> bool:
        return self.pending_path is None


def _run_payload(row: dict[str, Any], example_id: str) -> dict[str, Any]:
    output = {k: row.get(k) for k in RUN_FIELDS if k not in ("instance_id", "split", "loop") and k in row}
    output["patch"] = output.pop("cline_patch", None)
    end = datetime.now(timezone.utc)
    start = end - timedelta(seconds=float(row.get("duration_s") or 0.0))
    payload = {"dataset_example_id": example_id, "output": output, "repetition_number": 1,
               "start_time": start.isoformat(), "end_time": end.isoformat()}
    status = row.get("status") or "completed"
    if status != "completed":
        payload["error"] = f"{status}: {row.get('error') or 'no details'}"[:4000]
    return payload


def _evaluations(row: dict[str, Any], judged: bool) -> list[dict[str, Any]]:
    """The 'resolved' evaluation (tests; score 1/0) and, on judged rows, the judge's 'correctness'."""
    now = datetime.now(timezone.utc).isoformat()
    evals = []
    verdict = row.get("pass_or_fail")
    resolved: dict[str, Any] = {"name": "resolved", "annotator_kind": "CODE"}
    if verdict in ("pass", "fail"):
        failed = row.get("failed_tests")
        failed = ", ".join(failed) if isinstance(failed, list) else (failed or "")
        resolved["result"] = {"label": verdict, "score": 1.0 if verdict == "pass" else 0.0,
                              "explanation": f"failed tests: {failed}" if verdict == "fail" and failed not in ("", "[]")
                              else (row.get("eval_error") or None)}
    else:
        resolved["error"] = row.get("eval_error") or f"not evaluated ({verdict})"
    evals.append(resolved)
    if judged:
        judge: dict[str, Any] = {"name": "correctness", "annotator_kind": "LLM",
                                 "metadata": {"judge_cost_usd": row.get("judge_cost_usd")}}
        if row.get("judge_error"):
            judge["error"] = row["judge_error"]
        elif row.get("correctness") in ("correct", "incorrect"):
            judge["result"] = {"label": row["correctness"], "score": 1.0 if row["correctness"] == "correct" else 0.0,
                               "explanation": row.get("explanation") or None}
        else:
            judge["error"] = f"no judge verdict ({row.get('correctness')!r})"
        evals.append(judge)
    for e in evals:
        e.update(start_time=now, end_time=now)
    return evals


def _experiment_job(dataset: DatasetRef, experiment_name: str, experiment_df: Any, metadata: dict[str, Any] | None,
                    dry_run: bool | None, description: str | None) -> dict[str, Any]:
    """Everything one experiment needs, as plain JSON: what gets logged, or kept for later."""
    if "instance_id" not in experiment_df.columns:
        raise ValueError("experiment_df has no 'instance_id' column: pass the DataFrame run_act / evaluate_results returned.")
    rows = _jsonable(experiment_df, RUN_FIELDS)
    meta = json.loads(json.dumps(dict(metadata or {}), default=str))
    dry_run = bool(meta.get("dry_run")) if dry_run is None else dry_run
    judged = "correctness" in experiment_df.columns
    meta.update(
        dry_run=dry_run, runs=len(rows), judged=judged, results_sha=_sha(rows),
        resolved_rate=(sum(r.get("pass_or_fail") == "pass" for r in rows) / len(rows)) if rows else 0.0,
    )
    if "split" not in meta and rows and rows[0].get("split"):
        meta["split"] = rows[0]["split"]
    name = experiment_name
    if dry_run:
        meta["data_source"] = DRY_RUN_NOTE
        if DRY_RUN_LABEL not in name.lower():
            name = f"{name} ({DRY_RUN_LABEL})"
        description = f"{DRY_RUN_NOTE} {description or ''}".strip()
    return {"kind": "experiment", "dataset": dataset.to_json(), "experiment_name": name,
            "description": description or "", "metadata": meta, "rows": rows, "judged": judged}


def _find_or_create_experiment(rest: _Rest, dataset: DatasetRef, job: dict[str, Any]) -> dict[str, Any]:
    for experiment in _paged(rest, f"v1/datasets/{dataset.id}/experiments"):
        if experiment.get("name") == job["experiment_name"] and experiment.get("metadata") == job["metadata"]:
            return experiment
    body = {"name": job["experiment_name"], "description": job["description"], "metadata": job["metadata"],
            "version_id": dataset.version_id, "repetitions": 1}
    return rest.request("POST", f"v1/datasets/{dataset.id}/experiments", json=body).json()["data"]


def _resolve_dataset(rest: _Rest, dataset: DatasetRef) -> DatasetRef:
    """The dataset on this server: by id when it exists here, else found or created by name from its spec."""
    if dataset.id:
        response = rest.request("GET", f"v1/datasets/{dataset.id}", ok=(200, 404, 422))
        if response.status_code == 200:
            if not dataset.example_ids:
                _fetch_examples(rest, dataset)
            return dataset
    if not dataset.examples:
        raise PhoenixRequestError(f"Dataset {dataset.name!r} is not on {rest.url} and its examples are unknown.")
    return _ensure_dataset(rest, DatasetRef(dataset.name, description=dataset.description, examples=dataset.examples))


def _log_experiment_job(rest: _Rest, job: dict[str, Any]) -> LogResult:
    dataset = _resolve_dataset(rest, DatasetRef(**job["dataset"]))
    experiment = _find_or_create_experiment(rest, dataset, job)
    eid = experiment["id"]
    result = LogResult(job["experiment_name"], eid, dataset.id,
                       f"{rest.url}/datasets/{dataset.id}/compare?experimentId={eid}")
    runs = {r["dataset_example_id"]: r["id"] for r in rest.get_json(f"v1/experiments/{eid}/runs")["data"]}
    done_evals: dict[str, set[str]] = {}
    if runs:  # which evaluations each existing run already has
        for record in json.loads(rest.request("GET", f"v1/experiments/{eid}/json").text):
            done_evals[record["example_id"]] = {a["name"] for a in record.get("annotations", [])}
    todo = []
    for row in job["rows"]:
        example_id = dataset.example_ids.get(str(row["instance_id"]))
        if example_id is None:
            result.not_in_dataset.append(str(row["instance_id"]))
        else:
            todo.append((row, example_id))
    if result.not_in_dataset:
        warnings.warn(f"{len(result.not_in_dataset)} tasks are not in Phoenix dataset {dataset.name!r} and were "
                      f"not logged: {result.not_in_dataset[:5]}", stacklevel=3)
    lock = threading.Lock()

    def log_one(item: tuple[dict[str, Any], str]) -> None:
        row, example_id = item
        run_id = runs.get(example_id)
        created = False
        if run_id is None:
            response = rest.request("POST", f"v1/experiments/{eid}/runs", ok=(200, 409), json=_run_payload(row, example_id))
            if response.status_code == 409:  # logged meanwhile by another call: find its id
                run_id = next(r["id"] for r in rest.get_json(f"v1/experiments/{eid}/runs")["data"]
                              if r["dataset_example_id"] == example_id)
            else:
                run_id, created = response.json()["data"]["id"], True
        have = done_evals.get(example_id, set())
        posted = 0
        for evaluation in _evaluations(row, job["judged"]):
            if evaluation["name"] not in have:
                rest.request("POST", "v1/experiment_evaluations", json={**evaluation, "experiment_run_id": run_id})
                posted += 1
        with lock:
            result.runs_created += created
            result.runs_existing += not created
            result.evaluations_created += posted

    with ThreadPoolExecutor(max_workers=rest.workers) as pool:
        list(pool.map(log_one, todo))  # list() re-raises the first error
    return result


def log_experiment_to_phoenix(hostname: Any = None, api_key: str | None = None, dataset_obj: Any = None,
                              experiment_name: str = "", experiment_df: Any = None,
                              metadata: dict[str, Any] | None = None, *, experiment: str | None = None,
                              dry_run: bool | None = None, description: str | None = None,
                              workers: int = WORKERS, results_root: Path | str | None = None) -> LogResult:
    """Log one split of one loop as a Phoenix experiment on `dataset_obj`: one run per row of
    `experiment_df` (output: patch, plan, status, error, tokens, cost, duration; errored/timed-out
    agent runs are marked as errors) and its evaluations: `resolved` (tests; score 1/0, label
    pass/fail, or an error when unevaluated) and, when the rows were judged, `correctness` (the
    judge's label, score and explanation, or its error).

    `metadata` (loop, accuracies, ruleset version, models, dry_run, ...) is stored on the experiment,
    plus runs, resolved_rate and results_sha. A scripted dry run (metadata["dry_run"] or `dry_run`)
    says so in the name, description and metadata. `experiment` names the results folder
    (act_results/<experiment>/) for the pending file; default metadata["experiment"] or "default".

    Idempotent, retried, and never raises because Phoenix is down: see the module docstring.
    """
    if experiment_df is None or not experiment_name:
        raise ValueError("log_experiment_to_phoenix needs experiment_name=... and experiment_df=... (run_act's DataFrame).")
    if dataset_obj is None:
        raise ValueError("log_experiment_to_phoenix needs dataset_obj=...: what upload_dataset() returned for this split.")
    job = _experiment_job(_as_dataset_ref(dataset_obj), experiment_name, experiment_df, metadata, dry_run, description)
    folder = experiment or (metadata or {}).get("experiment") or config.DEFAULT_EXPERIMENT
    with _rest(hostname, api_key, workers) as rest:
        try:
            return _log_experiment_job(rest, job)
        except PhoenixUnavailable as e:
            path = _keep_pending(folder, job, rest.url, e, results_root)
            return LogResult(job["experiment_name"], pending_path=str(path))


# --- ruleset versions as Phoenix prompt versions ------------------------------------------------

def prompt_name(experiment: str) -> str:
    """The Phoenix prompt that holds an experiment's ruleset versions (Phoenix names: a-z, 0-9, _ and -)."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", experiment.lower()).strip("-_") or "experiment"
    return f"clinerules-{slug}"


def _ruleset_job(experiment: str, version: int, ruleset: str, loop: int | None, dry_run: bool,
                 metadata: dict[str, Any] | None, model: str) -> dict[str, Any]:
    loop = version if loop is None else loop
    meta = {**json.loads(json.dumps(metadata or {}, default=str)), "experiment": experiment,
            "ruleset_version": version, "loop": loop, "ruleset_sha": _sha(ruleset), "dry_run": dry_run}
    description = f"Ruleset version {version} of {experiment!r}, used in loop {loop}."
    if dry_run:
        meta["data_source"] = DRY_RUN_NOTE
        description = f"{DRY_RUN_NOTE} {description}"
    return {"kind": "ruleset", "prompt_name": prompt_name(experiment), "tag": f"loop-{loop}",
            "description": description, "metadata": meta, "ruleset": ruleset, "model": model}


def _log_ruleset_job(rest: _Rest, job: dict[str, Any]) -> dict[str, Any] | None:
    name, meta = job["prompt_name"], job["metadata"]
    response = rest.request("GET", f"v1/prompts/{name}/versions", ok=(200, 404), params={"limit": 1000})
    try:
        existing = response.json()["data"] if response.status_code == 200 else []
    except (ValueError, KeyError):
        return None  # a Phoenix without prompt routes (its web UI answered)
    keys = ("experiment", "ruleset_version", "ruleset_sha")
    version = next((v for v in existing if all((v.get("metadata") or {}).get(k) == meta[k] for k in keys)), None)
    if version is None:
        body = {
            "prompt": {"name": name, "description": f"Cline rules (.clinerules) learned by experiment {meta['experiment']!r}"},
            "version": {
                "description": job["description"], "metadata": meta, "model_provider": "OPENAI",
                "model_name": job["model"], "template_type": "CHAT", "template_format": "NONE",
                # Phoenix keeps chat templates only: the rules as the system message Cline appends them to.
                "template": {"type": "chat", "messages": [
                    {"role": "system", "content": [{"type": "text", "text": job["ruleset"]}]}]},
                "invocation_parameters": {"type": "openai", "openai": {}},
            },
        }
        version = rest.request("POST", "v1/prompts", json=body).json()["data"]
    rest.request("POST", f"v1/prompt_versions/{version['id']}/tags", ok=(200, 201, 204),
                 json={"name": job["tag"], "description": job["description"]})
    return version


def log_ruleset_version(hostname: Any, api_key: str | None, experiment: str, version: int, ruleset: str, *,
                        loop: int | None = None, dry_run: bool = False, metadata: dict[str, Any] | None = None,
                        model: str | None = None, results_root: Path | str | None = None) -> dict[str, Any] | None:
    """Store ruleset `version` of `experiment` as a version of the Phoenix prompt
    `clinerules-<experiment>` (a chat template whose system message is the rules text), tagged
    `loop-<loop>` (the loop that runs with it; default `version`). Metadata carries the version,
    loop, a hash of the text and dry_run; `model` defaults to the agent's (the scripted one in a dry
    run). Re-logging the same version finds it instead of adding another. Returns the prompt
    version, or None when Phoenix is down (kept for flush_pending) or has no prompt routes."""
    model = model or (config.SCRIPTED_MODEL if dry_run else config.AGENT_MODEL)
    job = _ruleset_job(experiment, version, ruleset, loop, dry_run, metadata, model)
    with _rest(hostname, api_key) as rest:
        try:
            return _log_ruleset_job(rest, job)
        except PhoenixUnavailable as e:
            _keep_pending(experiment, job, rest.url, e, results_root)
            return None


# --- when Phoenix is down -----------------------------------------------------------------------

def pending_path(experiment: str, results_root: Path | str | None = None) -> Path:
    """act_results/<experiment>/phoenix_pending.jsonl: what waits to be logged."""
    return experiment_dir(experiment, results_root) / PENDING_FILE


def _job_key(job: dict[str, Any]) -> str:
    if job["kind"] == "ruleset":
        return _sha(["ruleset", job["prompt_name"], job["metadata"]])
    return _sha(["experiment", job["dataset"]["name"], job["experiment_name"], job["metadata"]])


def _warn_once(url: str, what: str, message: str) -> None:
    with _warn_lock:
        if (url, what) in _warned:
            return
        _warned.add((url, what))
    warnings.warn(message, PhoenixUnavailableWarning, stacklevel=4)


def _keep_pending(experiment: str, job: dict[str, Any], url: str, error: Exception,
                  results_root: Path | str | None) -> Path:
    path = pending_path(experiment, results_root)
    append_jsonl(path, {**job, "key": _job_key(job), "failed_url": url,
                        "kept_at": datetime.now(timezone.utc).isoformat()})
    _warn_once(url, experiment,
               f"{error}. Keeping going: what was not logged is kept in {path}; log it later with "
               f"flush_pending({experiment!r}, hostname=...).")
    return path


def flush_pending(experiment: str, hostname: Any = None, api_key: str | None = None, *,
                  results_root: Path | str | None = None, workers: int = WORKERS) -> list[Any]:
    """Log everything kept in act_results/<experiment>/phoenix_pending.jsonl (datasets, experiments,
    ruleset versions) to Phoenix; what is logged leaves the file, what still fails stays. Safe to
    repeat: logging is idempotent. Returns the LogResults (and prompt versions) of what was logged."""
    path = pending_path(experiment, results_root)
    jobs: dict[str, dict[str, Any]] = {}
    for record in read_jsonl(path):
        jobs[record.get("key") or _job_key(record)] = record  # a job kept twice is logged once
    done, results = set(), []
    with _rest(hostname, api_key, workers) as rest:
        for key, job in jobs.items():
            try:
                results.append(_log_experiment_job(rest, job) if job["kind"] == "experiment" else _log_ruleset_job(rest, job))
            except PhoenixUnavailable as e:
                _warn_once(rest.url, f"flush:{experiment}", f"{e}. {len(jobs) - len(done)} jobs stay in {path}.")
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
    "upload_dataset", "log_experiment_to_phoenix", "log_ruleset_version", "flush_pending", "pending_path",
    "DatasetRef", "LogResult", "PhoenixUnavailable", "PhoenixUnavailableWarning", "PhoenixRequestError",
]
