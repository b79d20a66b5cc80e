"""How a loop ends: saved (finish_loop: its rows, the new ruleset version, its record in loops.jsonl), stopped
(LoopStopped: every agent run errored, nothing to learn from) or left unfinished (LoopUnfinished: a transient
failure of the budget, the test harness, the judge or the optimizer; a rerun completes it).

What the record says of a split's rows (accuracy, the judge's failures) is read here, where the record is made.
Separate from helpers.engine.loop, which runs the steps: the loop's shape and what a finished loop must hold
change for different reasons, and the notebooks that write the loop out call these directly.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pandas as pd

from helpers.stats.costs import role_tokens
from helpers.stats.outcomes import outcome_counts
from helpers.store.loops import save_loop
from helpers.engine.loop_lines import SPLITS, loop_cost, loop_evidence
from helpers.store.records import LOOP_RECORD_FIELDS
from helpers.engine.settings import LoopSettings, agent_name, instructions
from helpers.core.protocols import RunContext
from helpers.rules.rules_file import RulesFile

if TYPE_CHECKING:  # the functions below import it where they use it
    from helpers.store.rulesets import RulesetStore


class LoopStopped(RuntimeError):
    """Every agent run of a loop errored: nothing was learned, and the loop is not recorded."""


class LoopUnfinished(RuntimeError):
    """The judge or the optimizer failed for a transient reason; a rerun completes the loop."""


def accuracy(df: pd.DataFrame) -> float | None:
    """Share of resolved runs among the scored ones (None when every run errored for infrastructure)."""
    share: float | None = outcome_counts(df)["accuracy"]
    return share


def judge_top_error(df: pd.DataFrame) -> str:
    """The judge's most common failure on these rows (shortened), or ""."""
    errors = df["judge_error"].fillna("").astype(str) if "judge_error" in df else pd.Series(dtype=str)
    errors = errors[errors.ne("")]
    return errors.str.slice(0, 160).value_counts().index[0] if len(errors) else ""


def judge_failures(df: pd.DataFrame) -> tuple[int, int]:
    """(rows the judge could not answer, of which transient: rate limit, outage, spent budget)."""
    failed = df["judge_error"].astype(bool) if "judge_error" in df else pd.Series(False, index=df.index)
    transient = df["judge_transient"].astype(bool) if "judge_transient" in df else pd.Series(False, index=df.index)
    return int(failed.sum()), int((failed & transient).sum())


def judge_partial(df: pd.DataFrame) -> int:
    """Rows the judge answered without being shown every line the patch adds to graded code (its
    `judge_saw_whole_patch` is False): their verdicts are not reviewed passes, and the loop line says how many."""
    if "judge_saw_whole_patch" not in df or not len(df):
        return 0
    answered = ~df["judge_error"].astype(bool) if "judge_error" in df else pd.Series(True, index=df.index)
    return int((df["judge_saw_whole_patch"].eq(False) & answered).sum())


def check_runs(loop: int, runs: dict[str, pd.DataFrame]) -> None:
    """Stop the loop, saying what to check, when every agent run errored (nothing to learn from); leave it
    unfinished when the budget stopped runs or the test harness failed (a rerun completes them)."""
    frames = [f for f in runs.values() if len(f)]
    stopped = sum(int((f["status"] == "budget").sum()) for f in frames)
    if stopped:
        raise LoopUnfinished(
            f"Loop {loop} is unfinished: the experiment's budget is spent and {stopped} agent runs "
            "were stopped. Their finished tasks are kept; raise the budget and run again."
        )
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["status"])
    harness = rows[(rows.get("pass_or_fail", pd.Series(dtype=str)) == "error") & (rows["status"] == "completed")]
    if len(harness):
        top = harness["eval_error"].astype(str).str[:300].value_counts()
        raise LoopUnfinished(
            f"Loop {loop} is unfinished: the test harness failed on {len(harness)} patches (not the "
            f"patches' fault; most common, {top.iloc[0]}x: {top.index[0]!r}). The agents' results "
            "are kept; fix the harness (Docker, Modal) and run again: only the evaluations are redone."
        )
    # every agent run errored, whoever's doing (a plan not judged yet, or a patch not tested yet, is no error here)
    errored = rows[rows["status"] == "error"]
    if len(rows) and len(errored) == len(rows):
        top = errored["error"].astype(str).str[:200].value_counts()
        raise LoopStopped(
            f"Loop {loop} stopped: all {len(rows)} agent runs errored; the most common error "
            f"({top.iloc[0]}x): {top.index[0]!r}. Check the agent's model, key and base URL "
            "(an OpenAI-compatible server must stream with tools), then run again: errored runs are retried."
        )


