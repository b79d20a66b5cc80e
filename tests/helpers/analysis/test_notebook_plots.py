"""Figures of one notebook's study: the ablation forest plot labels rules whole and explains every mark; the
latent-rules lines and the mining counts stay readable."""

import pandas as pd

from helpers.analysis.notebook_plots import ablation_label, plot_ablation, plot_latent_rules
from helpers.analysis.figure_style import DRY_RUN_TITLE
from helpers.store.records import append_jsonl, loops_path


def test_the_ablation_forest_plot_marks_rules_whose_removal_helped():
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


def test_a_rules_label_is_wrapped_between_words_never_cut_mid_word():
    text = "Every change that users can see gets a line under `## Unreleased` in CHANGELOG.md, in the same commit."
    label = ablation_label("R2", text, 31, width=30)
    words = set(("R2 (31 tokens): " + text).split())
    assert all(len(line) <= 30 for line in label.split("\n")) and label.count("\n") >= 2
    assert all(word in words or word == "..." for word in label.split())  # whole words, nothing cut
    assert ablation_label("R1", "Short.", None) == "R1: Short."


def test_every_colour_of_the_ablation_plot_is_explained_in_its_legend():
    effects = pd.DataFrame({"rule": ["R1", "R2"], "text": ["Helps.", "Weighs."], "effect_of_removal": [-0.5, 0.0],
                            "ci_low": [-0.8, -0.3], "ci_high": [-0.2, 0.3], "harmful": [False, False], "tokens": [12, 40],
                            "dead_weight": [False, True]})
    figure = plot_ablation(effects, "x")
    legend = figure.legends[0] if figure.legends else figure.axes[0].get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    assert len(texts) == 2 and "keep" in texts[0] and "dead weight" in texts[1]
    assert [h.get_color() for h in legend.legend_handles] == ["tab:blue", "tab:orange"]


def test_latent_rule_counts_with_equal_shares_stay_apart(tmp_path):
    for count in (50, 100):
        for loop, share in enumerate([0.0, 0.2]):
            append_jsonl(loops_path(f"lr-{count}rules", tmp_path), {"loop": loop, "test_accuracy": share,
                                                                   "test_ci_low": 0.0, "test_ci_high": 0.5})
    ax = plot_latent_rules("lr", [50, 100], results_root=tmp_path).axes[0]
    series = [line for line in ax.lines if line.get_linestyle() != "None" and len(line.get_xdata()) == 2]
    assert len(series) == 2
    assert tuple(series[0].get_xdata()) != tuple(series[1].get_xdata())
    assert series[0].get_linestyle() != series[1].get_linestyle()
