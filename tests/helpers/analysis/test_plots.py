"""Plots render headless from saved results into PNG files, labeled when the data is a scripted dry run."""


import pandas as pd
import pytest

from helpers.analysis.plots import DRY_RUN_TITLE, flipped_tasks, load_loops, plot_accuracy, plot_all
from helpers.store.records import append_jsonl, loops_path, split_results_path, write_csv


def fake_experiment(root, name="demo", dry_run=True):
    outcomes = {0: ["fail", "fail", "pass"], 1: ["pass", "fail", "pass"], 2: ["pass", "pass", "fail"]}
    for loop, verdicts in outcomes.items():
        append_jsonl(loops_path(name, root), {
            "loop": loop, "ruleset_version": loop, "train_accuracy": 0.2 * loop, "test_accuracy": 0.1 * loop,
            "ruleset_rules": 2 * loop, "ruleset_tokens": 40 * loop, "agent_cost_usd": 1.0, "judge_cost_usd": 0.1,
            "optimizer_cost_usd": 0.3, "cost_usd": 1.4, "dry_run": dry_run})
        rows = pd.DataFrame({"instance_id": ["a-1", "a-2", "b-1"], "repo": ["org/a", "org/a", "org/b"],
                             "pass_or_fail": verdicts, "failed_tests": [[], ["t::x"], []]})
        for split in ("train", "test"):
            write_csv(rows, split_results_path(name, split, loop, root))


def test_every_figure_is_saved_as_a_png(tmp_path):
    fake_experiment(tmp_path)
    paths = plot_all("demo", results_root=tmp_path)
    assert set(paths) == {"accuracy", "ruleset_size", "resolved_by_repo", "cost", "test_outcomes"}
    for path in paths.values():
        assert path.parent == tmp_path / "demo/plots"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5_000


def test_titles_say_scripted_dry_run_only_for_dry_runs(tmp_path):
    fake_experiment(tmp_path, "dry", dry_run=True)
    fake_experiment(tmp_path, "real", dry_run=False)
    dry = plot_accuracy(load_loops("dry", tmp_path)).axes[0].get_title()
    real = plot_accuracy(load_loops("real", tmp_path)).axes[0].get_title()
    assert DRY_RUN_TITLE in dry and DRY_RUN_TITLE not in real


def test_flipped_test_tasks_are_listed_loop_to_loop(tmp_path):
    fake_experiment(tmp_path)
    flips = flipped_tasks("demo", tmp_path)
    assert flips.to_dict("records") == [
        {"instance_id": "a-1", "from_loop": 0, "to_loop": 1, "before": "fail", "after": "pass"},
        {"instance_id": "a-2", "from_loop": 1, "to_loop": 2, "before": "fail", "after": "pass"},
        {"instance_id": "b-1", "from_loop": 1, "to_loop": 2, "before": "pass", "after": "fail"},
    ]


def test_an_experiment_without_results_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="run the quickstart"):
        plot_all("nothing-here", results_root=tmp_path)


def test_plotting_does_not_switch_pyplots_backend(tmp_path):
    import subprocess
    import sys

    fake_experiment(tmp_path)
    code = (f"import matplotlib; before = matplotlib.get_backend(); from helpers.analysis.plots import plot_all; "
            f"plot_all('demo', results_root={str(tmp_path)!r}); print(before == matplotlib.get_backend())")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "True"


def test_accuracy_carries_its_intervals_and_counts_errored_runs_apart():
    loops = pd.DataFrame({"loop": [0, 1], "train_accuracy": [0.2, None], "test_accuracy": [0.1, 0.5],
                          "train_ci_low": [0.05, None], "train_ci_high": [0.5, None], "test_ci_low": [0.01, 0.2],
                          "test_ci_high": [0.4, 0.8], "train_errors": [0, 6], "test_errors": [0, 0], "dry_run": [False] * 2})
    ax = plot_accuracy(loops, "x").axes[0]
    assert len(ax.containers) == 2  # one errorbar series per split
    assert any("6 errored runs left out" in text.get_text() for text in ax.texts)


def test_the_ablation_forest_plot_marks_rules_whose_removal_helped():
    from helpers.analysis.plots import plot_ablation

    effects = pd.DataFrame({"rule": ["R1", "R2", "R3"], "text": ["Helps.", "Hurts.", "Weighs."],
                            "effect_of_removal": [-0.5, 0.25, 0.0], "ci_low": [-0.8, -0.1, -0.3],
                            "ci_high": [-0.2, 0.6, 0.3], "harmful": [False, True, False], "tokens": [12, 9, 40],
                            "dead_weight": [False, True, True]})
    ax = plot_ablation(effects, "x", dry_run=True).axes[0]
    assert DRY_RUN_TITLE in ax.get_title()
    colors = [c.lines[0].get_color() for c in ax.containers]
    assert colors == ["tab:blue", "tab:red", "tab:orange"]  # orange: costs tokens and shows no effect
    assert [t.get_text() for t in ax.get_yticklabels()] == ["R1 (12 tokens): Helps.", "R2 (9 tokens): Hurts.",
                                                           "R3 (40 tokens): Weighs."]


def test_the_cost_plot_labels_unpriced_and_local_loops_instead_of_drawing_them_as_zero():
    from helpers.analysis.plots import cost_notes, plot_cost

    loops = pd.DataFrame([
        {"loop": 0, "agent_cost_usd": None, "judge_cost_usd": None, "optimizer_cost_usd": None, "cost_usd": None,
         "unpriced": ["agent", "judge", "optimizer"], "local": [], "dry_run": False},
        {"loop": 1, "agent_cost_usd": None, "judge_cost_usd": 0.2, "optimizer_cost_usd": 0.1, "cost_usd": 0.3,
         "unpriced": [], "local": ["agent"], "dry_run": False},
        {"loop": 2, "agent_cost_usd": 1.0, "judge_cost_usd": 0.2, "optimizer_cost_usd": 0.1, "cost_usd": 1.3,
         "unpriced": [], "local": [], "dry_run": False}])
    assert cost_notes(loops) == ["agent, judge, optimizer unpriced", "agent local: no charge", ""]
    shown = [text.get_text() for text in plot_cost(loops, "x").axes[0].texts]
    assert shown == ["agent, judge, optimizer unpriced", "agent local: no charge"]
