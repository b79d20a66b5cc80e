"""Figures of one experiment, from its saved results (nothing is run again).

    paths = plot_all("quickstart", show=True)      # shows each figure and saves it as PNG in plots/

Figures: train and test accuracy per loop; ruleset size per loop (rules and tokens); resolved rate per
repository per loop; tokens per role per loop with the cost as labels; tokens per run against validation
accuracy, per version (the kept one marked: these two are helpers.analysis.cost_plots'); which test tasks
passed in which loop (the flips). Every title
says SCRIPTED DRY RUN when the results came from the scripted model server; no legend sits on a title; the
cost figures never draw what has no price as $0 (they say "unpriced", "local: no charge" or "scripted: no
charge"); token bars start at 0, the tokens-per-run axis where the versions are; counts tick at whole
numbers; lines that coincide stay visible (each its own marker, dash and a small sideways offset). Shown,
each figure is followed by a few sentences drawn from its data (helpers.analysis.captions). Figures are
built with matplotlib's object API and saved with the Agg canvas: nothing here changes pyplot's backend
(their shared style: helpers.analysis.figure_style).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from helpers.analysis import captions
from helpers.analysis.cost_plots import plot_cost, plot_cost_accuracy, version_costs
from helpers.analysis.figure_style import OKABE_ITO, dry_run_title, is_dry_run, new_figure, series_style, spread
from helpers.core.names import check_name
from helpers.stats.outcomes import plan_scored
from helpers.store.loops import loop_records, loop_rows
from helpers.store.records import experiment_dir

OUTCOME_COLOURS = ListedColormap(["#E69F00", "#0072B2"]).with_extremes(bad="#BBBBBB")  # Okabe-Ito: failed, passed


def load_loops(experiment: str, results_root: Path | str | None = None) -> pd.DataFrame:
    """loops.jsonl as a DataFrame sorted by loop; a clear error when the experiment has none."""
    records = loop_records(experiment, results_root)
    if not records:
        raise FileNotFoundError(
            f"No finished loop for experiment {experiment!r} in "
            f"{experiment_dir(experiment, results_root)}: run the quickstart or 02 first."
        )
    return pd.DataFrame(records).sort_values("loop").reset_index(drop=True)


def load_split_rows(experiment: str, split: str, results_root: Path | str | None = None) -> pd.DataFrame:
    """Every loop's rows of one split (train or test), with a `loop` column; plan mode's rows scored by the
    judge's verdict, as the loop lines score them."""
    frames = []
    for loop in load_loops(experiment, results_root)["loop"]:
        rows = _scored_rows(experiment, split, int(loop), results_root)
        if rows is not None:
            frames.append(rows.assign(loop=int(loop)))
    return (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["instance_id", "repo", "loop", "pass_or_fail"])
    )


def plot_accuracy(loops: pd.DataFrame, experiment: str = "") -> Figure:
    """Train, validation and test accuracy per loop with their 95% intervals (infrastructure errors left
    out); a loop where no run could be scored has no point, never a zero. The test curve is exploratory:
    the one test is the kept version's (helpers.analysis.evidence)."""
    figure, ax = new_figure()
    sides = [(-0.06, "train", "o", "train"), (0.0, "val", "^", "validation"), (0.06, "test", "s", "test, exploratory")]
    for (offset, split, marker, name), colour in zip(sides, OKABE_ITO):
        if f"{split}_accuracy" not in loops or loops[f"{split}_accuracy"].isna().all():
            continue
        values = pd.to_numeric(loops.get(f"{split}_accuracy"), errors="coerce")
        low = pd.to_numeric(loops.get(f"{split}_ci_low", pd.Series(index=loops.index, dtype=float)), errors="coerce")
        high = pd.to_numeric(loops.get(f"{split}_ci_high", pd.Series(index=loops.index, dtype=float)), errors="coerce")
        errors = [(values - low).clip(lower=0).fillna(0), (high - values).clip(lower=0).fillna(0)]
        ax.errorbar(
            loops["loop"] + offset,
            values,
            yerr=errors,
            marker=marker,
            capsize=4,
            color=colour,
            label=f"{name} (95% CI)",
        )
    ax.set(
        xlabel="loop (ruleset version used)",
        ylabel="accuracy (resolved share)",
        ylim=(-0.02, 1.02),
        title=dry_run_title(f"Accuracy per loop: {experiment}", loops),
    )
    ax.set_xticks(list(loops["loop"]))
    errored = sum(loops.get(f"{split}_errors", pd.Series(0, index=loops.index)).fillna(0) for _, split, _, _ in sides)
    if errored.sum():
        ax.annotate(
            f"{int(errored.sum())} errored runs left out of accuracy",
            (0.01, 0.01),
            xycoords="axes fraction",
            fontsize="small",
            color="tab:red",
        )
    ax.legend()
    ax.grid(alpha=0.3)
    return figure


