"""The house suite: tasks whose hidden tests check conventions the issues never state."""

from collections import Counter

import pytest

from helpers.families.coding.house_suite import CONVENTIONS, build_house_repos, load_house_suite
from helpers.core.protocols import TASK_FIELDS


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    return load_house_suite(tmp_path_factory.mktemp("house"))


def test_there_are_at_least_twelve_tasks_with_every_swebench_field_and_unique_ids(tasks):
    assert len(tasks) >= 12
    assert set(TASK_FIELDS) <= set(tasks.columns)
    assert tasks.instance_id.is_unique and tasks.created_at.is_unique
    for row in tasks.itertuples():
        assert row.patch.startswith("diff --git") and row.test_patch.startswith("diff --git")
        assert row.FAIL_TO_PASS and row.PASS_TO_PASS and row.suite == "house"


def test_every_convention_recurs_across_tasks_and_is_stated_as_a_rule(tasks):
    counts = Counter(c for conventions in tasks.conventions for c in conventions)
    assert set(counts) == set(CONVENTIONS)
    assert min(counts.values()) >= 2
    for convention in CONVENTIONS.values():
        assert {"title", "rule", "check"} <= set(convention) and convention["rule"].endswith(".")


def test_no_problem_statement_gives_its_conventions_away(tasks):
    for row in tasks.itertuples():
        text = row.problem_statement.lower()
        assert "changelog" not in text and "logger" not in text and "register" not in text


def test_the_build_is_deterministic(tmp_path):
    first = build_house_repos(tmp_path / "a")["house/ledger"]
    second = build_house_repos(tmp_path / "b")["house/ledger"]
    a, b = load_house_suite(tmp_path / "a"), load_house_suite(tmp_path / "b")
    assert first != second
    assert list(a.base_commit) == list(b.base_commit) and list(a.patch) == list(b.patch)


def test_a_built_suite_is_reused_not_rebuilt(tmp_path):
    repo = build_house_repos(tmp_path)["house/ledger"]
    marker = repo / "untracked-marker"
    marker.write_text("still here")
    build_house_repos(tmp_path)
    assert marker.exists()
