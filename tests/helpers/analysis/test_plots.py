"""Plots render headless from saved results into PNG files, labeled when the data is a scripted dry run."""


import pandas as pd
import pytest

from helpers.analysis.figure_style import DRY_RUN_TITLE
from helpers.analysis.plots import flipped_tasks, load_loops, plot_accuracy, plot_all
from helpers.store.records import append_jsonl, loops_path, split_results_path, write_csv


def fake_experiment(root, name="demo", dry_run=True):
    outcomes = {0: ["fail", "fail", "pass"], 1: ["pass", "fail", "pass"], 2: ["pass", "pass", "fail"]}
    for loop, verdicts in outcomes.items():
        append_jsonl(loops_path(name, root), {
            "loop": loop, "ruleset_version": loop, "train_accuracy": 0.2 * loop, "test_accuracy": 0.1 * loop,
            "ruleset_rules": 2 * loop, "ruleset_tokens": 40 * loop, "agent_cost_usd": 1.0, "judge_cost_usd": 0.1,
            "optimizer_cost_usd": 0.3, "cost_usd": 1.4, "dry_run": dry_run, "agent_tokens": 30_000 + 1000 * loop,
            "judge_tokens": 4000, "optimizer_tokens": 2000})
        rows = pd.DataFrame({"instance_id": ["a-1", "a-2", "b-1"], "repo": ["org/a", "org/a", "org/b"],
                             "pass_or_fail": verdicts, "failed_tests": [[], ["t::x"], []],
                             "input_tokens": 9000 + 300 * loop, "output_tokens": 1000})
        for split in ("train", "test"):
            write_csv(rows, split_results_path(name, split, loop, root))


def test_every_figure_is_saved_as_a_png(tmp_path):
    fake_experiment(tmp_path)
    paths = plot_all("demo", results_root=tmp_path)
    assert set(paths) == {"accuracy", "ruleset_size", "resolved_by_repo", "cost", "cost_accuracy", "test_outcomes"}
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


def role_tokens(agent, judge, optimizer):
    return {"agent_tokens": agent, "judge_tokens": judge, "optimizer_tokens": optimizer}


def test_the_cost_plot_shows_tokens_per_role_and_labels_each_loops_cost_in_words_never_as_zero():
    from helpers.analysis.captions import cost_labels, cost_notes
    from helpers.analysis.cost_plots import plot_cost

    loops = pd.DataFrame([
        {"loop": 0, "agent_cost_usd": None, "judge_cost_usd": None, "optimizer_cost_usd": None, "cost_usd": None,
         "unpriced": ["agent", "judge", "optimizer"], "local": [], "dry_run": False, **role_tokens(9000, 800, 400)},
        {"loop": 1, "agent_cost_usd": None, "judge_cost_usd": 0.2, "optimizer_cost_usd": 0.1, "cost_usd": 0.3,
         "unpriced": [], "local": ["agent"], "dry_run": False, **role_tokens(9500, 800, 400)},
        {"loop": 2, "agent_cost_usd": 1.0, "judge_cost_usd": 0.2, "optimizer_cost_usd": 0.1, "cost_usd": 1.3,
         "unpriced": [], "local": [], "dry_run": False, **role_tokens(9900, 800, 400)},
        {"loop": 3, "agent_cost_usd": 0.003, "judge_cost_usd": 0.0, "optimizer_cost_usd": 0.0, "cost_usd": 0.003,
         "unpriced": [], "local": [], "dry_run": False, **role_tokens(120, 10, 10)}])
    assert cost_notes(loops) == ["agent, judge, optimizer unpriced", "agent local: no charge", "", ""]
    assert cost_labels(loops) == ["agent, judge, optimizer unpriced", "$0.30 (agent local: no charge)", "$1.30", "$0.003"]
    ax = plot_cost(loops, "x").axes[0]
    assert [text.get_text().replace("\n", " ") for text in ax.texts] == cost_labels(loops)
    assert [bar.get_height() for bar in ax.containers[0]] == [9000, 9500, 9900, 120]  # the agent's tokens, loop by loop


def test_the_cost_plot_has_bars_in_the_dry_run_and_says_scripted_no_charge_on_an_axis_from_zero():
    from helpers.analysis.cost_plots import plot_cost

    loops = pd.DataFrame([{"loop": loop, "agent_cost_usd": None, "judge_cost_usd": None, "optimizer_cost_usd": None,
                           "cost_usd": None, "unpriced": ["agent", "judge", "optimizer"], "local": [], "dry_run": True,
                           **role_tokens(4000 + 500 * loop, 600, 300)} for loop in range(3)])
    ax = plot_cost(loops, "dry").axes[0]
    assert [c.get_label() for c in ax.containers] == ["agent", "judge", "optimizer"]
    assert len(ax.patches) == 9 and all(bar.get_height() > 0 for bar in ax.patches)
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] > 5500
    assert [text.get_text() for text in ax.texts] == ["scripted: no charge"] * 3
    assert DRY_RUN_TITLE in ax.get_title() and "tokens" in ax.get_ylabel()


