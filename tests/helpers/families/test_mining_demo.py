"""07's demo history keeps a habit its mined tasks check: the commit's own fix passes, the same fix without its
changelog line fails on that check, so the dry run's loop has a habit to learn."""

import pytest

from helpers.isolation.sandbox import unavailable_reason
from helpers.families.coding.evaluation import LocalEvaluator
from helpers.families.coding.mining import mine_repository
from helpers.families.coding.mining_demo import HABIT, demo_dry_run_tasks, demo_history, without_file

pytestmark = pytest.mark.xdist_group("mined-history")


def test_without_file_drops_only_that_files_part_of_a_diff():
    patch = ("diff --git a/CHANGELOG.md b/CHANGELOG.md\n--- a/CHANGELOG.md\n+++ b/CHANGELOG.md\n@@ -1 +1,2 @@\n+- x\n"
             "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert without_file(patch, "CHANGELOG.md") == patch[patch.index("diff --git a/src"):]
    assert without_file(patch, "README.md") == patch


@pytest.mark.skipif(bool(unavailable_reason()), reason="the sandbox cannot start here")
def test_every_demo_task_passes_with_its_changelog_line_and_fails_without_it(tmp_path):
    report = mine_repository(demo_history(tmp_path / "invoices"), "demo", results_root=tmp_path / "results",
                             progress=False, workers=2, timeout_s=120)
    tasks = demo_dry_run_tasks(report.tasks)
    assert len(tasks) == 4 and all(conventions == [HABIT] for conventions in tasks["conventions"])
    evaluator = LocalEvaluator(timeout_s=120)
    for task in tasks.to_dict("records"):
        assert "CHANGELOG.md" in task["patch"] and "CHANGELOG.md" not in task["naive_patch"]
        assert evaluator.evaluate(task, task["patch"]).resolved, task["instance_id"]
        naive = evaluator.evaluate(task, task["naive_patch"])
        assert not naive.resolved and "every change has a changelog entry" in naive.log, task["instance_id"]
