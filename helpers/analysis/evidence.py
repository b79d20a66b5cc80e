"""Do the learned rules really beat no rules? The experiment's one pre-declared answer, from saved results.

    result = primary_result("quickstart")       # the kept version, how it was chosen, its test against the start
    print(evidence_summary("quickstart"))        # the same, in one honest paragraph with the decision rule

The three roles of the data (helpers.core.selection): the optimizer learned on train; validation chose
the kept version; the test split compares it once with the start (loop 0's rows: no rules by default),
task by task (exact McNemar, Newcombe's paired interval, infrastructure errors left out of both sides
and counted). A gain inside the noise is called noise, and the summary says how much the test split can
show at its size.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from helpers.core.outcomes import plan_scored as scored
from helpers.store.loops import completed_loops, kept_version, load_split, loop_records, loop_rows


def _label(record: dict[str, Any] | None, version: int, rules: int | None = None) -> str:
    if version == 0 and not (record or {}).get("ruleset_rules", rules):
        return "no rules"
    return f"v{version}"


def compare(a: pd.DataFrame, b: pd.DataFrame, label_a: str, label_b: str) -> Any:
    from helpers.core.stats import paired_comparison

    return paired_comparison(scored(a), scored(b), label_a=label_a, label_b=label_b)


def primary_result(experiment: str) -> dict[str, Any] | None:
    """The experiment's answer as plain data: kept version, how it was chosen, the candidates' validation
    table, the primary test (a Comparison, None when the start itself is kept), its decision, the split's
    sizes, the power note and the decision rule; None before any loop has finished."""
    from helpers.core.selection import DECISION_RULE, decision, power_note, primary_test

    done = loop_records(experiment)
    choice = kept_version(experiment)
    if choice is None:
        return None
    first = done[0]
    start_label = _label(first, first["ruleset_version"])
    kept_loop = next(r for r in done if r["ruleset_version"] == choice.version)
    start_rows, kept_rows = loop_rows(experiment, "test", first["loop"]), loop_rows(experiment, "test", kept_loop["loop"])
    comparison = None
    if choice.version != first["ruleset_version"] and start_rows is not None and kept_rows is not None:
        comparison = primary_test(start_rows, kept_rows, start_label, f"v{choice.version}")
    verdict = (decision(comparison) if comparison is not None else
               f"No test: the kept version is the start ({start_label}), so nothing learned is claimed.")
    split = load_split(experiment) or {}
    sizes = (f"Split: {len(split.get('train', []))} train, {len(split.get('validation', []))} validation, "
             f"{len(split.get('test', []))} test tasks (saved in act_results/{experiment}/split.json)." if split else
             "Split: not saved with the experiment.")
    return {"kept_version": choice.version, "how": choice.how, "candidates": choice.candidates, "split": sizes,
            "start": start_label, "comparison": comparison, "decision": verdict,
            "power": power_note(len(start_rows) if start_rows is not None else 0), "rule": DECISION_RULE,
            "dry_run": any(r.get("dry_run") for r in done), "loops": len(done)}


def evidence_summary(experiment: str) -> str:
    """The split, the kept version and how validation chose it, its one test against the start with the
    decision, the power at this size and the decision rule; labeled SCRIPTED DRY RUN first when the loops were scripted."""
    result = primary_result(experiment)
    if result is None:
        return "No finished loop yet: nothing to compare with the starting rules."
    lines = (["SCRIPTED DRY RUN: every number below comes from the scripted model; these are not results."]
             if result["dry_run"] else [])
    lines += [result["split"], f"Kept version: {result['how']}."]
    if result["comparison"] is not None:
        lines.append(f"Primary test: {result['comparison'].summary()} (test split).")
    lines += [result["decision"], result["power"], result["rule"]]
    return "\n".join(lines)


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


__all__ = ["primary_result", "evidence_summary", "compare", "side_by_side"]  # the public API, documented in CODE_APPENDIX.md
