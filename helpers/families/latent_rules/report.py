"""The latent-rules results beside the method's published table, with intervals.

    results_table("latent-rules", [10, 50, 100])      # one row per rule count: after 1 and after 5 loops

"After k loops" is the test split of loop k: the prompt the optimizer wrote in k passes over the
training feedback (loop 0 runs the base prompt with no instructions).
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from helpers.store.loops import completed_loops, loop_rows

# The method's published figures (all rules followed; rules followed on average), after 1 and 5 loops.
PUBLISHED = {
    10: {"all_1": 0.15, "all_5": 1.00, "share_1": 0.71, "share_5": 1.00},
    50: {"all_1": 0.00, "all_5": 0.70, "share_1": 0.35, "share_5": 0.83},
    100: {"all_1": 0.00, "all_5": 0.55, "share_1": 0.14, "share_5": 0.68},
}


def experiment_name(prefix: str, rules: int, feedback: str = "explanations") -> str:
    """The experiment of one rule count (and feedback kind): "<prefix>-<rules>rules[-scores]"."""
    return f"{prefix}-{rules}rules" + ("" if feedback == "explanations" else f"-{feedback}")


def _after(experiment: str, loop: int) -> dict[str, Any]:
    records = completed_loops(experiment)
    if loop not in records:
        return {}
    record, rows = records[loop], loop_rows(experiment, "test", loop)
    share = pd.to_numeric(rows["share_followed"], errors="coerce").mean() if rows is not None else None
    return {
        "all": record.get("test_accuracy"),
        "low": record.get("test_ci_low"),
        "high": record.get("test_ci_high"),
        "share": share,
    }


def results_table(
    prefix: str, rule_counts: Sequence[int], loops: Sequence[int] = (1, 5), feedback: str = "explanations"
) -> pd.DataFrame:
    """One row per rule count: the test split's share of pages that follow every rule (with its 95%
    interval) and the mean share of rules followed, after each of `loops`, beside the published figures.
    A loop that has not run shows n/a."""
    rows = []
    for count in rule_counts:
        row: dict[str, Any] = {"rules": count}
        for loop in loops:
            seen = _after(experiment_name(prefix, count, feedback), loop)
            interval = (
                f" ({seen['low']:.0%}-{seen['high']:.0%})"
                if seen.get("low") is not None and seen.get("high") is not None
                else ""
            )
            row[f"all rules, loop {loop}"] = f"{seen['all']:.0%}{interval}" if seen.get("all") is not None else "n/a"
            row[f"rules followed, loop {loop}"] = f"{seen['share']:.0%}" if seen.get("share") is not None else "n/a"
            published = PUBLISHED.get(count, {})
            if f"all_{loop}" in published:
                row[f"published all, loop {loop}"] = f"{published[f'all_{loop}']:.0%}"
                row[f"published followed, loop {loop}"] = f"{published[f'share_{loop}']:.0%}"
        rows.append(row)
    return pd.DataFrame(rows).set_index("rules")


__all__ = ["results_table", "experiment_name", "PUBLISHED"]
