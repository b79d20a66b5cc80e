"""Figures of one experiment, from its saved results (nothing is run again).

    paths = plot_all("quickstart", show=True)      # shows each figure and saves it as PNG in plots/

Figures: train and test accuracy per loop; ruleset size per loop (rules and tokens); resolved rate per
repository per loop; cost per loop; which test tasks passed in which loop (the flips). Every title
says SCRIPTED DRY RUN when the results came from the scripted model server. Figures are built with
matplotlib's object API and saved with the Agg canvas: nothing here changes pyplot's backend.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from helpers.store.loops import loop_records, loop_rows
from helpers.store.records import experiment_dir

DRY_RUN_TITLE = "SCRIPTED DRY RUN (not real results)"


def load_loops(experiment: str, results_root: Path | str | None = None) -> pd.DataFrame:
    """loops.jsonl as a DataFrame sorted by loop; a clear error when the experiment has none."""
    records = loop_records(experiment, results_root)
    if not records:
        raise FileNotFoundError(f"No finished loop for experiment {experiment!r} in "
                                f"{experiment_dir(experiment, results_root)}: run the quickstart or 02 first.")
    return pd.DataFrame(records).sort_values("loop").reset_index(drop=True)


def load_split_rows(experiment: str, split: str, results_root: Path | str | None = None) -> pd.DataFrame:
    """Every loop's rows of one split (train or test), with a `loop` column."""
    frames = []
    for loop in load_loops(experiment, results_root)["loop"]:
        rows = loop_rows(experiment, split, int(loop), results_root)
        if rows is not None:
            frames.append(rows.assign(loop=int(loop)))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["instance_id", "repo", "loop", "pass_or_fail"])


def _title(text: str, loops: pd.DataFrame) -> str:
    dry = "dry_run" in loops and bool(loops["dry_run"].fillna(False).astype(bool).any())
    return f"{text}\n{DRY_RUN_TITLE}" if dry else text


def _figure(width: float = 7.0, height: float = 4.0) -> tuple[Figure, Any]:
    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def plot_accuracy(loops: pd.DataFrame, experiment: str = "") -> Figure:
    """Train, validation and test accuracy per loop with their 95% intervals (infrastructure errors left
    out); a loop where no run could be scored has no point, never a zero. The test curve is exploratory:
    the one test is the kept version's (helpers.analysis.evidence)."""
    figure, ax = _figure()
    sides = [(-0.06, "train", "o", "train"), (0.0, "val", "^", "validation"), (0.06, "test", "s", "test, exploratory")]
    for offset, split, marker, name in sides:
        if f"{split}_accuracy" not in loops or loops[f"{split}_accuracy"].isna().all():
            continue
        values = pd.to_numeric(loops.get(f"{split}_accuracy"), errors="coerce")
        low = pd.to_numeric(loops.get(f"{split}_ci_low", pd.Series(index=loops.index, dtype=float)), errors="coerce")
        high = pd.to_numeric(loops.get(f"{split}_ci_high", pd.Series(index=loops.index, dtype=float)), errors="coerce")
        errors = [(values - low).clip(lower=0).fillna(0), (high - values).clip(lower=0).fillna(0)]
        ax.errorbar(loops["loop"] + offset, values, yerr=errors, marker=marker, capsize=4, label=f"{name} (95% CI)")
    ax.set(xlabel="loop (ruleset version used)", ylabel="accuracy (resolved share)", ylim=(-0.02, 1.02),
           title=_title(f"Accuracy per loop: {experiment}", loops))
    ax.set_xticks(list(loops["loop"]))
    errored = sum(loops.get(f"{split}_errors", pd.Series(0, index=loops.index)).fillna(0) for _, split, _, _ in sides)
    if errored.sum():
        ax.annotate(f"{int(errored.sum())} errored runs left out of accuracy", (0.01, 0.01),
                    xycoords="axes fraction", fontsize="small", color="tab:red")
    ax.legend()
    ax.grid(alpha=0.3)
    return figure


