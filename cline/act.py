"""Cline on many tasks: `run_act` (act mode, patches) and `run_plan` (plan mode, plans).

    df = run_act(dataset_name="SWE-bench/SWE-bench_Lite", instance_ids=train_ids, run_id="train_0",
                 ruleset=ruleset, workers=8)                       # the cookbook's call
    df = run_act(tasks=train_df, run_id="train_0", experiment="house-demo", ruleset=ruleset, workers=2)

Each finished task (agent run + test verdict) is appended at once to
act_results/<experiment>/runs/<run_id>.jsonl. Calling again with the same run id, ruleset, mode and
model runs only what is missing (a killed run resumes; records of rate-limit or server errors are run
again), and returns every task's row in task order.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import pandas as pd

from cline.runner import run_task, stop_all
from helpers import config
from helpers.protocols import AgentResult, EvalResult
from helpers.records import append_jsonl, read_jsonl, run_records_path
from helpers.tokens import truncate_chars
from helpers.workspaces import prepare_workspace, remove_workspace

TEST_LOG_CHARS = 6_000
COLUMNS = ("instance_id", "repo", "problem_statement", "ground_truth_patch", "test_patch", "cline_patch", "plan",
           "pass_or_fail", "status", "error", "iterations", "input_tokens", "output_tokens", "cost_usd",
           "duration_s", "run_id", "ruleset_sha", "model", "mode", "eval_error", "failed_tests", "test_log",
           "log_path", "FAIL_TO_PASS", "PASS_TO_PASS", "suite")
# Errors worth running again on the next call: the provider was busy, not the task wrong.
TRANSIENT_ERROR = re.compile(r"\b(429|500|502|503|504|529)\b|rate.?limit|overloaded|timed? ?out|ECONNRESET|socket hang up",
                             re.IGNORECASE)


def ruleset_sha(ruleset: str) -> str:
    return hashlib.sha256((ruleset or "").encode("utf-8")).hexdigest()[:16]


def _tasks_frame(dataset_name: str | None, instance_ids: Any, tasks: pd.DataFrame | None) -> pd.DataFrame:
    from helpers.tasks import load_tasks, select_tasks

    if tasks is None:
        if dataset_name is None:
            raise ValueError("run_act needs tasks=<DataFrame> or dataset_name=... (e.g. 'house' or 'SWE-bench/SWE-bench_Lite').")
        tasks = load_tasks(dataset_name)
    if instance_ids is not None:
        tasks = select_tasks(tasks, list(instance_ids))
    if tasks["instance_id"].duplicated().any():
        raise ValueError(f"Duplicate instance ids: {sorted(set(tasks.loc[tasks.instance_id.duplicated(), 'instance_id']))[:5]}")
    return tasks.reset_index(drop=True)


def _is_done(record: dict[str, Any]) -> bool:
    return not (record.get("status") == "error" and TRANSIENT_ERROR.search(record.get("error") or ""))


def _record(task: dict[str, Any], result: AgentResult, verdict: EvalResult | None, run_id: str, sha: str,
            mode: str) -> dict[str, Any]:
    if verdict is None:
        pass_or_fail = "not_evaluated" if result.status == "completed" or mode == "plan" else "fail"
    else:
        pass_or_fail = "pass" if verdict.resolved else "fail"
    return {
        "instance_id": result.instance_id, "repo": task.get("repo", ""), "problem_statement": task.get("problem_statement", ""),
        "ground_truth_patch": task.get("patch", ""), "test_patch": task.get("test_patch", ""),
        "cline_patch": result.patch, "plan": result.plan, "pass_or_fail": pass_or_fail, "status": result.status,
        "error": result.error, "iterations": result.iterations,
        "input_tokens": result.usage.get("input_tokens", 0), "output_tokens": result.usage.get("output_tokens", 0),
        "cost_usd": result.cost_usd, "duration_s": result.duration_s, "run_id": run_id, "ruleset_sha": sha,
        "model": result.model, "mode": mode,
        "eval_error": verdict.error if verdict else "", "failed_tests": verdict.failed_tests if verdict else [],
        "test_log": truncate_chars(verdict.log, TEST_LOG_CHARS) if verdict else "",
        "log_path": verdict.log_path if verdict else "",
        "FAIL_TO_PASS": list(task.get("FAIL_TO_PASS") or []), "PASS_TO_PASS": list(task.get("PASS_TO_PASS") or []),
        "suite": task.get("suite", ""),
    }


def _run_one(task: dict[str, Any], ruleset: str, scratch: Path, evaluate: bool, agent: dict[str, Any]) -> tuple[AgentResult, EvalResult | None]:
    """One task from workspace to verdict; any failure becomes an error result, never an exception."""
    workspace = None
    try:
        workspace = prepare_workspace(task, scratch)
        result = run_task(task, workspace, ruleset, **agent)
    except Exception as error:  # a broken workspace or runner fails this task only
        result = AgentResult(str(task["instance_id"]), "error", error=f"{type(error).__name__}: {error}",
                             model=agent.get("model", ""))
    finally:
        if workspace is not None:
            remove_workspace(workspace)
    verdict = None
    if evaluate and agent.get("mode") != "plan" and result.status == "completed":
        try:
            from helpers.evaluation import evaluate_patch

            verdict = evaluate_patch(task, result.patch)
        except Exception as error:  # e.g. no Docker for a SWE-bench task: recorded on the row
            verdict = EvalResult(result.instance_id, False, log=str(error), error=f"{type(error).__name__}: {error}")
    return result, verdict


def run_act(dataset_name: str | None = None, instance_ids: Any = None, run_id: str = "run", ruleset: str = "",
            workers: int = config.WORKERS, *, tasks: pd.DataFrame | None = None, experiment: str | None = None,
            evaluate: bool = True, model: str | None = None, base_url: str | None = None,
            api_key: str | None = None, provider: str | None = None, timeout_s: float = config.AGENT_TIMEOUT_S,
            mode: str = "act", results_root: Path | str | None = None, progress: bool = True) -> pd.DataFrame:
    """Run Cline on every task (`workers` at a time), test each patch, and return one row per task.

    Columns: instance_id, repo, problem_statement, ground_truth_patch, test_patch, cline_patch, plan,
    pass_or_fail ("pass" | "fail" | "not_evaluated"), status ("completed" | "error" | "timeout"), error,
    iterations, input_tokens, output_tokens, cost_usd, duration_s, run_id, ruleset_sha, model, mode,
    eval_error, failed_tests, test_log (an excerpt), log_path, FAIL_TO_PASS, PASS_TO_PASS, suite.
    A task whose agent run failed is a "fail" row with the reason in `error`; only setup problems (no
    Cline binary, no key) raise, before any task starts.
    """
    from cline.runner import cline_binary, provider_settings

    model = model or config.AGENT_MODEL
    frame = _tasks_frame(dataset_name, instance_ids, tasks)
    cline_binary()
    provider_settings(model, base_url, api_key, provider)  # a missing key fails here, not per task
    sha = ruleset_sha(ruleset)
    path = run_records_path(experiment or config.DEFAULT_EXPERIMENT, run_id, results_root)
    done = {r["instance_id"]: r for r in read_jsonl(path)
            if r.get("ruleset_sha") == sha and r.get("mode") == mode and r.get("model") == model and _is_done(r)}
    todo = [row for row in frame.to_dict("records") if row["instance_id"] not in done]
    agent = {"model": model, "base_url": base_url, "api_key": api_key, "provider": provider,
             "timeout_s": timeout_s, "mode": mode}
    if todo:
        _run_all(todo, ruleset, evaluate, agent, workers, path, run_id, sha, done, progress)
    rows = [done[i] for i in frame["instance_id"] if i in done]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _run_all(todo: list[dict[str, Any]], ruleset: str, evaluate: bool, agent: dict[str, Any], workers: int,
             path: Path, run_id: str, sha: str, done: dict[str, dict[str, Any]], progress: bool) -> None:
    from tqdm import tqdm

    lock = threading.Lock()
    scratch = Path(tempfile.mkdtemp(prefix="run-act-"))
    bar = tqdm(total=len(todo), desc=run_id, disable=not progress, unit="task")
    pool = ThreadPoolExecutor(max_workers=max(1, int(workers)), thread_name_prefix="run-act")
    try:
        futures = {pool.submit(_run_one, task, ruleset, scratch, evaluate, agent): task for task in todo}
        for future in as_completed(futures):
            task = futures[future]
            result, verdict = future.result()
            record = _record(task, result, verdict, run_id, sha, agent["mode"])
            append_jsonl(path, record)  # written the moment it is known: a kill loses nothing finished
            with lock:
                done[record["instance_id"]] = record
            bar.update(1)
    except BaseException:  # KeyboardInterrupt in a notebook: stop every Cline run now
        pool.shutdown(wait=False, cancel_futures=True)
        stop_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        bar.close()
        shutil.rmtree(scratch, ignore_errors=True)


def run_plan(dataset_name: str | None = None, instance_ids: Any = None, run_id: str = "plan", ruleset: str = "",
             workers: int = config.WORKERS, **kwargs: Any) -> pd.DataFrame:
    """run_act in plan mode: Cline answers with a plan (the `plan` column); nothing is tested."""
    return run_act(dataset_name, instance_ids, run_id, ruleset, workers, **{**kwargs, "mode": "plan"})

__all__ = ["run_act", "run_plan"]  # the public API, documented in CODE_APPENDIX.md
