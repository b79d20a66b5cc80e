"""The Prompt Learning loop, as one short function over the steps a notebook can also call one by one.

Each loop i:
  1. runs the agent on the train and test tasks with ruleset version v (v = i, or the best so far),
  2. evaluates every patch with the tests (inside run_act),
  3. asks the LLM judge why each training patch passed or failed,
  4. logs both splits to Phoenix,
  5. lets the optimizer turn rules + tasks + patches + feedback into ruleset version i + 1,
  6. saves everything: results CSVs, the ruleset and its metadata, one record in loops.jsonl.
A loop already in loops.jsonl is skipped, and run_act and the LLM cache make a half-finished loop
cheap to redo: calling run_loop again after a crash or a kill resumes where it stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pandas as pd

from helpers import config
from helpers.records import LOOP_RECORD_FIELDS, append_jsonl, loops_path, read_jsonl, split_results_path, write_csv

# The agent's fixed instructions as the optimizer should see them (read-only context): the rules it
# writes are appended to Cline's own system prompt under "# Rules".
CLINE_PROMPT = (
    "You are Cline, an autonomous coding agent working in a git repository. You are given an issue "
    "(a bug report or a feature request) and must change the repository so that the issue is "
    "resolved. You can read files, search the codebase, run shell commands and edit files. The "
    "repository's hidden tests decide whether your change is correct. The rules below are appended "
    "to your system prompt under '# Rules'."
)


@dataclass
class LoopSettings:
    """The parameters of one experiment (the notebooks' `parameters` cell feeds these)."""

    experiment: str
    loops: int = config.LOOPS
    workers: int = config.WORKERS
    context_size_k: int = config.CONTEXT_SIZE_K
    start_from: str = "latest"  # "latest" (the cookbook's choice) or "best"
    best_by: str = "train_accuracy"
    agent_timeout_s: float = config.AGENT_TIMEOUT_S
    optimizer_budget_usd: float | None = None
    judge_budget_usd: float | None = None
    mode: str = "act"  # "act" (patches) or "plan" (Cline plan mode, judged on the plan)


def accuracy(df: pd.DataFrame) -> float:
    return float((df["pass_or_fail"] == "pass").mean()) if len(df) else 0.0


def plan_accuracy(df: pd.DataFrame) -> float:
    return float((df["correctness"] == "correct").mean()) if len(df) else 0.0


def completed_loops(experiment: str) -> dict[int, dict[str, Any]]:
    """loop number -> its loops.jsonl record, for the loops already finished."""
    return {r["loop"]: r for r in read_jsonl(loops_path(experiment))}


def check_same_kind(experiment: str, done: dict[int, dict[str, Any]], dry_run: bool) -> None:
    """Resuming must never mix scripted dry-run loops with real ones under one experiment name."""
    kinds = {bool(r.get("dry_run")) for r in done.values()}
    if kinds and kinds != {dry_run}:
        held = "scripted dry-run" if True in kinds else "real"
        raise ValueError(
            f"Experiment {experiment!r} already holds {held} results, and this run is "
            f"{'a scripted dry run' if dry_run else 'real'}. Choose another EXPERIMENT name, or delete "
            f"act_results/{experiment} and act_rulesets/{experiment} to start over."
        )


def start_experiment(settings: LoopSettings, session: Any, initial_ruleset: str = "",
                     tasks: tuple[pd.DataFrame, ...] = ()) -> Any:
    """The experiment's RulesetStore, with the starting ruleset saved as version 0 on a first run.

    Refuses to mix scripted dry-run loops with real ones under one name, and a dry run on tasks the
    scripted model does not know (it plays only the bundled house suite).
    """
    from helpers.rulesets import RulesetStore

    check_same_kind(settings.experiment, completed_loops(settings.experiment), session.dry_run)
    if session.dry_run:
        unknown = sorted({str(s) for frame in tasks for s in frame.get("suite", pd.Series(["?"] * len(frame)))} - {"house"})
        if unknown:
            raise ValueError(
                "The scripted dry run plays only the bundled house suite (TASK_SOURCE='house'); these tasks "
                f"are {unknown}. Configure a model (OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENAI_BASE_URL) to "
                "run on other tasks."
            )
    store = RulesetStore(settings.experiment)
    if not store.versions():
        store.save(initial_ruleset, parent=None, loop=None, report=None, model=None, dry_run=session.dry_run)
    return store


def run_one_loop(loop: int, train_df: pd.DataFrame, test_df: pd.DataFrame, settings: LoopSettings,
                 session: Any, store: Any, datasets: dict[str, Any] | None = None) -> dict[str, Any]:
    """One full loop; returns its loops.jsonl record (also appended there)."""
    from cline import run_act
    from helpers.evals import evaluate_results
    from helpers.optimizer import PromptLearningOptimizer
    from helpers.rulesets import render_stats

    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    # loop= ignores versions written by this loop or later: a loop re-run after a crash starts where it did.
    version = store.choose_start(settings.start_from, by=settings.best_by, loop=loop)
    ruleset = store.load(version)
    agent = dict(experiment=settings.experiment, ruleset=ruleset, workers=settings.workers,
                 timeout_s=settings.agent_timeout_s, mode=settings.mode, **session.agent_kwargs())
    train = run_act(tasks=train_df, run_id=f"train_{loop}", **agent)
    test = run_act(tasks=test_df, run_id=f"test_{loop}", **agent)

    judge = dict(workers=settings.workers, budget_usd=settings.judge_budget_usd, **session.judge_kwargs())
    train = evaluate_results(train, **judge)
    test = evaluate_results(test, include_gold=False, **judge) if settings.mode == "plan" else test
    score = plan_accuracy if settings.mode == "plan" else accuracy
    train_acc, test_acc = score(train), score(test)
    store.record_scores(version, train_accuracy=train_acc, test_accuracy=test_acc, loop=loop)
    for split, frame in (("train", train), ("test", test)):
        frame = frame.assign(loop=loop, split=split, ruleset_version=version)
        write_csv(frame, split_results_path(settings.experiment, split, loop))

    metadata = {"loop": loop, "train_accuracy": train_acc, "test_accuracy": test_acc,
                "train_size": len(train), "test_size": len(test), "ruleset_version": version,
                "agent_model": session.agent_model, "judge_model": session.judge_model,
                "optimizer_model": session.optimizer_model, "dry_run": session.dry_run}
    if session.phoenix_url and datasets:
        from helpers.phoenix_experiments import log_experiment_to_phoenix, log_ruleset_version

        for split, frame in (("Train", train), ("Test", test)):
            log_experiment_to_phoenix(hostname=session.phoenix_url, api_key=session.phoenix_api_key,
                                      dataset_obj=datasets[split.lower()], experiment_name=f"{split} {loop}",
                                      experiment_df=frame, metadata={**metadata, "split": split.lower()},
                                      experiment=settings.experiment)
        log_ruleset_version(session.phoenix_url, session.phoenix_api_key, settings.experiment, version,
                            ruleset, loop=loop, dry_run=session.dry_run)

    optimizer = PromptLearningOptimizer(prompt=CLINE_PROMPT, budget_usd=settings.optimizer_budget_usd,
                                        **session.optimizer_kwargs())
    output_column = "plan" if settings.mode == "plan" else "cline_patch"
    new_ruleset = optimizer.optimize(dataset=train, output_column=output_column,
                                     feedback_columns=["correctness", "explanation"], ruleset=ruleset,
                                     context_size_k=settings.context_size_k)
    report = optimizer.last_report
    new_version = store.save(new_ruleset, parent=version, loop=loop, report=report,
                             model=session.optimizer_model, dry_run=session.dry_run)

    stats = render_stats(ruleset)
    agent_cost = float(train["cost_usd"].sum() + test["cost_usd"].sum())
    judge_cost = float(train.get("judge_cost_usd", pd.Series(dtype=float)).sum()
                       + test.get("judge_cost_usd", pd.Series(dtype=float)).sum())
    optimizer_cost = float(report.get("cost_usd", 0.0) if isinstance(report, dict) else getattr(report, "cost_usd", 0.0))
    record = {**metadata, "experiment": settings.experiment, "ruleset_rules": stats["rules"],
              "ruleset_tokens": stats["tokens"], "agent_cost_usd": agent_cost, "judge_cost_usd": judge_cost,
              "optimizer_cost_usd": optimizer_cost, "cost_usd": agent_cost + judge_cost + optimizer_cost,
              "next_ruleset_version": new_version, "started_at": started,
              "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    assert set(LOOP_RECORD_FIELDS) <= set(record), set(LOOP_RECORD_FIELDS) - set(record)
    append_jsonl(loops_path(settings.experiment), record)
    return record


def run_loop(train_df: pd.DataFrame, test_df: pd.DataFrame, settings: LoopSettings, session: Any,
             initial_ruleset: str = "", datasets: dict[str, Any] | None = None, verbose: bool = True) -> pd.DataFrame:
    """All loops of an experiment, resuming after the last finished one; returns the loop records."""
    store = start_experiment(settings, session, initial_ruleset, tasks=(train_df, test_df))
    done = completed_loops(settings.experiment)
    label = f" [{session.label}]" if session.dry_run else ""
    for loop in range(settings.loops):
        if loop in done:
            if verbose:
                print(f"Loop {loop}: already finished (train {done[loop]['train_accuracy']:.2f}, "
                      f"test {done[loop]['test_accuracy']:.2f}){label}")
            continue
        record = run_one_loop(loop, train_df, test_df, settings, session, store, datasets)
        if verbose:
            print(f"Loop {loop}: train accuracy {record['train_accuracy']:.2f}, test accuracy "
                  f"{record['test_accuracy']:.2f}, cost ${record['cost_usd']:.2f}, rules "
                  f"{record['ruleset_rules']} -> version {record['next_ruleset_version']}{label}")
    records = sorted(completed_loops(settings.experiment).values(), key=lambda r: r["loop"])
    return pd.DataFrame(records)


def save_split(experiment: str, train_df: pd.DataFrame, test_df: pd.DataFrame, **how: Any) -> None:
    """Record which tasks are on which side, so later notebooks and reruns use the same split."""
    from helpers.records import experiment_dir, write_json

    write_json(experiment_dir(experiment) / "split.json",
               {"train": list(train_df["instance_id"]), "test": list(test_df["instance_id"]), **how})


def load_or_make_split(experiment: str, source: str, train_size: int, test_size: int,
                       strategy: str = "random", seed: int = config.SEED,
                       mirrors_dir: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The experiment's saved split if it has one (sizes must match), else a new one, saved.
    `mirrors_dir` locates SWE-bench repositories for the agent's workspaces (see cline/README.md)."""
    import json

    from helpers.records import experiment_dir
    from helpers.tasks import load_tasks, split_dataset

    tasks = load_tasks(source, mirrors_dir=mirrors_dir)
    saved = experiment_dir(experiment) / "split.json"
    if saved.exists():
        split = json.loads(saved.read_text())
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
    save_split(experiment, train_df, test_df, source=source, strategy=strategy, seed=seed)
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


def upload_split(session: Any, experiment: str, train_df: pd.DataFrame, test_df: pd.DataFrame) -> dict[str, Any] | None:
    """Both sides as Phoenix datasets ("Cline Act: <experiment> train|test"); None without Phoenix."""
    if not session.phoenix_url:
        return None
    from helpers.phoenix_experiments import upload_dataset

    return {side: upload_dataset(session.phoenix_url, f"Cline Act: {experiment} {side}", frame,
                                 api_key=session.phoenix_api_key)
            for side, frame in (("train", train_df), ("test", test_df))}


def load_results(experiment: str, split: str, loop: int) -> pd.DataFrame:
    """A loop's saved rows (train_results_<loop>.csv / test_results_<loop>.csv), list cells decoded."""
    import json

    path = split_results_path(experiment, split, loop)
    if not path.exists():
        raise FileNotFoundError(f"No {split} results for loop {loop} of {experiment!r} at {path}.")
    frame = pd.read_csv(path, keep_default_na=False)
    for column in ("failed_tests", "FAIL_TO_PASS", "PASS_TO_PASS"):
        if column in frame:
            frame[column] = frame[column].map(lambda v: json.loads(v) if isinstance(v, str) and v.startswith("[") else v)
    return frame

__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "LoopSettings", "run_loop", "run_one_loop", "start_experiment", "completed_loops", "load_or_make_split",
    "split_summary", "upload_split", "load_results",
]
