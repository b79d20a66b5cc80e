"""The one test, run as a sequential test: test tasks in batches, a look after each, a stop when the answer is known.

    design = SequentialDesign(n_tasks=150, batch=8)
    result = sequential_test(pairs, design)      # pairs: (start passed, kept passed) per task, in run order
    result.decision, result.tasks_run            # "help" | "hurt" | "futility" | "complete" | "running", 48
    # a pair is None where either side errored for infrastructure: run, but left out of both sides
    result.sentence()                            # "Stopped after 48 of 150 test tasks: the rules help, p = 0.003 ..."

Why this construction (docs/evidence.md has the simulation, benchmarks/bench_sequential.py):
- What is tested is the fixed design's own statistic, the discordant pairs: of the tasks where the two
  versions disagree, how many the kept rules won (b) and lost (a). Under "the rules do nothing" each
  discordant pair is a fair coin, whatever made it discordant, so S = b - a after m discordant pairs is a
  simple symmetric random walk: its null distribution is exact given the looks' discordant counts m_1 < m_2
  < ..., and no normal approximation is needed for the error rate.
- A group-sequential design with Lan-DeMets alpha spending of O'Brien-Fleming type, two-sided: by the
  share t of test tasks run, at most alpha(t) = 2 - 2 Phi(z_(1-alpha/2) / sqrt(t)) of the type I error may
  have been spent. At each look the boundary is the least count c with P0(|S| >= c at this look, not
  crossed before) <= what may be spent now, computed exactly by propagating the walk's distribution; the
  final look spends what is left. So the overall type I error is at most alpha at every number and spacing
  of looks, exactly (conditionally on the discordant counts, hence unconditionally). O'Brien-Fleming
  spending keeps almost all of alpha for the end: power stays within a point or two of the fixed test,
  and strong effects still stop early. An anytime-valid e-process (a uniform-mixture likelihood ratio)
  allows unplanned looks but, at these sizes, loses up to 25 points of power against the fixed test (the
  benchmark prints it beside the others: 0.56 against 0.77 at 150 tasks, 20% discordant, a 10-point gain);
  the looks here are planned (one per batch), so the spending design is the better trade.
- Futility is non-binding (it can only lower the type I error): the run stops when the remaining tasks
  cannot reach significance at all (curtailment), or, from a share `futility_from` of the tasks on, when
  the chance of reaching it if the gain seen so far held ("conditional power under the current trend")
  is under `futility_power` in both directions.
- The interval at the stopping look is a repeated confidence interval (Jennison and Turnbull): the paired
  difference with the look's own boundary as its critical value, valid whenever the run stops. The
  p-value is the stagewise-ordering p-value: the null chance of stopping earlier, or now with a count at
  least as extreme.
Tasks not run are never counted: every number here is over the tasks run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal, Sequence

import numpy as np

from helpers.core import config

__all__ = ["SequentialDesign", "Look", "SequentialResult", "sequential_test", "spent_alpha"]

Decision = Literal["help", "hurt", "futility", "complete", "running"]
_NORMAL = NormalDist()


def spent_alpha(t: float, alpha: float = config.STATS_ALPHA) -> float:
    """Lan-DeMets O'Brien-Fleming-type spending, two-sided: the type I error that may be spent by share t."""
    if t <= 0:
        return 0.0
    if t >= 1:
        return alpha
    return 2 - 2 * _NORMAL.cdf(_NORMAL.inv_cdf(1 - alpha / 2) / math.sqrt(t))


@dataclass(frozen=True)
class SequentialDesign:
    """The sequential test, declared before any run: `n_tasks` test tasks, a look after every `batch` of them."""

    n_tasks: int
    batch: int
    alpha: float = config.STATS_ALPHA
    futility_power: float = config.SEQUENTIAL_FUTILITY_POWER
    futility_from: float = config.SEQUENTIAL_FUTILITY_FROM

    def __post_init__(self) -> None:
        for name in ("n_tasks", "batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}.")
        if not 0 < self.alpha < 1 or not 0 <= self.futility_power < 1 or not 0 <= self.futility_from <= 1:
            raise ValueError("alpha must be in (0, 1), futility_power in [0, 1), futility_from in [0, 1].")

    def looks(self) -> list[int]:
        """The number of tasks run at each look: batch, 2 batch, ..., n_tasks."""
        return [min(k, self.n_tasks) for k in range(self.batch, self.n_tasks + self.batch, self.batch)]

    def describe(self) -> str:
        looks = len(self.looks())
        return (
            f"sequential exact McNemar on the discordant pairs, {looks} look{'s' * (looks != 1)} (one per "
            f"{self.batch} tasks of {self.n_tasks}), O'Brien-Fleming alpha spending (two-sided alpha "
            f"{self.alpha:g}); non-binding futility below {self.futility_power:.0%} conditional power "
            f"from {self.futility_from:.0%} of the tasks"
        )


