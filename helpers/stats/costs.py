"""What the rules cost per run, beside what they gain: the paired change in tokens, dollars and wall time.

    change = paired_change(start_rows, kept_rows, "tokens", label_a="no rules", label_b="v3")
    change.summary()    # "+18% tokens per run (95% CI +9% to +27%)"

Rules are read on every model call of every run, so a ruleset that helps may also cost. The change is
measured on the same tasks and the same counted runs as the accuracy test (helpers.stats.comparisons.paired_values),
each task's run under b against its run under a, with a percentile bootstrap over tasks
(helpers.stats.intervals.paired_bootstrap). It is reported, never tested for significance: accuracy is the one
pre-declared test, and the cost of the rules is a price to weigh, not a hypothesis.
"""

from __future__ import annotations

import math
from typing import Any
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from helpers.stats.comparisons import paired_values
from helpers.stats.intervals import CONFIDENCE, N_BOOT, FloatArray, paired_bootstrap

METHOD = "per-task mean over attempts; paired percentile bootstrap over tasks; no test (reported, not tested)"
# Why a cost has no dollars, in the words every table, line and figure uses (never "$0.00" for them).
SCRIPTED_NO_CHARGE, LOCAL_NO_CHARGE, UNPRICED = "scripted: no charge", "local: no charge", "unpriced"
# What a run costs, from its record (helpers.engine.run_records.COLUMNS): measure -> (columns summed, wording, unit).
RUN_MEASURES = {
    "tokens": (("input_tokens", "output_tokens"), "tokens per run", "tokens"),
    "cost_usd": (("cost_usd",), "cost per run", "USD"),
    "duration_s": (("duration_s",), "wall time per run", "s"),
}


@dataclass(frozen=True)
class PairedChange:
    """The paired change of one per-run measure (RUN_MEASURES: tokens, cost, wall time) from ruleset a to
    ruleset b on the `n` tasks both ran.

    `mean_a`, `mean_b`: the mean over tasks of each task's mean per run; `diff` = mean_b - mean_a and
    (`ci_low`, `ci_high`) its interval; `relative` = mean_b / mean_a - 1 and (`rel_low`, `rel_high`) its
    interval (NaN when mean_a is 0). Intervals are paired percentile bootstraps over tasks at `confidence`,
    both from the same resamples; there is no p-value: the change is reported, not tested. `excluded` maps
    a reason to the tasks left out for it ("not measured": a run lacked the measure, e.g. an unpriced cost).
    With no task measured, every number is NaN.
    """

    measure: str
    n: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    relative: float
    rel_low: float
    rel_high: float
    label_a: str = "a"
    label_b: str = "b"
    confidence: float = CONFIDENCE
    excluded: dict[str, int] = field(default_factory=dict)
    method: str = METHOD

    @property
    def wording(self) -> str:
        """ "tokens per run", "cost per run", "wall time per run"."""
        return RUN_MEASURES[self.measure][1]

    def summary(self) -> str:
        """The change in a few words, relative when it can be: "+18% tokens per run (95% CI +9% to +27%)";
        in its unit when the start measured 0: "+1,200 tokens per run (95% CI ...)", "+$0.0021 per run";
        "cost per run: not measured" with no task."""
        level = f"{self.confidence * 100:g}% CI"
        if self.n == 0:
            return f"{self.wording}: not measured"
        if not math.isnan(self.relative):
            return f"{_percent(self.relative)} {self.wording} ({level} {_percent(self.rel_low)} to {_percent(self.rel_high)})"
        unit = RUN_MEASURES[self.measure][2]
        return (
            f"{_amount(self.diff, unit, signed=True)} per run ({level} "
            f"{_amount(self.ci_low, unit, signed=True)} to {_amount(self.ci_high, unit, signed=True)})"
        )

    def details(self) -> str:
        """Where the change comes from: "41,200 tokens -> 48,600 tokens on 20 tasks (no rules -> v2)", and the
        tasks left out."""
        if self.n == 0:
            text = f"no task with the measure on both sides ({self.label_a} -> {self.label_b})"
        else:
            unit = RUN_MEASURES[self.measure][2]
            text = (
                f"{_amount(self.mean_a, unit)} -> {_amount(self.mean_b, unit)} on "
                f"{self.n} task{'' if self.n == 1 else 's'} ({self.label_a} -> {self.label_b})"
            )
        if self.excluded:
            text += "; left out: " + ", ".join(f"{count} {reason}" for reason, count in self.excluded.items())
        return text

    def to_dict(self) -> dict[str, Any]:
        """Plain data: every field, plus `summary`."""
        return {**asdict(self), "excluded": dict(self.excluded), "summary": self.summary()}


