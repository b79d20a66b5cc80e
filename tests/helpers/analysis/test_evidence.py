"""Evidence from saved results: validation keeps a version, the test split judges it once against the start,
and leaving one rule out finds the rule a convention's tasks depend on."""

import pandas as pd
import pytest

from helpers.agents.base import AgentBase

from helpers.engine.ablation import ablate, ablation_rulesets
from helpers.analysis.evidence import evidence_summary, primary_result
from helpers.store.loops import kept_version, save_split
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.core.protocols import AgentResult
from helpers.store.records import append_jsonl, loops_path, split_results_path, write_csv
from helpers.store.rulesets import RulesetStore
from helpers.families.coding.tasks import load_house_suite
from helpers.families.coding.git import git


def finished_loop(experiment, loop, version, passes, n=30, rules=0, dry_run=False, val=None, splits=("train", "test"),
                  tokens=None, cost=None, seconds=60.0, ruleset_tokens=0):
    """A loop's record and its rows: the first `passes` tasks pass (on validation, the first `val`); each run
    used `tokens` (a list, one per task: 90% input, 10% output), cost `cost` USD per token (None: unpriced)
    and took `seconds`."""
    def rows(k):
        used = pd.Series(tokens if tokens is not None else [0] * n, dtype=float)
        return pd.DataFrame({"instance_id": [f"t-{i}" for i in range(n)], "status": "completed",
                             "pass_or_fail": ["pass" if i < k else "fail" for i in range(n)], "mode": "act",
                             "input_tokens": 0.9 * used, "output_tokens": 0.1 * used,
                             "cost_usd": None if cost is None else used * cost, "duration_s": seconds})
    for split in splits:
        write_csv(rows(passes), split_results_path(experiment, split, loop))
    if val is not None:
        write_csv(rows(val), split_results_path(experiment, "val", loop))
    append_jsonl(loops_path(experiment), {"loop": loop, "ruleset_version": version, "ruleset_rules": rules,
                                          "ruleset_tokens": ruleset_tokens, "train_accuracy": passes / n,
                                          "test_accuracy": passes / n, "dry_run": dry_run})


def test_the_kept_version_is_chosen_on_validation_and_tested_once_against_the_start(isolated):
    finished_loop("kept", 0, 0, passes=5, val=5)
    finished_loop("kept", 1, 1, passes=8, val=12, rules=2)
    finished_loop("kept", 2, 2, passes=20, val=20, rules=3)   # the best on validation
    finished_loop("kept", 3, 3, passes=29, val=15, rules=4)   # the best on test: never chosen for it
    assert kept_version("kept").version == 2
    summary = evidence_summary("kept")
    assert "Kept version: v2: the highest validation accuracy (0.67 on 30 tasks, start 0.17) of 4 versions" in summary
    assert "Primary test: v2 vs no rules on 30 tasks: +50.0 points" in summary
    assert "The rules help" in summary and "exploratory" in summary and "two-sided, level 0.05" in " ".join(summary.split())
    assert "With 30 test tasks, an observed gain under 20 points can never be significant" in summary
    tail = summary[summary.index("With 30 test tasks"):]  # the power note and the decision rule: a notebook's width
    assert tail.count("\n") >= 3 and all(len(line) <= 100 for line in tail.splitlines())


def test_the_primary_result_carries_the_paired_change_in_tokens_cost_and_time_with_intervals(isolated):
    start = [40_000 + 500 * i for i in range(30)]
    finished_loop("costly", 0, 0, passes=5, val=5, tokens=start, cost=2e-6, seconds=80.0)
    finished_loop("costly", 1, 1, passes=20, val=20, rules=3, ruleset_tokens=340, cost=2e-6, seconds=72.0,
                  tokens=[t * (1.1 + 0.1 * (i % 3)) for i, t in enumerate(start)])  # +10% to +30%, +20% on average
    result = primary_result("costly")
    tokens, cost, time = (result["cost"][m] for m in ("tokens", "cost_usd", "duration_s"))
    assert tokens.n == 30 and tokens.label_a == "no rules" and tokens.label_b == "v1"
    assert tokens.relative == pytest.approx(0.2, abs=0.002) and tokens.rel_low < 0.2 < tokens.rel_high
    assert tokens.rel_high - tokens.rel_low < 0.1  # paired over tasks: the spread of the change, not of the tasks
    assert cost.relative == pytest.approx(tokens.relative) and cost.rel_low == pytest.approx(tokens.rel_low)
    assert time.diff == pytest.approx(-8.0) and time.relative == pytest.approx(-0.1)
    assert result["rules_tokens"] == {"kept": 340, "start": 0}


