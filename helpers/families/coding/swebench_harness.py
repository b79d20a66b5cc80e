"""SWE-bench evaluation through the swebench harness, kept thin over its own API.

    evaluator = SWEbenchEvaluator(workers=4)               # Docker, else Modal (or `command=` a stand-in)
    evaluator.check(tasks)                                 # before any agent runs: raises HarnessUnavailable
    evaluator.evaluate_batch(tasks, patches, run_key="exp.train_3.a0")   # one harness call, many tasks
    testbed_workspace(task_row, dest)                      # the repository as the instance image has it

The harness runs each task's tests in a Docker image (`run_evaluation`), locally or on Modal. Neither
is available everywhere: `check` says so before any paid agent run, and how to get one. Grading a
recorded log or report needs neither (helpers.families.coding.swebench_grading).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Sequence

from helpers.core import config
from helpers.core.protocols import EvalResult, Task
from helpers.families.coding.patches import grading_patch
from helpers.families.coding.swebench_grading import DEFAULT_MODEL_NAME, LOG_EXCERPT_CHARS, read_report

HARNESS_COMMAND = [sys.executable, "-m", "swebench.harness.run_evaluation"]
HARNESS_TIMEOUT_S = 1_800  # per instance, the harness's own default
HARNESS_TAIL_LINES = 20  # of the harness's output, quoted when an instance got no report
TESTBED = "/testbed"  # where the instance images hold the repository (swebench's CONTAINER_WORKDIR)
# The patch's own fault when the harness writes no report: it did not apply, or its tests ran out of time.
PATCH_FAULT = re.compile(r"Patch Apply Failed|Test timed out", re.IGNORECASE)
OWN_COLUMNS = ("repo_path", "suite")  # columns load_tasks adds, not SWE-bench's


# `make quickstart` installs the package without it (a workshop laptop's install runs the house suite)
SWEBENCH_EXTRA = (
    "SWE-bench tasks need the swebench extra (the harness and the datasets library, ~250 MB): "
    "pip install -e '.[swebench]' (`make setup` installs it). The bundled house suite "
    "(TASK_SOURCE='house') runs without it."
)


class HarnessUnavailable(RuntimeError):
    """Neither a Docker engine nor Modal credentials: SWE-bench tests cannot run on this machine."""


def docker_available(timeout_s: float = 2.0) -> bool:
    """True when a Docker engine answers a ping (bounded by `timeout_s`)."""
    try:
        import docker

        client = docker.from_env(timeout=timeout_s)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # no SDK, no socket, no daemon: all mean "not here"
        return False


def modal_available() -> bool:
    """True when the modal package is installed and credentials are configured."""
    if importlib.util.find_spec("modal") is None:
        return False
    has_env = bool(os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET"))
    return has_env or (Path.home() / ".modal.toml").exists()


def require_backend(backend: str | None = None) -> str:
    """The backend to use ("docker" or "modal"), or HarnessUnavailable saying how to get one."""
    if backend not in (None, "docker", "modal"):
        raise ValueError(f"backend must be 'docker' or 'modal', not {backend!r}.")
    if importlib.util.find_spec("swebench") is None:
        raise HarnessUnavailable(SWEBENCH_EXTRA)
    if backend in (None, "docker") and docker_available():
        return "docker"
    if backend in (None, "modal") and modal_available():
        return "modal"
    wanted = backend or "Docker or Modal"
    raise HarnessUnavailable(
        f"SWE-bench tests need {wanted} and this machine has {'neither' if backend is None else 'none'}: start a "
        "Docker engine (docker info should answer), or `pip install modal && modal token new` to run them on "
        "Modal. The bundled house suite (TASK_SOURCE='house') runs without either."
    )


class SWEbenchEvaluator:
    """The Evaluator for SWE-bench tasks: swebench's `run_evaluation`, one call for a batch of patches.

    SWEbenchEvaluator(*, backend=None, workers=4, timeout_s=1800, dataset=None,
                      split=config.SWEBENCH_SPLIT, work_dir=None, model_name="prompt-learning", command=None)

    backend: "docker", "modal" or None (Docker if it answers, else Modal). workers and timeout_s are the
    harness's --max_workers and per-instance --timeout. dataset/split are what the harness loads the
    instances from (a hub id or a local .json/.jsonl file); None (the default): the tasks' own rows,
    written to <work_dir>/tasks-<digest>.jsonl, so grading always follows the task source (Lite,
    Verified, full, a local .parquet or .csv) and needs no download. work_dir is the harness's working directory
    (default config.cache_root()/"swebench"): its logs land in <work_dir>/logs/run_evaluation/.
    model_name is the predictions' `model_name_or_path`. command replaces HARNESS_COMMAND (argv words;
    tests pass a stand-in), and then no Docker or Modal is needed.

    tasks are rows (mappings with SWE-bench's fields) or a DataFrame of them.
    check(tasks) -> None: raises HarnessUnavailable, saying how to fix it, when no backend is there
    (call it before any agent runs); ValueError when `dataset` is a local file that lacks some task.

    evaluate_batch(tasks, patches, *, run_key) -> list[EvalResult], one per task, in order: ONE harness
    call for all non-empty patches, each without its changes to tests and test configuration (set aside as
    the local evaluator does: helpers.families.coding.patches; listed in EvalResult.set_aside). Its run id is `run_key` sanitized (the engine makes it unique per
    experiment, split, loop and attempt, e.g. "exp.train_3.a0") plus a digest of the predictions, and
    its predictions file (<work_dir>/predictions-<run id>.jsonl) is its own. The same key with the same
    patches re-reads the harness's reports (it skips instances it has graded); the same key with other
    patches gets a fresh run, never stale verdicts. Never raises for a bad patch: an empty patch, a patch
    that did not apply and tests that timed out are resolved=False with the reason in `error`; an
    instance the harness wrote no report for otherwise (it crashed, exited non-zero, listed the instance
    in its run report's `error_ids`, Docker or Modal failed) is `infra=True`: not the patch's doing, so
    the engine records an error and evaluates it again on the next call. Each error quotes the
    harness's own message (the instance's run_instance.log, else its last output lines).
    Raises HarnessUnavailable (from check) when no backend is there, ValueError for mismatched input.

    evaluate(task, patch, *, run_key="single") -> EvalResult: a batch of one.
    batched = True: the engine evaluates a split's patches in one call after its agents finish.
    """

    batched = True

    def __init__(
        self,
        *,
        backend: str | None = None,
        workers: int = 4,
        timeout_s: float = HARNESS_TIMEOUT_S,
        dataset: str | None = None,
        split: str = config.SWEBENCH_SPLIT,
        work_dir: Path | str | None = None,
        model_name: str = DEFAULT_MODEL_NAME,
        command: Sequence[str] | None = None,
    ):
        if backend not in (None, "docker", "modal"):
            raise ValueError(f"backend must be 'docker' or 'modal', not {backend!r}.")
        self.backend = backend
        self.workers = workers
        self.timeout_s = timeout_s
        # the harness runs in work_dir: a local data set must be named by its absolute path
        self.dataset = (
            None if dataset is None else str(Path(dataset).resolve()) if Path(dataset).exists() else str(dataset)
        )
        self.split = split
        self.work_dir = Path(work_dir) if work_dir else config.cache_root() / "swebench"
        self.model_name = model_name
        self.command = list(command) if command else None
        self._chosen: str | None = None  # the backend check() found
        self._exit_code = 0  # of the last harness call

    def check(self, tasks: Sequence[Task] = ()) -> None:
        """Raise HarnessUnavailable (how to fix it) or ValueError now, rather than after the agents ran."""
        if self.dataset is not None:
            _check_local_dataset(self.dataset, [str(t["instance_id"]) for t in _rows(tasks)])
        self._chosen = (self.backend or "docker") if self.command else require_backend(self.backend)

    def evaluate(self, task: Task, patch: str, *, run_key: str = "single") -> EvalResult:
        """One task through the harness: a batch of one."""
        return self.evaluate_batch([task], [patch], run_key=run_key)[0]

    def evaluate_batch(self, tasks: Sequence[Task], patches: Sequence[str], *, run_key: str) -> list[EvalResult]:
        """One harness call for every non-empty patch; an EvalResult per task (see the class docstring)."""
        tasks = _rows(tasks)
        ids = [str(t["instance_id"]) for t in tasks]
        if len(ids) != len(patches):
            raise ValueError(f"{len(ids)} tasks but {len(patches)} patches.")
        # the harness resets only the test patch's files: the rest of what decides a task is set aside here
        graded_parts = [grading_patch(p or "", t.get("test_patch") or "") for t, p in zip(tasks, patches)]
        patches = [kept for kept, _ in graded_parts]
        if len(set(ids)) != len(ids):
            raise ValueError("each instance may appear once in a batch (the harness keys predictions by id).")
        if self._chosen is None:
            self.check(tasks)
        run_id = harness_run_id(run_key, ids, patches, self.model_name)
        graded = [(i, p) for i, p in zip(ids, patches) if p.strip()]
        rows = {str(t["instance_id"]): t for t in tasks}
        output = self._run_harness(run_id, graded, [rows[i] for i, _ in graded]) if graded else ""
        error_ids = self._error_ids(run_id) if graded else set()
        results = [self._result(run_id, i, p, output, i in error_ids) for i, p in zip(ids, patches)]
        for result, (_, aside) in zip(results, graded_parts):
            result.set_aside = aside
        return results

    def _run_harness(self, run_id: str, predictions: list[tuple[str, str]], tasks: list[Task]) -> str:
        """Run the harness once in work_dir; returns its output (also kept in harness-<run id>.log)."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        path = self.work_dir / f"predictions-{run_id}.jsonl"
        path.write_text(
            "".join(
                json.dumps({"instance_id": i, "model_name_or_path": self.model_name, "model_patch": p}) + "\n"
                for i, p in predictions
            )
        )
        dataset = self.dataset or str(write_task_rows(tasks, self.work_dir).resolve())
        command = [
            *(self.command or HARNESS_COMMAND),
            "--dataset_name",
            dataset,
            "--split",
            self.split,
            "--predictions_path",
            str(path.resolve()),
            "--max_workers",
            str(self.workers),
            "--run_id",
            run_id,
            "--timeout",
            str(int(self.timeout_s)),
            "--modal",
            str(self._chosen == "modal").lower(),
            "--instance_ids",
            *[i for i, _ in predictions],
        ]
        # No overall timeout: the harness bounds each instance by --timeout itself (image pulls can take long).
        # It inherits our environment (Docker, Modal, Hugging Face settings); patches run only in containers.
        done = subprocess.run(command, cwd=self.work_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        output = f"{done.stdout}\n[harness exit code {done.returncode}]\n"
        self._exit_code = done.returncode
        with (self.work_dir / f"harness-{run_id}.log").open("a") as log:
            log.write(output)
        return output

    def _folder(self, run_id: str) -> Path:
        return self.work_dir / "logs" / "run_evaluation" / run_id / self.model_name.replace("/", "__")

    def _error_ids(self, run_id: str) -> set[str]:
        """The instances the harness's run report (<model>.<run id>.json in work_dir) lists as errors."""
        path = self.work_dir / f"{self.model_name.replace('/', '__')}.{run_id}.json"
        try:
            return {str(i) for i in json.loads(path.read_text()).get("error_ids") or []}
        except (OSError, ValueError, AttributeError):
            return set()

    def _result(self, run_id: str, instance_id: str, patch: str, output: str, listed_error: bool = False) -> EvalResult:
        """The instance's report.json as an EvalResult, or a failure saying why there is none and whose it is."""
        if not patch.strip():
            why = "the patch is empty: nothing to test"
            return EvalResult(instance_id, False, log=why, error=why)
        report = self._folder(run_id) / instance_id / "report.json"
        if report.exists():
            try:
                return read_report(report, instance_id)
            except (ValueError, KeyError) as error:
                output = f"{output}\nunreadable {report}: {error}"
        instance_log = self._folder(run_id) / instance_id / "run_instance.log"
        message = instance_log.read_text(errors="replace") if instance_log.exists() else ""
        tail = "\n".join((message or output).strip().splitlines()[-HARNESS_TAIL_LINES:])
        patch_fault = bool(PATCH_FAULT.search(message))  # the instance's own log says so; nothing else does
        why = "".join(
            [
                f"; harness exit code {self._exit_code}" if self._exit_code and not patch_fault else "",
                "; listed in the run report's error_ids" if listed_error and not patch_fault else "",
            ]
        )
        return EvalResult(
            instance_id,
            False,
            log=output[-LOG_EXCERPT_CHARS:],
            infra=not patch_fault,
            error=f"the harness wrote no report for {instance_id} (run {run_id}{why}); "
            f"{'the patch' if patch_fault else 'the harness failed, not the patch'}:\n{tail}",
        )


def write_task_rows(tasks: Sequence[Task], folder: Path) -> Path:
    """The tasks' own rows as a JSONL data set the harness loads (<folder>/tasks-<digest>.jsonl): test lists
    as JSON text, as the hub rows have them; our own columns (repo_path, suite) left out."""
    lines = []
    for task in tasks:
        row = {k: v for k, v in task.items() if k not in OWN_COLUMNS}
        for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            if not isinstance(row.get(key), str):
                row[key] = json.dumps(list(row.get(key) or []))
        lines.append(json.dumps(row, default=str, sort_keys=True))
    text = "\n".join(lines) + "\n"
    path = folder / f"tasks-{hashlib.sha256(text.encode()).hexdigest()[:12]}.jsonl"
    if not path.exists():
        path.write_text(text)
    return path


def _rows(tasks: Any) -> list[Task]:
    """Task rows from a DataFrame or any sequence of mappings."""
    return tasks.to_dict("records") if hasattr(tasks, "to_dict") else list(tasks)


def harness_run_id(run_key: str, instance_ids: Sequence[str], patches: Sequence[str], model_name: str) -> str:
    """`run_key` made safe for the harness (container and folder names) plus a digest of the predictions."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", run_key).strip(".-_")
    if not safe:
        raise ValueError(f"run_key {run_key!r} has no letters or digits.")
    content = json.dumps([model_name, sorted(zip(instance_ids, patches))])
    return f"{safe}.{hashlib.sha256(content.encode()).hexdigest()[:8]}"


def _check_local_dataset(dataset: str, instance_ids: Sequence[str]) -> None:
    """ValueError when `dataset` is a local .json/.jsonl file that lacks some of `instance_ids`.

    The harness refuses a whole batch with one unknown id; this finds it before the agents run.
    """
    if not dataset.endswith((".json", ".jsonl")):
        return  # a hub id: the harness loads it itself
    path = Path(dataset)
    if not path.exists():
        raise ValueError(f"the SWE-bench data set file {path} does not exist.")
    text = path.read_text()
    rows = (
        json.loads(text)
        if dataset.endswith(".json")
        else [json.loads(line) for line in text.split("\n") if line.strip()]
    )  # not at U+2028
    missing = sorted(set(instance_ids) - {str(row["instance_id"]) for row in rows})
    if missing:
        raise ValueError(
            f"{path} has no rows for {missing[:5]} ({len(missing)} tasks): the harness would refuse "
            "the whole batch. Pass the data set the tasks came from as `dataset`."
        )


def testbed_workspace(task: Task, dest: Path | str) -> Path:
    """The task's repository as its instance image holds it (/testbed), copied to `dest` (which must not
    exist); returns `dest`. Needs a Docker engine, else raises HarnessUnavailable saying what to use.

    The image is the row's `image`, else swebench's name for the instance (pulled when missing). The
    copy is the tree the harness tests against, environment set-up included: the caller should check
    `git status` before taking diffs from it.
    """
    # Not exercised on the test machines (no Docker engine): the tests cover only the HarnessUnavailable.
    if not docker_available():
        raise HarnessUnavailable(
            "Copying /testbed out of the instance image needs a Docker engine (docker info should answer). "
            "Without one, build the workspace from a git mirror instead (helpers.families.coding.mirrors.ensure_mirror)."
        )
    import docker
    from swebench.task.checks import expected_image

    dest = Path(dest)
    if dest.exists():
        raise FileExistsError(f"{dest} exists; testbed_workspace copies into a new folder.")
    dest.parent.mkdir(parents=True, exist_ok=True)
    image = str(task.get("image") or expected_image(str(task["instance_id"])))
    client = docker.from_env()
    try:
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            client.images.pull(image)
        container = client.containers.create(image, command="true")
        try:
            stream, _ = container.get_archive(TESTBED)
            with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".testbed-") as scratch:
                archive = Path(scratch) / "testbed.tar"
                with archive.open("wb") as out:
                    for chunk in stream:
                        out.write(chunk)
                with tarfile.open(archive) as tar:
                    tar.extractall(scratch, filter="tar")  # keeps modes and in-tree symlinks
                shutil.move(str(Path(scratch) / Path(TESTBED).name), dest)
        finally:
            container.remove(force=True)
    finally:
        client.close()
    return dest


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "SWEbenchEvaluator",
    "harness_run_id",
    "testbed_workspace",
    "write_task_rows",
    "require_backend",
    "docker_available",
    "modal_available",
    "HarnessUnavailable",
]