@dataclass(frozen=True)
class Look:
    """One look: `tasks` run so far, `a_only`/`b_only` discordant pairs lost/won by the kept rules, the
    `boundary` on |b - a| at this look (None: no count could cross here), and the null chance spent so far."""

    tasks: int
    a_only: int
    b_only: int
    boundary: int | None
    spent: float


@dataclass(frozen=True)
class SequentialResult:
    """Where a sequential test stands. `decision`: "help"/"hurt" (crossed), "futility" (stopped: the rest
    cannot or very likely will not decide), "complete" (every task run, no significance), "running" (more
    tasks to run). `diff` and (`ci_low`, `ci_high`) are over the tasks run; `p_value` the stagewise one."""

    design: SequentialDesign
    looks: list[Look] = field(default_factory=list)
    decision: Decision = "running"
    tasks_run: int = 0
    excluded: int = 0
    diff: float = float("nan")
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    p_value: float = float("nan")

    @property
    def stopped(self) -> bool:
        return self.decision != "running"

    @property
    def tasks_saved(self) -> int:
        return self.design.n_tasks - self.tasks_run if self.stopped else 0

    def sentence(self) -> str:
        """Where it stopped and why, with the estimate and its interval, in one sentence."""
        n, run = self.design.n_tasks, self.tasks_run
        p = f", stagewise p = {self.p_value:.3g}" if self.stopped else ""
        gain = (
            (
                f"{self.diff * 100:+.1f} points (repeated 95% CI {self.ci_low * 100:+.1f} to {self.ci_high * 100:+.1f}"
                f"{p})"
            )
            if run - self.excluded > 0
            else "no usable pair yet"
        )
        where = f"after {run} of {n} test tasks" if run < n else f"after all {n} test tasks"
        if self.excluded:
            where += f" ({self.excluded} pair{'s' * (self.excluded != 1)} left out: infrastructure errors)"
        why = {
            "help": "the rules help",
            "hurt": "the rules hurt",
            "futility": "no likely outcome of the remaining tasks can reach significance (futility)",
            "complete": "no significant difference (noise)",
            "running": "no decision yet",
        }[self.decision]
        verb = "Running" if self.decision == "running" else "Stopped" if run < n else "Finished"
        return f"{verb} {where}: {why}; {gain}."


class _NullWalk:
    """The exact null distribution of S = b - a over the discordant pairs, among paths not yet stopped."""

    def __init__(self) -> None:
        self.m = 0
        self.mass = np.ones(1)  # P(S = s, not stopped) for s = -m..m (index s + m)
        self.spent = 0.0
        self.crossed_before = 0.0  # null chance of having stopped at an earlier look (stagewise p)

    def advance(self, m: int) -> None:
        for _ in range(m - self.m):
            grown = np.zeros(len(self.mass) + 2)
            grown[:-2] += self.mass / 2
            grown[2:] += self.mass / 2
            self.mass = grown
        self.m = max(self.m, m)

    def tail(self, c: int) -> float:
        """P0(|S| >= c, not stopped) at the current m."""
        if c > self.m:
            return 0.0
        return float(self.mass[: self.m - c + 1].sum() + self.mass[self.m + c :].sum())

    def boundary(self, allowed: float) -> int | None:
        """The least c >= 1 whose tail fits in `allowed` (None when none does, as with m = 0)."""
        for c in range(1, self.m + 1):
            if self.tail(c) <= allowed + 1e-15:
                return c
        return None

    def stop_at(self, c: int | None) -> None:
        """Spend the tail beyond c: those null paths stop here."""
        if c is None:
            return
        crossed = self.tail(c)
        self.spent += crossed
        self.crossed_before += crossed
        self.mass[: self.m - c + 1] = 0
        self.mass[self.m + c :] = 0


