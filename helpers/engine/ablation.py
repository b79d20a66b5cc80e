"""What each rule is worth, and whether rules travel: runs of saved rulesets, with and without rules.

    effects = ablate("quickstart", version=2, agent=agent)       # each rule left out in turn
    row = transfer_test("quickstart", other_agent)               # another agent with the kept rules

A rule is read on every model call of every run, so each rule's effect comes with its weight in tokens,
and a rule that costs tokens and shows no effect is flagged (`dead_weight`): a candidate for deletion.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from helpers.analysis.evidence import compare
from helpers.core import config
from helpers.core.protocols import WorkspaceFamily
from helpers.families.registry import default_family
from helpers.rules.rules_file import RulesFile
from helpers.stats.costs import SCRIPTED_NO_CHARGE
from helpers.store.loops import load_split, loop_records


def split_tasks(experiment: str, split: str, family: WorkspaceFamily | None = None) -> pd.DataFrame:
    """The experiment's saved `split` tasks: "train", "val" (the validation side) or "test" (split.json names
    them and their source), loaded by `family` (None: the default, helpers.families.registry)."""
    family = family or default_family()
    split_ids = load_split(experiment)
    if split_ids is None:
        raise FileNotFoundError(f"Experiment {experiment!r} has no saved split: pass tasks= instead.")
    if split not in ("train", "val", "test"):
        raise ValueError(f"split must be 'train', 'val' or 'test', not {split!r}.")
    ids = split_ids.get("validation" if split == "val" else split) or []
    if not ids:
        raise ValueError(f"Experiment {experiment!r} has no {split} tasks (a split without a validation side?).")
    return family.select_tasks(family.load_tasks(split_ids.get("source", "house")), ids)


def ablation_rulesets(ruleset: str | RulesFile, rules: list[str] | None = None) -> dict[str, RulesFile]:
    """name -> rules: "all" (as given), "none" (no rules) and "without <id>" for each rule (a team's text around
    the learned rules kept). Text is parsed here, once."""
    from helpers.rules.ruleset import Ruleset

    given = RulesFile.parse(ruleset)
    parsed = given.rules
    ids = [r.id for r in parsed.rules]
    chosen = rules or ids
    unknown = sorted(set(chosen) - set(ids))
    if unknown:
        raise ValueError(f"No rule {unknown} in this ruleset; it has {ids}.")
    variants = {"all": given, "none": RulesFile.parse("")}
    for rule_id in chosen:
        kept = [r for r in parsed.rules if r.id != rule_id]
        variants[f"without {rule_id}"] = given.with_rules(Ruleset(kept, parsed.next_id))
    return variants


def rule_tokens(ruleset: str | RulesFile) -> dict[str, int]:
    """Each rule's weight: the tokens the ruleset loses without it (its text, id and line), by rule id; both
    sides rendered alike, so a hand-written file's own layout (and a team's text around the rules) does not count."""
    from helpers.core.tokens import count_tokens
    from helpers.rules.ruleset import render_ruleset

    given = RulesFile.parse(ruleset)
    whole = count_tokens(render_ruleset(given.rules))
    return {
        name.removeprefix("without "): whole - count_tokens(render_ruleset(variant.rules))
        for name, variant in ablation_rulesets(given).items()
        if name.startswith("without ")
    }


def ablation_cost(experiment: str, runs: int) -> tuple[float | None, str]:
    """(estimated USD, the sentence saying so) for `runs` agent runs, at the experiment's observed cost per run."""
    done = loop_records(experiment)
    cost = sum(float(r.get("agent_cost_usd") or 0) for r in done)
    count = sum(int(r.get("train_size") or 0) + int(r.get("test_size") or 0) for r in done)
    unpriced = any("agent" in (r.get("unpriced") or []) for r in done)
    if done and all(r.get("dry_run") for r in done):  # as every dry-run line says it
        return None, f"{runs} agent runs; {SCRIPTED_NO_CHARGE}."
    if not count or unpriced:
        return None, f"{runs} agent runs; their cost is unknown (no priced runs observed yet)."
    per_run = cost / count
    return runs * per_run, f"{runs} agent runs at the observed ${per_run:.4f} per run: about ${runs * per_run:.2f}."


