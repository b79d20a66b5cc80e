"""One function decides each run's outcome; every count (loop lines, tables, statistics) uses it."""

import pandas as pd
import pytest

from helpers.stats.outcomes import FAILED, FORGED, INFRA, RESOLVED, RULES, outcome_counts, run_outcome
from helpers.stats.comparisons import paired_comparison


@pytest.mark.parametrize("row, outcome", [
    ({"status": "completed", "pass_or_fail": "pass"}, RESOLVED),
    ({"status": "completed", "pass_or_fail": "fail"}, FAILED),
    ({"status": "completed", "pass_or_fail": "forged", "eval_error": "forged: a test made to fail passed"}, FORGED),
    ({"status": "timeout", "pass_or_fail": "fail", "error": "stopped after 900 s"}, RULES),
    ({"status": "error", "pass_or_fail": "fail", "error": "error_max_turns: reached max turns (30)"}, RULES),
    ({"status": "error", "pass_or_fail": "fail", "error": "prompt is too long: 210000 tokens"}, RULES),
    ({"status": "error", "pass_or_fail": "fail", "error": "429 Too Many Requests"}, INFRA),
    ({"status": "budget", "pass_or_fail": "fail", "error": "the experiment's budget is spent"}, INFRA),
    ({"status": "completed", "pass_or_fail": "error", "eval_error": "harness: docker image pull failed"}, INFRA),
    ({"status": "completed", "pass_or_fail": "not_evaluated"}, INFRA),
    ({"status": "completed", "pass_or_fail": float("nan")}, INFRA),
])
def test_each_run_has_exactly_one_outcome(row, outcome):
    assert run_outcome(row) == outcome


def rows():
    return pd.DataFrame({
        "instance_id": ["a", "b", "c", "d", "e"],
        "status": ["completed", "completed", "timeout", "error", "error"],
        "pass_or_fail": ["pass", "fail", "fail", "fail", "fail"],
        "error": ["", "", "stopped after 900 s", "429 Too Many Requests", "max turns reached"]})


def test_a_forged_grade_is_never_a_pass_and_counts_as_a_failure_of_its_ruleset_named_apart():
    frame = pd.DataFrame({"instance_id": ["a", "b", "c"], "status": ["completed"] * 3,
                          "pass_or_fail": ["pass", "forged", "fail"], "error": ["", "", ""]})
    counts = outcome_counts(frame)
    assert (counts["passed"], counts["failed"], counts["forged"], counts["scored"]) == (1, 2, 1, 3)
    assert counts["accuracy"] == pytest.approx(1 / 3) and counts["errors"] == 0
    honest = frame.assign(pass_or_fail=["pass", "fail", "fail"])  # the same tasks, the forger's task failed plainly
    versus = paired_comparison(frame, honest)
    assert versus.n == 3 and versus.accuracy_a == versus.accuracy_b == counts["accuracy"]  # kept in the denominator


def test_rule_induced_errors_count_as_failures_and_infrastructure_errors_are_left_out_and_named():
    counts = outcome_counts(rows())
    assert (counts["passed"], counts["failed"], counts["scored"]) == (1, 3, 4)  # a, b, c, e scored
    assert counts["rule_errors"] == 2 and counts["errors"] == 1 and counts["accuracy"] == 0.25
    assert counts["top_error"] == "429 Too Many Requests"


def test_the_statistics_count_the_same_runs_as_the_loop_line():
    """The same frame gives the same denominator in outcome_counts and in a paired comparison."""
    frame = rows()
    versus_itself = paired_comparison(frame, frame)
    assert versus_itself.n == outcome_counts(frame)["scored"] == 4
    assert versus_itself.accuracy_a == outcome_counts(frame)["accuracy"]
    assert versus_itself.excluded == {"errored": 1}


def test_the_errored_note_counts_the_agents_own_failures_only_in_the_pairs_kept():
    from helpers.stats.outcomes import errored_note

    a = pd.DataFrame({"instance_id": ["t1", "t2", "t3"], "status": ["error", "error", "completed"],
                      "host_error": ["the model provider failed: status 503", "", ""], "pass_or_fail": "fail"})
    b = a.assign(status=["error", "completed", "error"], host_error=["", "", ""])  # t1's own failure: pair left out
    assert errored_note(1, a, b) == ("Errored pairs: 1 pair with an infrastructure error on either side left out; "
                                     "2 failed runs the agent ended itself (its own exit, its own calls, its limits) "
                                     "counted as failures.")
