"""The local evaluator grades a patch like SWE-bench: resolved only when every named test passes."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers.families.coding.evaluation import evaluate_patch
from helpers.families.coding.house_suite import load_house_suite


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    return load_house_suite(tmp_path_factory.mktemp("house"))


def evaluate_all(tasks, column):
    rows = [row for _, row in tasks.iterrows()]
    patches = [row[column] if column else "" for row in rows]
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(evaluate_patch, rows, patches))


def test_every_gold_patch_resolves_its_task(tasks):
    results = evaluate_all(tasks, "patch")
    assert [r.instance_id for r in results if not r.resolved] == []
    assert all(set(r.tests.values()) == {"PASSED"} for r in results)


def test_the_empty_patch_resolves_nothing(tasks):
    assert not any(r.resolved for r in evaluate_all(tasks, None))


def test_a_fix_that_breaks_a_convention_fails_and_the_log_names_the_convention(tasks):
    for row, result in zip(tasks.itertuples(), evaluate_all(tasks, "naive_patch")):
        assert not result.resolved, row.instance_id
        assert "house convention broken" in result.log, row.instance_id
        failed = result.failed_tests
        assert failed and all(t in row.FAIL_TO_PASS for t in failed)


def test_a_patch_that_does_not_apply_is_a_clear_failure(tasks):
    row = tasks.iloc[0]
    result = evaluate_patch(row, "diff --git a/nowhere.py b/nowhere.py\n--- a/nowhere.py\n+++ b/nowhere.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert not result.resolved and "does not apply" in result.error


def test_a_hanging_test_is_stopped_at_the_timeout(tasks):
    row = tasks.iloc[1].to_dict()
    hang = ("diff --git a/ledger/money.py b/ledger/money.py\n--- a/ledger/money.py\n+++ b/ledger/money.py\n"
            "@@ -1,3 +1,5 @@\n \"\"\"Amounts of money are Decimals with two places.\"\"\"\n+import time\n+time.sleep(60)\n \n"
            " from decimal import Decimal, InvalidOperation\n \n")
    result = evaluate_patch(row, hang, timeout_s=3)
    assert not result.resolved and "timed out" in result.error


def test_the_agents_workspace_is_not_needed_or_touched(tasks):
    row = tasks.iloc[0]
    evaluate_patch(row, row["patch"])
    from helpers.families.coding.git import git

    assert git("status", "--porcelain", cwd=row["repo_path"]).stdout == ""