def test_the_decision_line_states_the_gain_and_the_cost_beside_it(isolated):
    start = [40_000 + 500 * i for i in range(30)]
    finished_loop("both", 0, 0, passes=5, val=5, tokens=start, dry_run=True)
    finished_loop("both", 1, 1, passes=20, val=20, rules=3, ruleset_tokens=340, dry_run=True,
                  tokens=[t * (1.1 + 0.1 * (i % 3)) for i, t in enumerate(start)])
    result = primary_result("both")
    tokens = result["cost"]["tokens"]
    assert result["decision"] == (f"The rules help: +50.0 points (p < 0.001), at +20% tokens per run "
                                  f"(95% CI {tokens.rel_low * 100:+.0f}% to {tokens.rel_high * 100:+.0f}%).")
    summary = evidence_summary("both")
    assert result["decision"] in summary
    assert "reported beside the test, not tested" in summary
    assert "- cost per run: scripted: no charge" in summary and "$0.00" not in summary  # the scripted model is unpriced
    assert "- +0% wall time per run" in summary
    assert "340 tokens in the kept rules (start: 0), read with every agent call" in summary


def test_a_version_no_better_than_the_start_on_validation_is_not_kept_and_nothing_is_claimed(isolated):
    finished_loop("start", 0, 0, passes=5, val=10)
    finished_loop("start", 1, 1, passes=25, val=10, rules=2)  # ties the start on validation
    result = primary_result("start")
    assert result["kept_version"] == 0 and result["comparison"] is None
    assert "No test: the kept version is the start (no rules)" in evidence_summary("start")


def test_a_single_loop_that_ran_no_test_speaks_of_its_splits_test_tasks_never_of_none(isolated):
    """LOOPS=1: the start is kept, no test runs, and no loop saved test rows; the split still has its test tasks."""
    finished_loop("single", 0, 0, passes=5, val=5, splits=("train",))
    save_split("single", [f"t-{i}" for i in range(30)], [f"x-{i}" for i in range(12)], validation=["v-0"])
    summary = evidence_summary("single")
    assert "With 12 test tasks" in summary and "no test tasks" not in summary
    assert "No test: the kept version is the start (no rules)" in summary
    finished_loop("bare", 0, 0, passes=5, val=5, splits=("train",))  # no split saved and no test rows: none to speak of
    assert "With no test tasks nothing can be tested" in evidence_summary("bare")


def test_a_test_gain_inside_the_noise_is_called_noise(isolated):
    finished_loop("noise", 0, 0, passes=5, val=5)
    finished_loop("noise", 1, 1, passes=7, val=9, rules=2)
    summary = evidence_summary("noise")
    assert "not significant" in summary
    assert "Noise: +6.7 points (p = 0.5); the test does not show that the kept rules differ from the start." in summary
    assert "- tokens per run: not recorded by these runs" in summary  # no usage metered: no cost claimed either way


def test_without_a_validation_side_the_latest_version_is_kept_and_says_it_was_not_chosen_by_data(isolated):
    finished_loop("noval", 0, 0, passes=5)
    finished_loop("noval", 1, 1, passes=6, rules=2)
    assert kept_version("noval").version == 1
    assert "not chosen by data" in evidence_summary("noval")


