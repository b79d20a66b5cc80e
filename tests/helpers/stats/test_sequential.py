"""The sequential one test: exact null error at every look, checked against a second, brute-force computation."""

import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest

from helpers.stats.sequential import SequentialDesign, sequential_test, spent_alpha
from helpers.stats.intervals import mcnemar_exact


def pairs_from(signs_per_task: list[int]) -> list[tuple[bool, bool]]:
    """+1: the kept rules won the task, -1: lost it, 0: both passed (a concordant pair)."""
    return [{1: (False, True), -1: (True, False), 0: (True, True)}[s] for s in signs_per_task]


# --- a second implementation: enumerate every sign sequence of the discordant pairs -------------------------
def brute_force_boundaries(m_at_looks: list[int], shares: list[float], alpha: float) -> tuple[list, list[float]]:
    """Boundaries and spends by enumerating all 2**m equally likely null paths (no shared code with the module)."""
    m = m_at_looks[-1]
    paths = np.array(list(itertools.product((-1, 1), repeat=m))) if m else np.zeros((1, 0), dtype=int)
    alive = np.ones(len(paths), dtype=bool)
    boundaries, spends, spent = [], [], 0.0
    for k, (mk, t) in enumerate(zip(m_at_looks, shares)):
        s = np.abs(paths[:, :mk].sum(axis=1))
        allowed = (alpha if k == len(shares) - 1 else 2 - 2 * NormalDist().cdf(NormalDist().inv_cdf(1 - alpha / 2) / math.sqrt(t))) - spent
        chosen = None
        for c in range(1, mk + 1):
            if np.mean(alive & (s >= c)) <= allowed + 1e-15:
                chosen = c
                break
        if chosen is not None:
            crossed = alive & (s >= chosen)
            spent += float(np.mean(crossed))
            alive &= ~crossed
        boundaries.append(chosen)
        spends.append(spent)
    return boundaries, spends


@pytest.mark.parametrize("increments", [[2, 3, 4, 5], [0, 6, 0, 7], [5, 0, 5, 4], [1, 1, 1, 10]])
def test_each_looks_boundary_and_spend_equal_a_brute_force_enumeration_of_the_null_paths(increments):
    n, batch = 40, 10
    m_at_looks = list(itertools.accumulate(increments))
    signs = []
    for inc in increments:  # a batch: its discordant pairs (alternating, so no boundary is crossed), then ties
        signs += [1 if i % 2 else -1 for i in range(inc)] + [0] * (batch - inc)
    result = sequential_test(pairs_from(signs), SequentialDesign(n_tasks=n, batch=batch, futility_power=0))
    expected_c, expected_spent = brute_force_boundaries(m_at_looks, [0.25, 0.5, 0.75, 1.0], 0.05)
    looked = result.looks
    assert [look.boundary for look in looked] == expected_c[: len(looked)]
    assert [look.spent for look in looked] == pytest.approx(expected_spent[: len(looked)], abs=1e-12)
    assert expected_spent[-1] <= 0.05


def test_the_whole_procedures_null_rejection_rate_over_every_sign_sequence_is_at_most_alpha():
    # 12 discordant pairs spread over four looks; every one of the 2**12 null sign sequences run through the product
    design = SequentialDesign(n_tasks=28, batch=7, futility_power=0)
    new_at_look, rejected = [1, 4, 2, 5], 0
    for bits in itertools.product((-1, 1), repeat=12):
        signs = []
        for look, new in enumerate(new_at_look):
            start = sum(new_at_look[:look])
            signs += list(bits[start:start + new]) + [0] * (7 - new)
        rejected += sequential_test(pairs_from(signs), design).decision in ("help", "hurt")
    assert rejected / 2 ** 12 <= 0.05
    assert rejected > 0  # the test can reject at all: not vacuously safe


@pytest.mark.parametrize("n", [12, 20, 31])
def test_with_one_look_it_decides_exactly_as_the_fixed_exact_mcnemar_test(n):
    design = SequentialDesign(n_tasks=n, batch=n)
    for a in range(n + 1):
        for b in range(n + 1 - a):
            result = sequential_test(pairs_from([-1] * a + [1] * b + [0] * (n - a - b)), design)
            fixed = mcnemar_exact(a, b) < 0.05
            assert (result.decision in ("help", "hurt")) == fixed, (a, b)
            if fixed:
                assert result.decision == ("help" if b > a else "hurt")


