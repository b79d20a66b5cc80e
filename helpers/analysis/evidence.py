"""Do the learned rules really beat no rules? The experiment's one pre-declared answer, from saved results.

    result = primary_result("quickstart")       # the kept version, how it was chosen, its test against the start
    print(evidence_summary("quickstart"))        # the same, in one honest paragraph with the decision rule

The three roles of the data (helpers.stats.selection): the optimizer learned on train; validation chose
the kept version; the test split compares it once with the start (loop 0's rows: no rules by default),
task by task (exact McNemar, Newcombe's paired interval, infrastructure errors left out of both sides
and counted). A gain inside the noise is called noise, and the summary says how much the test split can
show at its size.

Beside the gain, what the kept rules cost on the same test tasks and runs: the paired change in tokens,
dollars (when priced) and wall time per run, each with a 95% bootstrap interval over tasks
(helpers.stats.costs.paired_change), and the rules' own weight in tokens, read with every agent call. The
cost is reported, never tested: accuracy stays the one pre-declared test (the measures are
helpers.analysis.run_costs'; the baselines' declared comparisons are helpers.analysis.secondaries').
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from helpers.analysis.captions import wrap
from helpers.analysis.run_costs import arm_cost, cost_changes, cost_lines, no_charge_note, per_run, recorded
from helpers.analysis.secondaries import QUESTIONS, SECONDARY_RULE, against_none, answer_sentence, secondary_comparisons
from helpers.core import config
from helpers.stats.outcomes import errored_note, plan_scored as scored
from helpers.core.wording import counted
from helpers.store.loops import (
    completed_loops,
    kept_version,
    load_one_test,
    load_split,
    loop_records,
    loop_rows,
    one_test_rows,
)

if TYPE_CHECKING:
    from helpers.stats.costs import PairedChange

SCRIPTED_LINE = "SCRIPTED DRY RUN: every number below comes from the scripted model; these are not results."


def _label(record: dict[str, Any] | None, version: int, rules: int | None = None) -> str:
    if version == 0 and not (record or {}).get("ruleset_rules", rules):
        return "no rules"
    return f"v{version}"


def _scripted_first(result: dict[str, Any]) -> list[str]:
    """A summary's first line when its runs were scripted (the dry run's numbers are never results); else none."""
    return [SCRIPTED_LINE] if result["dry_run"] else []


def compare(a: pd.DataFrame, b: pd.DataFrame, label_a: str, label_b: str) -> Any:
    from helpers.stats.comparisons import paired_comparison

    return paired_comparison(scored(a), scored(b), label_a=label_a, label_b=label_b)


def primary_result(experiment: str) -> dict[str, Any] | None:
    """The experiment's answer as plain data: kept version, how it was chosen, the candidates' validation
    table, the primary test (a Comparison, None when the start itself is kept), its decision (with the change in
    tokens per run beside the gain), the split's sizes, the power note and the decision rule; and what the kept
    rules cost on the same test tasks: `cost` ({measure: PairedChange}, {} without a test), `rules_tokens`
    ({"kept", "start"}: the rules' own weight) and `no_charge` (why runs without dollars have none). None
    before any loop has finished."""
    from helpers.stats.selection import DECISION_RULE, decision, power_note, primary_test

    done = loop_records(experiment)
    choice = kept_version(experiment)
    if choice is None:
        return None
    first = done[0]
    start_label = _label(first, first["ruleset_version"])
    kept_loop = next(r for r in done if r["ruleset_version"] == choice.version)
    one_test = load_one_test(experiment)
    if one_test is not None:  # the one test ran on its own, pair by pair (helpers.engine.one_test)
        start_rows, kept_rows = one_test_rows(experiment, "start"), one_test_rows(experiment, "kept")
    else:  # every loop ran the test split: loop 0's rows against the kept version's
        start_rows, kept_rows = (
            loop_rows(experiment, "test", first["loop"]),
            loop_rows(experiment, "test", kept_loop["loop"]),
        )
    comparison = None
    changes: dict[str, PairedChange] = {}
    if choice.version != first["ruleset_version"] and start_rows is not None and kept_rows is not None:
        comparison = primary_test(start_rows, kept_rows, start_label, f"v{choice.version}")
        changes = cost_changes(start_rows, kept_rows, start_label, f"v{choice.version}")
    tokens = changes.get("tokens")
    verdict = (
        decision(comparison, tokens.summary() if recorded(tokens) else "")
        if comparison is not None
        else f"No test: the kept version is the start ({start_label}), so nothing learned is claimed."
    )
    rule = DECISION_RULE
    if comparison is not None and one_test is not None and "decision" in one_test:
        verdict = sequential_verdict(
            one_test,
            start_rows,
            kept_rows,
            tokens.summary() if recorded(tokens) else "",
            no_charge=no_charge_note(done),
        )
        rule = (
            f"Primary test, declared before any run: the kept version (chosen on validation) against the start "
            f'on the test split, task by task in a seeded order: {one_test["method"]}. "The rules help" or '
            '"hurt" only when a boundary is crossed; tasks after the stop are never run or counted.'
        )
    split = load_split(experiment) or {}
    sizes = (
        f"Split: {len(split.get('train', []))} train, {len(split.get('validation', []))} validation, "
        f"{len(split.get('test', []))} test tasks (saved in act_results/{experiment}/split.json)."
        if split
        else "Split: not saved with the experiment."
    )
    return {
        "kept_version": choice.version,
        "how": choice.how,
        "candidates": choice.candidates,
        "split": sizes,
        "start": start_label,
        "comparison": comparison,
        "decision": verdict,
        "power": power_note(_test_split_size(one_test, split, start_rows)),
        "rule": rule,
        "dry_run": any(r.get("dry_run") for r in done),
        "loops": len(done),
        "cost": changes,
        "rules_tokens": {
            "kept": int(kept_loop.get("ruleset_tokens") or 0),
            "start": int(first.get("ruleset_tokens") or 0),
        },
        "no_charge": no_charge_note(done),
        "one_test": one_test,  # and how errored pairs were counted:
        "errored": errored_note(comparison.n_excluded, start_rows, kept_rows) if comparison is not None else "",
    }


def _test_split_size(one_test: dict[str, Any] | None, split: dict[str, Any], start_rows: pd.DataFrame | None) -> int:
    """The test split's size, which the power note speaks of: the one test's design, else the saved split's test
    side, else the rows the loops ran on it; 0 only when none of them holds a test task. (A single loop keeps its
    start and runs no test, so its rows alone would say "no test tasks" of a split that has them.)"""
    if one_test:
        return int(one_test["design"]["n_tasks"])
    if split.get("test"):
        return len(split["test"])
    return len(start_rows) if start_rows is not None else 0


def evidence_summary(experiment: str) -> str:
    """The split, the kept version and how validation chose it, its one test against the start with the
    decision (the change in tokens per run beside the gain), what the kept rules cost on the same test runs,
    the power at this size and the decision rule; labeled SCRIPTED DRY RUN first when the loops were scripted."""
    result = primary_result(experiment)
    if result is None:
        return "No finished loop yet: nothing to compare with the starting rules."
    lines = [*_scripted_first(result), result["split"], f"Kept version: {result['how']}."]
    if result["comparison"] is not None and result.get("one_test"):
        lines += [
            f"Over the pairs it ran: {result['comparison'].summary()} (test split; the fixed test's "
            "reading, not the decision).",
            result["errored"],
        ]
    elif result["comparison"] is not None:
        lines += [f"Primary test: {result['comparison'].summary()} (test split).", result["errored"]]
    lines += [
        result["decision"],
        *cost_lines(result),
        wrap(result["power"]),
        wrap(result["rule"]),
    ]  # a notebook's width
    baselines = baselines_result(experiment)  # the secondary answers, when baseline arms ran (baselines_summary: all)
    lines += baselines["answers"] if baselines is not None else []
    return "\n".join(lines)


# --- the baselines: secondary comparisons, declared with the primary (helpers.analysis.secondaries) ------------
def baselines_result(experiment: str) -> dict[str, Any] | None:
    """The baselines as plain data, None before any baseline arm was saved (helpers.engine.baselines): `arms`
    ({arm: its record, with `accuracy`, `n`, `cost` (arm_cost) and `size`}), `primary` (learned vs none, the
    declared primary test), `secondaries` (the SECONDARY comparisons, Holm-corrected), `answers` (one sentence
    per QUESTIONS arm), `warnings` (rules files over their agent's documented limit) and `dry_run`."""
    from helpers.rules.limits import agent_limit, rules_size, size_warning
    from helpers.stats.comparisons import accuracy_interval
    from helpers.store.arms import arm_rows, load_arms
    from helpers.store.rulesets import RulesetStore

    saved, primary = load_arms(experiment), primary_result(experiment)
    if not saved or primary is None:
        return None
    done = loop_records(experiment)
    agent = str(done[0].get("agent") or config.AGENT)
    first, kept = done[0], next(r for r in done if r["ruleset_version"] == primary["kept_version"])
    store = RulesetStore(experiment)
    arms: dict[str, dict[str, Any]] = {}
    start_is_none = primary["start"] == "no rules"
    ran_alone = primary.get("one_test") is not None  # the one test ran the start and the kept rules itself
    start_rows = one_test_rows(experiment, "start") if ran_alone else loop_rows(experiment, "test", first["loop"])
    kept_rows = one_test_rows(experiment, "kept") if ran_alone else loop_rows(experiment, "test", kept["loop"])
    arms["none"] = (
        {"status": "ran", "label": "no rules", "text": "", "rows": start_rows}
        if start_is_none
        else {
            **saved.get("none", {"status": "skipped", "why": "no run without rules"}),
            "rows": arm_rows(experiment, "none"),
        }
    )
    arms["learned"] = (
        {
            "status": "ran",
            "label": f"v{primary['kept_version']}",
            "text": store.load(primary["kept_version"]),
            "rows": kept_rows,
        }
        if primary["comparison"] is not None
        else {"status": "skipped", "why": f"the kept version is the start ({primary['start']}): nothing learned"}
    )
    for arm in ("init", "team"):
        arms[arm] = {**saved.get(arm, {"status": "skipped", "why": "not run"}), "rows": arm_rows(experiment, arm)}
    warnings = []
    for arm, record in arms.items():
        rows = record.get("rows") if record.get("status") == "ran" else None
        record["rows"] = rows
        accuracy, _, _, n = accuracy_interval(scored(rows)) if rows is not None else (math.nan, 0, 0, 0)
        text = record.get("text") or ""
        record.update(accuracy=accuracy, n=n, cost=arm_cost(rows), size=rules_size(text))
        warning = size_warning(text, agent, agent_limit(agent), f"the {arm} arm's rules file") if text else None
        if warning:
            warnings.append(warning)
    frames = {arm: record["rows"] for arm, record in arms.items()}
    labels = {arm: record.get("label", arm) for arm, record in arms.items()}
    secondaries = secondary_comparisons(frames, arms, labels)
    answers = [answer_sentence(arm, next(s for s in secondaries if s.pair == ("learned", arm))) for arm in QUESTIONS]
    return {
        "arms": arms,
        "primary": primary["comparison"],
        "secondaries": secondaries,
        "answers": answers,
        "warnings": warnings,
        "agent": agent,
        "no_charge": primary["no_charge"],
        "dry_run": primary["dry_run"] or any(r.get("dry_run") for r in saved.values()),
    }


def baselines_table(experiment: str) -> pd.DataFrame:
    """One row per arm (none, learned, init, team): its label and status, test accuracy and tasks, the difference
    from no rules with its 95% interval and p (the primary's for learned, Holm-adjusted for the secondaries), its
    cost per run (tokens, dollars or why none, seconds) and its file's size (bytes, tokens, rules). Empty before
    any baseline ran."""
    result = baselines_result(experiment)
    if result is None:
        return pd.DataFrame()
    tests, rows = against_none(result), []
    for arm, record in result["arms"].items():
        comparison, p, which = tests.get(arm, (None, math.nan, ""))
        cost, size = record["cost"], record["size"]
        rows.append(
            {
                "arm": arm,
                "label": record.get("label", arm),
                "status": record["status"],
                "data": "SCRIPTED" if result["dry_run"] else "real",
                "test accuracy": None if record["n"] == 0 else round(record["accuracy"], 3),
                "tasks": record["n"],
                "vs none (points, 95% CI)": ""
                if comparison is None or comparison.n == 0
                else f"{comparison.diff * 100:+.1f} ({comparison.ci_low * 100:+.1f} to {comparison.ci_high * 100:+.1f})",
                "p": "" if p != p else f"{p:.2g} ({which})",
                "tokens per run": None if cost["tokens"] is None else round(cost["tokens"]),
                "cost per run": f"${cost['cost_usd']:.4f}" if cost["cost_usd"] else result["no_charge"],
                "seconds per run": None if cost["duration_s"] is None else round(cost["duration_s"], 1),
                "bytes": size["bytes"],
                "file tokens": size["tokens"],
                "rules": size["rules"],
                "why": record.get("why", ""),
            }
        )
    return pd.DataFrame(rows)


def baselines_summary(experiment: str) -> str:
    """The baselines in a few lines: the two answers (learned vs init, learned vs team), each arm's cost per
    run and file size, every secondary comparison (Holm-corrected, labeled secondary; skipped and errored
    arms named), the size warnings and the rule; labeled SCRIPTED DRY RUN first when scripted."""
    result = baselines_result(experiment)
    if result is None:
        return "No baselines yet: run helpers.engine.baselines.run_baselines after the loops."
    lines = [*_scripted_first(result), *result["answers"]]
    lines += [note] if (note := stopping_point_note(load_one_test(experiment))) else []
    for arm, record in result["arms"].items():
        label = record.get("label", arm)
        if record["status"] != "ran":
            lines.append(f"- {arm} ({label}): {record['status']}: {record.get('why') or 'no reason recorded'}")
            continue
        size = record["size"]
        lines.append(
            f"- {arm} ({label}): {record['accuracy']:.2f} on {record['n']} test tasks; "
            f"{per_run(record['cost'], result['no_charge'])}; file {size['bytes']:,} bytes, "
            f"{size['tokens']:,} tokens, {counted(size['rules'], 'rule')}"
        )
    lines += [s.summary() for s in result["secondaries"]]
    lines += [f"Size warning: {w}" for w in result["warnings"]]
    lines.append(SECONDARY_RULE.format(alpha=config.STATS_ALPHA))
    return "\n".join(lines)


def stopping_point_note(one_test: dict[str, Any] | None) -> str | None:
    """Where the baselines' arms stopped, when the one test ran alone and stopped early (they reuse its stopping
    point: helpers.engine.baselines.tasks_the_one_test_ran); None otherwise."""
    if not one_test or not one_test.get("tasks_saved"):
        return None
    ran, saved = int(one_test["tasks_run"]), int(one_test["tasks_saved"])
    return (
        f"The arms ran on the {ran} test tasks the one test ran before it stopped (of {ran + saved}): the "
        "secondaries reuse its stopping point, and no arm paid for a task it never ran."
    )


def sequential_verdict(
    one_test: dict[str, Any],
    start_rows: pd.DataFrame,
    kept_rows: pd.DataFrame,
    cost: str = "",
    no_charge: str = "unpriced",
) -> str:
    """The one test's decision as it ran (where it stopped and why, its estimate with the interval valid at the
    stop), and the runs (and dollars, when priced; else `no_charge`, why not) it did not pay for against
    running every test task."""
    saved_runs = 2 * int(one_test.get("tasks_saved") or 0)
    spent = pd.concat([start_rows, kept_rows], ignore_index=True)
    dollars = pd.to_numeric(spent.get("cost_usd", pd.Series(dtype=float)), errors="coerce").dropna()
    if not saved_runs:
        saved = "It ran every test task, so nothing was saved."
    elif len(dollars) and dollars.sum() > 0:
        saved = (
            f"It saved {saved_runs:,} agent runs against the fixed design (about "
            f"${dollars.mean() * saved_runs:,.2f} at this test's mean cost per run)."
        )
    else:
        saved = f"It saved {saved_runs:,} agent runs against the fixed design ({no_charge})."
    at = f" Beside it, not tested: {cost}." if cost else ""
    return f"{one_test['sentence']} {saved}{at}"


# --- comparing agents side by side ------------------------------------------------------------------
def side_by_side(experiments: list[str], split: str = "test") -> pd.DataFrame:
    """Accuracy per loop of several experiments (e.g. one per agent on the same tasks), with intervals."""
    columns = {}
    for experiment in experiments:
        done = completed_loops(experiment)
        columns[experiment] = {
            loop: (
                f"{r[f'{split}_accuracy']:.2f} ({r[f'{split}_ci_low']:.2f}-{r[f'{split}_ci_high']:.2f})"
                if r.get(f"{split}_ci_low") is not None
                else "n/a"
                if r.get(f"{split}_accuracy") is None
                else f"{r[f'{split}_accuracy']:.2f}"
            )
            for loop, r in sorted(done.items())
        }
    return pd.DataFrame(columns).rename_axis("loop")


def transfer_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows of helpers.engine.ablation.transfer_test as the table a person reads: one row per agent and model,
    the start's and the kept rules' test accuracy, the gain with its 95% interval and p, the change in tokens
    per run, the tasks left out (errored runs among them) and the decision; `data` says "SCRIPTED" when the
    runs were scripted."""

    def points(value: float) -> str:
        return "n/a" if value != value else f"{value * 100:+.1f}"

    table = [
        {
            "agent": r["agent"],
            "model": r["model"] or "default",
            "data": "SCRIPTED" if r["dry_run"] else "real",
            "tasks": r["n"],
            "start": f"{r['start']}: {r['start_accuracy']:.2f}" if r["n"] else r["start"],
            "kept": f"{r['kept']}: {r['kept_accuracy']:.2f}" if r["n"] else r["kept"],
            "gain (points, 95% CI)": f"{points(r['gain'])} ({points(r['ci_low'])} to {points(r['ci_high'])})",
            "p": "n/a" if r["p_value"] != r["p_value"] else f"{r['p_value']:.2f}",
            "tokens per run": r["tokens_change"].summary() if r["tokens_change"] is not None else "not recorded",
            "left out": ", ".join(f"{count} {why}" for why, count in r["excluded"].items()) or "none",
            "decision": r["decision"],
        }
        for r in rows
    ]
    return pd.DataFrame(table)


__all__ = [
    "primary_result",
    "evidence_summary",
    "compare",
    "side_by_side",
    "transfer_table",
    "sequential_verdict",
    "stopping_point_note",
    "baselines_result",
    "baselines_summary",
    "baselines_table",
]  # the public API, documented in CODE_APPENDIX.md