def plot_ruleset_size(loops: pd.DataFrame, experiment: str = "") -> Figure:
    """Rules (bars) and tokens (line) of the ruleset each loop ran with; one legend for both, below the axes."""
    figure, ax = new_figure()
    ax.bar(loops["loop"], loops["ruleset_rules"], color="tab:blue", alpha=0.7, label="rules")
    ax.set(
        xlabel="loop", ylabel="rules", title=dry_run_title(f"Size of the rules each loop ran with: {experiment}", loops)
    )
    ax.set_xticks(list(loops["loop"]))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count: never a tick at 0.5 rules
    tokens = ax.twinx()
    tokens.plot(loops["loop"], loops["ruleset_tokens"], color="tab:orange", marker="o", label="tokens")
    tokens.set_ylabel("tokens (read with every agent call)")
    ax.set_ylim(bottom=0)
    tokens.set_ylim(bottom=0)
    figure.legend(loc="outside lower center", ncols=2)  # outside the axes: never on the title or the data
    return figure


def plot_repo_resolved(rows: pd.DataFrame, loops: pd.DataFrame, experiment: str = "") -> Figure:
    """Resolved share per repository per loop, train and test rows together."""
    figure, ax = new_figure()
    if len(rows):
        rates = rows.assign(resolved=rows["pass_or_fail"].eq("pass")).pivot_table(
            index="loop", columns="repo", values="resolved", aggfunc="mean"
        )
        for i, repo in enumerate(rates.columns):
            ax.plot(rates.index + spread(i, len(rates.columns)), rates[repo], label=repo, **series_style(i))
        ax.legend(fontsize="small")
        ax.set_xticks(list(rates.index))
    ax.set(
        xlabel="loop",
        ylabel="resolved share (train + test)",
        ylim=(-0.02, 1.02),
        title=dry_run_title(f"Resolved rate per repository: {experiment}", loops),
    )
    ax.grid(alpha=0.3)
    return figure


def _scored_rows(experiment: str, split: str, loop: int, results_root: Path | str | None) -> pd.DataFrame | None:
    """One loop's rows of one split, plan mode's scored by the judge (helpers.stats.outcomes.plan_scored)."""
    rows = loop_rows(experiment, split, loop, results_root)
    return None if rows is None else plan_scored(rows)