def plot_ruleset_size(loops: pd.DataFrame, experiment: str = "") -> Figure:
    """Rules (bars) and tokens (line) of the ruleset each loop ran with."""
    figure, ax = _figure()
    ax.bar(loops["loop"], loops["ruleset_rules"], color="tab:blue", alpha=0.7, label="rules")
    ax.set(xlabel="loop", ylabel="rules", title=_title(f"Size of the rules each loop ran with: {experiment}", loops))
    ax.set_xticks(list(loops["loop"]))
    tokens = ax.twinx()
    tokens.plot(loops["loop"], loops["ruleset_tokens"], color="tab:orange", marker="o", label="tokens")
    tokens.set_ylabel("tokens")
    figure.legend(loc="upper left")
    return figure


def plot_repo_resolved(rows: pd.DataFrame, loops: pd.DataFrame, experiment: str = "") -> Figure:
    """Resolved share per repository per loop, train and test rows together."""
    figure, ax = _figure()
    if len(rows):
        rates = rows.assign(resolved=rows["pass_or_fail"].eq("pass")).pivot_table(
            index="loop", columns="repo", values="resolved", aggfunc="mean")
        for repo in rates.columns:
            ax.plot(rates.index, rates[repo], marker="o", label=repo)
        ax.legend(fontsize="small")
        ax.set_xticks(list(rates.index))
    ax.set(xlabel="loop", ylabel="resolved share (train + test)", ylim=(-0.02, 1.02),
           title=_title(f"Resolved rate per repository: {experiment}", loops))
    ax.grid(alpha=0.3)
    return figure


def cost_notes(loops: pd.DataFrame) -> list[str]:
    """Per loop, what its bar leaves out: roles whose calls had no price ("judge unpriced") or ran on a
    local server ("agent local: no charge"); "" when everything was priced."""
    def listed(value: Any) -> list[str]:
        return [str(v) for v in value] if isinstance(value, (list, tuple)) else []

    notes = []
    for _, row in loops.iterrows():
        unpriced, local = listed(row.get("unpriced")), listed(row.get("local"))
        parts = ([f"{', '.join(unpriced)} unpriced"] if unpriced else []) + (
            [f"{', '.join(local)} local: no charge"] if local else [])
        notes.append("; ".join(parts))
    return notes


def plot_cost(loops: pd.DataFrame, experiment: str = "") -> Figure:
    """Cost per loop in USD, stacked by role: agent, judge, optimizer. What has no price (or runs on this
    machine) is not drawn as $0: each such loop is labelled "unpriced" or "local: no charge"."""
    figure, ax = _figure()
    bottom = pd.Series(0.0, index=loops.index)
    for column, label in (("agent_cost_usd", "agent"), ("judge_cost_usd", "judge"), ("optimizer_cost_usd", "optimizer")):
        values = pd.to_numeric(loops.get(column, pd.Series(float("nan"), index=loops.index)), errors="coerce")
        ax.bar(loops["loop"], values.fillna(0.0), bottom=bottom, label=label)
        bottom = bottom + values.fillna(0.0)
    for loop, height, note in zip(loops["loop"], bottom, cost_notes(loops)):
        if note:
            ax.annotate(note, (loop, height), textcoords="offset points", xytext=(0, 4), ha="center", fontsize="small")
    priced = pd.to_numeric(loops.get("cost_usd", pd.Series(dtype=float)), errors="coerce").notna().any()
    ax.set(xlabel="loop", ylabel="USD" if priced else "USD (nothing priced: see the labels)",
           title=_title(f"Cost per loop: {experiment}", loops))
    ax.set_xticks(list(loops["loop"]))
    ax.legend()
    return figure


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
        flips += [{"instance_id": iid, "from_loop": before, "to_loop": after, "before": row[before], "after": row[after]}
                  for iid, row in changed.iterrows()]
    return pd.DataFrame(flips, columns=columns)