class ConventionAgent(AgentBase):
    """Writes the task's convention-following fix only when the rules state each of its conventions."""

    name, rules_file, mode, model, base_prompt = "convention-agent", "AGENTS.md", "act", "m", "A test agent."

    def check(self):
        pass

    def run(self, task, workspace, ruleset):
        knows = all(CONVENTIONS[c]["rule"] in ruleset for c in task["conventions"])
        git("apply", "-", cwd=workspace, input=task["patch" if knows else "naive_patch"])
        return AgentResult(task["instance_id"], "completed", model=self.model)


def test_leaving_one_rule_out_finds_the_rule_its_conventions_tasks_depend_on(isolated, capsys):
    tasks = load_house_suite()
    errors_tasks = tasks[tasks.conventions.map(lambda c: set(c) == {"errors"})].head(2)
    assert len(errors_tasks) >= 1
    ruleset = f"- [R1] {CONVENTIONS['errors']['rule']}\n- [R2] Be kind in code review.\n"
    version = RulesetStore("ablation").save(ruleset)
    effects = ablate("ablation", version, "test", tasks=errors_tasks, agent=ConventionAgent(), workers=2)
    assert "agent runs" in capsys.readouterr().out  # the cost is stated before anything runs
    by_rule = effects.set_index("rule")
    assert by_rule.loc["R1", "effect_of_removal"] == -1.0 and not by_rule.loc["R1", "harmful"]
    assert by_rule.loc["R2", "effect_of_removal"] == 0.0
    assert "no rules" in effects.attrs["reference"]
    # each rule's weight beside its effect; the one that costs tokens and shows no effect is flagged
    assert by_rule.loc["R1", "tokens"] > by_rule.loc["R2", "tokens"] > 0
    assert not by_rule.loc["R1", "dead_weight"] and by_rule.loc["R2", "dead_weight"]
    assert by_rule.loc["R2", "summary"].endswith("it costs tokens and shows no effect")


class CountingAgent(ConventionAgent):
    """ConventionAgent that counts its runs (by ruleset) and can be told another model."""

    def __init__(self, model="m"):
        self.model, self.runs = model, []

    def run(self, task, workspace, ruleset):
        self.runs.append(ruleset)
        return super().run(task, workspace, ruleset)


def test_an_ablation_reads_back_the_loops_own_runs_of_the_kept_version_and_of_no_rules_and_pays_only_for_the_rest(
        isolated, capsys):
    """The kept version's validation run and the start's (no rules) are exactly two of the ablation's variants on
    the same tasks: they are read back from the loop's run records, so only the leave-one-out variants run. Another
    model's ablation reads nothing back (a run is only the same run for the same agent, model and rules)."""
    from helpers.engine.runs import run_tasks
    from helpers.store.records import experiment_dir, write_json

    tasks = load_house_suite()
    errors_tasks = tasks[tasks.conventions.map(lambda c: set(c) == {"errors"})].head(2)
    ruleset = f"- [R1] {CONVENTIONS['errors']['rule']}\n- [R2] Be kind in code review.\n"
    store = RulesetStore("reuse")
    store.save("")
    kept = store.save(ruleset, parent=0, loop=0)
    write_json(experiment_dir("reuse") / "split.json", {"train": [], "validation": list(errors_tasks.instance_id),
                                                       "test": [], "source": "house"})
    loop_agent = CountingAgent()
    for loop, text in enumerate(("", ruleset)):  # what the loops ran on the validation side
        run_tasks(errors_tasks, loop_agent, run_id=f"val_{loop}", experiment="reuse", ruleset=text, workers=2,
                  progress=False)
        finished_loop("reuse", loop, loop, passes=0, n=2, val=0, splits=())
    agent = CountingAgent()
    effects = ablate("reuse", kept, "val", agent=agent, workers=2)
    shown = capsys.readouterr().out
    n = len(errors_tasks)
    assert "all: the loop run val_1" in shown and "none: the loop run val_0" in shown and f"{2 * n} agent runs" in shown
    held = sorted(("[R1]" in text, "[R2]" in text) for text in agent.runs)
    assert held == [(False, True)] * n + [(True, False)] * n  # the two left-out variants only
    assert effects.set_index("rule").loc["R1", "effect_of_removal"] == -1.0  # measured against the read-back runs
    other = CountingAgent(model="another-model")
    ablate("reuse", kept, "val", agent=other, workers=2)
    assert len(other.runs) == 4 * n and "read back" not in capsys.readouterr().out


