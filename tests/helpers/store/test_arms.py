"""The baseline arms' store: one record per arm (ran, errored or skipped, with why) and the test rows of those
that ran, kept beside the experiment's loops; an arm saved again replaces only its own record."""

import pandas as pd
import pytest

from helpers.store.arms import arm_rows, baselines_store_name, load_arms, save_arm


def test_each_arm_keeps_its_record_and_rows_and_saving_one_leaves_the_others(tmp_path):
    rows = pd.DataFrame({"instance_id": ["a", "b"], "pass_or_fail": ["pass", "fail"], "status": "completed"})
    assert load_arms("exp", tmp_path) == {} and arm_rows("exp", "init", tmp_path) is None
    save_arm("exp", "init", {"status": "ran", "label": "codex's /init", "version": 1}, rows, tmp_path)
    save_arm("exp", "team", {"status": "skipped", "why": "no rules file at the base commit"}, root=tmp_path)
    save_arm("exp", "init", {"status": "errored", "why": "wrote nothing"}, root=tmp_path)
    assert load_arms("exp", tmp_path) == {"init": {"status": "errored", "why": "wrote nothing"},
                                          "team": {"status": "skipped", "why": "no rules file at the base commit"}}
    assert arm_rows("exp", "init", tmp_path)["pass_or_fail"].tolist() == ["pass", "fail"]
    assert baselines_store_name("exp") == "exp-baselines"


@pytest.mark.parametrize("arm", ["../init", "in it", ""])
def test_an_arm_name_that_is_not_a_safe_name_is_refused_before_anything_is_written(tmp_path, arm):
    with pytest.raises(ValueError, match="arm name"):
        save_arm("exp", arm, {"status": "ran"}, root=tmp_path)
    assert not (tmp_path / "exp").exists()


def test_an_arm_status_outside_ran_errored_skipped_is_refused():
    with pytest.raises(ValueError, match="status"):
        save_arm("exp", "init", {"status": "no rules"})
