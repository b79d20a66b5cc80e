"""A loop's record in words: its one line (describe_loop), the version kept so far (kept_line), its cost as
shown (cost_label: never "$0.00" for what has no price), the loops as a table (loops_table), and a record's cost and
interval fields from its rows (loop_cost, loop_evidence).

Pure functions over the records of loops.jsonl (helpers.engine.loop writes them); the notebooks and the
loop print what these return.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from helpers.core.wording import counted
from helpers.core.protocols import RunContext

SPLITS = ("train", "val", "test")  # the sides of every loop record, in this order


def loops_table(records: Any) -> pd.DataFrame:
    """The loop records as a table, in loop order, with the cost as shown ("unpriced", never 0) and every
    split's accuracy column, empty for a split the experiment has none of (a loop without a validation side,
    or one recorded before validation existed)."""
    table = pd.DataFrame([{**r, "cost": cost_label(r)} for r in sorted(records, key=lambda r: r["loop"])])
    missing = [f"{split}_accuracy" for split in SPLITS if f"{split}_accuracy" not in table]
    return table.reindex(columns=[*table.columns, *missing])


ROLES = ("agent", "judge", "optimizer")


def cost_label(record: dict[str, Any]) -> str:
    """A loop's cost as shown in tables: dollars for what is priced, and the roles that are unpriced or run
    on a local server named as such ("$0.41 (judge unpriced)", "unpriced", "local: no charge"); never $0.00
    for what has no price. A scripted dry run is charged nothing and says so, with the tokens it used
    ("scripted: no charge, 46,411 agent tokens")."""
    if record.get("dry_run"):
        return f"scripted: no charge, {tokens_text(record)}"
    unpriced, local = record.get("unpriced") or [], record.get("local") or []
    cost = record.get("cost_usd")
    cost = None if isinstance(cost, float) and cost != cost else cost  # NaN from a frame
    notes = [f"{', '.join(unpriced)} unpriced"] if unpriced else []
    if local:
        notes.append(
            f"{', '.join(local)} local: no charge, {record.get('agent_tokens', 0):,} agent tokens"
            if "agent" in local
            else f"{', '.join(local)} local: no charge"
        )
    if cost is None and not notes:
        return "unpriced"
    return (f"${cost:.2f}" if cost is not None else "") + (
        f" ({'; '.join(notes)})" if notes and cost is not None else "; ".join(notes)
    )


def tokens_text(record: dict[str, Any]) -> str:
    """The tokens a loop used, by role, as far as its record counts them: "46,411 agent tokens", or
    "47,000 tokens (agent 46,411, judge 589)" when other roles' `<role>_tokens` are recorded too. A role with no
    tokens made no call this loop (a prompt family has no judge; its pages' model is metered apart): it is left
    out, never shown as 0."""
    counted = [
        (role, int(n))
        for role in ROLES
        if isinstance(n := record.get(f"{role}_tokens"), (int, float)) and n == n and n > 0
    ]
    if len(counted) == 1:
        return f"{counted[0][1]:,} {counted[0][0]} tokens"
    total = sum(n for _, n in counted)
    return (
        f"{total:,} tokens ({', '.join(f'{role} {n:,}' for role, n in counted)})" if counted else "tokens not counted"
    )


def cost_text(record: dict[str, Any]) -> str:
    """The loop's cost for its line: "cost " and cost_label ("scripted: no charge, ..." alone for a dry run)."""
    return cost_label(record) if record.get("dry_run") else f"cost {cost_label(record)}"


def kept_line(experiment: str) -> str:
    """The version kept so far and how, in one line (its test against the start: evidence_summary)."""
    from helpers.store.loops import kept_version

    choice = kept_version(experiment)
    return (
        "No loop finished yet."
        if choice is None
        else (f"Kept version: {choice.how}. Its one test against the start: evidence_summary({experiment!r}).")
    )


def describe_loop(record: dict[str, Any], label: str = "") -> str:
    """The loop in one line, failures included: errored runs, forged grades, suspect passes, judge failures,
    verdicts on part of the graded code (`judge_partial`), an optimizer that changed nothing.
    The test accuracy is marked exploratory: the loop line carries no p-value (see evidence_summary)."""
    record = {k: (None if isinstance(v, float) and v != v else v) for k, v in record.items()}  # NaN from a frame

    def split(name: str, label: str) -> str:
        acc = record.get(f"{name}_accuracy")
        scored = record.get(f"{name}_scored", record.get(f"{name}_size"))
        text = f"{label} " + ("n/a" if acc is None else f"{acc:.2f} ({record.get(f'{name}_passed', '?')}/{scored})")
        low, high = record.get(f"{name}_ci_low"), record.get(f"{name}_ci_high")
        if acc is not None and low is not None and high is not None:
            text += f" [95% CI {low:.2f}-{high:.2f}]"
        errors, rule_errors = record.get(f"{name}_errors") or 0, record.get(f"{name}_rule_errors") or 0
        suspect = record.get(f"{name}_suspect") or 0  # among the errors: passes that cannot be told from forged
        text += f", {counted(rule_errors, 'rule-induced error')} counted as fails" if rule_errors else ""
        forged = record.get(f"{name}_forged") or 0  # among the fails: outcomes forged from inside the test run
        text += f", {counted(forged, 'forged grade')} counted as fails (a test made to fail passed)" if forged else ""
        text += (
            f", {counted(suspect, 'suspect pass', 'suspect passes')} left out (the patch reaches into the test machinery)"
            if suspect
            else ""
        )
        return text + (f", {counted(errors - suspect, 'errored run')} left out" if errors - suspect else "")

    names = [
        ("train", "train"),
        *([("val", "validation")] if record.get("val_size") else []),
        ("test", "test (exploratory)"),
    ]
    parts = [split(name, label) for name, label in names]
    errors = sum((record.get(f"{name}_errors") or 0) - (record.get(f"{name}_suspect") or 0) for name, _ in names)
    if errors:
        from helpers.llm.client import context_limit

        top = next((record.get(f"{name}_top_error") for name, _ in names if record.get(f"{name}_top_error")), "")
        too_long = context_limit(str(top))  # "Prompt is too long" says nothing of the limit: name it when known
        parts.append(f"most common error: {top!r}" + (f" ({too_long})" if too_long else ""))
    counts = [record.get(f"{name}_patched") for name, _ in names]
    patched = [n for n in counts if isinstance(n, int)]
    if len(patched) == len(counts):
        runs = sum(record.get(f"{name}_runs") or 0 for name, _ in names)
        if sum(patched) < runs:
            parts.append(f"{sum(patched)} of {counted(runs, 'run')} produced a patch")
    if record.get("judge_errors"):
        why = f" ({record['judge_top_error']})" if record.get("judge_top_error") else ""
        parts.append(f"judge failed on {counted(record['judge_errors'], 'row')}{why}")
    if record.get("judge_partial"):  # a verdict on part of the graded code is no review of it
        parts.append(
            f"judge not shown all the graded code on {counted(record['judge_partial'], 'row')} "
            "(not counted as reviewed)"
        )
    if "optimizer_changed" in record:
        change = (
            f"rules changed ({counted(record.get('optimizer_edits', 0), 'edit')})"
            if record["optimizer_changed"]
            else "optimizer changed nothing"
        )
        if record.get("optimizer_errors"):
            change += (
                f" ({counted(len(record['optimizer_errors']), 'optimizer error')}: {record['optimizer_errors'][0]})"
            )
        parts.append(change)
    parts.append(cost_text(record))
    if record.get("next_ruleset_version") == record.get("ruleset_version"):
        parts.append(f"rules {record.get('ruleset_rules')}, unchanged (version {record.get('ruleset_version')} again)")
    else:
        parts.append(f"rules {record.get('ruleset_rules')} -> version {record.get('next_ruleset_version')}")
    return f"Loop {record['loop']}: " + "; ".join(parts) + (f" [{label}]" if label else "")


def loop_cost(sides: dict[str, pd.DataFrame], report: dict[str, Any], session: RunContext) -> dict[str, Any]:
    """What a loop cost, by role, never guessed: `<role>_cost_usd` of its priced calls (None when it had none),
    `unpriced` the roles with a call whose served model has no price, `local` the roles whose model server
    runs on this machine (no charge: their tokens are reported instead, `agent_tokens`), and `cost_usd` the
    priced total (None when no role was priced)."""
    from helpers.llm.pricing import is_local_server

    rows = pd.concat(list(sides.values()), ignore_index=True)
    counted = [c for c in ("input_tokens", "output_tokens") if c in rows]  # a prompt family's rows have none
    tokens = (
        rows[counted].apply(pd.to_numeric, errors="coerce").fillna(0).sum(axis=1)
        if counted
        else pd.Series(0, index=rows.index)
    )
    judged = (
        rows[rows.get("judge_raw", pd.Series("", index=rows.index)).fillna("").astype(str).ne("")]
        if len(rows)
        else rows
    )
    spent = {
        "agent": (rows.get("cost_usd", pd.Series(dtype=float)), tokens.gt(0)),
        "judge": (judged.get("judge_cost_usd", pd.Series(dtype=float)), pd.Series(True, index=judged.index)),
    }
    costs, unpriced = {}, []
    for role, (values, used) in spent.items():
        values = pd.to_numeric(values, errors="coerce")
        costs[role] = float(values.sum()) if values.notna().any() else None
        if (values.isna() & used).any():
            unpriced.append(role)
    costs["optimizer"] = (
        None if report.get("unpriced") and not report.get("cost_usd") else float(report.get("cost_usd") or 0.0)
    )
    if report.get("unpriced"):
        unpriced.append("optimizer")
    gateway = getattr(session, "gateway", None)
    local = (
        []
        if session.dry_run or gateway is None
        else sorted(
            role for role in costs if role in gateway.upstreams and is_local_server(gateway.upstreams[role].url)
        )
    )
    priced = [c for role, c in costs.items() if c is not None and role not in local]
    return {
        **{f"{role}_cost_usd": (None if role in local else c) for role, c in costs.items()},
        "cost_usd": sum(priced) if priced else None,
        "unpriced": sorted(set(unpriced) - set(local)),
        "local": local,
        "agent_tokens": int(tokens.sum()) if len(tokens) else 0,
    }


def loop_evidence(sides: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """Each side's accuracy interval (no p-values: the one test is the kept version's, evidence_summary)."""
    from helpers.stats.outcomes import plan_scored
    from helpers.stats.comparisons import accuracy_interval

    fields: dict[str, Any] = {}
    for split, frame in sides.items():
        _, low, high, _ = accuracy_interval(plan_scored(frame))
        fields[f"{split}_ci_low"], fields[f"{split}_ci_high"] = (
            (None if pd.isna(low) else low),
            (None if pd.isna(high) else high),
        )
    return fields


__all__ = [
    "loop_cost",
    "loop_evidence",
    "describe_loop",
    "kept_line",
    "cost_label",
    "cost_text",
    "tokens_text",
    "loops_table",
    "SPLITS",
]  # documented in CODE_APPENDIX.md
