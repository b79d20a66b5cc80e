"""What to read in each figure, in two or three sentences drawn from the figure's own data (never a fixed text).

    print(describe_accuracy(loops))      # after plot_accuracy(loops): which split moved, and whether it is noise

One function per figure kind, taking what the figure is drawn from; helpers.analysis.plots prints each after
the figure it explains. Scripted dry-run data is said to be scripted. Also here: a loop's cost in words
(cost_notes, cost_labels), which the cost figure's labels and its caption share.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from helpers.stats.costs import LOCAL_NO_CHARGE, SCRIPTED_NO_CHARGE, UNPRICED
from helpers.core.wording import counted

WIDTH = 100  # characters a caption line holds in a notebook's output (lines wrap at words, never mid-word)
SCRIPTED = "Scripted dry run: these numbers show the machinery, not results."
SPLIT_NAMES = {"train": "train", "val": "validation", "test": "test"}


def wrap(text: str, width: int = WIDTH) -> str:
    """`text` in lines of at most `width` characters, broken between words (paragraphs kept)."""
    return "\n".join(
        textwrap.fill(part, width, break_long_words=False, break_on_hyphens=False) for part in text.split("\n")
    )


def is_true(value: Any) -> bool:
    """A flag as saved (True, numpy's True, "True" from a CSV); NaN and None are false."""
    return str(value).lower() in ("true", "1")


def dollars(value: float) -> str:
    """ "$1.30", "$0.0041": enough digits that a small priced cost never reads as $0.00."""
    return f"${value:.2f}" if value >= 0.1 or value == 0 else f"${value:.2g}"


def cost_notes(loops: pd.DataFrame) -> list[str]:
    """Per loop, what its dollars leave out: "scripted: no charge" (a dry run), roles whose calls had no price
    ("judge unpriced") or ran on a local server ("agent local: no charge"); "" when everything was priced."""

    def listed(value: Any) -> list[str]:
        return [str(v) for v in value] if isinstance(value, (list, tuple)) else []

    notes = []
    for _, row in loops.iterrows():
        if is_true(row.get("dry_run")):
            notes.append(SCRIPTED_NO_CHARGE)
            continue
        unpriced, local = listed(row.get("unpriced")), listed(row.get("local"))
        parts = ([f"{', '.join(unpriced)} {UNPRICED}"] if unpriced else []) + (
            [f"{', '.join(local)} {LOCAL_NO_CHARGE}"] if local else []
        )
        notes.append("; ".join(parts))
    return notes


def cost_labels(loops: pd.DataFrame) -> list[str]:
    """Per loop, its cost in words: the priced dollars ("$1.30"), with what they leave out ("$0.30 (agent local:
    no charge)"); "scripted: no charge", "unpriced" or "... local: no charge" alone when nothing was priced.
    Never "$0.00" for what has no price."""
    labels = []
    for note, dry, cost in zip(
        cost_notes(loops),
        loops.get("dry_run", pd.Series(False, index=loops.index)),
        pd.to_numeric(loops.get("cost_usd", pd.Series(float("nan"), index=loops.index)), errors="coerce"),
    ):
        if is_true(dry) or pd.isna(cost):
            labels.append(note or UNPRICED)
        else:
            labels.append(dollars(cost) + (f" ({note})" if note else ""))
    return labels


def _numbers(frame: pd.DataFrame, column: str) -> pd.Series:
    return (
        pd.to_numeric(frame[column], errors="coerce") if column in frame else pd.Series(float("nan"), index=frame.index)
    )


def _scripted(loops: pd.DataFrame) -> list[str]:
    return [SCRIPTED] if "dry_run" in loops and any(is_true(v) for v in loops["dry_run"]) else []


def _interval(low: Any, high: Any) -> str:
    return f" (95% CI {low:.2f} to {high:.2f})" if pd.notna(low) and pd.notna(high) else ""


def describe_accuracy(loops: pd.DataFrame) -> str:
    """Each split's accuracy from the first loop to the last, whether the test's first and last intervals
    overlap (then the change is within the noise of these few tasks), and the errored runs left out."""
    first, last = loops.iloc[0], loops.iloc[-1]
    moves = []
    for split in ("train", "val", "test"):
        values = _numbers(loops, f"{split}_accuracy").dropna()
        if len(values):
            moves.append(
                f"{SPLIT_NAMES[split]} {values.iloc[0]:.2f}" + (f" to {values.iloc[-1]:.2f}" if len(loops) > 1 else "")
            )
    if not moves:
        return wrap(" ".join(["No loop has a scored run yet: there is no accuracy to read."] + _scripted(loops)))
    sentences = [
        f"From loop {int(first['loop'])} to loop {int(last['loop'])}, accuracy went: {'; '.join(moves)}."
        if len(loops) > 1
        else f"Loop {int(first['loop'])} (one loop: nothing to compare yet): {'; '.join(moves)}."
    ]
    low, high = _numbers(loops, "test_ci_low"), _numbers(loops, "test_ci_high")
    if len(loops) > 1 and low.notna().iloc[[0, -1]].all() and high.notna().iloc[[0, -1]].all():
        overlap = low.iloc[-1] <= high.iloc[0] and low.iloc[0] <= high.iloc[-1]
        sentences.append(
            "The first and last test intervals overlap: on this many test tasks the change is within the noise."
            if overlap
            else "The first and last test intervals do not overlap; the "
            "pre-declared test in the summary is still the one answer."
        )
    errors = sum(_numbers(loops, f"{split}_errors").fillna(0).sum() for split in ("train", "val", "test"))
    if errors:
        sentences.append(f"{counted(int(errors), 'errored run')} left out of accuracy (counted in the loop lines).")
    return wrap(" ".join(sentences + _scripted(loops)))


def describe_ruleset_size(loops: pd.DataFrame) -> str:
    """How many rules (and tokens) the first and the last loop ran with, and the loop that added the most."""
    rules, tokens = _numbers(loops, "ruleset_rules").fillna(0).astype(int), _numbers(loops, "ruleset_tokens").fillna(0)
    first, last = int(loops["loop"].iloc[0]), int(loops["loop"].iloc[-1])
    sentences = [
        f"Loop {first} ran with {counted(int(rules.iloc[0]), 'rule')} ({int(tokens.iloc[0]):,} tokens), "
        f"loop {last} with {counted(int(rules.iloc[-1]), 'rule')} ({int(tokens.iloc[-1]):,} tokens); every "
        f"agent call reads them."
    ]
    growth = rules.diff().iloc[1:]
    if len(growth) and growth.max() > 0:
        at = growth.idxmax()
        sentences.append(
            f"The largest step: loop {int(loops['loop'][at])} ran with "
            f"{counted(int(growth[at]), 'rule')} more than the loop before."
        )
    elif len(growth):
        sentences.append("The number of rules did not grow: the optimizer rewrote or kept what was there.")
    return wrap(" ".join(sentences + _scripted(loops)))


def describe_repo_resolved(rows: pd.DataFrame, loops: pd.DataFrame) -> str:
    """Per repository, the resolved share in the first and last loop; which repositories moved most, and which
    share every value (drawn on top of each other, told apart by marker and dash)."""
    if rows.empty:
        return wrap(" ".join(["No scored runs to show per repository."] + _scripted(loops)))
    rates = rows.assign(resolved=rows["pass_or_fail"].eq("pass")).pivot_table(
        index="loop", columns="repo", values="resolved", aggfunc="mean"
    )
    tasks = rows.groupby("repo")["instance_id"].nunique()
    change = (rates.ffill().iloc[-1] - rates.bfill().iloc[0]).sort_values()
    parts = [
        f"{repo} {rates[repo].dropna().iloc[0]:.2f} to {rates[repo].dropna().iloc[-1]:.2f} "
        f"({counted(int(tasks[repo]), 'task')})"
        for repo in change.index[::-1]
    ]
    sentences = [f"Resolved share per repository, first loop to last: {'; '.join(parts)}."]
    same = [[repo for repo in rates.columns if rates[repo].equals(rates[other])] for other in rates.columns]
    groups = {tuple(group) for group in same if len(group) > 1}
    for group in sorted(groups):
        sentences.append(
            f"{' and '.join(group)} have the same share in every loop: their lines sit side by "
            f"side, told apart by marker and dash."
        )
    return wrap(" ".join(sentences + _scripted(loops)))


def describe_cost(loops: pd.DataFrame) -> str:
    """Tokens of the first and last loop, the agent's share of them, and the cost as the bars' labels say it."""
    roles = [r for r in ("agent", "judge", "optimizer") if f"{r}_tokens" in loops]
    totals = sum((_numbers(loops, f"{r}_tokens").fillna(0) for r in roles), pd.Series(0.0, index=loops.index))
    if not roles or totals.max() <= 0:
        return wrap(f"No token counts were recorded for these loops; their cost: {', '.join(cost_labels(loops))}.")
    agent = _numbers(loops, "agent_tokens").fillna(0) if "agent_tokens" in loops else totals * 0
    labels = cost_labels(loops)
    first, last = int(loops["loop"].iloc[0]), int(loops["loop"].iloc[-1])
    sentences = [
        f"Loop {first} used {int(totals.iloc[0]):,} tokens and loop {last} {int(totals.iloc[-1]):,} "
        f"(all {len(loops)} loops: {int(totals.sum()):,}); the agent's runs are "
        f"{agent.sum() / totals.sum():.0%} of them, the rest is the judge and the optimizer.",
        f"Cost per loop: {', '.join(dict.fromkeys(labels)) if len(set(labels)) == 1 else ', '.join(labels)}.",
    ]
    return wrap(" ".join(sentences + _scripted(loops)))


def describe_cost_accuracy(points: pd.DataFrame, dry_run: bool = False) -> str:
    """The start and the kept version at their tokens per run and accuracy on the split the figure plots,
    and what the kept version buys per extra token; where the test-split change is reported."""
    if points.empty:
        return wrap("No version was measured yet: nothing to compare.")
    split = SPLIT_NAMES.get(str(points["split"].iloc[0]), str(points["split"].iloc[0]))
    start, kept = points.iloc[0], points[points["kept"].astype(bool)]
    kept = kept.iloc[0] if len(kept) else points.iloc[-1]

    def at(point: Any) -> str:
        tokens = point["tokens_per_run"]
        where = f"{tokens:,.0f} tokens per run" if pd.notna(tokens) else "no token count"
        accuracy = f"{point['accuracy']:.2f}" if pd.notna(point["accuracy"]) else "no accuracy"
        return f"v{int(point['version'])} at {where} and {split} accuracy {accuracy}"

    if int(kept["version"]) == int(start["version"]):
        sentences = [f"The start, {at(start)}, is the kept version: no learned version did better on {split}."]
    else:
        sentences = [f"The start is {at(start)}; the kept version (the star) is {at(kept)}."]
    sentences.append(
        f"Both axes are measured on the {split} tasks; the summary's paired change in tokens per run is "
        f"measured on the test tasks, so its numbers differ."
    )
    return wrap(" ".join(sentences + ([SCRIPTED] if dry_run else [])))


def describe_test_outcomes(rows: pd.DataFrame, loops: pd.DataFrame) -> str:
    """How many test tasks passed in the first and in the last loop, and which flipped, in which direction."""
    if rows.empty:
        return wrap(" ".join(["No test task was run yet."] + _scripted(loops)))
    table = rows.pivot_table(index="instance_id", columns="loop", values="pass_or_fail", aggfunc="last")
    first, last = table.columns[0], table.columns[-1]
    passed = lambda loop: int(table[loop].eq("pass").sum())  # noqa: E731
    sentences = [
        f"{passed(first)} of {counted(len(table), 'test task')} passed in loop {first}, {passed(last)} in loop {last}."
    ]
    up = [i for i, row in table.iterrows() if row[first] != "pass" and row[last] == "pass"]
    down = [i for i, row in table.iterrows() if row[first] == "pass" and row[last] != "pass"]
    if up or down:
        named = lambda ids: ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")  # noqa: E731
        sentences.append(
            "Flipped from the first loop to the last: "
            + "; ".join(
                ([f"{len(up)} to passed ({named(up)})"] if up else [])
                + ([f"{len(down)} to failed ({named(down)})"] if down else [])
            )
            + "."
        )
    else:
        sentences.append("No test task changed its verdict between the first loop and the last.")
    return wrap(" ".join(sentences + _scripted(loops)))


def describe_ablation(effects: pd.DataFrame, dry_run: bool = False) -> str:
    """Which rule's removal costs the most accuracy, which removals helped (red), which rules are dead weight."""
    if effects.empty:
        return wrap("No rule to leave out: the version ablated has no rules.")
    ordered = effects.sort_values("effect_of_removal")
    top = ordered.iloc[0]
    sentences = [
        f"Leaving out {top['rule']} changes accuracy by {top['effect_of_removal']:+.2f}"
        f"{_interval(top['ci_low'], top['ci_high'])}: "
        + ("the rule that helps most." if top["effect_of_removal"] < 0 else "no rule's removal cost accuracy.")
    ]
    harmful = [str(r) for r in effects.loc[effects["harmful"].astype(bool), "rule"]]
    dead = [
        str(r)
        for r in effects.loc[effects.get("dead_weight", pd.Series(False, index=effects.index)).astype(bool), "rule"]
    ]
    crosses = int(((effects["ci_low"] <= 0) & (effects["ci_high"] >= 0)).sum())
    sentences.append(
        f"{crosses} of {counted(len(effects), 'interval')} cross zero (no effect shown on these tasks)"
        + (f"; removing {', '.join(harmful)} helped (red)" if harmful else "")
        + (f"; dead weight (orange): {', '.join(dead)}" if dead else "")
        + "."
    )
    return wrap(" ".join(sentences + ([SCRIPTED] if dry_run else [])))


def describe_latent_rules(
    prefix: str, rule_counts: Sequence[int], feedback: str = "explanations", results_root: Path | str | None = None
) -> str:
    """Per rule count, the test share of pages that follow every rule after the last loop run, beside the
    published share after as many loops (1 or 5) where there is one."""
    from helpers.families.latent_rules.report import PUBLISHED, experiment_name
    from helpers.store.loops import loop_records

    parts, dry, shares = [], False, []
    for count in rule_counts:
        records = sorted(loop_records(experiment_name(prefix, count, feedback), results_root), key=lambda r: r["loop"])
        if not records:
            parts.append(f"{count} rules: not run")
            continue
        dry = dry or any(is_true(r.get("dry_run")) for r in records)
        last = records[-1]
        share = last.get("test_accuracy")
        published = PUBLISHED.get(count, {}).get(f"all_{last['loop']}")
        if share is None:
            parts.append(f"{count} rules: no score")
            continue
        shares.append(share)
        parts.append(
            f"{count} rules {share:.2f} after loop {last['loop']}"
            + (f" (published {published:.2f})" if published is not None else "")
        )
    sentences = [f"Test pages that follow every rule, at the last loop run: {'; '.join(parts)}."]
    if len(shares) > 1 and all(a >= b for a, b in zip(shares, shares[1:])) and shares[0] > shares[-1]:
        sentences.append("The more rules, the fewer pages follow them all: a page must get every one right.")
    sentences.append("Lines with equal values are offset sideways, each with its own marker and dash.")
    return wrap(" ".join(sentences + ([SCRIPTED] if dry else [])))


def describe_mining(table: pd.DataFrame) -> str:
    """How many commits became tasks, and the commonest reasons the rest were dropped."""
    if table.empty:
        return wrap("No commit was scanned: nothing to mine.")
    kept = int(table["kept"].astype(bool).sum())
    reasons = table.loc[~table["kept"].astype(bool), "reason"].value_counts()
    sentences = [f"Of {counted(len(table), 'commit')} scanned, {kept} became tasks."]
    if len(reasons):
        sentences.append("Dropped: " + "; ".join(f"{reason} ({count})" for reason, count in reasons.items()) + ".")
    return wrap(" ".join(sentences))


__all__ = [  # documented in CODE_APPENDIX.md
    "wrap",
    "cost_notes",
    "cost_labels",
    "describe_accuracy",
    "describe_ruleset_size",
    "describe_repo_resolved",
    "describe_cost",
    "describe_cost_accuracy",
    "describe_test_outcomes",
    "describe_ablation",
    "describe_latent_rules",
    "describe_mining",
]
