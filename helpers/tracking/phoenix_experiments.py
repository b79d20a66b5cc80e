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
from typing import Any, Callable, Iterable

import httpx

from helpers.core import config
from helpers.store.records import append_jsonl, experiment_dir, read_jsonl, ruleset_sha, write_atomic

WORKERS = 8  # concurrent requests; Phoenix on SQLite serialises writes, more buys nothing
RETRIES = 3
BACKOFF_S = 0.5  # doubles per retry: 0.5, 1, 2 s
TIMEOUT_S = 30.0
DRY_RUN_LABEL = "scripted dry run"
DRY_RUN_NOTE = "SCRIPTED DRY RUN - not real results: every model reply came from the scripted model server."
PENDING_FILE = "phoenix_pending.jsonl"

# Columns of a run_act / evaluate_results row that go into a Phoenix run (output and evaluations).
RUN_FIELDS = (
    "instance_id", "output", "mode", "cline_patch", "plan", "status", "error", "pass_or_fail", "eval_error",
    "failed_tests", "iterations", "input_tokens", "output_tokens", "cost_usd", "duration_s", "run_id",
    "ruleset_sha", "correctness", "explanation", "judge_error", "judge_cost_usd", "split",
)
EXAMPLE_METADATA_FIELDS = ("instance_id", "repo", "base_commit", "suite")
GOLD_PATCH_FIELDS = ("patch", "ground_truth_patch")

_warned: set[tuple[str, str]] = set()
_warn_lock = threading.Lock()


class PhoenixUnavailable(RuntimeError):
    """Phoenix did not answer (or refused the API key) after retries."""


class PhoenixRequestError(RuntimeError):
    """Phoenix rejected a request as bad (a 4xx other than 401/403/429); `status_code` says which."""

    def __init__(self, message: str, status_code: int | None = None):
        super().__init__(message)
        self.status_code = status_code


class PhoenixUnavailableWarning(UserWarning):
    """Phoenix is down: results were kept in act_results/<experiment>/phoenix_pending.jsonl."""


# --- the client, with retries -------------------------------------------------------------------

def _status_error(error: BaseException) -> httpx.HTTPStatusError | None:
    """The HTTP error behind a client exception (DatasetUploadError wraps it as its cause)."""
    while error is not None:
        if isinstance(error, httpx.HTTPStatusError):
            return error
        error = error.__cause__
    return None