def test_a_rules_weight_is_the_tokens_of_its_line_in_the_rules_file():
    from helpers.core.tokens import count_tokens
    from helpers.engine.ablation import rule_tokens

    lines = ["- [R1] Raise the package's own errors.\n", "- [R2] Write every docstring as a contract, in full sentences.\n"]
    weights = rule_tokens("".join(lines))
    assert set(weights) == {"R1", "R2"} and weights["R2"] > weights["R1"] > 0
    for rule, line in zip(("R1", "R2"), lines):
        assert abs(weights[rule] - count_tokens(line)) <= 1


def test_ablation_variants_name_each_rule_and_refuse_unknown_ones():
    variants = ablation_rulesets("- [R1] One.\n- [R2] Two.\n")
    assert set(variants) == {"all", "none", "without R1", "without R2"}
    assert "Two." in variants["without R1"].text and "One." not in variants["without R1"].text
    assert variants["all"].text == "- [R1] One.\n- [R2] Two.\n" and variants["none"].text == ""
    team = ablation_rulesets("# Team\n\n<!-- prompt-learning:rules:start -->\n- [R1] One.\n- [R2] Two.\n"
                             "<!-- prompt-learning:rules:end -->\nAfter.\n")
    assert team["without R2"].text.startswith("# Team\n") and team["without R2"].text.endswith("end -->\nAfter.\n")
    assert team["without R2"].rules.ids == ["R1"]  # a team's text around the rules is kept in every variant
    with pytest.raises(ValueError, match="R7"):
        ablation_rulesets("- [R1] One.\n", rules=["R7"])


def test_the_kept_rules_are_tried_on_another_agent_as_a_second_labeled_paired_test(isolated):
    from helpers.analysis.evidence import side_by_side, transfer_table
    from helpers.engine.ablation import TRANSFER_QUESTION, transfer_test
    from helpers.store.records import experiment_dir, write_json

    tasks = load_house_suite()
    errors_tasks = tasks[tasks.conventions.map(lambda c: set(c) == {"errors"})].head(2)
    write_json(experiment_dir("agent-a") / "split.json",
               {"train": [], "test": list(errors_tasks.instance_id), "source": "house"})
    store = RulesetStore("agent-a")
    store.save("")
    store.save(f"- [R1] {CONVENTIONS['errors']['rule']}\n", parent=0, loop=0)
    store.save(f"- [R1] {CONVENTIONS['errors']['rule']}\n- [R2] Say nothing.\n", parent=1, loop=1)
    finished_loop("agent-a", 0, 0, passes=1, n=2, val=0)
    finished_loop("agent-a", 1, 1, passes=1, n=2, val=2, rules=1)  # validation keeps v1 ...
    finished_loop("agent-a", 2, 2, passes=1, n=2, val=1, rules=2)  # ... not the latest
    row = transfer_test("agent-a", ConventionAgent(), workers=2)
    assert (row["agent"], row["model"], row["start"], row["kept"]) == ("convention-agent", "m", "no rules", "v1")
    assert (row["start_accuracy"], row["kept_accuracy"], row["n"]) == (0.0, 1.0, len(errors_tasks))
    assert row["ci_low"] < row["gain"] == 1.0 <= row["ci_high"] and row["p_value"] == 1.0
    assert row["decision"].startswith("Noise: +100.0 points (p = 1)")  # one task cannot be significant
    assert row["dry_run"] is False and row["tokens_change"] is None  # this agent meters nothing: not "0%"
    runs = sorted(p.stem for p in (experiment_dir("agent-a-transfer") / "runs").glob("*.jsonl"))
    assert runs == ["convention-agent_m_test_v0", "convention-agent_m_test_v1"]  # each resumes on its own
    table = transfer_table([row, {**row, "model": "other", "dry_run": True}])
    assert list(table["data"]) == ["real", "SCRIPTED"] and table.loc[0, "gain (points, 95% CI)"].startswith("+100.0 (")
    assert table.loc[0, "start"] == "no rules: 0.00" and table.loc[0, "kept"] == "v1: 1.00"
    assert "second, separate question" in TRANSFER_QUESTION
    finished_loop("agent-b", 0, 0, passes=2, n=2)
    table = side_by_side(["agent-a", "agent-b"])
    assert list(table.columns) == ["agent-a", "agent-b"] and table.loc[0, "agent-b"] == "1.00"