def sequential_test(pairs: Sequence[tuple[bool, bool] | None], design: SequentialDesign) -> SequentialResult:
    """The sequential test over `pairs` (start passed, kept passed), one per test task in the order they ran
    (None: a pair left out, either side errored for infrastructure; it counts as run, not as a result).

    Only whole batches are looked at (a partial last batch is "running" until it completes, unless it is the
    last of the design). Never raises on data; more pairs than the design's tasks is a ValueError."""
    if len(pairs) > design.n_tasks:
        raise ValueError(f"{len(pairs)} paired results for a design of {design.n_tasks} test tasks.")
    walk, looks = _NullWalk(), []
    for index, tasks in enumerate(design.looks()):
        if tasks > len(pairs):
            break
        usable = [pair for pair in pairs[:tasks] if pair is not None]
        a_only = sum(1 for start, kept in usable if start and not kept)
        b_only = sum(1 for start, kept in usable if kept and not start)
        before = walk.crossed_before
        walk.advance(a_only + b_only)
        last = tasks == design.n_tasks
        allowed = (design.alpha if last else spent_alpha(tasks / design.n_tasks, design.alpha)) - walk.spent
        c = walk.boundary(max(allowed, 0.0))
        s = b_only - a_only
        p = before + walk.tail(max(abs(s), 1)) if abs(s) else 1.0
        walk.stop_at(c)
        looks.append(Look(tasks, a_only, b_only, c, walk.spent))
        decision: Decision = "running"
        if c is not None and abs(s) >= c:
            decision = "help" if s > 0 else "hurt"
        elif last:
            decision = "complete"
        elif _futile(s, a_only + b_only, tasks, design):
            decision = "futility"
        if decision != "running" or index == len(design.looks()) - 1:
            return _result(design, looks, decision, tasks, tasks - len(usable), a_only, b_only, c, allowed, min(1.0, p))
    if not looks:
        return SequentialResult(design, looks, "running", 0)
    final = looks[-1]
    excluded = sum(1 for pair in pairs[: final.tasks] if pair is None)
    return _result(
        design, looks, "running", final.tasks, excluded, final.a_only, final.b_only, final.boundary, 0.0, 1.0
    )


def _futile(s: int, m: int, tasks: int, design: SequentialDesign) -> bool:
    """Non-binding futility: the remaining tasks cannot reach the final critical value even if every one of
    them went the leading way (curtailment), or, from `futility_from` on, the conditional power under the
    current trend is under `futility_power` in both directions."""
    left = design.n_tasks - tasks
    z_final = _NORMAL.inv_cdf(1 - design.alpha / 2)
    if abs(s) + left < z_final * math.sqrt(m + left):  # even all the rest discordant one way falls short
        return True
    t = tasks / design.n_tasks
    if t < design.futility_from or design.futility_power <= 0:
        return False
    z = s / math.sqrt(m) if m else 0.0
    drift = z / math.sqrt(t)  # B(t) / t: the trend per unit of information
    spread = math.sqrt(1 - t)
    power_help = 1 - _NORMAL.cdf((z_final - drift) / spread)
    power_hurt = _NORMAL.cdf((-z_final - drift) / spread)
    return max(power_help, power_hurt) < design.futility_power


def _result(
    design: SequentialDesign,
    looks: list[Look],
    decision: Decision,
    tasks_run: int,
    excluded: int,
    a_only: int,
    b_only: int,
    c: int | None,
    allowed: float,
    p: float,
) -> SequentialResult:
    m, tasks = a_only + b_only, tasks_run - excluded
    if tasks == 0:
        return SequentialResult(design, looks, decision, tasks_run, excluded)
    diff = (b_only - a_only) / tasks
    # The look's own critical value on the z scale; when no count could cross here, the Bonferroni value of
    # what this look may spend (larger than the boundary would be: wider, so still valid).
    if c is not None and m:
        z = c / math.sqrt(m)
    else:
        z = _NORMAL.inv_cdf(1 - max(min(allowed, design.alpha), 1e-12) / 2)
    # the paired difference's standard error over the tasks run; with no discordant pair yet, as if one
    se = math.sqrt(max(max(m, 1) - (b_only - a_only) ** 2 / tasks, 1 / tasks)) / tasks
    half = z * se
    return SequentialResult(
        design, looks, decision, tasks_run, excluded, diff, max(-1.0, diff - half), min(1.0, diff + half), p
    )
