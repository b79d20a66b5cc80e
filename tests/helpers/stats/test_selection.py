"""The kept version is chosen on validation; its power figures are exact and checked by simulation."""

import numpy as np
import pandas as pd
import pytest

from helpers.stats.selection import (choose_on_validation, mcnemar_power, minimum_detectable_gain, power_note,
                                    smallest_significant_gain)
from helpers.stats.intervals import mcnemar_exact


def rows(passes, n=10):
    return pd.DataFrame({"instance_id": [f"t{i}" for i in range(n)], "status": "completed",
                         "pass_or_fail": ["pass" if i < passes else "fail" for i in range(n)]})


def test_the_highest_validation_accuracy_is_kept_and_ties_go_to_the_earlier_version():
    choice = choose_on_validation([(0, 0, rows(3)), (1, 1, rows(6)), (2, 2, rows(6))], start_version=0, latest=2)
    assert choice.version == 1 and "highest validation accuracy (0.60 on 10 tasks, start 0.30)" in choice.how
    assert list(choice.candidates["version"]) == [0, 1, 2]


def test_nothing_that_fails_to_beat_the_start_on_validation_is_kept():
    choice = choose_on_validation([(0, 0, rows(5)), (1, 1, rows(5)), (2, 2, rows(2))], start_version=0, latest=2)
    assert choice.version == 0 and "no learned version did better" in choice.how


def test_without_validation_rows_the_latest_version_is_kept_and_labeled_as_not_chosen_by_data():
    choice = choose_on_validation([], start_version=0, latest=3)
    assert choice.version == 3 and "not chosen by data" in choice.how


def test_the_smallest_significant_gain_is_six_tasks_flipping_one_way():
    assert smallest_significant_gain(6) == 1.0  # 2 / 2**6 = 0.031 < 0.05; five flips give 0.0625
    assert smallest_significant_gain(5) is None
    assert smallest_significant_gain(60) == pytest.approx(0.1)


def test_the_power_of_the_exact_mcnemar_test_matches_a_simulation():
    n, gain, noise = 50, 0.15, 0.2
    rng = np.random.default_rng(7)
    hits = 0
    trials = 3000
    for _ in range(trials):
        draws = rng.choice(3, size=n, p=[noise / 2 + gain, noise / 2, 1 - noise - gain])
        better, worse = int((draws == 0).sum()), int((draws == 1).sum())
        hits += better > worse and mcnemar_exact(worse, better) < 0.05
    assert mcnemar_power(n, gain, noise) == pytest.approx(hits / trials, abs=0.03)


def test_more_tasks_detect_smaller_gains_and_tiny_splits_say_they_cannot_decide():
    assert minimum_detectable_gain(150) < minimum_detectable_gain(50) < minimum_detectable_gain(20)
    assert "no difference can be significant" in power_note(4)
    assert "even if all 4 changed outcome the same way, the exact McNemar p-value would be 0.125" in power_note(4)
    assert "(6 at the very least)" in power_note(4)  # 2 * 0.5**6 = 0.031 is the first under 0.05
    assert "even if both tasks changed outcome the same way, the exact McNemar p-value would be 0.5" in power_note(2)
    assert power_note(0).startswith("With no test tasks nothing can be tested")
    assert "a true gain of" in power_note(150) and "80% power" in power_note(150)


def test_counts_in_the_choice_and_the_power_note_agree_in_number():
    one = choose_on_validation([(0, 0, rows(5))], 0, 1)
    assert "1 version measured" in one.how and "versions" not in one.how
    assert power_note(1).startswith("With 1 test task no difference") and power_note(4).startswith("With 4 test tasks")
    assert "VAL_SIZE" not in choose_on_validation([], 0, 2).how  # advice every notebook can follow
