"""The baselines' secondary comparisons, declared with the primary test before any run.

    found = secondary_comparisons({"none": rows, "learned": rows, "init": rows, "team": rows})

What is compared (SECONDARY: learned vs init, learned vs team, init vs none, team vs none), how (each an exact
McNemar test with Newcombe's paired interval, their p-values Holm-corrected together), what an absent or
errored arm becomes (skipped or errored, never "no rules"), and the one sentence each answers (QUESTIONS).
Pure functions over the arms' test rows: helpers.analysis.evidence reads the arms from an experiment and
lays these out; they are separate because the declared design is one fact, and the reading of saved
results another.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from helpers.core import config
from helpers.stats.comparisons import Comparison, paired_comparison
from helpers.stats.intervals import holm_adjust
from helpers.stats.outcomes import plan_scored as scored


ARMS = ("none", "learned", "init", "team")  # no rules, the kept (learned) rules, the agent's own /init file, the team's
# (b, a): "b vs a", diff = b - a; declared before any run with the primary test, corrected together (Holm)
SECONDARY = (("learned", "init"), ("learned", "team"), ("init", "none"), ("team", "none"))
SECONDARY_RULE = (
    "Secondary comparisons, declared with the primary before any run, on the same test tasks: learned vs "
    "init, learned vs team, init vs none, team vs none; each an exact McNemar test with Newcombe's paired "
    "interval, their p-values Holm-corrected together (family-wise level {alpha:g} over those that ran). "
    "They are labeled secondary: the primary test alone says whether the rules help."
)
QUESTIONS = {
    "init": "Do the learned rules beat what the agent's own /init writes?",
    "team": "Do the learned rules beat the file the team already has?",
}


@dataclass(frozen=True)
class Secondary:
    """One declared secondary comparison: arm `b` against arm `a` (`pair` = (b, a)). `status` is "compared",
    "skipped" (an arm absent: no team file) or "errored" (an arm that failed: an init run that wrote nothing),
    with `why`; `comparison` (the paired Comparison) and `p_holm` (Holm-adjusted over the compared ones) are
    set only when compared; `significant` is p_holm < alpha."""

    pair: tuple[str, str]
    status: str
    why: str = ""
    comparison: Comparison | None = None
    p_holm: float = math.nan
    significant: bool = False

    def summary(self) -> str:
        head = f"Secondary: {self.pair[0]} vs {self.pair[1]}"
        if self.comparison is None:
            return f"{head}: {self.status} ({self.why})"
        verdict = "significant" if self.significant else "not significant"
        return f"{head}: {self.comparison.summary()}; Holm-adjusted p = {self.p_holm:.2g}: {verdict}"


def secondary_comparisons(
    frames: Mapping[str, pd.DataFrame | None],
    states: Mapping[str, Mapping[str, Any]] | None = None,
    labels: Mapping[str, str] | None = None,
    alpha: float = config.STATS_ALPHA,
) -> list[Secondary]:
    """The declared SECONDARY comparisons over the arms' test rows (`frames`: {arm: rows}, None or absent for an
    arm that did not run), in declared order. `states` ({arm: {"status", "why"}}) says why an arm has no rows: an
    "errored" arm is named as errored (never read as "no rules"), any other absent arm is skipped. Each compared
    pair: exact McNemar with a paired interval (paired_comparison); their p-values Holm-adjusted together."""
    states, labels = states or {}, labels or {}
    found: list[Secondary] = []
    for b, a in SECONDARY:
        missing = [arm for arm in (b, a) if frames.get(arm) is None]
        errored = [arm for arm in missing if (states.get(arm) or {}).get("status") == "errored"]
        if errored:
            why = "; ".join(
                f"the {arm} arm errored: {(states[arm].get('why') or 'no reason recorded')}" for arm in errored
            )
            found.append(Secondary((b, a), "errored", why))
        elif missing:
            why = "; ".join(f"no {arm} arm: {(states.get(arm) or {}).get('why') or 'not run'}" for arm in missing)
            found.append(Secondary((b, a), "skipped", why))
        else:
            found.append(
                Secondary(
                    (b, a),
                    "compared",
                    comparison=paired_comparison(
                        scored(frames[a]), scored(frames[b]), label_a=labels.get(a, a), label_b=labels.get(b, b)
                    ),
                )
            )
    adjusted = iter(holm_adjust([s.comparison.p_value for s in found if s.comparison is not None]))
    return [
        replace(s, p_holm=(p := next(adjusted)), significant=p < alpha) if s.comparison is not None else s
        for s in found
    ]


def answer_sentence(arm: str, secondary: Secondary) -> str:
    """The one sentence answering QUESTIONS[arm] from the learned-vs-`arm` secondary comparison."""
    question = QUESTIONS[arm]
    if secondary.comparison is None:
        return f"{question} Not answered: {secondary.why}."
    c = secondary.comparison
    if c.n == 0:
        return f"{question} Not answered: no test task both arms could be scored on."
    if secondary.significant and c.diff > 0:
        verdict = "Yes"
    elif secondary.significant and c.diff < 0:
        verdict = f"No: the {arm} file did better"
    else:
        verdict = "Not shown: the difference is noise at this size"
    return (
        f"{question} {verdict} ({c.headline().split(' (')[0]} (95% CI {c.ci_low * 100:+.1f} to "
        f"{c.ci_high * 100:+.1f}) on {c.n} tasks, Holm-adjusted p = {secondary.p_holm:.2g}; secondary)."
    )


def against_none(result: Mapping[str, Any]) -> dict[str, Any]:
    """{arm: (its comparison against no rules or None, its p as the test states it, which test)}: learned vs none is
    the primary test (its own p), init and team vs none are secondaries (Holm-adjusted p)."""
    found: dict[str, Any] = {"none": (None, math.nan, "")}
    found["learned"] = (
        result["primary"],
        result["primary"].p_value if result["primary"] is not None else math.nan,
        "primary",
    )
    for s in result["secondaries"]:
        if s.pair[1] == "none":
            found[s.pair[0]] = (s.comparison, s.p_holm, "secondary, Holm-adjusted")
    return found


__all__ = [
    "ARMS",
    "SECONDARY",
    "SECONDARY_RULE",
    "QUESTIONS",
    "Secondary",
    "secondary_comparisons",
    "answer_sentence",
    "against_none",
]