def plot_test_outcomes(rows: pd.DataFrame, loops: pd.DataFrame, experiment: str = "") -> Figure:
    """Each test task (row) in each loop (column): green passed, red failed; flips stand out as color changes."""
    table = (rows.assign(passed=rows["pass_or_fail"].eq("pass").astype(float))
             .pivot_table(index="instance_id", columns="loop", values="passed", aggfunc="last")) if len(rows) else pd.DataFrame()
    figure, ax = _figure(7.0, max(2.5, 0.3 * len(table) + 1.5))
    if len(table):
        ax.imshow(table.values, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        ax.set_yticks(range(len(table)), labels=table.index, fontsize="small")
        ax.set_xticks(range(len(table.columns)), labels=[str(c) for c in table.columns])
    ax.set(xlabel="loop", title=_title(f"Test tasks passed (green) per loop: {experiment}", loops))
    return figure


def plot_ablation(effects: pd.DataFrame, experiment: str = "", dry_run: bool = False) -> Figure:
    """A forest plot of each rule's effect of removal (helpers.engine.ablation.ablate) with its 95% interval,
    each rule labeled with its weight in tokens: left of zero the rule helps; right of zero (red) removing it
    helped; orange: it costs tokens and shows no effect (dead weight). Red and orange: candidates for deletion."""
    figure, ax = _figure(7.0, 1.4 + 0.45 * max(1, len(effects)))
    for row, effect in enumerate(effects.itertuples()):
        color = "tab:red" if effect.harmful else "tab:orange" if getattr(effect, "dead_weight", False) else "tab:blue"
        ax.errorbar([effect.effect_of_removal], [row], capsize=4, marker="o", color=color,
                    xerr=[[max(0.0, effect.effect_of_removal - effect.ci_low)], [max(0.0, effect.ci_high - effect.effect_of_removal)]])
    ax.axvline(0, color="grey", linewidth=1)
    labels = [f"{r.rule}" + (f" ({int(r.tokens)} tokens)" if "tokens" in effects else "") + f": {r.text[:40]}"
              for r in effects.itertuples()]
    ax.set_yticks(range(len(effects)), labels, fontsize="small")
    title = f"Effect of leaving each rule out (accuracy change, 95% CI): {experiment}"
    ax.set(xlabel="accuracy change when the rule is removed\n(red: removing it helped; orange: costs tokens, no effect shown)",
           xlim=(-1.05, 1.05), title=f"{title}\n{DRY_RUN_TITLE}" if dry_run else title)
    ax.grid(alpha=0.3, axis="x")
    return figure


def save_figure(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    return path


def plot_all(experiment: str, results_root: Path | str | None = None, show: bool = False) -> dict[str, Path]:
    """Every figure of `experiment`, saved under act_results/<experiment>/plots/; shown inline if `show`."""
    loops = load_loops(experiment, results_root)
    test_rows = load_split_rows(experiment, "test", results_root)
    both = pd.concat([load_split_rows(experiment, "train", results_root), test_rows], ignore_index=True)
    figures = {
        "accuracy": plot_accuracy(loops, experiment),
        "ruleset_size": plot_ruleset_size(loops, experiment),
        "resolved_by_repo": plot_repo_resolved(both, loops, experiment),
        "cost": plot_cost(loops, experiment),
        "test_outcomes": plot_test_outcomes(test_rows, loops, experiment),
    }
    folder = experiment_dir(experiment, results_root) / "plots"
    paths = {name: save_figure(figure, folder / f"{name}.png") for name, figure in figures.items()}
    if show:
        from IPython.display import Image, display

        for figure in figures.values():
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png")
            display(Image(data=buffer.getvalue()))
    return paths

__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "plot_all", "flipped_tasks", "load_loops", "load_split_rows", "plot_accuracy", "plot_ruleset_size",
    "plot_repo_resolved", "plot_cost", "cost_notes", "plot_test_outcomes", "plot_ablation",
]
