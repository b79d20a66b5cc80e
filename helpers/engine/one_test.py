"""The one test, paid for pair by pair: the start and the kept rules on the test tasks, in batches, until the
pre-declared sequential test (helpers.stats.sequential) knows the answer.

    test = run_one_test(test_df, settings, session)       # after run_loop with settings.test_each_loop=False
    print(test.sentence())   # "Stopped after 16 of 48 test tasks: the rules help; +100.0 points (...)."

The test tasks run in a seeded random order, recorded in act_results/<experiment>/one_test.json before the
first run (a rerun reads it back, so a resume continues the same sequence); a batch is `settings.workers`
tasks, and both rulesets run each task of a batch, so every stop leaves complete pairs. After each batch the
sequential test looks at the pairs so far; it stops for "help", "hurt" or futility, and the tasks after the
stop are never run and never counted. Each side's runs are ordinary engine runs (run ids `one_test_start`
and `one_test_kept`, resumed like any other), so a killed test keeps every finished pair and a rerun asks
the model nothing for them. A pair where either side errored for infrastructure reasons (helpers.stats.outcomes)
counts as run but says nothing: it is left out of both sides, as the fixed test leaves it out.
"""

from __future__ import annotations

import random
from dataclasses import asdict
from typing import Any

import pandas as pd

from helpers.stats.outcomes import INFRA, RESOLVED, run_outcome
from helpers.stats.sequential import SequentialDesign, SequentialResult, sequential_test
from helpers.store.loops import load_one_test, save_one_test, save_one_test_rows
from helpers.store.records import ruleset_sha
from helpers.core.protocols import RunContext
from helpers.engine.settings import LoopSettings

RUN_IDS = {"start": "one_test_start", "kept": "one_test_kept"}


def task_order(ids: list[str], experiment: str, seed: int) -> list[str]:
    """The order the test tasks run in: a permutation seeded by the experiment's name and `seed`."""
    order = sorted(ids)
    random.Random(f"{experiment}:{seed}").shuffle(order)
    return order


def run_one_test(
    test_df: pd.DataFrame,
    settings: LoopSettings,
    session: RunContext,
    *,
    start: tuple[str, str] | None = None,
    kept: tuple[str, str] | None = None,
    seed: int = 0,
    verbose: bool = True,
) -> SequentialResult | None:
    """The one test of `kept` against `start` ((label, ruleset text) each; default: the experiment's version 0
    and the version kept on validation) on `test_df`, run batch by batch until it decides: sequential when
    settings.sequential (a look after every settings.workers tasks), else one look after every task (the
    fixed exact McNemar test). None, running nothing, when the kept version is the start itself.

    Raises ValueError before any run when the recorded order or rulesets of an earlier call differ (a rerun
    must continue the same sequence with the same two rulesets)."""
    from helpers.engine.loop_family import make_loop_agent, run_attempts

    start = start or _stored(settings.experiment, "start")
    kept = kept or _stored(settings.experiment, "kept")
    if ruleset_sha(kept[1]) == ruleset_sha(start[1]):
        return None
    design = SequentialDesign(n_tasks=len(test_df), batch=settings.workers if settings.sequential else len(test_df))
    record = _begin(settings.experiment, test_df, design, start, kept, seed)
    by_id = test_df.set_index("instance_id", drop=False)
    agent = make_loop_agent(settings, session)
    pairs: list[tuple[bool, bool] | None] = []
    rows: dict[str, list[pd.DataFrame]] = {"start": [], "kept": []}
    result = sequential_test([], design)
    for tasks in design.looks():
        batch = by_id.loc[record["order"][len(pairs) : tasks]].reset_index(drop=True)
        for side, (_, text) in (("start", start), ("kept", kept)):
            rows[side].append(run_attempts(agent, batch, RUN_IDS[side], text, settings, session))
        pairs += _pairs(batch, rows["start"][-1], rows["kept"][-1])
        result = sequential_test(pairs, design)
        if verbose:
            print(result.sentence())
        if result.stopped:
            break
    for side, frames in rows.items():
        save_one_test_rows(settings.experiment, side, pd.concat(frames, ignore_index=True))
    save_one_test(settings.experiment, {**record, **_summary(result)})
    return result


def _stored(experiment: str, side: str) -> tuple[str, str]:
    """(label, text) of the experiment's start (version 0) or of the version kept on validation."""
    from helpers.store.loops import kept_version
    from helpers.store.rulesets import RulesetStore

    store = RulesetStore(experiment)
    if side == "start":
        text = store.load(0)
        return ("no rules" if not text.strip() else "v0"), text
    choice = kept_version(experiment)
    if choice is None:
        raise ValueError(f"Experiment {experiment!r} has no finished loop: nothing was kept to test.")
    return f"v{choice.version}", store.load(choice.version)


def _begin(
    experiment: str,
    test_df: pd.DataFrame,
    design: SequentialDesign,
    start: tuple[str, str],
    kept: tuple[str, str],
    seed: int,
) -> dict[str, Any]:
    """The test's record, declared before its first run, or the earlier call's, checked to be the same test."""
    ids = [str(i) for i in test_df["instance_id"]]
    if len(set(ids)) != len(ids):
        raise ValueError("The test tasks' instance_id values must be unique.")
    declared = {
        "design": asdict(design),
        "seed": seed,
        "order": task_order(ids, experiment, seed),
        "labels": {"start": start[0], "kept": kept[0]},
        "ruleset_sha": {"start": ruleset_sha(start[1]), "kept": ruleset_sha(kept[1])},
        "run_ids": RUN_IDS,
    }
    earlier = load_one_test(experiment)
    if earlier is None:
        save_one_test(experiment, declared)
        return declared
    for key in ("design", "order", "ruleset_sha"):
        if earlier.get(key) != declared[key]:
            raise ValueError(
                f"Experiment {experiment!r} already declared its one test with another {key}: a rerun "
                "continues the same test (same tasks, batch, rulesets); use a new EXPERIMENT for another."
            )
    return {**earlier, **{k: declared[k] for k in ("labels", "run_ids")}}


def _pairs(batch: pd.DataFrame, start_rows: pd.DataFrame, kept_rows: pd.DataFrame) -> list[tuple[bool, bool] | None]:
    """One pair per task of the batch, in its order; None where either side errored for infrastructure."""

    def outcome(rows: pd.DataFrame, instance: str) -> str:
        found = rows[rows["instance_id"] == instance].to_dict("records")
        return run_outcome(found[0]) if found else INFRA

    pairs: list[tuple[bool, bool] | None] = []
    for instance in batch["instance_id"]:
        a, b = outcome(start_rows, instance), outcome(kept_rows, instance)
        pairs.append(None if INFRA in (a, b) else (a == RESOLVED, b == RESOLVED))
    return pairs


def _summary(result: SequentialResult) -> dict[str, Any]:
    return {
        "method": result.design.describe(),
        "decision": result.decision,
        "tasks_run": result.tasks_run,
        "tasks_saved": result.tasks_saved,
        "diff": result.diff,
        "ci": [result.ci_low, result.ci_high],
        "p_value": result.p_value,
        "excluded_pairs": result.excluded,
        "looks": [asdict(look) for look in result.looks],
        "sentence": result.sentence(),
    }


__all__ = ["run_one_test", "task_order", "RUN_IDS"]  # documented in CODE_APPENDIX.md
