"""Following one training task through the loop, from an experiment's saved records."""

import pandas as pd
import pytest

from helpers.engine.journey import journey, journey_sections, pick_journey_task
from helpers.store.records import append_jsonl, loops_path, split_results_path, write_csv
from helpers.store.rulesets import RulesetStore

PATCH = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def saved_experiment(tmp_path, outcomes: dict[str, list[str]]) -> tuple:
    """An experiment whose training rows give each task the outcome per loop in `outcomes`."""
    results, rulesets = tmp_path / "results", tmp_path / "rulesets"
    store = RulesetStore("exp", rulesets)
    store.save("")
    loops = len(next(iter(outcomes.values())))
    for loop in range(loops):
        rows = pd.DataFrame([{"instance_id": iid, "problem_statement": f"Issue of {iid}", "output": PATCH,
                              "pass_or_fail": seq[loop], "status": "completed", "failed_tests": '["tests/t.py::a"]',
                              "test_log": "E   AssertionError: house convention broken", "correctness": "incorrect",
                              "explanation": f"{iid} missed the changelog."} for iid, seq in outcomes.items()])
        write_csv(rows, split_results_path("exp", "train", loop, results))
        store.save(f"- [R{loop + 1}] Rule {loop + 1}.\n", parent=loop, loop=loop,
                   report={"edits_applied": [{"op": "add", "text": f"Rule {loop + 1}.", "reason": "changelog",
                                              "sources": ["t2"]}]})
        append_jsonl(loops_path("exp", results), {"loop": loop, "ruleset_version": loop})
    return results, rulesets


def test_the_task_picked_failed_first_and_passed_later_and_its_journey_reads_in_order(tmp_path):
    results, rulesets = saved_experiment(tmp_path, {"t1": ["pass", "pass"], "t2": ["fail", "pass"]})
    assert pick_journey_task("exp", results) == ("t2", "it failed in the first loop and passed in a later one")
    story = journey("exp", "t2", results, rulesets)
    assert story["first"]["failed_tests"] == "tests/t.py::a" and story["later"]["loop"] == 1
    assert story["edits"][0]["from_this_task"] and story["carried"].startswith("### Example t2")
    headings = [heading for heading, _, _ in journey_sections(story)]
    assert headings == ["The task's issue", "Loop 0: the agent's diff, with rules version 0", "Loop 0: the hidden tests",
                        "Loop 0: the judge's explanation",
                        "What the meta-prompt carried to the optimizer (this task's block)",
                        "The optimizer's edits after loop 0 (version 1)",
                        "Loop 1: the same task with rules version 1", "Loop 1: the hidden tests"]


def test_when_no_outcome_changed_the_pick_says_so_and_an_unknown_task_is_a_named_error(tmp_path):
    results, rulesets = saved_experiment(tmp_path, {"t1": ["pass", "pass"], "t2": ["fail", "fail"]})
    iid, why = pick_journey_task("exp", results)
    assert iid == "t2" and why.startswith("no training task changed its outcome between loops")
    assert pick_journey_task("other", results) == (None, "other has no finished loop with training rows.")
    with pytest.raises(KeyError, match="'t9' is not a training task of 'exp'"):
        journey("exp", "t9", results, rulesets)