def loop_run_holding(experiment: str, split: str, ruleset: str, tasks: pd.DataFrame, agent: Any) -> str | None:
    """The run id of a loop's own `split` run ("val_1") that already holds a finished run of every one of `tasks`
    by this agent (and model) with exactly `ruleset`, or None."""
    from helpers.engine.resume import finished_tasks

    wanted = set(tasks["instance_id"].astype(str))
    for record in loop_records(experiment):
        run_id = f"{split}_{record['loop']}"
        if wanted <= finished_tasks(experiment, run_id, agent, ruleset):
            return run_id
    return None


def ablate(
    experiment: str,
    version: int,
    split: str = "test",
    rules: list[str] | None = None,
    tasks: pd.DataFrame | None = None,
    *,
    agent: Any,
    workers: int = config.WORKERS,
    progress: bool = False,
) -> pd.DataFrame:
    """Each rule's measured effect: the agent on `tasks` (default: the experiment's `split` tasks) with the
    whole ruleset, with no rules, and with each rule left out. One row per rule: the paired change when
    it is removed (negative: the rule helps), its interval and p-value, `harmful` when removing it
    raised accuracy, `tokens` its weight (rule_tokens, read with every agent call) and `dead_weight` when it
    costs tokens and shows no effect (removing it did not lower accuracy: a candidate for deletion; on a few
    tasks, read its interval). States the cost before it runs; a variant a loop already ran on the same tasks (the kept version, no rules)
    is read back from that loop's run, not run again; resumes like every run (one run id per variant)."""
    from helpers.store.rulesets import RulesetStore
    from helpers.engine.runs import run_tasks

    tasks = split_tasks(experiment, split) if tasks is None else tasks
    ruleset = RulesetStore(experiment).load_rules(version)
    variants = ablation_rulesets(ruleset, rules)
    # "all" and "none" are often a loop's own runs (the kept version's and the start's on the same tasks): read
    # back, not paid for again
    held = {name: loop_run_holding(experiment, split, variant.text, tasks, agent) for name, variant in variants.items()}
    fresh = [name for name, run_id in held.items() if run_id is None]
    print(
        f"Ablation of v{version} on {len(tasks)} {split} tasks, {len(variants)} variants"
        + (
            f" ({', '.join(f'{name}: the loop run {run_id}' for name, run_id in held.items() if run_id)}, read back)"
            if len(fresh) < len(variants)
            else ""
        )
        + ": "
        + ablation_cost(experiment, len(fresh) * len(tasks))[1]
    )
    frames = {
        name: run_tasks(
            tasks,
            agent,
            run_id=held[name] or f"ablate_v{version}_{split}_{name.replace(' ', '_')}",
            experiment=experiment,
            ruleset=variant,
            workers=workers,
            progress=progress,
        )
        for name, variant in variants.items()
    }
    rows = []
    texts, weights = {r.id: r.text for r in ruleset.rules.rules}, rule_tokens(ruleset)
    for name, frame in frames.items():
        if not name.startswith("without "):
            continue
        rule_id = name.removeprefix("without ")
        comparison = compare(frames["all"], frame, f"v{version}", f"v{version} without {rule_id}")
        dead_weight = weights[rule_id] > 0 and comparison.n > 0 and comparison.diff >= 0
        rows.append(
            {
                "rule": rule_id,
                "text": texts[rule_id],
                "effect_of_removal": comparison.diff,
                "ci_low": comparison.ci_low,
                "ci_high": comparison.ci_high,
                "p_value": comparison.p_value,
                "significant": comparison.significant,
                "harmful": comparison.diff > 0,
                "tokens": weights[rule_id],
                "dead_weight": dead_weight,
                "summary": comparison.summary()
                + f"; the rule weighs {weights[rule_id]:,} tokens on every call"
                + (": it costs tokens and shows no effect" if dead_weight else ""),
            }
        )
    reference = compare(frames["none"], frames["all"], "no rules", f"v{version}")
    result = pd.DataFrame(rows)
    result.attrs["reference"] = reference.summary()
    return result


# the heading every transfer table carries: it answers a second question, never the experiment's own
TRANSFER_QUESTION = (
    "A second, separate question (not the primary test): do the rules this experiment kept help "
    "another agent or model on the same tasks (the test split's, unless TRANSFER_SPLIT names "
    "another)? Each row is its own paired test, with the primary test's decision rule."
)


