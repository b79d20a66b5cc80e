"""Which ruleset version to keep, and whether it beats the start: the experiment's one pre-declared test.

Three roles for the data, so that the number reported is not the number selected on:
- train: the optimizer learns from it (the judge's feedback);
- validation: decides which version is kept (`choose_on_validation`); the optimizer never sees it;
- test: touched once for the decision (`primary_test`): the kept version against the start, task by
  task. Per-loop test accuracies stay visible as a curve; they are exploratory and carry no p-value.

DECISION_RULE is the rule, stated once here and printed with every summary. Pure functions over result
frames (the store reads them; helpers.store.loops.kept_version and helpers.analysis.evidence call these).
"""

from __future__ import annotations

import math
from functools import lru_cache
from dataclasses import dataclass

import pandas as pd

from helpers.core import config
from helpers.stats.outcomes import plan_scored
from helpers.stats.comparisons import Comparison, accuracy_interval, paired_comparison
from helpers.core.wording import counted

ALPHA = config.STATS_ALPHA
POWER = 0.8
# Between two rulesets of no difference, about this share of tasks still changes outcome from one run
# to the next (agents are not deterministic); the power figures assume it. A stated assumption, not a fit.
NOISE_FLIP_RATE = config.STATS_NOISE_FLIP_RATE
DECISION_RULE = (
    f"Primary test, declared before any run: the kept version (chosen on validation) against the start on "
    f'the test split, task by task: exact McNemar test, two-sided, level {ALPHA:g}. "The rules help" only '
    f'when the gain is positive and p < {ALPHA:g} (so a false "help" has at most a {ALPHA / 2:g} chance); '
    f'"the rules hurt" when negative and p < {ALPHA:g}; otherwise the difference is noise. Per-loop test '
    f"accuracies are exploratory."
)


@dataclass(frozen=True)
class Choice:
    """The kept version, how it was chosen (one sentence), and each candidate's validation result."""

    version: int
    how: str
    candidates: pd.DataFrame  # version, loop, accuracy, ci_low, ci_high, scored


def choose_on_validation(measured: list[tuple[int, int, pd.DataFrame]], start_version: int, latest: int) -> Choice:
    """The version with the highest validation accuracy, from `measured` = [(version, loop, validation rows)],
    one entry per version (its first measurement). Ties go to the earlier version; a version that does not
    beat the start's validation accuracy is never kept over the start. No validation rows: the latest
    version, and the sentence says it was not chosen by data."""
    rows = []
    for version, loop, frame in measured:
        acc, low, high, n = accuracy_interval(plan_scored(frame))
        rows.append(
            {
                "version": version,
                "loop": loop,
                "accuracy": None if n == 0 else acc,
                "ci_low": None if n == 0 else low,
                "ci_high": None if n == 0 else high,
                "scored": n,
            }
        )
    table = pd.DataFrame(rows, columns=["version", "loop", "accuracy", "ci_low", "ci_high", "scored"])
    usable = table[table["scored"] > 0]
    if usable.empty:
        return Choice(
            latest,
            f"v{latest}, the latest version: no validation results, so it was not chosen "
            "by data (give the split a validation side)",
            table,
        )
    start = usable[usable["version"] == start_version]
    start_acc = float(start["accuracy"].iloc[0]) if len(start) else -1.0
    best = usable.sort_values(["accuracy", "version"], ascending=[False, True]).iloc[0]
    if float(best["accuracy"]) <= start_acc:
        return Choice(
            start_version,
            f"v{start_version}, the start: no learned version did better on validation "
            f"({start_acc:.2f}, {counted(len(usable), 'version')} measured)",
            table,
        )
    return Choice(
        int(best["version"]),
        f"v{int(best['version'])}: the highest validation accuracy "
        f"({float(best['accuracy']):.2f} on {int(best['scored'])} tasks, start "
        f"{start_acc:.2f}) of {counted(len(usable), 'version')} measured",
        table,
    )


def primary_test(
    start_rows: pd.DataFrame, kept_rows: pd.DataFrame, label_start: str, label_kept: str, alpha: float = ALPHA
) -> Comparison:
    """The kept version against the start on the test split (paired; see helpers.stats.comparisons)."""
    return paired_comparison(
        plan_scored(start_rows), plan_scored(kept_rows), label_a=label_start, label_b=label_kept, alpha=alpha
    )


