"""The split: a validation side carved out of the train pool, sized by one rule, and none for a pool of one."""

import pytest

from helpers.engine.splits import _val_size, load_or_make_split


@pytest.mark.parametrize("pool, validate", [(1, 0), (2, 1), (3, 1), (5, 1), (6, 2), (8, 2), (150, 50)])
def test_by_default_a_third_of_the_pool_validates_rounded_down_and_at_least_one_of_two_or_more(pool, validate):
    assert _val_size(pool, None) == validate


def test_a_validation_side_that_leaves_nothing_to_learn_from_is_one_clear_error():
    assert _val_size(8, 0) == 0  # no validation side: allowed
    with pytest.raises(ValueError, match="from 0 to train_size - 1 \\(0\\).*one must be left to learn from"):
        _val_size(1, 1)


def test_the_quickstarts_default_split_tests_16_tasks_from_every_library_and_validates_on_what_train_shows(tmp_path, monkeypatch):
    """The quickstart's split (6 in the pool, 16 test, chronological): every library in train and test; a validation
    task checks only conventions train can teach, so a version that learned from train can win on validation (the
    dry run's story depends on it); and the test tasks whose every convention train shows are enough for the one
    test to answer (6 of 16 flipping with none the other way is p = 0.031)."""
    from helpers.engine.splits import split_summary

    monkeypatch.setenv("PL_RESULTS_DIR", str(tmp_path))
    train, val, test = load_or_make_split("split-coverage", "house", 6, 16, "chronological")
    assert (len(train), len(val), len(test)) == (4, 2, 16)
    conventions = lambda frame: {c for row in frame["conventions"] for c in row}  # noqa: E731
    assert sum(set(row) <= conventions(train) for row in val["conventions"]) >= 1
    assert sum(set(row) <= conventions(train) for row in test["conventions"]) >= 6
    summary = split_summary(train, test, val)
    assert list(summary["repositories"]) == [3, 2, 3]  # train, validation, test
    assert summary.loc["train", "per repository"] == "house/ledger 2, house/rows 1, house/todo 1"
    assert summary.loc["test", "per repository"] == "house/ledger 5, house/rows 6, house/todo 5"