class _Phoenix:
    """A phoenix.client.Client with retries and a shared 'down' flag (so that, once Phoenix is known
    to be unreachable, the other workers give up at once instead of each retrying)."""

    def __init__(self, url: str, client: Any, workers: int = WORKERS, owned: bool = False):
        self.url = url.rstrip("/")
        self.client = client
        self.workers = workers
        self.owned = owned  # True when this object made the client (and so closes it)
        self.down = threading.Event()

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs), retried on transient errors; PhoenixUnavailable or PhoenixRequestError."""
        problem = ""
        for attempt in range(RETRIES + 1):
            if self.down.is_set():
                raise PhoenixUnavailable(f"Phoenix at {self.url} is unreachable")
            delay = BACKOFF_S * 2 ** attempt
            try:
                return fn(*args, **kwargs)
            except httpx.TransportError as e:
                problem = f"{type(e).__name__}: {e}"
            except Exception as e:
                response = getattr(_status_error(e), "response", None)
                if response is None:
                    raise
                status = response.status_code
                if status in (401, 403):
                    self.down.set()
                    raise PhoenixUnavailable(
                        f"Phoenix at {self.url} refused the request ({status}): set PHOENIX_API_KEY "
                        "(or pass api_key=...) to a key this server accepts.") from e
                if status != 429 and status < 500:
                    raise PhoenixRequestError(
                        f"Phoenix answered {status} to {response.request.method} {response.request.url.path}: "
                        f"{response.text[:500]}", status) from e
                problem = f"HTTP {status}"
                retry_after = response.headers.get("retry-after", "")
                delay = float(retry_after) if retry_after.replace(".", "", 1).isdigit() else delay
            if attempt < RETRIES:
                time.sleep(min(delay, 30.0))
        self.down.set()
        raise PhoenixUnavailable(f"Phoenix at {self.url} did not answer ({problem})")

    def rest(self, method: str, path: str, **kwargs: Any) -> Any:
        """A request the client has no call for (see the comment at each use): its JSON body."""
        def send() -> Any:
            response = self.client._client.request(method, path, **kwargs)
            response.raise_for_status()
            return response.json()
        return self.call(send)

    def close(self) -> None:
        if self.owned:
            self.client._client.close()

    def __enter__(self) -> "_Phoenix":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _connect(target: Any, api_key: str | None = None, workers: int = WORKERS) -> _Phoenix:
    """A _Phoenix for a URL, a PhoenixServer (.url/.api_key), a phoenix.client.Client, or None
    (PHOENIX_COLLECTOR_ENDPOINT)."""
    from phoenix.client import Client  # here, not at import: `import helpers` stays light

    if isinstance(target, Client):
        return _Phoenix(str(target._client.base_url), target, workers)
    if target is None:
        target = config.read_env("PHOENIX_COLLECTOR_ENDPOINT")
    url = target if isinstance(target, str) else getattr(target, "url", None)
    if not url:
        raise ValueError(
            f"Cannot reach Phoenix through {target!r}: pass its URL (e.g. 'http://127.0.0.1:6006'), a "
            "PhoenixServer, or a phoenix.client.Client; or set PHOENIX_COLLECTOR_ENDPOINT."
        )
    key = api_key or getattr(target, "api_key", None) or config.read_env("PHOENIX_API_KEY")
    http = httpx.Client(
        base_url=url.rstrip("/"), timeout=TIMEOUT_S,
        headers={"Authorization": f"Bearer {key}"} if key else {},
        limits=httpx.Limits(max_connections=workers, max_keepalive_connections=workers),
    )
    return _Phoenix(url, Client(http_client=http), workers, owned=True)


# --- plain data ---------------------------------------------------------------------------------

def _jsonable(frame: Any, columns: Iterable[str]) -> list[dict[str, Any]]:
    """Rows as JSON-safe dicts (NaN -> None, numpy -> Python), keeping only `columns` present."""
    keep = [c for c in dict.fromkeys(columns) if c in frame.columns]
    return json.loads(frame[keep].to_json(orient="records", date_format="iso", default_handler=str))


def _sha(obj: Any) -> str:
    """A short hash of plain data (job keys, the logged rows); rulesets use records.ruleset_sha."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


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
        examples.append({
            "id": str(row["instance_id"]),
            "input": {"problem_statement": row["problem_statement"] or ""},
            # One string, so the compare view renders it as Markdown: the diff as a code block.
            "output": {"patch": code_block(patch)} if patch else {},
            "metadata": {k: row[k] for k in EXAMPLE_METADATA_FIELDS if row.get(k) is not None},
        })
    return examples


def _ref_from_dataset(dataset: Any, description: str = "", examples: list[dict[str, Any]] | None = None) -> DatasetRef:
    """DatasetRef from a phoenix.client Dataset: example node ids by instance id (metadata, else the example id)."""
    ref = DatasetRef(name=dataset.name, id=dataset.id, version_id=dataset.version_id,
                     description=description or getattr(dataset, "description", None) or "")
    for example in dataset.examples:
        instance_id = str((example.get("metadata") or {}).get("instance_id") or example["id"])
        ref.example_ids[instance_id] = example.get("node_id") or example["id"]
        if examples is None:
            ref.examples.append({"id": instance_id, "input": dict(example["input"]),
                                 "output": dict(example["output"]), "metadata": dict(example["metadata"] or {})})
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
    dataset = phoenix.call(phoenix.client.datasets.create_dataset, name=spec.name, examples=spec.examples,
                           dataset_description=spec.description, timeout=TIMEOUT_S)
    return _ref_from_dataset(dataset, spec.description, spec.examples)


