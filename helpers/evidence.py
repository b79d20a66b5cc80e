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


def loop_rows(experiment: str, split: str, loop: int, results_root: Any = None) -> pd.DataFrame | None:
    """A finished loop's saved rows of one split, or None when it has none."""
    path = split_results_path(experiment, split, loop, results_root)
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
               alpha: float = config.STATS_ALPHA, results_root: Any = None) -> tuple[int | None, list[str]]:
    """The version noise lets us call best, and why: finished loops are taken in order; a version replaces
    the incumbent only when its paired gain on `split` is significant at `alpha`, or when it is not worse
    and has fewer rules (helpers.stats.gate). None when no loop has finished."""
    from helpers.stats import gate

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


def evidence_summary(experiment: str, split: str = "test") -> str:
    """The last finished loop against the start, on `split`, and the version the gate would keep; labeled
    SCRIPTED DRY RUN first when the loops were scripted."""
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
    scripted = any(r.get("dry_run") for r in done)
    lines = (["SCRIPTED DRY RUN: every number below comes from the scripted model; these are not results."]
             if scripted else []) + [f"{comparison.summary()} ({split} split).", verdict,
             f"The version the gate keeps (paired, on train, alpha {config.STATS_ALPHA}): v{best}."]
    return "\n".join(lines + [f"  {r}" for r in reasons])



# --- per-rule attribution: leave one rule out ---------------------------------------------------------
def split_tasks(experiment: str, split: str) -> pd.DataFrame:
    """The experiment's saved `split` tasks (split.json names them and their source)."""
    import json

    from helpers.records import experiment_dir
    from helpers.tasks import load_tasks, select_tasks

    saved = experiment_dir(experiment) / "split.json"
    if not saved.exists():
        raise FileNotFoundError(f"Experiment {experiment!r} has no saved split ({saved}): pass tasks= instead.")
    split_ids = json.loads(saved.read_text())
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', not {split!r}.")
    return select_tasks(load_tasks(split_ids.get("source", "house")), split_ids[split])


def ablation_rulesets(ruleset: str, rules: list[str] | None = None) -> dict[str, str]:
    """name -> ruleset text: "all" (as given), "none" (no rules) and "without <id>" for each rule."""
    from helpers.rulesets import Ruleset, parse_ruleset, render_ruleset

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


def ablation_cost(experiment: str, runs: int) -> tuple[float | None, str]:
    """(estimated USD, the sentence saying so) for `runs` agent runs, at the experiment's observed cost per run."""
    done = read_jsonl(loops_path(experiment))
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
    it is removed (negative: the rule helps), its interval and p-value, and `harmful` when removing it
    raised accuracy. States the cost before it runs; resumes like every run (one run id per variant)."""
    from helpers.rulesets import RulesetStore
    from helpers.runs import run_tasks

    tasks = split_tasks(experiment, split) if tasks is None else tasks
    ruleset = RulesetStore(experiment).load(version)
    variants = ablation_rulesets(ruleset, rules)
    print(f"Ablation of v{version} on {len(tasks)} {split} tasks, {len(variants)} variants: "
          + ablation_cost(experiment, len(variants) * len(tasks))[1])
    frames = {name: run_tasks(tasks, agent, run_id=f"ablate_v{version}_{split}_{name.replace(' ', '_')}",
                              experiment=experiment, ruleset=text, workers=workers, progress=progress)
              for name, text in variants.items()}
    rows = []
    from helpers.rulesets import parse_ruleset

    texts = {r.id: r.text for r in parse_ruleset(ruleset).rules}
    for name, frame in frames.items():
        if not name.startswith("without "):
            continue
        rule_id = name.removeprefix("without ")
        comparison = compare(frames["all"], frame, f"v{version}", f"v{version} without {rule_id}")
        rows.append({"rule": rule_id, "text": texts[rule_id], "effect_of_removal": comparison.diff,
                     "ci_low": comparison.ci_low, "ci_high": comparison.ci_high, "p_value": comparison.p_value,
                     "significant": comparison.significant, "harmful": comparison.diff > 0,
                     "summary": comparison.summary()})
    reference = compare(frames["none"], frames["all"], "no rules", f"v{version}")
    result = pd.DataFrame(rows)
    result.attrs["reference"] = reference.summary()
    return result


# --- comparing agents: side by side, and whether rules learned with one transfer to another -----------
def side_by_side(experiments: list[str], split: str = "test") -> pd.DataFrame:
    """Accuracy per loop of several experiments (e.g. one per agent on the same tasks), with intervals."""
    columns = {}
    for experiment in experiments:
        done = {r["loop"]: r for r in read_jsonl(loops_path(experiment))}
        columns[experiment] = {
            loop: (f"{r[f'{split}_accuracy']:.2f} ({r[f'{split}_ci_low']:.2f}-{r[f'{split}_ci_high']:.2f})"
                   if r.get(f"{split}_ci_low") is not None else
                   "n/a" if r.get(f"{split}_accuracy") is None else f"{r[f'{split}_accuracy']:.2f}")
            for loop, r in sorted(done.items())}
    return pd.DataFrame(columns).rename_axis("loop")


def transfer(source: str, agent: Any, *, version: int | str = "best", split: str = "test",
             experiment: str | None = None, workers: int = config.WORKERS, gateway: Any = None,
             progress: bool = False) -> Any:
    """Do the rules learned in `source` help another agent? `agent` runs `source`'s `split` tasks with no
    rules and with `source`'s ruleset `version`; returns the paired comparison. The runs are recorded (and
    resume) under `experiment` (default: "<source>-transfer")."""
    from helpers.rulesets import RulesetStore
    from helpers.runs import run_tasks

    store = RulesetStore(source)
    number = store.metadata(version)["version"]
    tasks, target = split_tasks(source, split), experiment or f"{source}-transfer"
    frames = {name: run_tasks(tasks, agent, run_id=f"{agent.name}_{split}_{name}", experiment=target, ruleset=text,
                              workers=workers, gateway=gateway, progress=progress)
              for name, text in (("no_rules", ""), (f"v{number}", store.load(number)))}
    return compare(frames["no_rules"], frames[f"v{number}"], f"{agent.name} with no rules",
                   f"{agent.name} with {source}'s v{number}")

__all__ = ["loop_comparisons", "gated_best", "evidence_summary", "compare", "scored", "loop_rows", "ablate",
           "ablation_rulesets", "ablation_cost", "split_tasks", "side_by_side", "transfer"]  # the public API, documented in CODE_APPENDIX.md
