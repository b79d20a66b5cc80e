"""Cline on many tasks, with the cookbook's call shapes: `run_act` (patches) and `run_plan` (plans).

    df = run_act(dataset_name="SWE-bench/SWE-bench_Lite", instance_ids=train_ids, run_id="train_0",
                 ruleset=ruleset, workers=8)                       # the cookbook's call
    df = run_act(tasks=train_df, run_id="train_0", experiment="house-demo", ruleset=ruleset, workers=2)

Both are thin wrappers over the agent-agnostic engine (helpers.engine.runs.run_tasks) with a ClineAgent: it
writes each finished task at once to act_results/<experiment>/runs/<run_id>.jsonl and resumes. The
rows carry the engine's `output` column and, for the cookbook's cells, `cline_patch` (act mode) and
`plan` (plan mode) with the same text.
"""

from __future__ import annotations

from inspect import signature
from typing import Any

import pandas as pd

from cline.runner import ClineAgent
from helpers.core import config
from helpers.engine.runs import run_tasks

# run_act's keywords that go to run_tasks; the others make its ClineAgent
RUN_OPTIONS = {name for name, p in signature(run_tasks).parameters.items() if p.kind is p.KEYWORD_ONLY}


def run_act(
    dataset_name: str | None = None,
    instance_ids: Any = None,
    run_id: str | None = None,
    ruleset: str = "",
    workers: int = config.WORKERS,
    *,
    tasks: pd.DataFrame | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Run Cline on every task (`workers` at a time), test each patch, and return one row per task.

    `options`: ClineAgent's settings (model, base_url, api_key, provider, timeout_s, mode, sandbox) and run_tasks'
    keywords (experiment, evaluate, attempt, results_root, progress, gateway, ...), with their defaults; `run_id`
    None: "run", or "plan" in plan mode. Columns: helpers.engine.run_records.COLUMNS (instance_id, ..., output,
    pass_or_fail "pass" | "fail" | "not_evaluated", status "completed" | "error" | "timeout", error, cost_usd,
    ...) plus `cline_patch` and `plan`. A task whose agent run failed is a "fail" row with the reason in `error`;
    setup problems (no Cline binary, no key, bad arguments) raise before any task starts. `gateway` (the
    session's): every run calls the model through it with a token of its own; the key stays in this process.
    """
    run_options = {name: options.pop(name) for name in RUN_OPTIONS & set(options)}
    agent = ClineAgent(**options)  # an unknown keyword is its TypeError, before any task is loaded
    run_id = run_id or ("plan" if agent.mode == "plan" else "run")
    frame = task_frame(dataset_name, instance_ids, tasks)
    df = run_tasks(frame, agent, run_id=run_id, ruleset=ruleset, workers=workers, **run_options)
    return with_cookbook_columns(df)


def run_plan(*args: Any, **kwargs: Any) -> pd.DataFrame:
    """run_act in plan mode (run_act's parameters): Cline answers with a plan (the `output` and `plan` columns);
    nothing is tested."""
    return run_act(*args, **{**kwargs, "mode": "plan"})


def with_cookbook_columns(df: pd.DataFrame) -> pd.DataFrame:
    """The cookbook's names beside the engine's: `cline_patch` (act) and `plan` (plan mode) = `output`."""
    act = df["mode"] == "act"
    return df.assign(cline_patch=df["output"].where(act, ""), plan=df["output"].where(~act, ""))


def task_frame(dataset_name: Any, instance_ids: Any, tasks: pd.DataFrame | None) -> pd.DataFrame:
    """The tasks to run: `tasks` as given, or loaded from `dataset_name`, narrowed to `instance_ids`."""
    from helpers.families.coding.tasks import load_tasks, select_tasks

    if isinstance(dataset_name, pd.DataFrame):
        raise TypeError(
            "dataset_name is a DataFrame: pass task rows as run_act(tasks=df, ...); dataset_name takes "
            "a data set id or file ('house', 'SWE-bench/SWE-bench_Lite', 'tasks.jsonl')."
        )
    if tasks is None:
        if dataset_name is None:
            raise ValueError(
                "run_act needs tasks=<DataFrame> or dataset_name=... (e.g. 'house' or 'SWE-bench/SWE-bench_Lite')."
            )
        tasks = load_tasks(dataset_name)
    if instance_ids is not None:
        tasks = select_tasks(tasks, instance_ids)
    return tasks.reset_index(drop=True)


__all__ = ["run_act", "run_plan"]  # the public API, documented in CODE_APPENDIX.md