def transfer_targets(targets: str | list[str] | None) -> list[tuple[str, str | None]]:
    """Who a transfer test runs: "codex", or "codex:<model id>" for another model (one, or a list), as
    [(agent, model or None)]; an unknown agent is one ValueError naming the installed ones, before anything runs."""
    from helpers.core.registry import registered_agents

    items = [targets] if isinstance(targets, str) else list(targets or [])
    known = registered_agents()
    parsed = [
        (agent.strip(), model.strip() or None) for agent, _, model in (str(item).partition(":") for item in items)
    ]
    unknown = [agent for agent, _ in parsed if agent not in known]
    if unknown:
        raise ValueError(
            f"Unknown agent {unknown} for a transfer test: use one of {sorted(known)}, optionally as "
            "'<agent>:<model id>'."
        )
    return parsed


def transfer_test(
    experiment: str,
    agent: Any,
    *,
    split: str = "test",
    workers: int = config.WORKERS,
    gateway: Any = None,
    progress: bool = False,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Do `experiment`'s kept rules help another agent (or model)? `agent` (a runner: its `name` and `model`
    say which) runs the experiment's `split` tasks with the start ruleset and with the kept one (validation's
    choice, as in the primary test): one paired test, the same decision rule, reported as a second question.

    Returns one row of a transfer table (plain data): agent, model, start, kept, n, excluded (tasks left out,
    errored runs among them, with reasons), start_accuracy, kept_accuracy, gain with ci_low/ci_high (95%),
    p_value, tokens_change (the paired change in tokens per run, a PairedChange, or None unrecorded),
    decision, dry_run (these runs or the experiment's were scripted: pass the session's). Runs are recorded, and resume, under "<experiment>-transfer", one run id per agent,
    model and version."""
    from helpers.analysis.run_costs import cost_changes
    from helpers.core.names import check_name
    from helpers.stats.selection import decision
    from helpers.engine.runs import run_tasks
    from helpers.store.loops import kept_version
    from helpers.store.rulesets import RulesetStore

    done, choice = loop_records(experiment), kept_version(experiment)
    if choice is None:
        raise ValueError(f"Experiment {experiment!r} has no finished loop: there are no kept rules to transfer.")
    start, kept, store = done[0]["ruleset_version"], choice.version, RulesetStore(experiment)
    model = str(getattr(agent, "model", "") or "")
    who = check_name(
        "_".join(re.sub(r"[^A-Za-z0-9._-]+", "-", part) for part in (agent.name, model) if part), "agent and model"
    )
    tasks = split_tasks(experiment, split)
    frames = {
        version: run_tasks(
            tasks,
            agent,
            run_id=f"{who}_{split}_v{version}",
            experiment=f"{experiment}-transfer",
            ruleset=store.load_rules(version),
            workers=workers,
            gateway=gateway,
            progress=progress,
        )
        for version in dict.fromkeys((start, kept))
    }
    label_start = "no rules" if not store.load(start).strip() else f"v{start}"
    comparison = compare(
        frames[start], frames[kept], f"{agent.name} with {label_start}", f"{agent.name} with {experiment}'s v{kept}"
    )
    tokens = cost_changes(frames[start], frames[kept], label_start, f"v{kept}")["tokens"]
    recorded = tokens.n > 0 and bool(tokens.mean_a or tokens.mean_b)
    verdict = (
        f"No test: {experiment} kept its start ({label_start}), so there is nothing learned to transfer."
        if kept == start
        else decision(comparison, tokens.summary() if recorded else "")
    )
    return {
        "agent": agent.name,
        "model": model,
        "start": label_start,
        "kept": f"v{kept}",
        "n": comparison.n,
        "excluded": dict(comparison.excluded),
        "start_accuracy": comparison.accuracy_a,
        "kept_accuracy": comparison.accuracy_b,
        "gain": comparison.diff,
        "ci_low": comparison.ci_low,
        "ci_high": comparison.ci_high,
        "p_value": comparison.p_value,
        "tokens_change": tokens if recorded else None,
        "decision": verdict,
        "dry_run": dry_run or any(r.get("dry_run") for r in done),
    }


__all__ = [
    "ablate",
    "loop_run_holding",
    "ablation_rulesets",
    "ablation_cost",
    "rule_tokens",
    "split_tasks",
    "transfer_test",
    "transfer_targets",
    "TRANSFER_QUESTION",
]  # the public API, documented in CODE_APPENDIX.md
