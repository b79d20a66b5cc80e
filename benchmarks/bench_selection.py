"""How honest is the selection procedure? A simulation of experiments under the null (the rules do
nothing) and under a known true effect, many seeds, before and after the three-roles procedure.

    .venv/bin/python benchmarks/bench_selection.py              # 1,000 seeds per scenario (~2 min)
    .venv/bin/python benchmarks/bench_selection.py --seeds 200  # quicker, noisier

The world: a pool of tasks, each with its own pass probability (Beta(1.2, 1.8), mean 0.4); every
ruleset version after the start adds a true `effect` to each task's probability (0 under the null,
+0.15 under the effect, clipped to [0, 1]); every run is an independent draw, so the same ruleset on
the same task can pass one run and fail the next, as agents do. An experiment runs LOOPS versions.

Before (the code until this change): a version replaces the incumbent when its paired gain on the TRAIN
split (the tasks the optimizer learned from) is significant (exact McNemar, p < 0.05), versions taken in
order, no correction; the reported gain is the kept version's train gain over the start. Every loop also
printed a test p-value against the start.
After (helpers.stats.selection, the product's code): validation (a third of the train pool) keeps the
version with the highest validation accuracy (never one that does not beat the start there); the test
split compares it once with the start (exact McNemar, two-sided, 0.05); the reported gain is that test gain.

"False keep" is the procedure recommending a learned ruleset when the rules do nothing (before: the gate
kept a learned version; after: the primary test says "the rules help"). The bias is the mean of (reported
gain - true gain) over the experiments that report a learned version.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.stats.selection import choose_on_validation, decision, primary_test  # noqa: E402
from helpers.stats.intervals import mcnemar_exact  # noqa: E402

LOOPS = 10
TRAIN_POOL, TEST = 50, 50
VAL = round(TRAIN_POOL / 3)
ALPHA = 0.05


def frame(passed: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"instance_id": [f"t{i}" for i in range(len(passed))], "status": "completed",
                         "pass_or_fail": np.where(passed, "pass", "fail")})


def experiment(rng: np.random.Generator, effect: float) -> dict[str, float]:
    p_train, p_test = rng.beta(1.2, 1.8, TRAIN_POOL), rng.beta(1.2, 1.8, TEST)
    lifted = [np.clip(p_train + (effect if v else 0.0), 0, 1) for v in range(LOOPS)]
    true_gain = float(np.mean(np.clip(p_test + effect, 0, 1) - p_test))
    train_runs = [rng.random(TRAIN_POOL) < lifted[v] for v in range(LOOPS)]
    test_runs = [rng.random(TEST) < np.clip(p_test + (effect if v else 0.0), 0, 1) for v in range(LOOPS)]
    out: dict[str, float] = {"true_gain": true_gain}

    # before: the sequential train gate, uncorrected; the gain it reports is the train gain over the start
    incumbent = 0
    for v in range(1, LOOPS):
        a, b = train_runs[incumbent], train_runs[v]
        a_only, b_only = int(np.sum(a & ~b)), int(np.sum(~a & b))
        if b_only > a_only and mcnemar_exact(a_only, b_only) < ALPHA:
            incumbent = v
    out["before_keep"] = float(incumbent != 0)
    out["before_gain"] = float(train_runs[incumbent].mean() - train_runs[0].mean()) if incumbent else np.nan
    out["before_any_loop_significant"] = float(any(
        (test_runs[v] & ~test_runs[0]).sum() > (~test_runs[v] & test_runs[0]).sum()
        and mcnemar_exact(int(np.sum(test_runs[0] & ~test_runs[v])), int(np.sum(~test_runs[0] & test_runs[v]))) < ALPHA
        for v in range(1, LOOPS)))

    # after: the product's selection on validation (the last VAL tasks of the pool), one test at the end
    val_runs = [runs[-VAL:] for runs in train_runs]
    choice = choose_on_validation([(v, v, frame(val_runs[v])) for v in range(LOOPS)], 0, LOOPS - 1)
    out["after_selected"] = float(choice.version != 0)
    if choice.version:
        comparison = primary_test(frame(test_runs[0]), frame(test_runs[choice.version]), "no rules", f"v{choice.version}")
        out["after_keep"] = float(decision(comparison).startswith("The rules help"))
        out["after_gain"] = comparison.diff
    else:
        out["after_keep"], out["after_gain"] = 0.0, np.nan
    return out


def scenario(effect: float, seeds: int) -> dict[str, float]:
    rows = [experiment(np.random.default_rng(seed), effect) for seed in range(seeds)]
    table = pd.DataFrame(rows)
    bias = lambda column: float((table[column] - table["true_gain"]).mean()) * 100  # noqa: E731 (over non-NaN)
    return {"false keep / power, before": table["before_keep"].mean(), "false keep / power, after": table["after_keep"].mean(),
            "reported-gain bias, before (points)": bias("before_gain"), "reported-gain bias, after (points)": bias("after_gain"),
            "some loop 'significant' on test, before": table["before_any_loop_significant"].mean(),
            "a learned version selected, after": table["after_selected"].mean(), "true gain (points)": table["true_gain"].mean() * 100}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"{LOOPS} versions per experiment; train pool {TRAIN_POOL} (after: {TRAIN_POOL - VAL} train + {VAL} validation), "
          f"test {TEST}; {args.seeds} seeds per scenario; level {ALPHA}\n")
    results = {"null (no effect)": scenario(0.0, args.seeds), "true effect +15 points": scenario(0.15, args.seeds)}
    table = pd.DataFrame(results)
    with pd.option_context("display.float_format", "{:.3f}".format, "display.width", 120):
        print(table)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
