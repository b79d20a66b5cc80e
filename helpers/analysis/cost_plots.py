"""The cost figures of one experiment, from its saved results: tokens per loop by role with the cost as labels,
and tokens per run against accuracy, per ruleset version (the kept one marked).

    figure = plot_cost_accuracy(version_costs("quickstart"), "quickstart")

They never draw what has no price as $0 (they say "unpriced", "local: no charge" or "scripted: no charge");
token bars start at 0, the tokens-per-run axis where the versions are. Separate from helpers.analysis.plots
(accuracy, size and outcome figures; plot_all draws these too) because what a rule costs is read from other
columns and answers another question than whether it helps.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from helpers.analysis.captions import cost_labels
from helpers.analysis.figure_style import DRY_RUN_TITLE, new_figure, dry_run_title
from helpers.stats.costs import RUN_MEASURES
from helpers.stats.outcomes import INFRA, plan_scored, run_outcome
from helpers.store.loops import kept_version, loop_records, loop_rows

ROLES = ("agent", "judge", "optimizer")  # the model roles whose tokens a loop records (<role>_tokens)


def plot_cost(loops: pd.DataFrame, experiment: str = "") -> Figure:
    """Tokens per loop, stacked by role (agent runs, judge, optimizer: known in every mode), each bar labeled
    with the loop's cost (cost_labels: dollars where priced, "unpriced", "local: no charge", "scripted: no
    charge"). The axis starts at 0; a loop with no token count recorded says so instead of an empty frame."""
    figure, ax = new_figure()
    bottom = pd.Series(0.0, index=loops.index)
    for role in ROLES:
        if f"{role}_tokens" not in loops:
            continue  # older loop records counted the agent's tokens only
        values = pd.to_numeric(loops[f"{role}_tokens"], errors="coerce").fillna(0.0).clip(lower=0)
        ax.bar(loops["loop"], values, bottom=bottom, label=role)
        bottom = bottom + values
    top = float(bottom.max()) if len(bottom) else 0.0
    width = max(8, 90 // max(1, len(loops)))  # characters of x-small text a bar's slot holds (~90 across the axes)
    for loop, height, label in zip(loops["loop"], bottom, cost_labels(loops)):
        text = "\n".join(textwrap.fill(line, width) for line in label.replace(" (", "\n(").split("\n"))
        ax.annotate(
            text,
            (loop, height),
            textcoords="offset points",
            xytext=(0, 3),
            ha="center",
            va="bottom",
            fontsize="x-small",
        )
    if top <= 0:
        ax.annotate("no token counts recorded for these loops", (0.5, 0.5), xycoords="axes fraction", ha="center")
    ax.set_ylim(0, top * 1.3 if top > 0 else 1.0)  # room for the labels above the bars
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    ax.set(
        xlabel="loop",
        ylabel="tokens (input + output)",
        title=dry_run_title(f"Tokens per loop by role, cost as labels: {experiment}", loops),
    )
    ax.set_xticks(list(loops["loop"]))
    if ax.containers:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")  # beside the axes, off the title
    return figure


def version_costs(experiment: str, results_root: Path | str | None = None) -> pd.DataFrame:
    """Per ruleset version, at its first measurement: tokens per run and accuracy (with its 95% interval) on
    validation, the split that chose the kept version; on train when the experiment has no validation side
    (`split` says which). Columns: version, loop, split, accuracy, ci_low, ci_high, tokens_per_run (NaN when
    no run recorded tokens), ruleset_tokens, kept. Tokens count the runs accuracy counts (infrastructure
    errors left out)."""
    columns = ["version", "loop", "split", "accuracy", "ci_low", "ci_high", "tokens_per_run", "ruleset_tokens", "kept"]
    records = loop_records(experiment, results_root)
    choice = kept_version(experiment, results_root=results_root)
    if not records or choice is None:
        return pd.DataFrame(columns=columns)
    split = "val" if (choice.candidates["scored"] > 0).any() else "train"
    points, seen = [], set()
    for record in records:
        version, loop = record["ruleset_version"], record["loop"]
        rows = loop_rows(experiment, split, loop, results_root)
        if version in seen or rows is None:
            continue
        seen.add(version)
        rows = plan_scored(rows)  # plan mode's rows scored by the judge, as the loop lines score them
        points.append(
            {
                "version": version,
                "loop": loop,
                "split": split,
                "accuracy": record.get(f"{split}_accuracy"),
                "ci_low": record.get(f"{split}_ci_low"),
                "ci_high": record.get(f"{split}_ci_high"),
                "tokens_per_run": _tokens_per_run(rows),
                "ruleset_tokens": record.get("ruleset_tokens"),
                "kept": version == choice.version,
            }
        )
    return pd.DataFrame(points, columns=columns)


def plot_cost_accuracy(points: pd.DataFrame, experiment: str = "", dry_run: bool = False) -> Figure:
    """Each version (version_costs) as a point: x its tokens per run, y its validation accuracy with the 95%
    interval; versions joined in order; the kept version a star. Up and to the left is better: more accuracy
    for fewer tokens. The y axis starts at 0; the x axis spans the versions' token counts."""
    figure, ax = new_figure()
    split = points["split"].iloc[0] if len(points) else "val"
    x = pd.to_numeric(points["tokens_per_run"], errors="coerce").fillna(0.0)
    y = pd.to_numeric(points["accuracy"], errors="coerce")
    low = pd.to_numeric(points["ci_low"], errors="coerce")
    high = pd.to_numeric(points["ci_high"], errors="coerce")
    if len(points):
        ax.plot(x, y, color="grey", linestyle=":", linewidth=1)
        ax.errorbar(
            x,
            y,
            yerr=[(y - low).clip(lower=0).fillna(0), (high - y).clip(lower=0).fillna(0)],
            fmt="o",
            capsize=4,
            color="tab:blue",
            label="version (95% CI)",
            clip_on=False,
        )  # a point at 0 shows whole
        kept = points["kept"].astype(bool)
        ax.plot(
            x[kept],
            y[kept],
            marker="*",
            markersize=16,
            linestyle="none",
            color="tab:orange",
            label="kept version",
            clip_on=False,
        )
        for i, (xi, yi, point) in enumerate(zip(x, y, points.itertuples())):
            # short names, staggered, so that versions with close token counts stay readable
            ax.annotate(
                f"v{point.version}",
                (xi, yi),
                textcoords="offset points",
                xytext=(6, 6 + 12 * (i % 2)),
                fontsize="small",
            )
        bare = [f"v{v}" for v, t in zip(points["version"], points["ruleset_tokens"]) if not t]
        ax.legend(
            loc="best", fontsize="small", title=f"{', '.join(bare)}: no rules" if bare else None, title_fontsize="small"
        )
    if not (x > 0).any():
        ax.annotate("no token counts recorded", (0.5, 0.5), xycoords="axes fraction", ha="center")
    ax.set_xlim(*_data_range(x[x > 0]))
    ax.set_ylim(0, 1.05)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    which = (
        "validation accuracy"
        if split == "val"
        else "train accuracy (no validation side: the tasks the optimizer learned from)"
    )
    title = f"Tokens per run and {which.split(' (')[0]}, per version: {experiment}"
    side = "validation" if split == "val" else "train"
    ax.set(
        xlabel=f"tokens per agent run on {side} tasks (input + output, mean)",
        ylabel=which if split == "val" else "train accuracy",
        title=f"{title}\n{DRY_RUN_TITLE}" if dry_run else title,
    )
    if split != "val":
        ax.annotate(
            "no validation side: the kept version is the latest, not chosen by data",
            (0.01, 0.01),
            xycoords="axes fraction",
            fontsize="small",
            color="tab:red",
        )
    ax.grid(alpha=0.3)
    return figure


def _data_range(values: pd.Series) -> tuple[float, float]:
    """An axis range that starts where the data do: the values' span with a margin of a tenth of it (at least
    5% of the largest value) on each side; (0, 1) without data."""
    if values.empty:
        return 0.0, 1.0
    low, high = float(values.min()), float(values.max())
    margin = max((high - low) * 0.1, high * 0.05, 1.0)
    return max(0.0, low - margin), high + margin


def _tokens_per_run(rows: pd.DataFrame) -> float:
    """Mean input + output tokens over the runs accuracy counts (NaN when none recorded tokens)."""
    columns = list(RUN_MEASURES["tokens"][0])
    if rows.empty or not set(columns) <= set(rows.columns):
        return float("nan")
    counted = rows[[run_outcome(row) != INFRA for row in rows.to_dict("records")]]
    return float(counted[columns].apply(pd.to_numeric, errors="coerce").sum(axis=1, min_count=len(columns)).mean())


__all__ = [
    "plot_cost",
    "version_costs",
    "plot_cost_accuracy",
    "ROLES",
]  # the public API, documented in CODE_APPENDIX.md