def test_a_transfer_of_an_experiment_that_kept_its_start_claims_nothing(isolated):
    from helpers.engine.ablation import transfer_test
    from helpers.store.records import experiment_dir, write_json

    tasks = load_house_suite().head(1)
    write_json(experiment_dir("kept-start") / "split.json", {"train": [], "test": list(tasks.instance_id), "source": "house"})
    RulesetStore("kept-start").save("")
    finished_loop("kept-start", 0, 0, passes=1, n=1, dry_run=True)
    row = transfer_test("kept-start", ConventionAgent(), workers=1)
    assert row["decision"].startswith("No test: kept-start kept its start (no rules)") and row["dry_run"] is True
    with pytest.raises(ValueError, match="no finished loop"):
        transfer_test("never-ran", ConventionAgent())


def test_a_scripted_experiments_summary_says_so_before_any_number(isolated):
    finished_loop("scripted", 0, 0, passes=5, dry_run=True)
    finished_loop("scripted", 1, 1, passes=25, rules=2, dry_run=True)
    assert evidence_summary("scripted").startswith("SCRIPTED DRY RUN")


# --- the baselines: secondary comparisons ----------------------------------------------------------
def arm_frame(outcomes, tokens=1000.0, cost=None, seconds=30.0, errored=()):
    """Test rows of one arm: task t-i passes when outcomes[i] is 1; tasks in `errored` errored (infrastructure)."""
    n = len(outcomes)
    return pd.DataFrame({"instance_id": [f"t-{i}" for i in range(n)],
                         "status": ["error" if i in errored else "completed" for i in range(n)],
                         "error": ["provider outage" if i in errored else "" for i in range(n)],
                         "pass_or_fail": ["pass" if o else "fail" for o in outcomes], "mode": "act",
                         "input_tokens": tokens * 0.9, "output_tokens": tokens * 0.1,
                         "cost_usd": cost, "duration_s": seconds})


def test_secondary_comparisons_are_each_a_paired_mcnemar_test_holm_corrected_together():
    from helpers.analysis.secondaries import secondary_comparisons
    from helpers.stats.intervals import mcnemar_exact

    none = arm_frame([0] * 30)
    learned = arm_frame([1] * 20 + [0] * 10)
    init = arm_frame([1] * 6 + [0] * 24)
    team = arm_frame([1] * 12 + [0] * 18)
    found = secondary_comparisons({"none": none, "learned": learned, "init": init, "team": team})
    assert [s.pair for s in found] == [("learned", "init"), ("learned", "team"), ("init", "none"), ("team", "none")]
    assert all(s.status == "compared" for s in found)
    learned_init, learned_team, init_none, team_none = found
    assert (learned_init.comparison.b_only, learned_init.comparison.a_only) == (14, 0)
    raw = [mcnemar_exact(0, 14), mcnemar_exact(0, 8), mcnemar_exact(0, 6), mcnemar_exact(0, 12)]
    assert [s.comparison.p_value for s in found] == pytest.approx(raw)
    # Holm by hand: sorted raw p-values times 4, 3, 2, 1, the running maximum carried down
    order = sorted(range(4), key=lambda i: raw[i])
    expected, running = [0.0] * 4, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (4 - rank) * raw[i]))
        expected[i] = running
    assert [s.p_holm for s in found] == pytest.approx(expected)
    assert [s.significant for s in found] == [p < 0.05 for p in expected]
    assert learned_init.p_holm == pytest.approx(4 * raw[0])  # the smallest of four: times four
    assert "Secondary: learned vs init" in learned_init.summary() and "Holm-adjusted p" in learned_init.summary()


