"""What the rules cost per run, reported beside the gain and never tested.

    changes = cost_changes(start_rows, kept_rows, "no rules", "v3")   # {measure: PairedChange}

The paired change per run from the start to the kept version on the same test tasks (tokens, dollars when
priced, wall time; helpers.stats.costs.paired_change), an arm's mean cost per counted run, why runs carry
no dollars, and the lines that say it all in a summary. Separate from helpers.analysis.evidence because
accuracy is the one pre-declared test and cost only its companion: these functions read rows, never decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

import pandas as pd

from helpers.stats.outcomes import plan_scored as scored

if TYPE_CHECKING:
    from helpers.stats.costs import PairedChange


def cost_changes(
    start_rows: pd.DataFrame, kept_rows: pd.DataFrame, label_start: str, label_kept: str
) -> dict[str, PairedChange]:
    """The paired change per run from the start to the kept version on the same tasks, for each of
    helpers.stats.costs.RUN_MEASURES (tokens, cost_usd, duration_s): {measure: PairedChange}."""
    from helpers.stats.costs import RUN_MEASURES, paired_change

    return {
        measure: paired_change(scored(start_rows), scored(kept_rows), measure, label_a=label_start, label_b=label_kept)
        for measure in RUN_MEASURES
    }


def no_charge_note(records: list[dict[str, Any]]) -> str:
    """Why the agent's runs carry no dollars: "scripted: no charge" (the dry run), "local: no charge" (a model
    server on this machine) or "unpriced" (a model with no price)."""
    from helpers.stats.costs import LOCAL_NO_CHARGE, SCRIPTED_NO_CHARGE, UNPRICED

    if any(r.get("dry_run") for r in records):
        return SCRIPTED_NO_CHARGE
    if any("agent" in (r.get("local") or []) for r in records):
        return LOCAL_NO_CHARGE
    return UNPRICED


def cost_lines(result: dict[str, Any]) -> list[str]:
    """The cost beside the gain, a line per measure, and the rules' weight; [] when nothing was compared."""
    changes = result.get("cost") or {}
    if not changes:
        return []
    lines = ["What the kept rules cost on the same test runs (reported beside the test, not tested):"]
    for measure, change in changes.items():
        if measure == "cost_usd" and change.n == 0:
            lines.append(f"- cost per run: {result['no_charge']}")
        elif not recorded(change):
            lines.append(f"- {change.wording}: not recorded by these runs")
        else:
            lines.append(f"- {change.summary()}: {change.details()}")
    weight = result["rules_tokens"]
    lines.append(
        f"- the rules' own weight: {weight['kept']:,} tokens in the kept rules (start: {weight['start']:,}), "
        "read with every agent call"
    )
    return lines


def recorded(change: PairedChange | None) -> TypeGuard[PairedChange]:
    """Whether the runs recorded the measure at all (an agent whose usage nobody metered has 0 tokens everywhere)."""
    return change is not None and change.n > 0 and bool(change.mean_a or change.mean_b)


def arm_cost(rows: pd.DataFrame | None) -> dict[str, float | None]:
    """An arm's mean per counted run (the rows paired_comparison counts) of tokens, dollars and seconds; None
    for a measure the runs did not record (an unpriced cost)."""
    from helpers.stats.costs import RUN_MEASURES
    from helpers.stats.outcomes import INFRA, run_outcome

    if rows is None or rows.empty:
        return {measure: None for measure in RUN_MEASURES}
    counted = scored(rows)
    counted = counted[[run_outcome(r) != INFRA for r in counted.to_dict("records")]]
    means: dict[str, float | None] = {}
    for measure, (columns, _, _) in RUN_MEASURES.items():
        if counted.empty or any(c not in counted for c in columns):
            means[measure] = None
            continue
        values = counted[list(columns)].apply(pd.to_numeric, errors="coerce").sum(axis=1, min_count=len(columns))
        means[measure] = None if values.isna().any() else float(values.mean())
    return means


def per_run(cost: Mapping[str, float | None], no_charge: str) -> str:
    """An arm's cost (arm_cost) in words: tokens, dollars (else `no_charge`, why none) and seconds per run."""
    tokens, dollars, seconds = cost.get("tokens"), cost.get("cost_usd"), cost.get("duration_s")
    return (
        ", ".join(
            [
                f"{tokens:,.0f} tokens" if tokens is not None else "tokens not recorded",
                f"${dollars:.4f}" if dollars else no_charge,
                f"{seconds:.0f} s" if seconds is not None else "time not recorded",
            ]
        )
        + " per run"
    )


__all__ = ["cost_changes", "no_charge_note", "cost_lines", "recorded", "arm_cost", "per_run"]
