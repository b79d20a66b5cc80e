"""Statistics for comparing rulesets: paired comparisons, accuracy intervals and the paired change in what a
run costs (helpers.stats.selection uses them to keep a version and to decide whether it beats the start).

Every comparison the product prints goes through `paired_comparison`: two result frames (rows of the
engine: `instance_id`, `pass_or_fail`, optionally `attempt` and `status`) over the same tasks, compared
task by task. Pure numpy and the standard library (scipy is not a dependency of this project).

Which rows count:
- each row's outcome comes from helpers.stats.outcomes.run_outcome, the one function every count uses:
  resolved and failed rows count, and so do rule-induced errors (a timeout, a turn limit: the rules'
  doing), as fails. An infrastructure error (provider, budget, harness, not evaluated) says nothing
  about the rules: a task with no usable row on either side is left out of *both* sides, so the pairing
  holds, and counted in `Comparison.excluded` with the reason. `errors_as_fail=True` counts those rows
  as fails instead.
- tasks present in only one frame are left out and counted ("missing in <label>").
- one row per task on both sides: one attempt per task (McNemar and Newcombe's interval); more rows
  per task on either side (an `attempt` column, k attempts per ruleset): each task's mean outcome,
  a task-level bootstrap interval and a sign-flip permutation test.

What a run costs (tokens, dollars, wall time: helpers.stats.costs) is paired on the same tasks and counted
by the same rows (`paired_values`), with a paired bootstrap interval over tasks (`paired_bootstrap`). The
intervals and tests themselves (Wilson, Newcombe, McNemar, Holm, bootstrap, sign-flip) are helpers.stats.intervals'.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from helpers.core import config
from helpers.stats.intervals import (
    CONFIDENCE,
    N_BOOT,
    bootstrap_mean,
    mcnemar_exact,
    newcombe_paired,
    sign_flip_p,
    wilson_interval,
)
from helpers.stats.outcomes import INFRA, RESOLVED, infra_reason, run_outcome
from helpers.core.wording import counted


__all__ = ["Comparison", "GateDecision", "paired_comparison", "accuracy_interval", "paired_values", "NOT_MEASURED"]

# Defaults (candidates for helpers/core/config.py); the confidence and resamples are helpers.stats.intervals'.
ALPHA = config.STATS_ALPHA

METHOD_ONE_ATTEMPT = "exact McNemar test; Newcombe hybrid score interval for paired proportions (method 10)"
METHOD_ATTEMPTS = (
    "per-task mean over attempts; task-level percentile bootstrap interval; "
    "paired sign-flip permutation test on task means"
)

NOT_MEASURED = "not measured"  # why a task whose counted runs lack a measure (an unpriced cost) is left out


@dataclass(frozen=True)
class Comparison:
    """The paired comparison of ruleset b against ruleset a on the tasks both ran.

    `n` tasks compared; `both`, `a_only`, `b_only`, `neither`: tasks passed by both, only a, only b,
    neither (with several attempts: tasks tied with some pass, a better, b better, tied at zero).
    `diff` is accuracy_b - accuracy_a in [-1, 1]; (`ci_low`, `ci_high`) its interval at `confidence`;
    `p_value` two-sided; `significant` is p_value < alpha. `excluded` maps a reason ("errored",
    "missing in b", ...) to the number of tasks left out for it; `dropped_attempts` counts errored
    attempts of tasks that stayed in. With no task to compare, accuracies and the interval are NaN.
    """

    n: int
    both: int
    a_only: int
    b_only: int
    neither: int
    accuracy_a: float
    accuracy_b: float
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    significant: bool
    label_a: str = "a"
    label_b: str = "b"
    attempts: int = 1
    method: str = METHOD_ONE_ATTEMPT
    excluded: dict[str, int] = field(default_factory=dict)
    dropped_attempts: int = 0
    confidence: float = CONFIDENCE
    alpha: float = ALPHA

    @property
    def n_excluded(self) -> int:
        """How many tasks were left out, for every reason."""
        return sum(self.excluded.values())

    def summary(self) -> str:
        """One sentence a person reads, e.g.
        "v3 vs no rules on 150 tasks: +6.0 points (95% CI -1.2 to +13.1), p = 0.09: not significant"."""
        head = f"{self.label_b} vs {self.label_a} on {counted(self.n, 'task')}"
        if self.attempts > 1:
            head += f" × {self.attempts} attempts"
        level = f"{self.confidence * 100:g}% CI"
        if self.n == 0:
            text = f"{head}: nothing to compare"
        elif self.diff == 0 and self.a_only == 0 and self.b_only == 0:
            text = (
                f"{head}: no difference, every task had the same outcome under both "
                f"({level} {_points(self.ci_low)} to {_points(self.ci_high)}), p = 1"
            )
        else:
            verdict = "significant" if self.significant else "not significant"
            text = (
                f"{head}: {_points(self.diff)} points ({level} {_points(self.ci_low)} to "
                f"{_points(self.ci_high)}), {_format_p(self.p_value)}: {verdict}"
            )
        if self.excluded:
            reasons = ", ".join(f"{count} {reason}" for reason, count in self.excluded.items())
            text += f"; {counted(self.n_excluded, 'task')} left out: {reasons}"
        if self.dropped_attempts:
            text += f"; {counted(self.dropped_attempts, 'errored attempt')} dropped"
        return text

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: every field, plus `n_excluded` and `summary`."""
        return {
            **asdict(self),
            "excluded": dict(self.excluded),
            "n_excluded": self.n_excluded,
            "summary": self.summary(),
        }

    def headline(self) -> str:
        """The gain and its p-value, as the decision line states them: "+12.0 points (p = 0.01)"."""
        return f"{_points(self.diff)} points ({_format_p(self.p_value)})"


