"""Does a learned ruleset really beat no rules? Every comparison the loop prints, from saved results.

    comparisons = loop_comparisons("quickstart", loop=2, split="test")    # vs the start, vs the loop before
    version, reasons = gated_best("quickstart")                          # the best version noise allows
    print(evidence_summary("quickstart"))                                  # one honest paragraph

Loop 0 runs the starting ruleset (empty by default), so its results are the reference every later
version is measured against, task by task (helpers.core.stats.paired_comparison: exact McNemar, a paired
interval, errored runs left out of both sides and counted). A gain inside the noise is called noise.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from helpers.core import config
from helpers.core.stats import scored
from helpers.store.loops import completed_loops, gated_best, loop_records, loop_rows


def _label(record: dict[str, Any] | None, version: int, rules: int | None = None) -> str:
    if version == 0 and not (record or {}).get("ruleset_rules", rules):
        return "no rules"
    return f"v{version}"


def compare(a: pd.DataFrame, b: pd.DataFrame, label_a: str, label_b: str) -> Any:
    from helpers.core.stats import paired_comparison

    return paired_comparison(scored(a), scored(b), label_a=label_a, label_b=label_b)


def loop_comparisons(experiment: str, loop: int, split: str, frame: pd.DataFrame, version: int,
                     rules: int) -> dict[str, Any]:
    """`frame` (loop `loop`'s rows of `split`, run with `version`) against loop 0's rows (the start) and
    against the loop before, as plain dicts with a `summary` sentence; empty for loop 0."""
    done = completed_loops(experiment)
    result: dict[str, Any] = {}
    for key, other in (("vs_start", 0), ("vs_previous", loop - 1)):
        if loop == 0 or other < 0 or (key == "vs_previous" and other == 0):
            continue
        rows = loop_rows(experiment, split, other)
        if rows is None or other not in done:
            continue
        record = done[other]
        result[key] = compare(rows, frame, _label(record, record["ruleset_version"]),
                              _label(None, version, rules)).to_dict()
    return result


def evidence_summary(experiment: str, split: str = "test") -> str:
    """The last finished loop against the start, on `split`, and the version the gate would keep; labeled
    SCRIPTED DRY RUN first when the loops were scripted."""
    done = loop_records(experiment)
    if len(done) < 2:
        return "Fewer than two finished loops: nothing to compare with the starting rules yet."
    first, last = done[0], done[-1]
    start, end = loop_rows(experiment, split, first["loop"]), loop_rows(experiment, split, last["loop"])
    if start is None or end is None:
        return f"No saved {split} rows to compare."
    comparison = compare(start, end, _label(first, first["ruleset_version"]), _label(last, last["ruleset_version"]))
    verdict = ("The learned rules beat the start beyond the noise." if comparison.significant and comparison.diff > 0
               else "The learned rules are worse than the start beyond the noise." if comparison.significant
               else "The difference is inside the noise: this run does not show that the learned rules help.")
    best, reasons = gated_best(experiment)
    scripted = any(r.get("dry_run") for r in done)
    lines = (["SCRIPTED DRY RUN: every number below comes from the scripted model; these are not results."]
             if scripted else []) + [f"{comparison.summary()} ({split} split).", verdict,
             f"The version the gate keeps (paired, on train, alpha {config.STATS_ALPHA}): v{best}."]
    return "\n".join(lines + [f"  {r}" for r in reasons])



# --- comparing agents side by side ------------------------------------------------------------------
def side_by_side(experiments: list[str], split: str = "test") -> pd.DataFrame:
    """Accuracy per loop of several experiments (e.g. one per agent on the same tasks), with intervals."""
    columns = {}
    for experiment in experiments:
        done = completed_loops(experiment)
        columns[experiment] = {
            loop: (f"{r[f'{split}_accuracy']:.2f} ({r[f'{split}_ci_low']:.2f}-{r[f'{split}_ci_high']:.2f})"
                   if r.get(f"{split}_ci_low") is not None else
                   "n/a" if r.get(f"{split}_accuracy") is None else f"{r[f'{split}_accuracy']:.2f}")
            for loop, r in sorted(done.items())}
    return pd.DataFrame(columns).rename_axis("loop")


__all__ = ["loop_comparisons", "evidence_summary", "compare", "side_by_side"]  # the public API, documented in CODE_APPENDIX.md
