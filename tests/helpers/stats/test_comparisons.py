"""Specifications of helpers.stats.comparisons, checked against hand-computed and published values."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from helpers.stats.comparisons import accuracy_interval, paired_comparison
from helpers.stats.intervals import mcnemar_exact


def results(outcomes: list[str], ids: list[str] | None = None, **columns) -> pd.DataFrame:
    """An engine-shaped result frame: one row per outcome, tasks t0, t1, ... unless `ids` is given."""
    ids = ids if ids is not None else [f"t{i}" for i in range(len(outcomes))]
    return pd.DataFrame({"instance_id": ids, "pass_or_fail": outcomes, **columns})


def paired_frames(both: int, a_only: int, b_only: int, neither: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two frames over the same tasks with the given paired 2x2 table."""
    a = ["pass"] * both + ["pass"] * a_only + ["fail"] * b_only + ["fail"] * neither
    b = ["pass"] * both + ["fail"] * a_only + ["pass"] * b_only + ["fail"] * neither
    return results(a), results(b)


def with_attempts(frame: pd.DataFrame, outcomes_per_task: dict[str, list[str]]) -> pd.DataFrame:
    """A frame with an `attempt` column: task -> its outcomes, attempt 0, 1, ..."""
    rows = [{"instance_id": task, "attempt": k, "pass_or_fail": outcome}
            for task, outcomes in outcomes_per_task.items() for k, outcome in enumerate(outcomes)]
    return pd.DataFrame(rows)


# --- one attempt per task: McNemar and Newcombe -------------------------------------------------------

def test_nine_against_one_discordant_pairs_is_significant_with_exact_p_0_0215():
    a, b = paired_frames(both=20, a_only=1, b_only=9, neither=20)
    result = paired_comparison(a, b)
    assert (result.n, result.both, result.a_only, result.b_only, result.neither) == (50, 20, 1, 9, 20)
    assert result.p_value == pytest.approx(22 / 1024)  # 2 * (C(10,0) + C(10,1)) / 2**10 = 0.02148
    assert round(result.p_value, 4) == 0.0215
    assert result.significant
    assert result.diff == pytest.approx(0.16)
    assert (result.accuracy_a, result.accuracy_b) == pytest.approx((0.42, 0.58))


def test_no_discordant_pairs_gives_p_one_and_zero_difference():
    a, b = paired_frames(both=12, a_only=0, b_only=0, neither=8)
    result = paired_comparison(a, b)
    assert result.p_value == 1.0
    assert result.diff == 0
    assert not result.significant
    assert result.ci_low < 0 < result.ci_high


def test_symmetric_table_gives_zero_difference_p_one_and_an_interval_centred_on_zero():
    a, b = paired_frames(both=10, a_only=5, b_only=5, neither=10)
    result = paired_comparison(a, b)
    assert result.diff == 0
    assert result.p_value == 1.0  # 2 * P(X <= 5 | 10, 0.5) > 1, capped
    assert result.ci_low == pytest.approx(-result.ci_high)


def test_swapping_the_sides_negates_the_difference_and_keeps_the_p_value():
    a, b = paired_frames(both=7, a_only=2, b_only=6, neither=5)
    forward, backward = paired_comparison(a, b), paired_comparison(b, a)
    assert backward.diff == pytest.approx(-forward.diff)
    assert (backward.ci_low, backward.ci_high) == pytest.approx((-forward.ci_high, -forward.ci_low))
    assert backward.p_value == forward.p_value


def test_newcombe_interval_matches_the_published_example():
    # Fagerland, Lydersen & Laake (Cavo et al. 2012 data): table (59, 6, 16, 80),
    # difference -0.0621, Newcombe hybrid score 95% CI -0.1186 to -0.0046. Here b is the first margin.
    a, b = paired_frames(both=59, a_only=16, b_only=6, neither=80)
    result = paired_comparison(a, b)
    assert round(result.diff, 4) == -0.0621
    assert (round(result.ci_low, 4), round(result.ci_high, 4)) == (-0.1186, -0.0046)


@pytest.mark.parametrize("table", [(0, 0, 10, 0), (0, 10, 0, 0), (5, 0, 0, 0), (0, 0, 0, 5), (1, 0, 1, 0),
                                   (3, 2, 7, 1), (40, 1, 30, 2), (0, 3, 3, 0), (100, 0, 1, 0)])
def test_interval_contains_the_difference_and_stays_inside_minus_one_to_one(table):
    result = paired_comparison(*paired_frames(*table))
    assert -1 <= result.ci_low <= result.diff <= result.ci_high <= 1