@dataclass(frozen=True)
class GateDecision:
    """Whether the candidate ruleset replaces the incumbent, why (plain English), and the evidence."""

    accept: bool
    reason: str
    comparison: Comparison


def paired_comparison(
    a: pd.DataFrame,
    b: pd.DataFrame,
    on: str = "instance_id",
    outcome: str = "pass_or_fail",
    *,
    label_a: str = "a",
    label_b: str = "b",
    excluded: Mapping[str, str] | Iterable[str] | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    alpha: float = ALPHA,
    errors_as_fail: bool = False,
) -> Comparison:
    """Compare result frame `b` against `a`, task by task, on the tasks both have (diff = b - a).

    `excluded`: tasks the caller leaves out on purpose, as {instance_id: reason} or a list of ids
    (reason "left out by the caller"). Rows and tasks that cannot be compared are left out as the
    module docstring says, and counted in `Comparison.excluded`. Never raises on odd outcomes.

    One attempt per task: the p-value is the exact two-sided McNemar test (a binomial test with p = 0.5
    on the discordant pairs; 1 when there are none). The interval is Newcombe's hybrid score interval
    for paired proportions (Newcombe 1998, method 10, as recommended by Fagerland, Lydersen & Laake
    2014): built from the two Wilson intervals and the correlation of the pairs, it stays inside
    [-1, 1] and keeps close to its nominal coverage at the small sizes and extreme accuracies seen
    here, where the Wald interval fails.

    Several attempts per task: each task's mean outcome per side; diff is the mean of the per-task
    differences; the interval is a percentile bootstrap that resamples tasks with replacement
    (`n_boot` resamples, `seed`), which keeps a task's attempts together; the p-value is a paired
    sign-flip permutation test on the per-task differences (exact over all 2**m flips up to
    EXACT_FLIPS_MAX non-zero differences, else `n_boot` seeded random flips). With 0/1 differences
    the exact version equals the McNemar test.
    """
    rows_a = _usable(a, on, outcome, errors_as_fail)
    rows_b = _usable(b, on, outcome, errors_as_fail)
    by_caller = _caller_exclusions(excluded)
    reasons: Counter[str] = Counter(by_caller[task] for task in set(rows_a) | set(rows_b) if task in by_caller)
    tasks, dropped = [], 0
    for task in sorted(set(rows_a) | set(rows_b)):
        if task in by_caller:
            continue
        if task not in rows_b:
            reasons[f"missing in {label_b}"] += 1
        elif task not in rows_a:
            reasons[f"missing in {label_a}"] += 1
        elif not rows_a[task]["passed"] or not rows_b[task]["passed"]:
            side = rows_a[task] if not rows_a[task]["passed"] else rows_b[task]
            reasons[side["reasons"].most_common(1)[0][0]] += 1
        else:
            tasks.append(task)
            dropped += sum(rows_a[task]["reasons"].values()) + sum(rows_b[task]["reasons"].values())
    attempts = max(
        [len(r["passed"]) + sum(r["reasons"].values()) for r in (*rows_a.values(), *rows_b.values())], default=1
    )
    common = dict(
        label_a=label_a,
        label_b=label_b,
        attempts=attempts,
        dropped_attempts=dropped,
        excluded=dict(reasons.most_common()),
        confidence=confidence,
        alpha=alpha,
    )
    mean_a = np.array([np.mean(rows_a[t]["passed"]) for t in tasks], dtype=float)
    mean_b = np.array([np.mean(rows_b[t]["passed"]) for t in tasks], dtype=float)
    if attempts == 1:
        return _one_attempt(mean_a.astype(int), mean_b.astype(int), common)
    return _several_attempts(mean_a, mean_b, n_boot, seed, common)