def test_a_loop_record_with_no_token_counts_is_said_so_not_drawn_as_an_empty_frame():
    from helpers.analysis.cost_plots import plot_cost

    loops = pd.DataFrame([{"loop": 0, "cost_usd": 0.5, "unpriced": [], "local": [], "dry_run": False}])
    ax = plot_cost(loops, "old").axes[0]
    assert ax.get_ylim() == (0, 1) and [t.get_text() for t in ax.texts] == ["$0.50", "no token counts recorded for these loops"]


def overlaps(a, b):
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_no_legend_sits_on_a_title_or_an_axis_labels(tmp_path):
    from helpers.analysis import cost_plots, plots

    fake_experiment(tmp_path)
    name = "a-team-experiment-with-a-long-name"  # titles as wide as real ones
    loops = load_loops("demo", tmp_path)
    rows = plots.load_split_rows("demo", "test", tmp_path)
    figures = {"accuracy": plots.plot_accuracy(loops, name), "ruleset_size": plots.plot_ruleset_size(loops, name),
               "resolved_by_repo": plots.plot_repo_resolved(rows, loops, name), "cost": cost_plots.plot_cost(loops, name),
               "cost_accuracy": cost_plots.plot_cost_accuracy(cost_plots.version_costs("demo", tmp_path), name,
                                                             dry_run=True)}
    for figure_name, figure in figures.items():
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        legends = list(figure.legends) + [ax.get_legend() for ax in figure.axes if ax.get_legend() is not None]
        texts = [ax.title for ax in figure.axes if ax.get_title()]
        texts += [label for ax in figure.axes for label in ax.get_xticklabels() + ax.get_yticklabels() if label.get_text()]
        assert legends and texts, figure_name
        for legend in legends:
            for text in texts:
                assert not overlaps(legend.get_window_extent(renderer), text.get_window_extent(renderer)), \
                    (figure_name, text.get_text())


def test_the_cost_accuracy_figure_places_each_version_by_its_tokens_per_run_and_validation_accuracy(tmp_path):
    from helpers.analysis.cost_plots import plot_cost_accuracy, version_costs

    for loop, (passed, tokens) in enumerate([(1, 10_000), (3, 12_000), (2, 14_000)]):
        append_jsonl(loops_path("costly", tmp_path), {
            "loop": loop, "ruleset_version": loop, "ruleset_rules": loop, "ruleset_tokens": 40 * loop,
            "val_accuracy": passed / 4, "val_ci_low": 0.0, "val_ci_high": 1.0, "dry_run": False})
        rows = pd.DataFrame({"instance_id": ["a", "b", "c", "d"], "status": "completed",
                             "pass_or_fail": ["pass"] * passed + ["fail"] * (4 - passed),
                             "input_tokens": tokens - 1000, "output_tokens": 1000})
        for split in ("train", "val", "test"):
            write_csv(rows, split_results_path("costly", split, loop, tmp_path))
    points = version_costs("costly", tmp_path)
    assert points[["version", "split", "accuracy", "tokens_per_run", "kept"]].to_dict("records") == [
        {"version": 0, "split": "val", "accuracy": 0.25, "tokens_per_run": 10_000, "kept": False},
        {"version": 1, "split": "val", "accuracy": 0.75, "tokens_per_run": 12_000, "kept": True},
        {"version": 2, "split": "val", "accuracy": 0.5, "tokens_per_run": 14_000, "kept": False}]
    ax = plot_cost_accuracy(points, "costly").axes[0]
    star = next(line for line in ax.lines if line.get_marker() == "*")
    assert list(star.get_xdata()) == [12_000] and list(star.get_ydata()) == [0.75]  # the kept version
    low, high = ax.get_xlim()  # the x axis spans the versions' token counts, not 0 to the largest
    assert 9_000 < low < 10_000 and 14_000 < high < 15_000 and ax.get_ylim()[0] == 0
    assert ax.get_xlabel().startswith("tokens per agent run on validation tasks") and ax.get_ylabel() == "validation accuracy"
    assert [t.get_text() for t in ax.texts] == ["v0", "v1", "v2"] and ax.get_legend().get_title().get_text() == "v0: no rules"


def test_the_test_outcomes_figure_uses_a_colour_blind_safe_pair_with_a_legend():
    from helpers.analysis.plots import OUTCOME_COLOURS, plot_test_outcomes

    rows = pd.DataFrame({"instance_id": ["a", "a", "b", "b"], "loop": [0, 1, 0, 1],
                         "pass_or_fail": ["fail", "pass", "pass", "pass"]})
    ax = plot_test_outcomes(rows, pd.DataFrame({"loop": [0, 1], "dry_run": [True, True]}), "outcomes").axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["passed", "failed"]
    assert "SCRIPTED DRY RUN" in ax.get_title()
    passed, failed = (tuple(round(c, 3) for c in OUTCOME_COLOURS(v)[:3]) for v in (1.0, 0.0))
    assert passed != failed and (0.0, 0.502, 0.0) not in (passed, failed)  # not the red/green pair


