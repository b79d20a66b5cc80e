"""Each figure's caption is drawn from the figure's data: it changes when the data change, says scripted
numbers are scripted, and fits a notebook's width."""

import pandas as pd

from helpers.analysis import captions


def loops_of(**columns):
    size = len(next(iter(columns.values())))
    return pd.DataFrame({"loop": range(size), "dry_run": [False] * size, **columns})


def test_the_accuracy_caption_names_each_splits_move_and_calls_overlapping_intervals_noise():
    noisy = loops_of(train_accuracy=[0.2, 0.6], test_accuracy=[0.25, 0.5], test_ci_low=[0.05, 0.2],
                     test_ci_high=[0.6, 0.8])
    text = captions.describe_accuracy(noisy).replace("\n", " ")
    assert "train 0.20 to 0.60; test 0.25 to 0.50" in text and "within the noise" in text
    clear = noisy.assign(test_accuracy=[0.1, 0.9], test_ci_low=[0.0, 0.7], test_ci_high=[0.3, 1.0])
    text = captions.describe_accuracy(clear).replace("\n", " ")
    assert "test 0.10 to 0.90" in text and "do not overlap" in text and "noise" not in text


def test_the_accuracy_caption_counts_errored_runs_and_says_a_dry_run_is_scripted():
    loops = loops_of(test_accuracy=[0.5, 0.5], test_errors=[2, 1]).assign(dry_run=True)
    text = captions.describe_accuracy(loops).replace("\n", " ")
    assert "3 errored runs left out" in text and "Scripted dry run" in text
    assert "Scripted" not in captions.describe_accuracy(loops.assign(dry_run=False))


def test_the_ruleset_caption_follows_the_counts():
    assert "loop 2 with 5 rules (200 tokens)" in captions.describe_ruleset_size(
        loops_of(ruleset_rules=[0, 1, 5], ruleset_tokens=[0, 40, 200])).replace("\n", " ")
    text = captions.describe_ruleset_size(loops_of(ruleset_rules=[0, 4, 5], ruleset_tokens=[0, 90, 99])).replace("\n", " ")
    assert "loop 1 ran with 4 rules more" in text and "1 rule (" not in text
    assert "did not grow" in captions.describe_ruleset_size(loops_of(ruleset_rules=[2, 2], ruleset_tokens=[50, 50]))


def test_the_repository_caption_names_the_repositories_whose_lines_coincide():
    rows = pd.DataFrame({"instance_id": ["a", "b", "c"] * 2, "repo": ["org/a", "org/b", "org/c"] * 2,
                         "loop": [0, 0, 0, 1, 1, 1], "pass_or_fail": ["fail", "fail", "fail", "pass", "pass", "fail"]})
    text = captions.describe_repo_resolved(rows, loops_of(x=[0, 1])).replace("\n", " ")
    assert "org/a 0.00 to 1.00 (1 task)" in text and "org/c 0.00 to 0.00" in text
    assert "org/a and org/b have the same share in every loop" in text
    rows.loc[4, "pass_or_fail"] = "fail"  # org/b now fails as org/c does
    text = captions.describe_repo_resolved(rows, loops_of(x=[0, 1])).replace("\n", " ")
    assert "org/b and org/c have the same share" in text and "org/a and" not in text
    rows.loc[5, "pass_or_fail"] = "pass"
    assert "same share" not in captions.describe_repo_resolved(rows[rows.repo != "org/a"], loops_of(x=[0, 1]))


def test_the_cost_caption_sums_the_tokens_and_quotes_the_cost_as_the_labels_do():
    loops = loops_of(agent_tokens=[9000, 11000], judge_tokens=[500, 500], optimizer_tokens=[500, 500],
                     cost_usd=[0.5, 0.7])
    text = captions.describe_cost(loops).replace("\n", " ")
    assert "Loop 0 used 10,000 tokens and loop 1 12,000 (all 2 loops: 22,000)" in text and "91%" in text
    assert "$0.50, $0.70" in text
    assert "scripted: no charge" in captions.describe_cost(loops.assign(dry_run=True)).replace("\n", " ")
    assert "No token counts were recorded" in captions.describe_cost(loops_of(cost_usd=[0.5]))


