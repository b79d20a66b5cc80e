"""Does a learned ruleset really beat no rules? Every comparison the loop prints, from saved results.

    comparisons = loop_comparisons("quickstart", loop=2, split="test")    # vs the start, vs the loop before
    version, reasons = gated_best("quickstart")                          # the best version noise allows
    print(evidence_summary("quickstart"))                                  # one honest paragraph

Loop 0 runs the starting ruleset (empty by default), so its results are the reference every later
version is measured against, task by task (helpers.stats.paired_comparison: exact McNemar, a paired
interval, errored runs left out of both sides and counted). A gain inside the noise is called noise.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from helpers import config
from helpers.records import loops_path, read_jsonl, split_results_path


def scored(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows as helpers.stats reads them: plan-mode rows are scored by the judge's correctness."""
    if len(frame) and (frame.get("mode", pd.Series(dtype=str)) == "plan").all() and "correctness" in frame:
        return frame.assign(pass_or_fail=frame["correctness"].map({"correct": "pass", "incorrect": "fail"})
                            .fillna("not_evaluated"))
    return frame


def loop_rows(experiment: str, split: str, loop: int) -> pd.DataFrame | None:
    """A finished loop's saved rows of one split, or None when it has none."""
    path = split_results_path(experiment, split, loop)
    return pd.read_csv(path, keep_default_na=False) if path.exists() else None


def _label(record: dict[str, Any] | None, version: int, rules: int | None = None) -> str:
    if version == 0 and not (record or {}).get("ruleset_rules", rules):
        return "no rules"
    return f"v{version}"


def compare(a: pd.DataFrame, b: pd.DataFrame, label_a: str, label_b: str) -> Any:
    from helpers.stats import paired_comparison

    return paired_comparison(scored(a), scored(b), label_a=label_a, label_b=label_b)


def loop_comparisons(experiment: str, loop: int, split: str, frame: pd.DataFrame, version: int,
                     rules: int) -> dict[str, Any]:
    """`frame` (loop `loop`'s rows of `split`, run with `version`) against loop 0's rows (the start) and
    against the loop before, as plain dicts with a `summary` sentence; empty for loop 0."""
    done = {r["loop"]: r for r in read_jsonl(loops_path(experiment))}
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


def gated_best(experiment: str, before_loop: int | None = None, split: str = "train",
               alpha: float = config.STATS_ALPHA) -> tuple[int | None, list[str]]:
    """The version noise lets us call best, and why: finished loops are taken in order; a version replaces
    the incumbent only when its paired gain on `split` is significant at `alpha`, or when it is not worse
    and has fewer rules (helpers.stats.gate). None when no loop has finished."""
    from helpers.stats import gate

    done = sorted((r for r in read_jsonl(loops_path(experiment))
                   if before_loop is None or r["loop"] < before_loop), key=lambda r: r["loop"])
    incumbent, reasons = None, []
    for record in done:
        rows = loop_rows(experiment, split, record["loop"])
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


def evidence_summary(experiment: str, split: str = "test") -> str:
    """The last finished loop against the start, on `split`, and the version the gate would keep."""
    done = sorted(read_jsonl(loops_path(experiment)), key=lambda r: r["loop"])
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
    lines = [f"{comparison.summary()} ({split} split).", verdict,
             f"The version the gate keeps (paired, on train, alpha {config.STATS_ALPHA}): v{best}."]
    return "\n".join(lines + [f"  {r}" for r in reasons])

__all__ = ["loop_comparisons", "gated_best", "evidence_summary", "compare", "scored", "loop_rows"]  # the public API, documented in CODE_APPENDIX.md
