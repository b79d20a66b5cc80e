"""The loops of an experiment as saved: loops.jsonl records and each loop's result rows per split.

The store is the one reader of these files; analysis and the loop ask it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from helpers.core import config
from helpers.core.stats import gate, scored
from helpers.store.records import loops_path, read_jsonl, split_results_path


def loop_rows(experiment: str, split: str, loop: int, results_root: Any = None) -> pd.DataFrame | None:
    """A finished loop's saved rows of one split, or None when it has none."""
    path = split_results_path(experiment, split, loop, results_root)
    return pd.read_csv(path, keep_default_na=False) if path.exists() else None


def gated_best(experiment: str, before_loop: int | None = None, split: str = "train",
               alpha: float = config.STATS_ALPHA, results_root: Any = None) -> tuple[int | None, list[str]]:
    """The version noise lets us call best, and why: finished loops are taken in order; a version replaces
    the incumbent only when its paired gain on `split` is significant at `alpha`, or when it is not worse
    and has fewer rules (helpers.core.stats.gate). None when no loop has finished."""
    done = sorted((r for r in read_jsonl(loops_path(experiment, results_root))
                   if before_loop is None or r["loop"] < before_loop), key=lambda r: r["loop"])
    incumbent, reasons = None, []
    for record in done:
        rows = loop_rows(experiment, split, record["loop"], results_root)
        if rows is None:
            continue
        if incumbent is None:
            incumbent = (record, rows)
            reasons.append(f"v{record['ruleset_version']} (loop {record['loop']}) is the reference.")
            continue
        decision = gate(scored(incumbent[1]), scored(rows), alpha=alpha,
                        incumbent_rules=int(incumbent[0].get("ruleset_rules") or 0),
                        candidate_rules=int(record.get("ruleset_rules") or 0))
        who = f"v{record['ruleset_version']} vs v{incumbent[0]['ruleset_version']}"
        reasons.append(f"{who}: {'accepted' if decision.accept else 'refused'}: {decision.reason}")
        if decision.accept:
            incumbent = (record, rows)
    return (incumbent[0]["ruleset_version"] if incumbent else None), reasons



__all__ = ["loop_rows", "gated_best"]