def test_the_cost_accuracy_caption_says_which_split_its_axes_measure():
    points = pd.DataFrame({"version": [0, 1], "loop": [0, 1], "split": ["val", "val"], "accuracy": [0.0, 0.5],
                           "ci_low": [0, 0.1], "ci_high": [0.6, 0.9], "tokens_per_run": [5766.0, 6291.0],
                           "ruleset_tokens": [0, 112], "kept": [False, True]})
    text = captions.describe_cost_accuracy(points).replace("\n", " ")
    assert "v0 at 5,766 tokens per run and validation accuracy 0.00" in text and "v1 at 6,291" in text
    assert "measured on the validation tasks" in text and "test tasks" in text
    text = captions.describe_cost_accuracy(points.assign(kept=[True, False], split="train")).replace("\n", " ")
    assert "is the kept version" in text and "train accuracy 0.00" in text


def test_the_test_outcomes_caption_lists_the_flips_by_direction():
    rows = pd.DataFrame({"instance_id": ["a", "b", "c"] * 2, "loop": [0, 0, 0, 1, 1, 1],
                         "pass_or_fail": ["fail", "pass", "fail", "pass", "fail", "fail"]})
    text = captions.describe_test_outcomes(rows, loops_of(x=[0, 1])).replace("\n", " ")
    assert text.startswith("1 of 3 test tasks passed in loop 0, 1 in loop 1.")
    assert "1 to passed (a); 1 to failed (b)" in text
    same = rows.assign(pass_or_fail=["fail"] * 6)
    assert "No test task changed" in captions.describe_test_outcomes(same, loops_of(x=[0, 1]))


def test_the_ablation_caption_names_the_rule_that_helps_most_and_the_candidates_for_deletion():
    effects = pd.DataFrame({"rule": ["R1", "R2", "R3"], "effect_of_removal": [-0.5, 0.25, 0.0],
                            "ci_low": [-0.8, -0.1, -0.3], "ci_high": [-0.2, 0.6, 0.3],
                            "harmful": [False, True, False], "dead_weight": [False, False, True]})
    text = captions.describe_ablation(effects).replace("\n", " ")
    assert "Leaving out R1 changes accuracy by -0.50 (95% CI -0.80 to -0.20)" in text
    assert "2 of 3 intervals cross zero" in text and "removing R2 helped" in text and "dead weight (orange): R3" in text


def test_the_mining_caption_counts_what_was_kept_and_why_the_rest_was_dropped():
    table = pd.DataFrame({"kept": [True, False, False, True], "reason": ["", "no tests", "no tests", ""]})
    assert captions.describe_mining(table) == "Of 4 commits scanned, 2 became tasks. Dropped: no tests (2)."


def test_latent_rules_caption_reads_each_rule_counts_last_loop_beside_the_published_share(tmp_path):
    from helpers.store.records import append_jsonl, loops_path

    for loop, share in enumerate([0.0, 0.4]):
        append_jsonl(loops_path("lr-50rules", tmp_path), {"loop": loop, "test_accuracy": share, "dry_run": True})
    text = captions.describe_latent_rules("lr", [50, 100], results_root=tmp_path).replace("\n", " ")
    assert "50 rules 0.40 after loop 1 (published 0.00); 100 rules: not run" in text and "Scripted" in text
    for loop, share in enumerate([0.0, 0.1]):
        append_jsonl(loops_path("lr-100rules", tmp_path), {"loop": loop, "test_accuracy": share, "dry_run": True})
    text = captions.describe_latent_rules("lr", [50, 100], results_root=tmp_path).replace("\n", " ")
    assert "100 rules 0.10 after loop 1" in text and "the fewer pages follow them all" in text
    assert "fewer pages" not in captions.describe_latent_rules("lr", [100, 50], results_root=tmp_path)


def test_captions_wrap_at_words_within_a_notebooks_width():
    loops = loops_of(train_accuracy=[0.2, 0.6], val_accuracy=[0.1, 0.3], test_accuracy=[0.25, 0.5],
                     test_ci_low=[0.05, 0.2], test_ci_high=[0.6, 0.8], test_errors=[1, 0]).assign(dry_run=True)
    text = captions.describe_accuracy(loops)
    assert all(len(line) <= captions.WIDTH for line in text.split("\n")) and text.count("\n") >= 2
    assert " ".join(text.split()) == " ".join(text.replace("\n", " ").split())


def test_one_loop_is_read_as_one_loop_not_as_a_change():
    text = captions.describe_accuracy(loops_of(train_accuracy=[0.25], test_accuracy=[0.5])).replace("\n", " ")
    assert text.startswith("Loop 0 (one loop: nothing to compare yet): train 0.25; test 0.50.") and "0.25 to" not in text
