"""The baselines' figure: each arm against no rules on the same test tasks, a forest plot.

Kept apart from helpers.analysis.plots (the per-loop figures) because it reads the baseline arms
(helpers.analysis.evidence.baselines_result), not the loops.
"""

from __future__ import annotations

from typing import Any, Mapping

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from helpers.analysis.secondaries import against_none


def plot_baselines(result: Mapping[str, Any], experiment: str = "") -> Figure:
    """A forest plot of each arm's difference from no rules on the test tasks (points, 95% paired interval): the
    learned rules (the primary test, blue), the agent's own /init file and the team's file (secondaries,
    Holm-adjusted p in the label). An arm that did not run is a labeled row with no point ("skipped: ...",
    "errored: ..."), never a zero. Titled SCRIPTED DRY RUN when the runs were scripted."""
    tests = against_none(result)
    arms = [arm for arm in result["arms"] if arm != "none"]
    figure = Figure(figsize=(8.0, 1.8 + 0.6 * len(arms)))
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    labels = []
    for row, arm in enumerate(arms):
        record, (comparison, p, which) = result["arms"][arm], tests.get(arm, (None, float("nan"), ""))
        name = record.get("label", arm)
        if comparison is None or comparison.n == 0:
            why = record.get("why") or "nothing to compare"
            labels.append(f"{arm}: {record['status'] if record['status'] != 'ran' else 'no comparison'}: {why}"[:70])
            continue
        colour = "tab:blue" if arm == "learned" else "tab:green" if arm == "team" else "tab:purple"
        diff = comparison.diff * 100
        ax.errorbar(
            [diff],
            [row],
            xerr=[[max(0.0, diff - comparison.ci_low * 100)], [max(0.0, comparison.ci_high * 100 - diff)]],
            marker="o",
            capsize=4,
            color=colour,
        )
        labels.append(f"{arm} ({name[:32]}): p = {p:.2g} ({which})")
    ax.axvline(0, color="grey", linewidth=1)
    ax.set_yticks(range(len(arms)), labels, fontsize="small")
    ax.invert_yaxis()
    title = f"Each arm against no rules on the same test tasks (95% CI)\n{experiment}"
    ax.set(
        xlabel="difference in test accuracy from no rules (points)",
        xlim=(-105, 105),
        title=f"{title}\nSCRIPTED DRY RUN: not results" if result.get("dry_run") else title,
    )
    ax.grid(alpha=0.3, axis="x")
    figure.tight_layout()
    return figure


__all__ = ["plot_baselines"]