# --- accuracy of one frame ----------------------------------------------------------------------------

def test_accuracy_interval_of_one_attempt_per_task_is_wilson():
    accuracy, low, high, n = accuracy_interval(results(["pass"] * 8 + ["fail"] * 2 + ["error"]))
    assert (accuracy, n) == (0.8, 10)  # the errored row is not a task outcome
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)


def test_accuracy_interval_with_attempts_averages_each_task_then_bootstraps_tasks():
    frame = with_attempts(results([]), {"t0": ["pass", "pass", "fail"], "t1": ["fail"] * 3,
                                         "t2": ["pass"] * 3, "t3": ["pass", "fail", "fail"]})
    accuracy, low, high, n = accuracy_interval(frame, n_boot=2000, seed=1)
    assert n == 4
    assert accuracy == pytest.approx((2 / 3 + 0 + 1 + 1 / 3) / 4)
    assert 0 <= low < accuracy < high <= 1
    assert accuracy_interval(frame, n_boot=2000, seed=1) == (accuracy, low, high, n)  # seeded


def test_bootstrap_interval_has_the_normal_width_on_many_tasks():
    # With 200 tasks the mean is close to normal: the 95% interval spans about 1.96 standard errors a side.
    per_task = {f"t{i}": ["pass"] * (i % 4) + ["fail"] * (3 - i % 4) for i in range(200)}
    frame = with_attempts(results([]), per_task)
    accuracy, low, high, n = accuracy_interval(frame)
    means = np.array([(i % 4) / 3 for i in range(200)])
    standard_error = means.std() / math.sqrt(n)
    assert accuracy == pytest.approx(means.mean())
    assert (high - low) / 2 == pytest.approx(1.96 * standard_error, rel=0.05)


# --- several attempts per task: bootstrap and sign-flip test -------------------------------------------

def test_repeated_identical_attempts_give_the_same_p_value_as_mcnemar():
    a, b = paired_frames(both=4, a_only=1, b_only=9, neither=6)
    repeat = lambda frame: with_attempts(frame, {t: [o] * 3 for t, o in zip(frame.instance_id, frame.pass_or_fail)})
    result = paired_comparison(repeat(a), repeat(b), n_boot=2000)
    assert result.attempts == 3 and "bootstrap" in result.method
    assert result.p_value == pytest.approx(22 / 1024)
    assert result.diff == pytest.approx(8 / 20)
    assert result.ci_low <= result.diff <= result.ci_high


def test_bootstrap_interval_covers_a_known_true_difference_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    tasks, attempts, true_diff, covered = 40, 3, 0.1, 0
    for experiment in range(200):
        p_a = rng.uniform(0.2, 0.7, tasks)  # each task has its own difficulty
        outcomes_a = rng.random((tasks, attempts)) < p_a[:, None]
        outcomes_b = rng.random((tasks, attempts)) < (p_a + true_diff)[:, None]
        as_frame = lambda passed: with_attempts(results([]), {f"t{i}": ["pass" if x else "fail" for x in row]
                                                                 for i, row in enumerate(passed)})
        result = paired_comparison(as_frame(outcomes_a), as_frame(outcomes_b), n_boot=1000, seed=experiment)
        covered += result.ci_low <= true_diff <= result.ci_high
    assert 0.90 <= covered / 200 <= 0.99


@pytest.mark.parametrize("a_only, b_only", [(5, 25), (14, 16)])
def test_random_sign_flips_approximate_mcnemar_when_too_many_tasks_differ_to_enumerate(a_only, b_only):
    a, b = paired_frames(both=0, a_only=a_only, b_only=b_only, neither=0)  # 30 differing tasks: 2**30 flips
    repeat = lambda frame: with_attempts(frame, {t: [o] * 2 for t, o in zip(frame.instance_id, frame.pass_or_fail)})
    result = paired_comparison(repeat(a), repeat(b), n_boot=10_000)
    assert result.p_value == pytest.approx(mcnemar_exact(a_only, b_only), abs=0.015)
    assert result.p_value > 0


def test_newcombe_interval_covers_a_known_true_difference_about_95_percent_of_the_time():
    rng = np.random.default_rng(3)
    tasks, true_diff, covered = 60, 0.1, 0
    for _ in range(300):
        p_a = rng.uniform(0.2, 0.7, tasks)
        passed_a, passed_b = rng.random(tasks) < p_a, rng.random(tasks) < p_a + true_diff
        words = lambda passed: results(["pass" if x else "fail" for x in passed])
        result = paired_comparison(words(passed_a), words(passed_b))
        covered += result.ci_low <= true_diff <= result.ci_high
    assert 0.90 <= covered / 300 <= 0.99


