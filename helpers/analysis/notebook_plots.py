"""Figures of one notebook's own study, beside the per-experiment set in helpers.analysis.plots: the ablation
forest plot (03), the latent-rules benchmark beside its published figures (06), what mining kept (07).

    show_figure(plot_ablation(effects, "quickstart"), plot_path("quickstart", "ablation"),
                caption=describe_ablation(effects))

Labels are wrapped between words (never cut mid-word), every kind of mark is in the legend, counts tick at
whole numbers, and lines that coincide stay visible (helpers.analysis.figure_style.series_style and spread).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Sequence

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator

from helpers.analysis.figure_style import DRY_RUN_TITLE, OKABE_ITO, is_dry_run, new_figure, series_style, spread
from helpers.store.loops import loop_records

ABLATION_MARKS = {
    "tab:blue": "removing it hurt or showed no effect: keep",
    "tab:red": "removing it helped: delete?",
    "tab:orange": "costs tokens, no effect shown: dead weight",
}
LABEL_WIDTH = 44  # characters per line of a rule's label beside the forest plot


def ablation_label(rule: str, text: str, tokens: int | None = None, width: int = LABEL_WIDTH, lines: int = 3) -> str:
    """A rule's label: its id (and weight in tokens), then its text wrapped between words in at most `lines`
    lines of `width` characters, ending with "..." after a whole word when it is longer."""
    head = f"{rule}" + (f" ({tokens} tokens)" if tokens is not None else "") + ": "
    body = textwrap.wrap(
        head + " ".join(str(text).split()),
        width,
        break_long_words=False,
        break_on_hyphens=False,
        max_lines=lines,
        placeholder=" ...",
    )
    return "\n".join(body)


def plot_ablation(effects: pd.DataFrame, experiment: str = "", dry_run: bool = False) -> Figure:
    """A forest plot of each rule's effect of removal (helpers.engine.ablation.ablate) with its 95% interval,
    each rule labeled with its weight in tokens and its text (wrapped whole): blue, removing it hurt or showed
    no effect; red, removing it helped; orange, it costs tokens and shows no effect (dead weight). Red and
    orange: candidates for deletion. The legend names every colour the plot uses."""
    labels = [
        ablation_label(r.rule, r.text, int(r.tokens) if "tokens" in effects else None) for r in effects.itertuples()
    ]
    height = 1.8 + 0.22 * sum(label.count("\n") + 1 for label in labels) + 0.2 * len(labels)
    figure, ax = new_figure(9.0, height)
    used = []
    for row, effect in enumerate(effects.itertuples()):
        color = "tab:red" if effect.harmful else "tab:orange" if getattr(effect, "dead_weight", False) else "tab:blue"
        used.append(color)
        ax.errorbar(
            [effect.effect_of_removal],
            [row],
            capsize=4,
            marker="o",
            color=color,
            xerr=[
                [max(0.0, effect.effect_of_removal - effect.ci_low)],
                [max(0.0, effect.ci_high - effect.effect_of_removal)],
            ],
        )
    ax.axvline(0, color="grey", linewidth=1)
    ax.set_yticks(range(len(effects)), labels, fontsize="small")
    ax.invert_yaxis()  # the first rule on top, as in the rules file
    if used:
        figure.legend(
            handles=[Line2D([], [], color=c, marker="o", label=ABLATION_MARKS[c]) for c in ABLATION_MARKS if c in used],
            loc="outside lower center",
            fontsize="small",
            ncols=1,
        )
    title = f"Leaving each rule out: accuracy change (95% CI)\n{experiment}"
    ax.set(
        xlabel="accuracy change when the rule is removed (left of 0: the rule helps)",
        xlim=(-1.05, 1.05),
        title=f"{title}\n{DRY_RUN_TITLE}" if dry_run else title,
    )
    ax.grid(alpha=0.3, axis="x")
    return figure


def plot_latent_rules(
    prefix: str, rule_counts: Sequence[int], feedback: str = "explanations", results_root: Path | str | None = None
) -> Figure:
    """The latent-rules benchmark beside its published figures: for each rule count, the test split's share of
    pages that follow every rule, per loop, with its 95% interval (a line, each count its own marker and dash,
    offset sideways so that equal values stay visible); the published share after 1 and after 5 loops as
    hollow diamonds of the same colour. Loops not run have no point."""
    from helpers.families.latent_rules.report import PUBLISHED, experiment_name

    figure, ax = new_figure(7.5, 4.2)
    dry = False
    for index, count in enumerate(rule_counts):
        style, offset = series_style(index), spread(index, len(rule_counts), step=0.06)
        records = loop_records(experiment_name(prefix, count, feedback), results_root)
        if records:
            loops = pd.DataFrame(records).sort_values("loop")
            dry = dry or is_dry_run(loops)
            values = pd.to_numeric(loops["test_accuracy"], errors="coerce")
            low = pd.to_numeric(loops.get("test_ci_low"), errors="coerce")
            high = pd.to_numeric(loops.get("test_ci_high"), errors="coerce")
            ax.errorbar(
                loops["loop"] + offset,
                values,
                yerr=[(values - low).clip(lower=0).fillna(0), (high - values).clip(lower=0).fillna(0)],
                capsize=3,
                label=f"{count} rules (95% CI)",
                **style,
            )
        published = PUBLISHED.get(count, {})
        points = [(loop + offset, published[f"all_{loop}"]) for loop in (1, 5) if f"all_{loop}" in published]
        if points:
            ax.plot(
                *zip(*points),
                marker="D",
                markersize=9,
                linestyle="none",
                markerfacecolor="none",
                markeredgecolor=style["color"],
                label=f"{count} rules, published",
            )
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(
        xlabel="loops of optimization (test split after k loops)",
        ylabel="test pages that follow every rule",
        ylim=(-0.02, 1.02),
        title=(
            f"Latent rules: this run beside the published figures\n{DRY_RUN_TITLE}"
            if dry
            else "Latent rules: this run beside the published figures"
        ),
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    ax.grid(alpha=0.3)
    return figure


def plot_mining(table: pd.DataFrame, experiment: str = "", why: dict[str, str] | None = None) -> Figure:
    """What mining kept and why (helpers.families.coding.mining.MiningReport.table()): one bar per verdict,
    the commits kept as tasks first, then each reason for dropping, with its count and, from `why`, what it
    means."""
    kept = int(table["kept"].astype(bool).sum()) if len(table) else 0
    dropped = table.loc[~table["kept"].astype(bool), "reason"].value_counts() if len(table) else pd.Series(dtype=int)
    labels = ["kept as tasks", *[f"dropped: {reason}" for reason in dropped.index]]
    counts = [kept, *dropped.tolist()]
    figure, ax = new_figure(7.5, 1.4 + 0.45 * len(labels))
    colours = [OKABE_ITO[2]] + [OKABE_ITO[1]] * len(dropped)
    bars = ax.barh(range(len(labels)), counts, color=colours)
    ax.bar_label(bars, [f"{count:,}" for count in counts], padding=3, fontsize="small")
    ax.set_yticks(range(len(labels)), labels, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlim(0, max(counts + [1]) * 1.25)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # commits: whole numbers
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
    notes = [f"{reason}: {(why or {}).get(reason)}" for reason in dropped.index if (why or {}).get(reason)]
    ax.set(
        xlabel="commits"
        + ("\n" + "\n".join(textwrap.fill(n, 110, max_lines=2, placeholder=" ...") for n in notes) if notes else ""),
        title=f"What mining kept, and why the rest was dropped: {experiment}",
    )
    ax.grid(alpha=0.3, axis="x")
    return figure


__all__ = ["plot_ablation", "plot_latent_rules", "plot_mining", "ablation_label"]  # documented in CODE_APPENDIX.md
