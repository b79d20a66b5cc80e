"""The textbook intervals and tests behind every comparison, on counts and arrays (no frames, no rows).

    wilson_interval(8, 10)          # (0.490, 0.943)
    mcnemar_exact(9, 1)             # 0.02148
    holm_adjust([0.01, 0.04, 0.03]) # [0.03, 0.06, 0.06]

Wilson's score interval, Newcombe's paired interval (method 10), the exact McNemar test, Holm's step-down
adjustment, the percentile bootstrap (of a mean, and of any statistic over pairs) and the paired sign-flip
test. Each is checked in the tests against a published value or its definition. Separate from
helpers.stats.comparisons, which reads result frames and decides which rows count: the arithmetic here never
changes with what a row means. Pure numpy and the standard library (scipy is not a dependency of this project).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from statistics import NormalDist

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from helpers.core import config

CONFIDENCE = config.STATS_CONFIDENCE
N_BOOT = config.STATS_N_BOOT
FloatArray = npt.NDArray[np.float64]  # per-task values, or resamples of them (tasks on the last axis)
EXACT_FLIPS_MAX = 16  # the sign-flip test enumerates all 2**m flips up to this many non-zero task differences


def paired_bootstrap(
    a: ArrayLike,
    b: ArrayLike,
    statistic: Callable[[FloatArray, FloatArray], ArrayLike],
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> tuple[float, float]:
    """Percentile bootstrap interval of `statistic(a, b)` over pairs: each resample draws n tasks with
    replacement and keeps each task's two values together (a[i] with b[i]); `n_boot` resamples, seeded, so the
    same data give the same interval. `statistic` takes two arrays whose last axis is the tasks and returns
    one value per resample (e.g. `lambda a, b: b.mean(-1) - a.mean(-1)`); resamples where it is not finite (a
    ratio over a zero) are dropped. Percentiles are numpy's linear ones. (nan, nan) with no pair or no
    finite resample."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(xa) != len(xb):
        raise ValueError(f"paired values need the same length, not {len(xa)} and {len(xb)}.")
    if len(xa) == 0:
        return math.nan, math.nan
    picks = np.random.default_rng(seed).integers(0, len(xa), size=(n_boot, len(xa)))
    values = np.asarray(statistic(xa[picks], xb[picks]), dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return math.nan, math.nan
    tail = (1 - confidence) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return float(low), float(high)


def wilson_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval for `successes` of `n` (8 of 10 -> (0.490, 0.943)); (nan, nan) if n = 0."""
    if n == 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # At 0 or n successes the bound is exactly 0 or 1; rounding would leave it a hair off.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: twice the binomial(a_only + b_only, 0.5) tail at the smaller
    count, capped at 1; 1 when there are no discordant pairs (9 vs 1 -> 0.02148)."""
    m = a_only + b_only
    if m == 0:
        return 1.0
    tail: float = sum(math.comb(m, i) for i in range(min(a_only, b_only) + 1)) / 2**m  # exact, any m
    return min(1.0, 2 * tail)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the order given: sort ascending, multiply the i-th
    smallest (from 0) by (m - i), carry the running maximum down the sorted list, cap at 1. Rejecting every
    hypothesis whose adjusted p is below alpha keeps the family-wise error at alpha, whatever the dependence
    between the tests ([0.01, 0.04, 0.03] -> [0.03, 0.06, 0.06]). A NaN stays NaN and is not counted in m."""
    values = [float(p) for p in p_values]
    order = sorted((p, i) for i, p in enumerate(values) if not math.isnan(p))
    adjusted, running = [math.nan] * len(values), 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p))
        adjusted[i] = running
    return adjusted


def newcombe_paired(
    both: int, first_only: int, second_only: int, neither: int, confidence: float
) -> tuple[float, float]:
    """Newcombe's (1998) method 10 interval for p_first - p_second from a paired 2x2 table.

    Square-and-add of the two Wilson intervals, corrected by the correlation phi of the pairs
    (phi shrunk by n/2 when positive, as Newcombe specifies, and 0 when a margin is empty).
    Reference: table (59, 6, 16, 80) -> -0.0621 (-0.1186 to -0.0046), Fagerland et al. 2014.
    """
    n = both + first_only + second_only + neither
    p1, p2 = (both + first_only) / n, (both + second_only) / n
    l1, u1 = wilson_interval(both + first_only, n, confidence)
    l2, u2 = wilson_interval(both + second_only, n, confidence)
    margins = (both + first_only) * (second_only + neither) * (both + second_only) * (first_only + neither)
    phi = 0.0
    if margins > 0:
        cross = both * neither - first_only * second_only
        if cross > n / 2:
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    diff = p1 - p2
    low = diff - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = diff + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, low), min(1.0, high)


def bootstrap_mean(values: np.ndarray, n_boot: int, seed: int, confidence: float) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (one value per task), seeded."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(values), size=(n_boot, len(values)))
    means = values[picks].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def sign_flip_p(diffs: np.ndarray, n_boot: int, seed: int) -> float:
    """Two-sided p-value of the paired sign-flip test: how often flipping the signs of the non-zero
    per-task differences at random gives a sum at least as far from zero as the observed one."""
    m = len(diffs)
    if m == 0:
        return 1.0
    observed = abs(diffs.sum()) - 1e-9  # the tolerance keeps ties with the observed sum as extreme
    if m <= EXACT_FLIPS_MAX:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=m)))
        return float(np.mean(np.abs(signs @ diffs) >= observed))
    rng = np.random.default_rng(seed)
    signs = rng.choice((1.0, -1.0), size=(n_boot, m))
    # Counting the observed arrangement among the draws keeps the Monte Carlo p-value valid (never 0).
    return float((1 + np.sum(np.abs(signs @ diffs) >= observed)) / (1 + n_boot))


__all__ = [
    "wilson_interval",
    "newcombe_paired",
    "mcnemar_exact",
    "holm_adjust",
    "bootstrap_mean",
    "paired_bootstrap",
    "sign_flip_p",
    "CONFIDENCE",
    "N_BOOT",
    "FloatArray",
]