def test_a_missing_arm_is_skipped_and_an_errored_arm_is_named_never_read_as_no_rules():
    from helpers.analysis.secondaries import answer_sentence, secondary_comparisons
    from helpers.stats.intervals import mcnemar_exact

    frames = {"none": arm_frame([0] * 20), "learned": arm_frame([1] * 12 + [0] * 8), "init": None}
    states = {"init": {"status": "errored", "why": "codex's init run wrote no AGENTS.md"},
              "team": {"status": "skipped", "why": "the repository holds no rules file at its base commit"}}
    found = secondary_comparisons(frames, states)
    by_pair = {s.pair: s for s in found}
    assert by_pair[("learned", "init")].status == "errored" and by_pair[("init", "none")].status == "errored"
    assert "codex's init run wrote no AGENTS.md" in by_pair[("learned", "init")].why
    assert by_pair[("learned", "team")].status == "skipped" and "no rules file" in by_pair[("team", "none")].why
    assert all(s.comparison is None for s in found)  # nothing compared: no arm stood in for "no rules"
    assert answer_sentence("init", by_pair[("learned", "init")]).endswith(
        "Not answered: the init arm errored: codex's init run wrote no AGENTS.md.")
    # with one pair compared, Holm's family is that one test: adjusted p = raw p
    frames["team"] = arm_frame([1] * 4 + [0] * 16)
    found = secondary_comparisons(frames, states)
    compared = [s for s in found if s.status == "compared"]
    assert [s.pair for s in compared] == [("learned", "team"), ("team", "none")]
    # Holm over the two that ran (m = 2): the smaller p times 2, the larger times 1
    assert compared[0].p_holm == pytest.approx(2 * mcnemar_exact(0, 8))
    assert compared[1].p_holm == pytest.approx(mcnemar_exact(0, 4))


def test_the_answer_says_yes_no_or_noise_from_the_corrected_test():
    from helpers.analysis.secondaries import answer_sentence, secondary_comparisons

    none = arm_frame([0] * 30)
    for learned, init, starts in (([1] * 20 + [0] * 10, [0] * 30, "Yes ("),
                                  ([0] * 30, [1] * 20 + [0] * 10, "No: the init file did better"),
                                  ([1] * 3 + [0] * 27, [1] * 2 + [0] * 28, "Not shown: the difference is noise")):
        found = secondary_comparisons({"none": none, "learned": arm_frame(learned), "init": arm_frame(init)})
        sentence = answer_sentence("init", found[0])
        assert sentence.startswith("Do the learned rules beat what the agent's own /init writes? " + starts), sentence
        assert "secondary" in sentence and "Holm-adjusted p" in sentence


def test_an_arms_cost_per_run_leaves_infrastructure_errors_out_and_says_when_nothing_was_priced():
    from helpers.analysis.run_costs import arm_cost

    rows = arm_frame([1, 0, 1, 0], tokens=2000.0, cost=0.01, seconds=40.0, errored=(3,))
    rows.loc[3, "input_tokens"] = 10**9  # an errored run's usage says nothing about the arm
    assert arm_cost(rows) == {"tokens": pytest.approx(2000.0), "cost_usd": pytest.approx(0.01),
                              "duration_s": pytest.approx(40.0)}
    assert arm_cost(arm_frame([1, 0]))["cost_usd"] is None  # unpriced: no dollars, never $0
    assert arm_cost(None) == {"tokens": None, "cost_usd": None, "duration_s": None}