def test_an_errored_attempt_is_dropped_but_its_task_stays():
    a = with_attempts(results([]), {"t0": ["pass", "error", "pass"], "t1": ["fail"] * 3})
    b = with_attempts(results([]), {"t0": ["pass"] * 3, "t1": ["pass", "pass", "fail"]})
    result = paired_comparison(a, b, n_boot=500)
    assert result.n == 2 and result.excluded == {} and result.dropped_attempts == 1
    assert result.accuracy_a == pytest.approx(0.5)  # t0 is 2 of 2 usable attempts
    assert result.summary().endswith("; 1 errored attempt dropped")


# --- what is left out --------------------------------------------------------------------------------

def test_errored_rows_are_left_out_of_both_sides_and_counted():
    a = results(["pass", "error", "fail", "pass", "fail"], status=["completed", "error", "completed",
                                                                    "error", "timeout"])
    b = results(["pass", "pass", "not_evaluated", "pass", "pass"])
    result = paired_comparison(a, b)
    # t1 and t3 errored in a (an "error" outcome, an "error" status), t2 was not evaluated in b.
    assert result.excluded == {"errored": 2, "not evaluated": 1}
    assert result.n_excluded == 3
    assert (result.n, result.both, result.b_only) == (2, 1, 1)  # the timeout in a is a fail
    as_fails = paired_comparison(a, b, errors_as_fail=True)
    assert as_fails.n == 5 and as_fails.excluded == {}
    assert as_fails.accuracy_a == pytest.approx(1 / 5)


def test_tasks_in_only_one_frame_are_compared_on_the_intersection():
    a = results(["pass"] * 10, ids=[f"t{i}" for i in range(10)])
    b = results(["fail"] * 10, ids=[f"t{i}" for i in range(2, 12)])
    result = paired_comparison(a, b, label_a="old", label_b="new")
    assert result.n == 8 and result.a_only == 8
    assert result.excluded == {"missing in new": 2, "missing in old": 2}


def test_the_caller_can_leave_tasks_out_with_a_reason():
    a, b = paired_frames(both=3, a_only=0, b_only=2, neither=1)
    result = paired_comparison(a, b, excluded={"t0": "flaky test", "t5": "flaky test"})
    assert result.n == 4 and result.excluded == {"flaky test": 2}
    assert paired_comparison(a, b, excluded=["t0"]).excluded == {"left out by the caller": 1}


# --- the sentence -------------------------------------------------------------------------------------

def test_summary_of_a_significant_gain():
    a, b = paired_frames(both=20, a_only=1, b_only=9, neither=20)
    text = paired_comparison(a, b, label_a="no rules", label_b="v3").summary()
    assert text == "v3 vs no rules on 50 tasks: +16.0 points (95% CI +3.7 to +27.3), p = 0.021: significant"


def test_summary_of_a_non_significant_gain_says_which_tasks_were_left_out():
    a, b = paired_frames(both=8, a_only=2, b_only=4, neither=6)
    a = pd.concat([a, results(["error", "error", "pass", "pass"], ids=["e0", "e1", "e2", "m0"])])
    b = pd.concat([b, results(["pass", "fail", "error"], ids=["e0", "e1", "e2"])])
    text = paired_comparison(a, b, label_a="no rules", label_b="v3").summary()
    assert text == ("v3 vs no rules on 20 tasks: +10.0 points (95% CI -14.4 to +32.5), p = 0.69: "
                    "not significant; 4 tasks left out: 3 errored, 1 missing in v3")


def test_summary_says_no_difference_when_every_task_agrees():
    a, b = paired_frames(both=5, a_only=0, b_only=0, neither=5)
    text = paired_comparison(a, b, label_a="v1", label_b="v2").summary()
    assert text.startswith("v2 vs v1 on 10 tasks: no difference")
    assert text.endswith("p = 1")


def test_to_dict_is_plain_json_with_the_sentence():
    a, b = paired_frames(both=2, a_only=1, b_only=3, neither=1)
    data = paired_comparison(a, b, excluded=["t0"]).to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["n"] == 6 and data["n_excluded"] == 1 and data["excluded"] == {"left out by the caller": 1}
    assert data["summary"].startswith("b vs a on 6 tasks")


def test_nothing_to_compare_is_not_an_error():
    result = paired_comparison(results(["error"]), results(["pass"]))
    assert result.n == 0 and math.isnan(result.diff) and result.p_value == 1.0 and not result.significant
    assert result.summary() == "b vs a on 0 tasks: nothing to compare; 1 task left out: 1 errored"