def test_show_figure_saves_the_png_displays_an_image_not_the_figures_repr_and_prints_its_caption(tmp_path, monkeypatch, capsys):
    import IPython.display
    from helpers.analysis.plots import plot_path, plot_ruleset_size, show_figure

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    loops = pd.DataFrame({"loop": [0, 1], "ruleset_rules": [0, 2], "ruleset_tokens": [0, 50], "dry_run": [True] * 2})
    path = show_figure(plot_ruleset_size(loops, "size"), plot_path("size", "ruleset_size", tmp_path), caption="What to see.")
    assert path == tmp_path / "size" / "plots" / "ruleset_size.png" and path.read_bytes().startswith(b"\x89PNG")
    assert len(shown) == 1 and isinstance(shown[0], IPython.display.Image) and shown[0].data.startswith(b"\x89PNG")
    assert capsys.readouterr().out == "What to see.\n"


def test_plot_all_shows_each_figure_followed_by_what_to_read_in_it_from_the_data(tmp_path, monkeypatch, capsys):
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda obj: print("<image>"))
    fake_experiment(tmp_path)
    plot_all("demo", results_root=tmp_path, show=["accuracy", "test_outcomes"])
    out = capsys.readouterr().out.split("<image>\n")[1:]
    assert len(out) == 2
    assert out[0].startswith("From loop 0 to loop 2, accuracy went: train 0.00 to 0.40; test 0.00 to 0.20.")
    assert out[1].startswith("1 of 3 test tasks passed in loop 0, 2 in loop 2.")


def test_series_that_coincide_get_their_own_marker_dash_and_offset():
    from helpers.analysis.plots import plot_repo_resolved

    rows = pd.DataFrame({"instance_id": ["a", "b", "c"] * 2, "repo": ["org/a", "org/b", "org/c"] * 2,
                         "loop": [0, 0, 0, 1, 1, 1], "pass_or_fail": ["fail", "fail", "fail", "pass", "pass", "fail"]})
    ax = plot_repo_resolved(rows, pd.DataFrame({"loop": [0, 1]}), "same").axes[0]
    lines = [line for line in ax.lines if line.get_label().startswith("org/")]
    assert len(lines) == 3
    assert len({(line.get_marker(), line.get_linestyle()) for line in lines}) == 3
    assert len({tuple(line.get_xdata()) for line in lines}) == 3  # org/a and org/b coincide in y: apart in x
    assert all(abs(x - round(x)) < 0.1 for line in lines for x in line.get_xdata())  # still at their loop


def test_counts_of_rules_tick_at_whole_numbers_only():
    from helpers.analysis.plots import plot_ruleset_size

    for rules in ([0, 3], [0, 1], [2, 7, 11]):
        loops = pd.DataFrame({"loop": range(len(rules)), "ruleset_rules": rules, "ruleset_tokens": [40 * r for r in rules]})
        figure = plot_ruleset_size(loops, "ticks")
        figure.canvas.draw()
        ticks = [t for t in figure.axes[0].get_yticks() if figure.axes[0].get_ylim()[0] <= t <= figure.axes[0].get_ylim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), (rules, ticks)


def test_plan_mode_figures_count_the_judges_verdicts_as_the_loop_lines_do(tmp_path):
    from helpers.analysis.cost_plots import version_costs
    from helpers.analysis.plots import load_split_rows

    for loop, verdicts in enumerate([["incorrect", "incorrect"], ["correct", "incorrect"]]):
        append_jsonl(loops_path("plan", tmp_path), {"loop": loop, "ruleset_version": loop, "val_accuracy": loop / 2,
                                                     "ruleset_tokens": 30 * loop, "dry_run": True})
        rows = pd.DataFrame({"instance_id": ["p-1", "p-2"], "repo": "org/p", "mode": "plan", "status": "completed",
                             "pass_or_fail": "not_evaluated", "correctness": verdicts,
                             "input_tokens": 1500, "output_tokens": 200})
        for split in ("train", "val", "test"):
            write_csv(rows, split_results_path("plan", split, loop, tmp_path))
    assert list(load_split_rows("plan", "test", tmp_path)["pass_or_fail"]) == ["fail", "fail", "pass", "fail"]
    assert list(flipped_tasks("plan", tmp_path)["instance_id"]) == ["p-1"]
    assert list(version_costs("plan", tmp_path)["tokens_per_run"]) == [1700, 1700]  # plans' tokens are counted