def finish_loop(
    loop: int,
    version: int,
    ruleset: str | RulesFile,
    train: pd.DataFrame,
    test: pd.DataFrame,
    new_ruleset: str | RulesFile,
    report: Any,
    settings: LoopSettings,
    session: RunContext,
    store: RulesetStore,
    started: str = "",
    val: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """Save a loop: its rows as CSVs (train, val when there is a validation side, test), the new ruleset
    version (none when the optimizer changed nothing: the next loop runs the same version), and its record
    in loops.jsonl (returned).

    Raises LoopUnfinished, saving nothing final, when the judge or the optimizer failed transiently. Rules
    given as text are parsed here.
    """
    ruleset, new_ruleset = RulesFile.parse(ruleset), RulesFile.parse(new_ruleset)
    report = report.to_dict() if hasattr(report, "to_dict") else dict(report or {})
    judge_failed, judge_transient = judge_failures(train)
    if judge_transient or report.get("transient_error"):
        why = (
            f"the judge could not answer {judge_transient} training rows (rate limit, outage or spent budget)"
            if judge_transient
            else f"the optimizer's request failed: {report['transient_error']}"
        )
        raise LoopUnfinished(
            f"Loop {loop} is unfinished: {why}. Nothing of it was recorded as final; run again "
            "to complete it (finished agent runs and cached answers are reused)."
        )
    plan = settings.mode == "plan"
    sides = {"train": train, **({"val": val} if val is not None and len(val) else {}), "test": test}
    # Every record has every split's fields, so tables and plots read one shape: a split without a
    # validation side has val_size 0 and val_accuracy None (its kept version is then the latest).
    every_side = {split: sides.get(split, train.iloc[:0]) for split in SPLITS}
    counts = {split: outcome_counts(frame, plan) for split, frame in every_side.items()}
    changed = new_ruleset.text != ruleset.text
    new_version = (
        store.save(
            new_ruleset.text,
            parent=version,
            loop=loop,
            report=report,
            model=session.optimizer_model,
            dry_run=session.dry_run,
            **instructions(settings),
        )
        if changed
        else version
    )
    cost = loop_cost(sides, report, session)
    stats = ruleset.stats()
    evidence = loop_evidence(every_side)
    record = {
        "experiment": settings.experiment,
        "loop": loop,
        "ruleset_version": version,
        **{f"{split}_{key}": value for split, c in counts.items() for key, value in c.items()},
        **{f"{split}_size": len(frame) for split, frame in every_side.items()},
        "ruleset_rules": stats["rules"],
        "ruleset_tokens": stats["tokens"],
        "judge_errors": judge_failed,
        "judge_top_error": judge_top_error(train),
        "judge_partial": judge_partial(train),
        "optimizer_changed": changed,
        "optimizer_edits": len(report.get("edits_applied") or []),
        "optimizer_rejected": len(report.get("edits_rejected") or []),
        "optimizer_errors": report.get("errors") or [],
        **cost,
        "agent": agent_name(settings),
        "agent_model": session.agent_model,
        "judge_model": session.judge_model,
        "optimizer_model": session.optimizer_model,
        "dry_run": session.dry_run,
        "next_ruleset_version": new_version,
        "started_at": started,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **evidence,
        **role_tokens(sides, report),  # beside agent_tokens (loop_cost): the cost figure's bars
    }
    assert set(LOOP_RECORD_FIELDS) <= set(record), set(LOOP_RECORD_FIELDS) - set(record)
    save_loop(
        settings.experiment,
        record,
        {split: frame.assign(loop=loop, split=split, ruleset_version=version) for split, frame in sides.items()},
    )
    return record


__all__ = [
    "finish_loop",
    "check_runs",
    "LoopStopped",
    "LoopUnfinished",
]  # the public API, documented in CODE_APPENDIX.md