def decision(comparison: Comparison, cost: str = "") -> str:
    """The verdict DECISION_RULE gives for `comparison`, in words, with its gain and p-value; `cost`, what the
    kept rules cost beside it (e.g. "+18% tokens per run (95% CI +9% to +27%)"), is stated, not tested:
    "The rules help: +12.0 points (p = 0.01), at +18% tokens per run (95% CI +9% to +27%)."."""
    if comparison.n == 0:
        return "No test task has a usable result under both versions: no decision."
    at = f", at {cost}" if cost else ""
    if comparison.significant and comparison.diff > 0:
        return f"The rules help: {comparison.headline()}{at}."
    if comparison.significant:
        return f"The rules hurt: {comparison.headline()}{at}."
    return f"Noise: {comparison.headline()}{at}; the test does not show that the kept rules differ from the start."


# --- power --------------------------------------------------------------------------------------------
def smallest_significant_gain(n: int, alpha: float = ALPHA) -> float | None:
    """The smallest gain that could reach significance at all on `n` tasks: k tasks all flipping the same
    way, the least k whose exact McNemar p-value is under `alpha`, over n (None when even n cannot)."""
    for k in range(1, n + 1):
        if 2 * 0.5**k < alpha:
            return k / n
    return None


def mcnemar_power(n: int, gain: float, noise: float = NOISE_FLIP_RATE, alpha: float = ALPHA) -> float:
    """Chance that the exact McNemar test finds a true `gain` significant on `n` tasks, when a share `noise`
    of tasks flips at random (half each way) and `gain` more flip towards the better side."""
    p_better, p_worse = min(1.0, noise / 2 + gain), noise / 2
    p_disc = min(1.0, p_better + p_worse)
    q = p_better / p_disc if p_disc else 0.5
    total = 0.0
    for m in range(n + 1):
        weight = math.comb(n, m) * p_disc**m * (1 - p_disc) ** (n - m)
        if weight < 1e-12:
            continue
        critical = _critical_count(m, alpha)
        if critical is not None:
            total += weight * sum(math.comb(m, b) * q**b * (1 - q) ** (m - b) for b in range(critical, m + 1))
    return total


def minimum_detectable_gain(
    n: int, alpha: float = ALPHA, power: float = POWER, noise: float = NOISE_FLIP_RATE
) -> float | None:
    """The smallest true gain (in steps of one point) the primary test detects with `power` on `n` tasks,
    under `noise` (None when no gain up to 100 points does)."""
    if n <= 0:
        return None
    for points in range(1, 101):
        if mcnemar_power(n, points / 100, noise, alpha) >= power:
            return points / 100
    return None


def power_note(n: int, alpha: float = ALPHA) -> str:
    """How much a test split of `n` tasks can show, in one sentence."""
    floor, mde = smallest_significant_gain(n, alpha), minimum_detectable_gain(n, alpha)
    if floor is None:  # say why: the best a test split this small can do is every task flipping one way
        least = next(k for k in range(1, 1000) if 2 * 0.5**k < alpha)
        if n == 0:
            return f"With no test tasks nothing can be tested: add test tasks ({least} at the very least)."
        every = {1: "its one task", 2: "both tasks"}.get(n, f"all {n}")
        return (
            f"With {counted(n, 'test task')} no difference can be significant at {alpha:g}: even if {every} changed outcome "
            f"the same way, the exact McNemar p-value would be {min(1.0, 2 * 0.5**n):.3g}, so the decision can "
            f"only be 'noise'. Use more test tasks ({least} at the very least)."
        )
    text = f"With {counted(n, 'test task')}, an observed gain under {floor * 100:.0f} points can never be significant"
    if mde is None:
        return text + f"; no gain is detected with {POWER:.0%} power."
    return (
        text + f"; a true gain of {mde * 100:.0f} points is detected with {POWER:.0%} power (assuming "
        f"{NOISE_FLIP_RATE:.0%} of tasks flip by chance between runs)."
    )


@lru_cache(maxsize=4096)
def _critical_count(m: int, alpha: float) -> int | None:
    """Least b (tasks better under the candidate, of m discordant) with a two-sided exact p < alpha."""
    for b in range(m, -1, -1):
        tail = sum(math.comb(m, i) for i in range(b, m + 1)) / 2**m
        if min(1.0, 2 * tail) >= alpha:
            return b + 1 if b + 1 <= m else None
    return None


__all__ = [
    "Choice",
    "choose_on_validation",
    "primary_test",
    "decision",
    "DECISION_RULE",
    "smallest_significant_gain",
    "mcnemar_power",
    "minimum_detectable_gain",
    "power_note",
]  # documented in CODE_APPENDIX.md