def test_the_stagewise_p_value_is_the_null_chance_of_stopping_earlier_or_now_at_least_as_far_out():
    design = SequentialDesign(n_tasks=40, batch=10, futility_power=0)
    signs = [1, -1, 1, 0, 0, 0, 0, 0, 0, 0] + [1] * 6 + [0] * 4 + [1] * 7 + [0] * 3
    result = sequential_test(pairs_from(signs), design)
    assert result.decision == "help"
    m_at_looks = [look.a_only + look.b_only for look in result.looks]
    c, _ = brute_force_boundaries(m_at_looks, [0.25, 0.5, 0.75][: len(m_at_looks)], 0.05)
    paths = np.array(list(itertools.product((-1, 1), repeat=m_at_looks[-1])))
    alive, p = np.ones(len(paths), dtype=bool), 0.0
    for k, (mk, ck) in enumerate(zip(m_at_looks, c)):
        s = np.abs(paths[:, :mk].sum(axis=1))
        if k == len(c) - 1:
            observed = abs(result.looks[-1].b_only - result.looks[-1].a_only)
            p += float(np.mean(alive & (s >= observed)))
        elif ck is not None:
            p += float(np.mean(alive & (s >= ck)))
            alive &= s < ck
    assert result.p_value == pytest.approx(p, abs=1e-12)
    assert result.p_value <= result.looks[-1].spent


def test_a_strong_gain_stops_early_for_help_and_says_where_and_why():
    rng = np.random.default_rng(3)
    signs = [1 if rng.random() < 0.4 else 0 for _ in range(150)]  # 40% of tasks flip to pass, none back
    result = sequential_test(pairs_from(signs), SequentialDesign(n_tasks=150, batch=8))
    assert result.decision == "help" and result.tasks_run < 150 and result.tasks_saved == 150 - result.tasks_run
    assert result.ci_low > 0
    assert result.sentence().startswith(f"Stopped after {result.tasks_run} of 150 test tasks: the rules help")


def test_no_difference_on_many_tasks_stops_for_futility_and_the_rest_is_never_counted():
    signs = ([1, -1, 0, 0, 0, 0, 0, 0] * 19)[:150]
    result = sequential_test(pairs_from(signs), SequentialDesign(n_tasks=150, batch=8))
    assert result.decision == "futility" and result.tasks_run < 150
    last = result.looks[-1]
    assert last.tasks == result.tasks_run and last.a_only + last.b_only == sum(1 for s in signs[: result.tasks_run] if s)
    assert result.ci_low < 0 < result.ci_high


def test_results_so_far_read_as_running_and_a_resume_with_more_results_continues_the_same_sequence():
    design = SequentialDesign(n_tasks=48, batch=8)
    signs = [1, 0, -1, 0, 0, 1, 0, 0] * 6
    partial = sequential_test(pairs_from(signs[:20]), design)  # two whole batches and half of a third
    assert partial.decision == "running" and partial.tasks_run == 16 and not partial.stopped
    assert partial.sentence().startswith("Running after 16 of 48 test tasks: no decision yet")
    whole = sequential_test(pairs_from(signs), design)
    assert whole.looks[:2] == partial.looks


def test_the_repeated_interval_is_wider_at_an_early_look_than_the_fixed_interval_would_be():
    signs = [1] * 16 + [0] * 8  # 16 of the first 24 tasks flip to pass: it stops at the first look
    early = sequential_test(pairs_from(signs), SequentialDesign(n_tasks=96, batch=24))
    fixed_half = NormalDist().inv_cdf(0.975) * math.sqrt(16 - 16 ** 2 / 24) / 24
    assert early.decision == "help"
    assert (early.ci_high - early.ci_low) / 2 > fixed_half


def test_a_design_is_checked_before_any_run():
    for bad in ({"n_tasks": 0, "batch": 4}, {"n_tasks": 10, "batch": 0}, {"n_tasks": 10, "batch": 2, "alpha": 1.5},
                {"n_tasks": True, "batch": 2}):
        with pytest.raises(ValueError):
            SequentialDesign(**bad)
    with pytest.raises(ValueError, match="12 paired results for a design of 10"):
        sequential_test(pairs_from([0] * 12), SequentialDesign(n_tasks=10, batch=5))


def test_the_spending_function_spends_little_early_and_all_of_alpha_at_the_end():
    assert spent_alpha(0.0) == 0 and spent_alpha(1.0) == 0.05
    assert spent_alpha(0.25) < 0.0001 < spent_alpha(0.5) < 0.01 < spent_alpha(0.9) < 0.05