def flipped_tasks(experiment: str, results_root: Path | str | None = None) -> pd.DataFrame:
    """Test tasks whose verdict changed from one loop to the next: instance_id, from_loop, to_loop, before, after."""
    rows = load_split_rows(experiment, "test", results_root)
    columns = ["instance_id", "from_loop", "to_loop", "before", "after"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    table = rows.pivot_table(index="instance_id", columns="loop", values="pass_or_fail", aggfunc="last")
    flips = []
    loops = list(table.columns)
    for before, after in zip(loops, loops[1:]):
        changed = table[(table[before] != table[after]) & table[before].notna() & table[after].notna()]
        flips += [
            {"instance_id": iid, "from_loop": before, "to_loop": after, "before": row[before], "after": row[after]}
            for iid, row in changed.iterrows()
        ]
    return pd.DataFrame(flips, columns=columns)


def plot_test_outcomes(rows: pd.DataFrame, loops: pd.DataFrame, experiment: str = "") -> Figure:
    """Each test task (row) in each loop (column): blue passed, orange failed (a colour-blind-safe pair, with a
    legend), grey not run or errored; flips stand out as colour changes."""
    table = (
        (
            rows.assign(passed=rows["pass_or_fail"].eq("pass").astype(float)).pivot_table(
                index="instance_id", columns="loop", values="passed", aggfunc="last"
            )
        )
        if len(rows)
        else pd.DataFrame()
    )
    figure, ax = new_figure(7.0, max(2.5, 0.3 * len(table) + 1.5))
    if len(table):
        ax.imshow(table.values, cmap=OUTCOME_COLOURS, vmin=0, vmax=1, aspect="auto")
        ax.legend(
            handles=[
                Patch(color=OUTCOME_COLOURS(1.0), label="passed"),
                Patch(color=OUTCOME_COLOURS(0.0), label="failed"),
            ],
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize="small",
        )
        ax.set_yticks(range(len(table)), labels=table.index, fontsize="small")
        ax.set_xticks(range(len(table.columns)), labels=[str(c) for c in table.columns])
    ax.set(xlabel="loop", title=dry_run_title(f"Test tasks passed per loop: {experiment}", loops))
    return figure


def save_figure(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    return path


def plot_all(
    experiment: str, results_root: Path | str | None = None, show: bool | Sequence[str] = False
) -> dict[str, Path]:
    """Every figure of `experiment`, saved under act_results/<experiment>/plots/; shown inline if `show`
    (True: all; a list of names, e.g. ["accuracy"]: those), each followed by what to read in it
    (helpers.analysis.captions)."""
    loops = load_loops(experiment, results_root)
    test_rows = load_split_rows(experiment, "test", results_root)
    both = pd.concat([load_split_rows(experiment, "train", results_root), test_rows], ignore_index=True)
    points, dry = version_costs(experiment, results_root), is_dry_run(loops)
    figures = {  # each figure with what to read in it
        "accuracy": (plot_accuracy(loops, experiment), captions.describe_accuracy(loops)),
        "ruleset_size": (plot_ruleset_size(loops, experiment), captions.describe_ruleset_size(loops)),
        "resolved_by_repo": (plot_repo_resolved(both, loops, experiment), captions.describe_repo_resolved(both, loops)),
        "cost": (plot_cost(loops, experiment), captions.describe_cost(loops)),
        "cost_accuracy": (plot_cost_accuracy(points, experiment, dry), captions.describe_cost_accuracy(points, dry)),
        "test_outcomes": (
            plot_test_outcomes(test_rows, loops, experiment),
            captions.describe_test_outcomes(test_rows, loops),
        ),
    }
    if test_rows.empty:  # the loops left the test split to the one test (TEST_EACH_LOOP): its summary says it all
        del figures["test_outcomes"]
    folder = experiment_dir(experiment, results_root) / "plots"
    paths = {name: save_figure(figure, folder / f"{name}.png") for name, (figure, _) in figures.items()}
    for name, (figure, caption) in figures.items():
        if show is True or (not isinstance(show, bool) and name in show):
            show_figure(figure, caption=caption)
    return paths


def show_figure(figure: Figure, path: Path | None = None, caption: str | None = None) -> Path | None:
    """Show `figure` inline as a PNG (Jupyter, and papermill's executed copies), then `caption` (what to read
    in it) as text; saved first at `path` when given. The figures here are built with the object API, which
    registers no inline display of its own: a bare `display(figure)` would print `<Figure size ...>`."""
    saved = save_figure(figure, path) if path is not None else None
    from IPython.display import Image, display

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    display(Image(data=buffer.getvalue()))
    if caption:
        print(caption)
    return saved


def plot_path(experiment: str, name: str, results_root: Path | str | None = None) -> Path:
    """Where a figure of `experiment` is saved: act_results/<experiment>/plots/<name>.png."""
    return experiment_dir(experiment, results_root) / "plots" / f"{check_name(name, 'figure name')}.png"


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "plot_all",
    "flipped_tasks",
    "load_loops",
    "load_split_rows",
    "plot_accuracy",
    "plot_ruleset_size",
    "plot_repo_resolved",
    "plot_test_outcomes",
    "show_figure",
    "plot_path",
]
