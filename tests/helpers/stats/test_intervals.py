"""The textbook intervals and tests (helpers.stats.intervals), against worked examples, definitions written out by
hand and exact enumerations: McNemar's exact test, Wilson's interval, the paired percentile bootstrap, Holm's
adjustment."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from helpers.stats.costs import mean_diff, mean_ratio
from helpers.stats.intervals import holm_adjust, mcnemar_exact, paired_bootstrap, wilson_interval


def test_mcnemar_exact_is_symmetric_in_its_counts():
    assert mcnemar_exact(9, 1) == mcnemar_exact(1, 9) == pytest.approx(0.021484375)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)


def test_wilson_interval_of_eight_of_ten():
    low, high = wilson_interval(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0


# --- what a run costs: the paired bootstrap over tasks ---------------------------------------------------

TOKENS_A = np.array([41_000, 38_500, 52_000, 12_300, 60_100, 33_000, 47_800, 29_900, 55_500, 40_200, 36_700, 44_400.0])
TOKENS_B = np.array([47_900, 45_100, 58_800, 15_200, 66_000, 41_700, 50_100, 37_300, 61_900, 49_800, 40_100, 52_600.0])


def reference_paired_bootstrap(a, b, statistic, n_boot, seed, confidence):
    """Efron and Tibshirani's percentile bootstrap for paired data, written plainly: resample task indices
    (the same generator draws), compute the statistic one resample at a time, and take the percentiles by
    hand (linear interpolation between order statistics, Hyndman and Fan's type 7)."""
    picks = np.random.default_rng(seed).integers(0, len(a), size=(n_boot, len(a)))
    values = sorted(float(statistic(a[list(row)], b[list(row)])) for row in picks)

    def percentile(q):
        h = (len(values) - 1) * q
        below = math.floor(h)
        above = min(below + 1, len(values) - 1)
        return values[below] + (h - below) * (values[above] - values[below])

    tail = (1 - confidence) / 2
    return percentile(tail), percentile(1 - tail)


def test_the_paired_bootstrap_matches_a_plain_reference_implementation_on_fixed_data():
    for statistic in (mean_ratio, mean_diff):
        ours = paired_bootstrap(TOKENS_A, TOKENS_B, statistic, n_boot=2_000, seed=7, confidence=0.95)
        assert ours == pytest.approx(reference_paired_bootstrap(TOKENS_A, TOKENS_B, statistic, 2_000, 7, 0.95),
                                     rel=1e-12)
    assert paired_bootstrap(TOKENS_A, TOKENS_B, mean_ratio, seed=7) == paired_bootstrap(TOKENS_A, TOKENS_B, mean_ratio,
                                                                                        seed=7)  # seeded


def test_the_paired_bootstrap_approaches_the_exact_bootstrap_distribution():
    # With 5 tasks the bootstrap distribution can be enumerated whole: 5**5 equally likely resamples.
    a, b = TOKENS_A[:5], TOKENS_B[:5]
    exact = np.array([mean_ratio(a[list(i)], b[list(i)]) for i in itertools.product(range(5), repeat=5)])
    low, high = paired_bootstrap(a, b, mean_ratio, n_boot=40_000, seed=1)
    assert (low, high) == pytest.approx(tuple(np.quantile(exact, [0.025, 0.975])), abs=0.004)


def test_pairs_stay_together_so_a_constant_relative_change_has_no_spread():
    low, high = paired_bootstrap(TOKENS_A, 1.2 * TOKENS_A, mean_ratio)
    assert (low, high) == pytest.approx((0.2, 0.2))
    unpaired_would_spread = paired_bootstrap(TOKENS_A, np.roll(1.2 * TOKENS_A, 1), mean_ratio)
    assert unpaired_would_spread[1] - unpaired_would_spread[0] > 0.05


def holm_by_hand(p_values):
    """Holm's adjusted p-values written from the definition: the i-th smallest is max over j <= i of
    (m - j) * p_(j), capped at 1 (an independent computation, not the library's loop)."""
    m = len(p_values)
    ranked = sorted(range(m), key=lambda i: p_values[i])
    out = [0.0] * m
    for position, index in enumerate(ranked):
        out[index] = min(1.0, max((m - j) * p_values[ranked[j]] for j in range(position + 1)))
    return out


def test_holm_adjusted_p_values_match_the_definition_on_a_worked_example_and_on_random_families():
    assert holm_adjust([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm_adjust([0.5, 0.9]) == [1.0, 1.0]  # capped at 1
    rng = np.random.default_rng(7)
    for m in (1, 2, 4, 7):
        for _ in range(50):
            family = list(rng.uniform(0, 0.2, size=m))
            assert holm_adjust(family) == pytest.approx(holm_by_hand(family))


def test_holm_leaves_a_missing_p_value_out_of_the_family_and_missing():
    adjusted = holm_adjust([0.02, math.nan, 0.04])
    assert math.isnan(adjusted[1]) and adjusted[0] == pytest.approx(0.04) and adjusted[2] == pytest.approx(0.04)
