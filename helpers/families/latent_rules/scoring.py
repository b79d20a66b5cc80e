"""Scoring pages against the active rules, and the feedback the optimizer reads.

Per row (score_frame): parse_error, broken_rules (ids), failure_messages, rules_followed, rules_total,
share_followed (0..1) and all_rules_followed. An answer that is not page JSON breaks every rule; so
does a row whose generator errored (status "error"), though summarize() leaves such rows out of the
accuracy and counts them apart, as the coding family does with errored agent runs.

Feedback (feedback_frame) adds the two columns the optimizer is given, FEEDBACK_COLUMNS:
`correctness` ("correct" when every active rule is followed) and `explanation`, either the failure
messages of the broken rules ("explanations", the annotations) or only the count ("scores", the
ablation: "followed 7 of 10 rules").
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from helpers.families.latent_rules.catalog import LatentRule, check_page
from helpers.families.latent_rules.schema import parse_page

FEEDBACK_COLUMNS = ("correctness", "explanation")
FEEDBACK_KINDS = ("explanations", "scores")
SCORE_COLUMNS = (
    "parse_error",
    "broken_rules",
    "failure_messages",
    "rules_followed",
    "rules_total",
    "share_followed",
    "all_rules_followed",
)


def score_answer(answer: str, rules: Sequence[LatentRule]) -> dict[str, Any]:
    """The SCORE_COLUMNS of one answer against `rules`. Never raises."""
    page, error = parse_page(answer)
    if page is None:
        return _all_broken(error, rules)
    results = check_page(page, rules)
    broken = [rule_id for rule_id, message in results.items() if message]
    return {
        "parse_error": "",
        "broken_rules": broken,
        "failure_messages": [results[i] for i in broken],
        "rules_followed": len(rules) - len(broken),
        "rules_total": len(rules),
        "share_followed": (len(rules) - len(broken)) / len(rules) if rules else 1.0,
        "all_rules_followed": not broken,
    }


def _all_broken(why: str, rules: Sequence[LatentRule]) -> dict[str, Any]:
    return {
        "parse_error": why,
        "broken_rules": [r.id for r in rules],
        "failure_messages": [why],
        "rules_followed": 0,
        "rules_total": len(rules),
        "share_followed": 0.0,
        "all_rules_followed": False,
    }


def score_frame(frame: pd.DataFrame, rules: Sequence[LatentRule], output_column: str = "output") -> pd.DataFrame:
    """A copy of `frame` with SCORE_COLUMNS from each row's `output_column` (see the module docstring)."""
    if output_column not in frame.columns:
        raise ValueError(f"The frame has no {output_column!r} column: pass the rows run() returned.")
    scores = []
    for row in frame.to_dict("records"):
        if row.get("status", "completed") == "error":
            scores.append(_all_broken(f"the generator failed: {row.get('error') or 'no reason given'}", rules))
        else:
            scores.append(score_answer(str(row.get(output_column) or ""), rules))
    scored = frame.copy()
    for column in SCORE_COLUMNS:
        scored[column] = [s[column] for s in scores]
    return scored


def feedback_text(row: dict[str, Any], kind: str = "explanations") -> str:
    """The feedback on one scored row: the broken rules' messages, or just the count ("scores")."""
    if kind not in FEEDBACK_KINDS:
        raise ValueError(f"kind must be one of {FEEDBACK_KINDS}, not {kind!r}.")
    followed, total = int(row["rules_followed"]), int(row["rules_total"])
    if kind == "scores":
        return f"followed {followed} of {total} rules"
    if row["parse_error"]:
        return f"The answer breaks all {total} rules: {row['parse_error']}."
    if not row["broken_rules"]:
        return f"The page follows all {total} rules."
    messages = "\n".join(f"- {m}" for m in row["failure_messages"])
    return f"The page breaks {total - followed} of {total} rules:\n{messages}"


def feedback_frame(scored: pd.DataFrame, kind: str = "explanations") -> pd.DataFrame:
    """A copy of a scored frame with FEEDBACK_COLUMNS (correctness, explanation) for the optimizer."""
    rows = scored.to_dict("records")
    frame = scored.copy()
    frame["correctness"] = ["correct" if r["all_rules_followed"] else "incorrect" for r in rows]
    frame["explanation"] = [feedback_text(r, kind) for r in rows]
    return frame


def _completed(scored: pd.DataFrame) -> pd.DataFrame:
    return scored[scored["status"] != "error"] if "status" in scored.columns else scored


def summarize(scored: pd.DataFrame) -> dict[str, Any]:
    """rows, errored (left out), scored, accuracy (share of scored rows following every rule), the mean
    share of rules followed, and parse failures, of a scored frame. Accuracy is None when no row scored."""
    done = _completed(scored)
    n = len(done)
    return {
        "rows": len(scored),
        "errored": len(scored) - n,
        "scored": n,
        "accuracy": float(done["all_rules_followed"].mean()) if n else None,
        "mean_share_followed": float(done["share_followed"].mean()) if n else None,
        "parse_failures": int((done["parse_error"] != "").sum()) if n else 0,
    }


def rule_pass_rates(scored: pd.DataFrame, rules: Sequence[LatentRule]) -> pd.DataFrame:
    """One row per rule: rule_id, statement, category, difficulty, followed (rows), rows, pass_rate
    (None when no row scored), over the scored frame's completed rows."""
    done = _completed(scored)
    broken = [set(ids) for ids in done["broken_rules"]]
    rows = []
    for rule in rules:
        followed = sum(rule.id not in ids for ids in broken)
        rows.append(
            {
                "rule_id": rule.id,
                "statement": rule.statement,
                "category": rule.category,
                "difficulty": rule.difficulty,
                "followed": followed,
                "rows": len(broken),
                "pass_rate": followed / len(broken) if broken else None,
            }
        )
    return pd.DataFrame(rows)


__all__ = [
    "FEEDBACK_COLUMNS",
    "FEEDBACK_KINDS",
    "SCORE_COLUMNS",
    "score_answer",
    "score_frame",
    "feedback_text",
    "feedback_frame",
    "summarize",
    "rule_pass_rates",
]