def test_the_baselines_summary_answers_both_questions_with_costs_sizes_and_the_limits_the_agent_reads(isolated):
    from helpers.analysis.evidence import baselines_summary, evidence_summary
    from helpers.store.arms import save_arm

    store = RulesetStore("arms")
    store.save("")
    store.save("- [r1] Use the house logger.\n", parent=0, loop=0)
    finished_loop("arms", 0, 0, passes=2, val=2, dry_run=True, tokens=[1000] * 30)
    finished_loop("arms", 1, 1, passes=24, val=24, rules=1, dry_run=True, tokens=[1100] * 30)
    with open(loops_path("arms")) as handle:  # the loops ran Codex, whose documented limit is 32 KiB
        records = [__import__("json").loads(line) | {"agent": "codex"} for line in handle]
    loops_path("arms").write_text("".join(__import__("json").dumps(r) + "\n" for r in records))
    big = "- Keep the changelog.\n" * 2000  # ~44 KB: over Codex's 32 KiB
    save_arm("arms", "init", {"status": "ran", "label": "codex's /init", "text": big, "dry_run": True},
             arm_frame([1] * 6 + [0] * 24, tokens=1500.0, seconds=20.0))
    save_arm("arms", "team", {"status": "skipped", "why": "the repository holds no rules file at its base commit"})
    summary = baselines_summary("arms")
    assert summary.startswith("SCRIPTED DRY RUN")
    assert "Do the learned rules beat what the agent's own /init writes? Yes (+60.0 points" in summary
    assert ("Do the learned rules beat the file the team already has? Not answered: no team arm: the repository "
            "holds no rules file at its base commit.") in summary
    assert f"- init (codex's /init): 0.20 on 30 test tasks; 1,500 tokens, scripted: no charge, 20 s per run; file {len(big):,} bytes" in summary
    assert "- team (the team's file): skipped" not in summary and "- team (team): skipped: the repository holds" in summary
    assert "Secondary: init vs none" in summary and "Secondary: team vs none: skipped" in summary
    assert f"Size warning: the init arm's rules file is {len(big):,} bytes, over codex's documented limit of 32,768 bytes" in summary
    assert "Holm-corrected together" in summary
    assert "Do the learned rules beat what the agent's own /init writes?" in evidence_summary("arms")
    assert "before it stopped" not in summary  # its loops ran the test split: no one test stopped anything


def test_where_the_one_test_stopped_early_the_baselines_say_so_and_nowhere_else():
    from helpers.analysis.evidence import stopping_point_note

    assert stopping_point_note(None) is None and stopping_point_note({"order": ["a", "b"]}) is None  # declared only
    assert stopping_point_note({"tasks_run": 48, "tasks_saved": 0}) is None  # it ran every task
    assert stopping_point_note({"tasks_run": 16, "tasks_saved": 32}) == (
        "The arms ran on the 16 test tasks the one test ran before it stopped (of 48): the secondaries reuse its "
        "stopping point, and no arm paid for a task it never ran.")


def test_the_baselines_table_and_forest_plot_show_each_arm_against_no_rules_and_name_the_arms_that_did_not_run(isolated):
    from helpers.analysis.baseline_plots import plot_baselines
    from helpers.analysis.evidence import baselines_result, baselines_table
    from helpers.store.arms import save_arm

    store = RulesetStore("table")
    store.save("")
    store.save("- [r1] Use the house logger.\n", parent=0, loop=0)
    finished_loop("table", 0, 0, passes=2, val=2, dry_run=True)
    finished_loop("table", 1, 1, passes=24, val=24, rules=1, dry_run=True)
    save_arm("table", "init", {"status": "errored", "why": "codex's init run wrote no AGENTS.md", "label": "codex's /init"})
    save_arm("table", "team", {"status": "ran", "label": "the team's AGENTS.md", "text": "- Log through the logger.\n"},
             arm_frame([1] * 8 + [0] * 22))
    table = baselines_table("table").set_index("arm")
    assert list(table.index) == ["none", "learned", "init", "team"] and set(table["data"]) == {"SCRIPTED"}
    assert table.loc["learned", "vs none (points, 95% CI)"].startswith("+73.3 (") and "(primary)" in table.loc["learned", "p"]
    assert table.loc["team", "vs none (points, 95% CI)"].startswith("+20.0 (") and "Holm-adjusted" in table.loc["team", "p"]
    assert table.loc["init", "status"] == "errored" and pd.isna(table.loc["init", "test accuracy"])  # never a 0
    assert table.loc["init", "why"] == "codex's init run wrote no AGENTS.md"
    assert table.loc["team", "bytes"] == len("- Log through the logger.\n") and table.loc["team", "rules"] == 1
    figure = plot_baselines(baselines_result("table"), "table")
    ax = figure.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[1] == "init: errored: codex's init run wrote no AGENTS.md" and labels[0].startswith("learned (v1): p = ")
    assert len(ax.containers) == 2  # a point with its interval for learned and team only
    assert "SCRIPTED DRY RUN" in ax.get_title()