def paired_change(
    a: pd.DataFrame,
    b: pd.DataFrame,
    measure: str = "tokens",
    on: str = "instance_id",
    outcome: str = "pass_or_fail",
    *,
    label_a: str = "a",
    label_b: str = "b",
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
    errors_as_fail: bool = False,
) -> PairedChange:
    """The paired change of `measure` (a key of RUN_MEASURES) per run from frame `a` to frame `b` on the tasks
    both have, counted as the accuracy test counts them: infrastructure errors left out of both sides,
    rule-induced errors kept (a timeout's tokens are the rules' doing); a task whose counted runs lack the
    measure is left out as "not measured". Several attempts per task: each task's mean. Never raises on odd
    rows; ValueError for an unknown `measure`."""
    if measure not in RUN_MEASURES:
        raise ValueError(f"measure must be one of {sorted(RUN_MEASURES)}, not {measure!r}.")
    va, vb, excluded = paired_values(
        a, b, RUN_MEASURES[measure][0], on, outcome, label_a=label_a, label_b=label_b, errors_as_fail=errors_as_fail
    )
    if not len(va):
        nan = math.nan
        return PairedChange(
            measure,
            0,
            nan,
            nan,
            nan,
            nan,
            nan,
            nan,
            nan,
            nan,
            label_a=label_a,
            label_b=label_b,
            confidence=confidence,
            excluded=excluded,
        )
    # one seed: both intervals from the same resamples
    low, high = paired_bootstrap(va, vb, mean_diff, n_boot=n_boot, seed=seed, confidence=confidence)
    rel_low, rel_high = paired_bootstrap(va, vb, mean_ratio, n_boot=n_boot, seed=seed, confidence=confidence)
    return PairedChange(
        measure,
        len(va),
        float(va.mean()),
        float(vb.mean()),
        float(mean_diff(va, vb)),
        low,
        high,
        float(mean_ratio(va, vb)),
        rel_low,
        rel_high,
        label_a=label_a,
        label_b=label_b,
        confidence=confidence,
        excluded=excluded,
    )


def mean_diff(a: FloatArray, b: FloatArray) -> FloatArray:
    """mean(b) - mean(a) along the last (tasks') axis: a statistic for paired_bootstrap."""
    return np.asarray(b.mean(axis=-1) - a.mean(axis=-1), dtype=float)


def mean_ratio(a: FloatArray, b: FloatArray) -> FloatArray:
    """mean(b) / mean(a) - 1 along the last (tasks') axis, NaN where mean(a) is 0: a statistic for paired_bootstrap."""
    base = a.mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(base > 0, b.mean(axis=-1) / np.where(base > 0, base, 1.0) - 1, math.nan)


def role_tokens(sides: dict[str, pd.DataFrame], report: dict[str, Any]) -> dict[str, int]:
    """The judge's and the optimizer's tokens in one loop (input + output, known in every mode, priced or not):
    `judge_tokens` summed over the judged rows of every split, `optimizer_tokens` from its report."""
    judged = [
        pd.to_numeric(f["judge_tokens"], errors="coerce").fillna(0).sum() for f in sides.values() if "judge_tokens" in f
    ]
    return {"judge_tokens": int(sum(judged)), "optimizer_tokens": int(report.get("tokens") or 0)}


def _percent(value: float) -> str:
    """A relative change as a signed whole percentage: 0.183 -> "+18%"."""
    return f"{value * 100:+.0f}%"


def _amount(value: float, unit: str, signed: bool = False) -> str:
    """An amount in its unit: "41,200 tokens", "$0.0123", "84 s", "4.5 s" (with a sign when `signed`)."""
    sign = "-" if value < 0 else "+" if signed else ""
    size = abs(value)
    if unit == "USD":
        return f"{sign}${size:.4f}"
    return f"{sign}{size:,.0f} {unit}" if unit == "tokens" or size >= 10 else f"{sign}{size:.1f} {unit}"


__all__ = [
    "PairedChange",
    "paired_change",
    "mean_diff",
    "mean_ratio",
    "role_tokens",
    "RUN_MEASURES",
    "SCRIPTED_NO_CHARGE",
    "LOCAL_NO_CHARGE",
    "UNPRICED",
]  # documented in CODE_APPENDIX.md