def upload_dataset(client_or_url: Any, name: str, df: Any, *, api_key: str | None = None,
                   description: str | None = None) -> DatasetRef:
    """Upload a task set as the Phoenix dataset `name`; re-running with the same tasks reuses it
    (no duplicate, no new version). Returns a DatasetRef to pass as `dataset_obj`.

    input: {"problem_statement"}; output: {"patch": the gold patch as a ```diff block} where the rows
    carry one (`patch` or `ground_truth_patch`); metadata: instance_id, repo (and base_commit, suite
    when present); the instance id is the example's stable id. Other tasks under the same name become
    the dataset's new version. If Phoenix is unreachable this warns and returns a DatasetRef with id
    None, which log_experiment_to_phoenix / flush_pending upload later.
    """
    spec = DatasetRef(name=name, description=description or f"{name}: {len(df)} tasks",
                      examples=dataset_examples(df))
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
            found = phoenix.call(phoenix.client.datasets.get_dataset, dataset=dataset.id,
                                 version_id=dataset.version_id, timeout=TIMEOUT_S)
        except PhoenixRequestError as e:
            if e.status_code not in (404, 422):
                raise
        else:
            if found.name == dataset.name:  # ids are per server: another server's id may name another dataset
                return _ref_from_dataset(found, dataset.description, dataset.examples or None)
    if not dataset.examples:
        raise PhoenixRequestError(f"Dataset {dataset.name!r} is not on {phoenix.url} and its examples are unknown.")
    return _upload(phoenix, DatasetRef(dataset.name, description=dataset.description, examples=dataset.examples))


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


def agent_output(row: dict[str, Any]) -> tuple[str, str]:
    """(what it is, the text): the row's `output` column, else its `cline_patch` / `plan` (older
    rows). "plan" when `mode == "plan"`, "patch" for an act run or a diff, else "output" (e.g. the
    page a prompt task's model wrote)."""
    text = row.get("output")
    if text is None:
        return ("plan", row["plan"]) if row.get("plan") and not row.get("cline_patch") else ("patch", row.get("cline_patch") or "")
    if row.get("mode") == "plan":
        return "plan", text
    is_diff = text.lstrip().startswith(("diff --git", "--- ", "Index: "))
    return ("patch" if row.get("mode") == "act" or is_diff else "output"), text