def test_the_summary_says_how_errored_pairs_were_counted(isolated):
    from helpers.stats.outcomes import run_outcome

    finished_loop("errored", 0, 0, passes=5, val=5)
    finished_loop("errored", 1, 1, passes=20, val=20, rules=2)
    for loop, (host, own) in {0: (28, 29), 1: (27, 26)}.items():  # on each side: one the host saw, one the agent's
        path = split_results_path("errored", "test", loop)
        rows = pd.read_csv(path).assign(host_error="", error="")
        rows.loc[[host, own], "status"] = "error"
        rows.loc[host, ["host_error", "error"]] = ["the model provider failed: status 503", "503"]
        rows.loc[own, "error"] = "the agent's CLI died of signal 9 (the host's wait)"
        write_csv(rows, path)
    assert run_outcome(pd.read_csv(path).iloc[26]) == "errored: rules"  # a CSV's empty host_error reads as none
    summary = evidence_summary("errored")
    assert ("Errored pairs: 2 pairs with an infrastructure error on either side left out; 2 failed runs the agent "
            "ended itself (its own exit, its own calls, its limits) counted as failures.") in summary
    assert "on 28 tasks" in summary  # 30 tasks, the 2 with a host-seen error on either side left out


def test_a_one_test_run_on_its_own_gives_the_decision_where_it_stopped_and_the_runs_it_saved(isolated):
    from dataclasses import asdict

    from helpers.stats.sequential import SequentialDesign, sequential_test
    from helpers.store.loops import save_one_test, save_one_test_rows

    finished_loop("seq", 0, 0, passes=5, val=5, splits=("train",))
    finished_loop("seq", 1, 1, passes=20, val=20, rules=3, splits=("train",))
    design = SequentialDesign(n_tasks=48, batch=8)
    pairs = [(False, i % 4 != 3) for i in range(16)]  # three of every four tasks flip to pass, none back
    result = sequential_test(pairs, design)
    assert result.decision == "help" and result.tasks_run == 16
    save_one_test("seq", {"design": asdict(design), "method": design.describe(), "decision": result.decision,
                          "tasks_run": 16, "tasks_saved": result.tasks_saved, "sentence": result.sentence()})
    for side, passed in (("start", [False] * 16), ("kept", [kept for _, kept in pairs])):
        save_one_test_rows("seq", side, pd.DataFrame({
            "instance_id": [f"t-{i}" for i in range(16)], "status": "completed", "mode": "act",
            "pass_or_fail": ["pass" if p else "fail" for p in passed], "cost_usd": 0.5, "input_tokens": 100,
            "output_tokens": 10, "duration_s": 30.0}))
    summary = evidence_summary("seq")
    assert "Stopped after 16 of 48 test tasks: the rules help" in summary
    assert "It saved 64 agent runs against the fixed design (about $32.00 at this test's mean cost per run)" in summary
    assert "v1 vs no rules on 16 tasks" in summary and "the fixed test's reading, not the decision" in summary
    assert "O'Brien-Fleming alpha spending" in summary and "With 48 test tasks" in summary
