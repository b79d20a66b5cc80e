"""What the rules cost per run: the paired change in tokens, dollars and wall time, on the runs the accuracy
test counts, with a bootstrap interval over tasks (helpers.stats.costs)."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from helpers.stats.costs import mean_ratio, paired_change
from helpers.stats.intervals import paired_bootstrap

from tests.helpers.stats.test_intervals import TOKENS_A, TOKENS_B


def run_rows(tokens, **columns):
    """Completed, evaluated runs with these total tokens (input 90%, output 10%)."""
    tokens = np.asarray(tokens, dtype=float)
    frame = pd.DataFrame({"instance_id": [f"t{i:02d}" for i in range(len(tokens))], "status": "completed",
                          "pass_or_fail": "pass", "input_tokens": 0.9 * tokens, "output_tokens": 0.1 * tokens,
                          "cost_usd": tokens * 2e-6, "duration_s": 60.0})
    return frame.assign(**columns)


def test_the_paired_change_in_tokens_cost_and_time_per_run_comes_with_its_interval():
    a, b = run_rows(TOKENS_A), run_rows(TOKENS_B, duration_s=54.0)
    tokens = paired_change(a, b, "tokens", label_a="no rules", label_b="v2")
    assert tokens.n == 12 and tokens.mean_a == pytest.approx(TOKENS_A.mean())
    assert tokens.relative == pytest.approx(TOKENS_B.mean() / TOKENS_A.mean() - 1)
    assert (tokens.rel_low, tokens.rel_high) == pytest.approx(paired_bootstrap(TOKENS_A, TOKENS_B, mean_ratio))
    assert tokens.rel_low < tokens.relative < tokens.rel_high and tokens.ci_low < tokens.diff < tokens.ci_high
    assert tokens.summary() == "+15% tokens per run (95% CI +12% to +19%)"
    assert tokens.details() == "40,950 tokens -> 47,208 tokens on 12 tasks (no rules -> v2)"
    assert paired_change(a, b, "cost_usd").relative == pytest.approx(tokens.relative)
    time = paired_change(a, b, "duration_s")
    assert time.diff == pytest.approx(-6.0) and time.summary() == "-10% wall time per run (95% CI -10% to -10%)"
    assert json.loads(json.dumps(tokens.to_dict(), allow_nan=True))["summary"] == tokens.summary()


def test_the_change_counts_the_runs_accuracy_counts_and_an_unpriced_cost_is_not_measured():
    a = run_rows([1000, 1000, 1000, 1000])
    b = run_rows([2000, 2000, 9999, 1500], status=["completed", "timeout", "error", "completed"],
                 error=["", "", "502 from the provider", ""])
    tokens = paired_change(a, b, "tokens")
    # the timeout is the rules' doing: its tokens count; the provider error says nothing: left out of both sides
    assert tokens.n == 3 and tokens.mean_b == pytest.approx(5500 / 3) and tokens.excluded == {"errored": 1}
    unpriced = paired_change(a, b.assign(cost_usd=None), "cost_usd")
    assert unpriced.n == 0 and unpriced.excluded == {"not measured": 3, "errored": 1}
    assert unpriced.summary() == "cost per run: not measured"
    no_column = paired_change(a.drop(columns="duration_s"), b, "duration_s")
    assert no_column.n == 0 and math.isnan(no_column.relative)
    with pytest.raises(ValueError, match="measure"):
        paired_change(a, b, "dollars")


def test_a_change_from_zero_is_said_in_its_unit_not_as_a_percentage():
    a, b = run_rows([0, 0, 0]), run_rows([1200, 1200, 1200])
    tokens = paired_change(a, b, "tokens")
    assert math.isnan(tokens.relative) and tokens.summary() == "+1,200 tokens per run (95% CI +1,200 tokens to +1,200 tokens)"
    assert paired_change(a, b, "cost_usd").summary().startswith("+$0.0024 per run")