def _details(row: dict[str, Any]) -> list[str]:
    """The short list under the patch: tests, agent, tokens and cost, ruleset and run."""
    lines = []
    verdict = row.get("pass_or_fail")
    if verdict:
        failed = row.get("failed_tests")
        failed = failed if isinstance(failed, list) else [failed] if failed and failed != "[]" else []
        shown = ", ".join(f"`{t}`" for t in failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
        lines.append(f"- **tests**: {verdict}" + (f" ({shown})" if shown else "")
                     + (f"; {row['eval_error']}" if row.get("eval_error") else ""))
    agent = [row.get("status") or "completed"]
    if row.get("error"):
        agent.append(str(row["error"])[:300])
    if row.get("iterations") is not None:
        agent.append(f"{row['iterations']} iterations")
    if row.get("duration_s") is not None:
        agent.append(f"{float(row['duration_s']):.0f} s")
    lines.append("- **agent**: " + ", ".join(str(a) for a in agent))
    if row.get("input_tokens") is not None or row.get("cost_usd") is not None:
        lines.append(f"- **tokens**: {row.get('input_tokens') or 0} in, {row.get('output_tokens') or 0} out; "
                     f"**cost** ${float(row.get('cost_usd') or 0):.4f}")
    if row.get("ruleset_sha") or row.get("run_id"):
        lines.append(f"- **ruleset** `{row.get('ruleset_sha') or '?'}`, run `{row.get('run_id') or '?'}`")
    return lines


def run_output(row: dict[str, Any]) -> dict[str, str]:
    """A run's output as the compare view shows it: {"patch" | "plan" | "output": Markdown}, the
    patch as a ```diff block (a plan as ```markdown, other output as ```json or ```text) first, then
    the short list of details."""
    kind, text = agent_output(row)
    if not text.strip():
        return {kind: "\n\n".join([f"*No {kind}: the agent {'changed no file' if kind == 'patch' else 'wrote nothing'}.*",
                                     "\n".join(_details(row))])}
    language = {"patch": "diff", "plan": "markdown"}.get(kind) or ("json" if text.lstrip()[:1] in "{[" else "text")
    return {kind: "\n\n".join([code_block(text, language), "\n".join(_details(row))])}


def _run(row: dict[str, Any]) -> dict[str, Any]:
    """log_run's arguments for a row (without the experiment and example ids)."""
    end = datetime.now(timezone.utc)
    start = end - timedelta(seconds=float(row.get("duration_s") or 0.0))
    status = row.get("status") or "completed"
    error = f"{status}: {row.get('error') or 'no details'}"[:4000] if status != "completed" else None
    return {"output": run_output(row), "start_time": start, "end_time": end, "repetition_number": 1, "error": error}


def _evaluations(row: dict[str, Any], judged: bool) -> list[dict[str, Any]]:
    """log_evaluation's arguments: 'resolved' (tests; score 1/0, the failed tests as explanation) and,
    on judged rows, the judge's 'correctness' with its explanation."""
    verdict = row.get("pass_or_fail")
    resolved: dict[str, Any] = {"name": "resolved", "annotator_kind": "CODE"}
    if verdict in ("pass", "fail"):
        failed = row.get("failed_tests")
        failed = ", ".join(failed) if isinstance(failed, list) else (failed or "")
        resolved.update(label=verdict, score=1.0 if verdict == "pass" else 0.0,
                        explanation=f"failed tests: {failed}" if verdict == "fail" and failed not in ("", "[]")
                        else (row.get("eval_error") or None))
    else:
        resolved["error"] = row.get("eval_error") or f"not evaluated ({verdict})"
    evals = [resolved]
    if judged:
        judge: dict[str, Any] = {"name": "correctness", "annotator_kind": "LLM",
                                 "metadata": {"judge_cost_usd": row.get("judge_cost_usd")}}
        if row.get("judge_error"):
            judge["error"] = row["judge_error"]
        elif row.get("correctness") in ("correct", "incorrect"):
            judge.update(label=row["correctness"], score=1.0 if row["correctness"] == "correct" else 0.0,
                         explanation=row.get("explanation") or None)
        else:
            judge["error"] = f"no judge verdict ({row.get('correctness')!r})"
        evals.append(judge)
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
    return {"kind": "experiment", "dataset": dataset.to_json(), "experiment_name": name,
            "description": description or "", "metadata": meta, "rows": rows, "judged": judged}


def _find_or_create_experiment(phoenix: _Phoenix, dataset: DatasetRef, job: dict[str, Any]) -> dict[str, Any]:
    experiments = phoenix.client.experiments
    for experiment in phoenix.call(experiments.list, dataset_id=dataset.id):
        if experiment.get("name") == job["experiment_name"] and experiment.get("metadata") == job["metadata"]:
            return experiment
    return phoenix.call(experiments.create, dataset_id=dataset.id, dataset_version_id=dataset.version_id,
                        experiment_name=job["experiment_name"], experiment_description=job["description"],
                        experiment_metadata=job["metadata"], repetitions=1)


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
        warnings.warn(f"{len(result.not_in_dataset)} tasks are not in Phoenix dataset {dataset.name!r} and were "
                      f"not logged: {result.not_in_dataset[:5]}", stacklevel=3)
    lock = threading.Lock()

    def log_one(item: tuple[dict[str, Any], str]) -> None:
        row, example_id = item
        run_id = runs.get(example_id)
        created = False
        if run_id is None:
            try:
                run_id = phoenix.call(experiments.log_run, experiment_id=eid, dataset_example_id=example_id,
                                      **_run(row))["id"]
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


def log_experiment_to_phoenix(hostname: Any = None, api_key: str | None = None, dataset_obj: Any = None,
                              experiment_name: str = "", experiment_df: Any = None,
                              metadata: dict[str, Any] | None = None, *, experiment: str | None = None,
                              dry_run: bool | None = None, description: str | None = None,
                              workers: int = WORKERS, results_root: Path | str | None = None) -> LogResult:
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
        raise ValueError("log_experiment_to_phoenix needs experiment_name=... and experiment_df=... (run_act's DataFrame).")
    if dataset_obj is None:
        raise ValueError("log_experiment_to_phoenix needs dataset_obj=...: what upload_dataset() returned for this split.")
    job = _experiment_job(_as_dataset_ref(dataset_obj), experiment_name, experiment_df, metadata, dry_run, description)
    folder = experiment or (metadata or {}).get("experiment") or config.DEFAULT_EXPERIMENT
    with _connect(hostname, api_key, workers) as phoenix:
        try:
            return _log_experiment_job(phoenix, job)
        except PhoenixUnavailable as e:
            path = _keep_pending(folder, job, phoenix.url, e, results_root)
            return LogResult(job["experiment_name"], pending_path=str(path))


# --- ruleset versions as Phoenix prompt versions ------------------------------------------------

def prompt_name(experiment: str) -> str:
    """The Phoenix prompt that holds an experiment's ruleset versions (Phoenix names: a-z, 0-9, _ and -)."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", experiment.lower()).strip("-_") or "experiment"
    return f"rules-{slug}"


def _ruleset_job(experiment: str, version: int, ruleset: str, loop: int | None, dry_run: bool,
                 metadata: dict[str, Any] | None, model: str, prompt: str | None) -> dict[str, Any]:
    loop = version if loop is None else loop
    meta = {**json.loads(json.dumps(metadata or {}, default=str)), "experiment": experiment,
            "ruleset_version": version, "loop": loop, "ruleset_sha": ruleset_sha(ruleset), "dry_run": dry_run}
    description = f"Ruleset version {version} of {experiment!r}, used in loop {loop}."
    if dry_run:
        meta["data_source"] = DRY_RUN_NOTE
        description = f"{DRY_RUN_NOTE} {description}"
    return {"kind": "ruleset", "prompt_name": prompt or prompt_name(experiment), "tag": f"loop-{loop}",
            "description": description, "metadata": meta, "ruleset": ruleset, "model": model}


def _log_ruleset_job(phoenix: _Phoenix, job: dict[str, Any]) -> dict[str, Any] | None:
    name, meta = job["prompt_name"], job["metadata"]
    # Gap: phoenix.client has no call that lists a prompt's versions.
    try:
        existing = phoenix.rest("GET", f"v1/prompts/{name}/versions", params={"limit": 1000})["data"]
    except PhoenixRequestError as e:
        if e.status_code != 404:
            raise
        existing = []
    except (ValueError, KeyError):
        return None  # a Phoenix without prompt routes (its web UI answered)
    keys = ("experiment", "ruleset_version", "ruleset_sha")
    version = next((v for v in existing if all((v.get("metadata") or {}).get(k) == meta[k] for k in keys)), None)
    if version is None:
        # Gap: the client's PromptVersion has no version metadata, which is how a version is found again.
        body = {
            "prompt": {"name": name, "description": f"Rules learned by experiment {meta['experiment']!r}"},
            "version": {
                "description": job["description"], "metadata": meta, "model_provider": "OPENAI",
                "model_name": job["model"], "template_type": "CHAT", "template_format": "NONE",
                # Phoenix keeps chat templates only: the rules as the system message the agent appends them to.
                "template": {"type": "chat", "messages": [
                    {"role": "system", "content": [{"type": "text", "text": job["ruleset"]}]}]},
                "invocation_parameters": {"type": "openai", "openai": {}},
            },
        }
        version = phoenix.rest("POST", "v1/prompts", json=body)["data"]
    phoenix.call(phoenix.client.prompts.tags.create, prompt_version_id=version["id"], name=job["tag"],
                 description=job["description"])  # tagging again moves nothing: the tag is on this version
    return version


def log_ruleset_version(hostname: Any, api_key: str | None, experiment: str, version: int, ruleset: str, *,
                        loop: int | None = None, dry_run: bool = False, metadata: dict[str, Any] | None = None,
                        model: str | None = None, results_root: Path | str | None = None,
                        prompt: str | None = None) -> dict[str, Any] | None:
    """Store ruleset `version` of `experiment` as a version of the Phoenix prompt `prompt` (default
    `rules-<experiment>`; a chat template whose system message is the rules text), tagged
    `loop-<loop>` (the loop that runs with it; default `version`). Metadata carries the version,
    loop, the text's records.ruleset_sha and dry_run; `model` defaults to the agent's (the scripted
    one in a dry run). Re-logging the same version finds it instead of adding another. Returns the
    prompt version (a dict with its id and metadata), or None when Phoenix is down (kept for
    flush_pending) or has no prompt routes."""
    model = model or (config.SCRIPTED_MODEL if dry_run else config.AGENT_MODEL)
    job = _ruleset_job(experiment, version, ruleset, loop, dry_run, metadata, model, prompt)
    with _connect(hostname, api_key) as phoenix:
        try:
            return _log_ruleset_job(phoenix, job)
        except PhoenixUnavailable as e:
            _keep_pending(experiment, job, phoenix.url, e, results_root)
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
    with _connect(hostname, api_key, workers) as phoenix:
        for key, job in jobs.items():
            try:
                results.append(_log_experiment_job(phoenix, job) if job["kind"] == "experiment"
                               else _log_ruleset_job(phoenix, job))
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
    "upload_dataset", "log_experiment_to_phoenix", "log_ruleset_version", "flush_pending", "pending_path",
    "run_output", "DatasetRef", "LogResult", "PhoenixUnavailable", "PhoenixUnavailableWarning",
    "PhoenixRequestError",
]
