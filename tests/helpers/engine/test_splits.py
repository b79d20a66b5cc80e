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


def test_the_quickstarts_default_split_validates_only_on_conventions_its_training_tasks_show(tmp_path, monkeypatch):
    """The quickstart's split (8 in the pool, 4 test, chronological): whatever validation checks, train can teach,
    so a version that learned from train can win on validation (the dry run's story depends on it)."""
    monkeypatch.setenv("PL_RESULTS_DIR", str(tmp_path))
    train, val, test = load_or_make_split("split-coverage", "house", 8, 4, "chronological")
    assert (len(train), len(val), len(test)) == (6, 2, 4)
    conventions = lambda frame: {c for row in frame["conventions"] for c in row}  # noqa: E731
    assert conventions(val) <= conventions(train) and conventions(test) <= conventions(train)
