"""What each rule is worth, and whether rules travel: runs of saved rulesets, with and without rules.

    effects = ablate("quickstart", version=2, agent=agent)       # each rule left out in turn
    comparison = transfer("quickstart", other_agent)             # another agent with these rules

A rule is read on every model call of every run, so each rule's effect comes with its weight in tokens,
and a rule that costs tokens and shows no effect is flagged (`dead_weight`): a candidate for deletion.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from helpers.analysis.evidence import compare
from helpers.core import config
from helpers.store.loops import load_split, loop_records


def split_tasks(experiment: str, split: str) -> pd.DataFrame:
    """The experiment's saved `split` tasks (split.json names them and their source)."""
    from helpers.families.coding.tasks import load_tasks, select_tasks

    split_ids = load_split(experiment)
    if split_ids is None:
        raise FileNotFoundError(f"Experiment {experiment!r} has no saved split: pass tasks= instead.")
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', not {split!r}.")
    return select_tasks(load_tasks(split_ids.get("source", "house")), split_ids[split])


def ablation_rulesets(ruleset: str, rules: list[str] | None = None) -> dict[str, str]:
    """name -> ruleset text: "all" (as given), "none" (no rules) and "without <id>" for each rule."""
    from helpers.core.rules import Ruleset, parse_ruleset, render_ruleset

    parsed = parse_ruleset(ruleset)
    ids = [r.id for r in parsed.rules]
    chosen = rules or ids
    unknown = sorted(set(chosen) - set(ids))
    if unknown:
        raise ValueError(f"No rule {unknown} in this ruleset; it has {ids}.")
    variants = {"all": ruleset, "none": ""}
    for rule_id in chosen:
        kept = [r for r in parsed.rules if r.id != rule_id]
        variants[f"without {rule_id}"] = render_ruleset(Ruleset(kept, parsed.next_id))
    return variants


def rule_tokens(ruleset: str) -> dict[str, int]:
    """Each rule's weight: the tokens the ruleset loses without it (its text, id and line), by rule id; both
    sides rendered alike, so a hand-written file's own layout does not count."""
    from helpers.core.rules import parse_ruleset, render_ruleset, render_stats

    whole = render_stats(render_ruleset(parse_ruleset(ruleset)))["tokens"]
    return {name.removeprefix("without "): whole - render_stats(text)["tokens"]
            for name, text in ablation_rulesets(ruleset).items() if name.startswith("without ")}


def ablation_cost(experiment: str, runs: int) -> tuple[float | None, str]:
    """(estimated USD, the sentence saying so) for `runs` agent runs, at the experiment's observed cost per run."""
    done = loop_records(experiment)
    cost = sum(float(r.get("agent_cost_usd") or 0) for r in done)
    count = sum(int(r.get("train_size") or 0) + int(r.get("test_size") or 0) for r in done)
    unpriced = any("agent" in (r.get("unpriced") or []) for r in done)
    if not count or unpriced:
        return None, f"{runs} agent runs; their cost is unknown (no priced runs observed yet)."
    per_run = cost / count
    return runs * per_run, f"{runs} agent runs at the observed ${per_run:.4f} per run: about ${runs * per_run:.2f}."


def ablate(experiment: str, version: int, split: str = "test", rules: list[str] | None = None,
           tasks: pd.DataFrame | None = None, *, agent: Any, workers: int = config.WORKERS,
           progress: bool = False) -> pd.DataFrame:
    """Each rule's measured effect: the agent on `tasks` (default: the experiment's `split` tasks) with the
    whole ruleset, with no rules, and with each rule left out. One row per rule: the paired change when
    it is removed (negative: the rule helps), its interval and p-value, `harmful` when removing it
    raised accuracy, `tokens` its weight (rule_tokens, read with every agent call) and `dead_weight` when it
    costs tokens and shows no effect (removing it did not lower accuracy: a candidate for deletion; on a few
    tasks, read its interval). States the cost before it runs; resumes like every run (one run id per variant)."""
    from helpers.store.rulesets import RulesetStore
    from helpers.engine.runs import run_tasks

    tasks = split_tasks(experiment, split) if tasks is None else tasks
    ruleset = RulesetStore(experiment).load(version)
    variants = ablation_rulesets(ruleset, rules)
    print(f"Ablation of v{version} on {len(tasks)} {split} tasks, {len(variants)} variants: "
          + ablation_cost(experiment, len(variants) * len(tasks))[1])
    frames = {name: run_tasks(tasks, agent, run_id=f"ablate_v{version}_{split}_{name.replace(' ', '_')}",
                              experiment=experiment, ruleset=text, workers=workers, progress=progress)
              for name, text in variants.items()}
    rows = []
    from helpers.core.rules import parse_ruleset

    texts, weights = {r.id: r.text for r in parse_ruleset(ruleset).rules}, rule_tokens(ruleset)
    for name, frame in frames.items():
        if not name.startswith("without "):
            continue
        rule_id = name.removeprefix("without ")
        comparison = compare(frames["all"], frame, f"v{version}", f"v{version} without {rule_id}")
        dead_weight = weights[rule_id] > 0 and comparison.n > 0 and comparison.diff >= 0
        rows.append({"rule": rule_id, "text": texts[rule_id], "effect_of_removal": comparison.diff,
                     "ci_low": comparison.ci_low, "ci_high": comparison.ci_high, "p_value": comparison.p_value,
                     "significant": comparison.significant, "harmful": comparison.diff > 0,
                     "tokens": weights[rule_id], "dead_weight": dead_weight,
                     "summary": comparison.summary() + f"; the rule weighs {weights[rule_id]:,} tokens on every call"
                                + (": it costs tokens and shows no effect" if dead_weight else "")})
    reference = compare(frames["none"], frames["all"], "no rules", f"v{version}")
    result = pd.DataFrame(rows)
    result.attrs["reference"] = reference.summary()
    return result


def transfer(source: str, agent: Any, *, version: int | str = "best", split: str = "test",
             experiment: str | None = None, workers: int = config.WORKERS, gateway: Any = None,
             progress: bool = False) -> Any:
    """Do the rules learned in `source` help another agent? `agent` runs `source`'s `split` tasks with no
    rules and with `source`'s ruleset `version`; returns the paired comparison. The runs are recorded (and
    resume) under `experiment` (default: "<source>-transfer")."""
    from helpers.store.rulesets import RulesetStore
    from helpers.engine.runs import run_tasks

    store = RulesetStore(source)
    number = store.metadata(version)["version"]
    tasks, target = split_tasks(source, split), experiment or f"{source}-transfer"
    frames = {name: run_tasks(tasks, agent, run_id=f"{agent.name}_{split}_{name}", experiment=target, ruleset=text,
                              workers=workers, gateway=gateway, progress=progress)
              for name, text in (("no_rules", ""), (f"v{number}", store.load(number)))}
    return compare(frames["no_rules"], frames[f"v{number}"], f"{agent.name} with no rules",
                   f"{agent.name} with {source}'s v{number}")


__all__ = ["ablate", "ablation_rulesets", "ablation_cost", "rule_tokens", "split_tasks", "transfer"]  # the public API, documented in CODE_APPENDIX.md
