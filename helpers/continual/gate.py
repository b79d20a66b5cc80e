"""The replay gate's decision: the agent ran recent tasks with the current rules and with a proposal;
the proposal passes only when the comparison could have refused it and did not.

With too few tasks no difference is ever significant, so a gate that only refuses "significantly worse"
proposals would pass everything: then it refuses to pass, and says how many tasks it needs.
"""

from __future__ import annotations

import pandas as pd

from helpers.core import config
from helpers.stats.selection import minimum_detectable_gain, smallest_significant_gain
from helpers.stats.comparisons import GateDecision, paired_comparison

ALPHA = config.STATS_ALPHA


def tasks_needed(alpha: float = ALPHA) -> int:
    """The fewest replay tasks (with a usable result on both sides) on which a difference can be
    significant at `alpha` at all (6 at 0.05: six tasks all getting worse give p = 0.031)."""
    return next(n for n in range(1, 64) if smallest_significant_gain(n, alpha) is not None)


def replay_decision(current: pd.DataFrame, proposed: pd.DataFrame, label: str, alpha: float = ALPHA) -> GateDecision:
    """Accept when the proposal is not significantly worse AND the comparison could have shown it worse;
    the reason says which, with the drop the gate would catch (80% power) at this size."""
    comparison = paired_comparison(current, proposed, label_a="current rules", label_b=label, alpha=alpha)
    n, needed = comparison.n, tasks_needed(alpha)
    if n == 0:
        return GateDecision(False, "no replay task has a usable result under both rulesets", comparison)
    if n < needed:
        return GateDecision(
            False,
            f"with {n} replay tasks no difference can be significant at {alpha:g}, so the gate "
            f"could never refuse a worse proposal and does not accept one: it needs at least "
            f"{needed} tasks with a usable result (REPLAY_TASKS)",
            comparison,
        )
    if comparison.diff < 0 and comparison.significant:
        return GateDecision(False, "the proposal is significantly worse", comparison)
    drop = minimum_detectable_gain(n, alpha)
    catch = (
        f"a true drop of {drop * 100:.0f} points would be caught with 80% power"
        if drop
        else "no drop is caught reliably"
    )
    return GateDecision(True, f"the proposal is not significantly worse on {n} tasks ({catch})", comparison)


__all__ = ["replay_decision", "tasks_needed"]  # documented in CODE_APPENDIX.md