def accuracy_interval(
    frame: pd.DataFrame,
    outcome: str = "pass_or_fail",
    confidence: float = CONFIDENCE,
    *,
    on: str = "instance_id",
    n_boot: int = N_BOOT,
    seed: int = 0,
    errors_as_fail: bool = False,
) -> tuple[float, float, float, int]:
    """(accuracy, low, high, n) of one result frame over its `n` usable tasks.

    One row per task: the Wilson score interval. Several rows per task (attempts): the mean of the
    per-task mean outcomes and a task-level percentile bootstrap interval (`n_boot`, `seed`).
    Errored rows are dropped as in `paired_comparison`. With no usable task: (nan, nan, nan, 0).
    """
    rows = _usable(frame, on, outcome, errors_as_fail)
    means = np.array([np.mean(r["passed"]) for r in rows.values() if r["passed"]], dtype=float)
    if len(means) == 0:
        return math.nan, math.nan, math.nan, 0
    several = any(len(r["passed"]) + sum(r["reasons"].values()) > 1 for r in rows.values())
    if not several:
        low, high = wilson_interval(int(means.sum()), len(means), confidence)
    else:
        low, high = bootstrap_mean(means, n_boot, seed, confidence)
    return float(means.mean()), low, high, len(means)


def paired_values(
    a: pd.DataFrame,
    b: pd.DataFrame,
    columns: Sequence[str],
    on: str = "instance_id",
    outcome: str = "pass_or_fail",
    *,
    label_a: str = "a",
    label_b: str = "b",
    errors_as_fail: bool = False,
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """(values of a, values of b, tasks left out by reason): per task both frames have, the mean over its
    counted runs of the sum of `columns` (tokens: input + output). Runs are counted as `paired_comparison`
    counts them (infrastructure errors left out of both sides, rule-induced errors kept); a task where a
    counted run lacks a column or a number (an unpriced cost) is left out as NOT_MEASURED. Tasks in id order."""
    rows_a = _usable(a, on, outcome, errors_as_fail, tuple(columns))
    rows_b = _usable(b, on, outcome, errors_as_fail, tuple(columns))
    reasons: Counter[str] = Counter()
    values_a, values_b = [], []
    for task in sorted(set(rows_a) | set(rows_b)):
        if task not in rows_b or task not in rows_a:
            reasons[f"missing in {label_b if task not in rows_b else label_a}"] += 1
        elif not rows_a[task]["passed"] or not rows_b[task]["passed"]:
            side = rows_a[task] if not rows_a[task]["passed"] else rows_b[task]
            reasons[side["reasons"].most_common(1)[0][0]] += 1
        elif None in rows_a[task]["values"] + rows_b[task]["values"]:
            reasons[NOT_MEASURED] += 1
        else:
            values_a.append(np.mean(rows_a[task]["values"]))
            values_b.append(np.mean(rows_b[task]["values"]))
    return np.array(values_a, dtype=float), np.array(values_b, dtype=float), dict(reasons.most_common())


# --- the two kinds of comparison --------------------------------------------------------------------


def _one_attempt(passed_a: np.ndarray, passed_b: np.ndarray, common: dict[str, Any]) -> Comparison:
    """McNemar and Newcombe's interval over 0/1 outcomes, one per task on each side."""
    n = len(passed_a)
    both = int(np.sum((passed_a == 1) & (passed_b == 1)))
    a_only = int(np.sum((passed_a == 1) & (passed_b == 0)))
    b_only = int(np.sum((passed_a == 0) & (passed_b == 1)))
    neither = n - both - a_only - b_only
    estimate = _NOTHING_TO_COMPARE
    if n:
        acc_a, acc_b = (both + a_only) / n, (both + b_only) / n
        estimate = (acc_a, acc_b, acc_b - acc_a, *newcombe_paired(both, b_only, a_only, neither, common["confidence"]))
    p_value = mcnemar_exact(a_only, b_only)
    return _comparison(n, (both, a_only, b_only, neither), estimate, p_value, METHOD_ONE_ATTEMPT, common)


def _several_attempts(
    mean_a: np.ndarray, mean_b: np.ndarray, n_boot: int, seed: int, common: dict[str, Any]
) -> Comparison:
    """Per-task means: bootstrap interval and sign-flip test on the per-task differences."""
    n = len(mean_a)
    diffs = mean_b - mean_a
    tied = np.isclose(diffs, 0)
    both = int(np.sum(tied & (mean_a > 0)))
    neither = int(np.sum(tied & (mean_a == 0)))
    a_only, b_only = int(np.sum(~tied & (diffs < 0))), int(np.sum(~tied & (diffs > 0)))
    estimate = _NOTHING_TO_COMPARE
    if n:
        means = (float(mean_a.mean()), float(mean_b.mean()), float(diffs.mean()))
        estimate = (*means, *bootstrap_mean(diffs, n_boot, seed, common["confidence"]))
    p_value = sign_flip_p(diffs[~tied], n_boot, seed)
    return _comparison(n, (both, a_only, b_only, neither), estimate, p_value, METHOD_ATTEMPTS, common)


# accuracy a, accuracy b, their difference and its interval, when no task can be compared
_NOTHING_TO_COMPARE = (math.nan, math.nan, math.nan, math.nan, math.nan)


def _comparison(
    n: int,
    counts: tuple[int, int, int, int],
    estimate: tuple[float, float, float, float, float],
    p_value: float,
    method: str,
    common: dict[str, Any],
) -> Comparison:
    """The Comparison either kind makes: `counts` (both, a_only, b_only, neither), `estimate` (accuracy a,
    accuracy b, diff, its interval), significant when `p_value` is under `common`'s alpha."""
    return Comparison(n, *counts, *estimate, p_value, p_value < common["alpha"], method=method, **common)


# --- reading result frames ---------------------------------------------------------------------------


def _usable(
    frame: pd.DataFrame, on: str, outcome: str, errors_as_fail: bool, measure: tuple[str, ...] = ()
) -> dict[str, dict[str, Any]]:
    """{task: {"passed": [1/0 per usable row], "values": [the sum of the `measure` columns per usable row,
    None where one is missing], "reasons": Counter of why other rows are unusable}}, each row's outcome
    decided by helpers.stats.outcomes.run_outcome (rule-induced errors are fails)."""
    tasks: dict[str, dict[str, Any]] = {}
    for row in frame.to_dict("records"):
        task = row.get(on)
        if task is None or (isinstance(task, float) and math.isnan(task)):
            continue
        entry = tasks.setdefault(str(task), {"passed": [], "values": [], "reasons": Counter()})
        kind = run_outcome(row, outcome)
        if kind == INFRA and not errors_as_fail:
            entry["reasons"][infra_reason(row, outcome)] += 1
        else:
            entry["passed"].append(1 if kind == RESOLVED else 0)
            entry["values"].append(_row_value(row, measure))
    return tasks


def _row_value(row: Mapping[str, Any], columns: tuple[str, ...]) -> float | None:
    """The sum of a row's `columns` as numbers; None when one is missing or not a number (an unpriced cost)."""
    try:
        values = [float(row[c]) for c in columns]
    except (KeyError, TypeError, ValueError):
        return None
    return None if any(math.isnan(v) for v in values) else sum(values)


def _caller_exclusions(excluded: Mapping[str, str] | Iterable[str] | None) -> dict[str, str]:
    """The caller's exclusions as {instance_id: reason}."""
    if excluded is None:
        return {}
    if isinstance(excluded, Mapping):
        return {str(task): str(reason) for task, reason in excluded.items()}
    return {str(task): "left out by the caller" for task in excluded}


# --- wording -----------------------------------------------------------------------------------------


def _points(value: float) -> str:
    """A difference of proportions as signed percentage points: 0.06 -> "+6.0"."""
    return f"{value * 100:+.1f}"


def _format_p(p: float) -> str:
    """ "p = 0.09", "p = 0.021", "p < 0.001"."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"
