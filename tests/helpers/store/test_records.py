"""Results are written so that a kill at any moment loses nothing finished."""

import json
import os

import pandas as pd
import pytest

from helpers.core import config
from helpers.store.records import (append_jsonl, check_name, experiment_dir, read_jsonl, write_atomic,
                             write_csv)


def test_appended_records_read_back_in_order(tmp_path):
    path = tmp_path / "runs" / "train_0.jsonl"
    for i in range(3):
        append_jsonl(path, {"instance_id": f"t{i}", "n": i})
    assert [r["n"] for r in read_jsonl(path)] == [0, 1, 2]


def test_a_line_torn_by_a_kill_is_skipped_and_the_rest_kept(tmp_path):
    path = tmp_path / "r.jsonl"
    append_jsonl(path, {"instance_id": "done"})
    with open(path, "a") as f:
        f.write('{"instance_id": "half-writ')  # what a kill mid-write leaves
    assert read_jsonl(path) == [{"instance_id": "done"}]
    append_jsonl(path, {"instance_id": "after"})  # the next record is not glued to the torn one
    assert [r["instance_id"] for r in read_jsonl(path)] == ["done", "after"]


def test_a_missing_file_reads_as_no_records(tmp_path):
    assert read_jsonl(tmp_path / "nothing.jsonl") == []


def test_atomic_writes_leave_no_temporary_files(tmp_path):
    path = write_atomic(tmp_path / "a" / "b.txt", "hello")
    assert path.read_text() == "hello"
    assert os.listdir(path.parent) == ["b.txt"]


def test_csv_cells_holding_lists_are_stored_as_json(tmp_path):
    frame = pd.DataFrame({"instance_id": ["x"], "failed_tests": [["t::a", "t::b"]]})
    path = write_csv(frame, tmp_path / "out.csv")
    assert json.loads(pd.read_csv(path)["failed_tests"][0]) == ["t::a", "t::b"]


@pytest.mark.parametrize("bad", ["", "../up", "a/b", "with space", ".hidden"])
def test_unsafe_experiment_names_are_refused_with_an_example(bad):
    with pytest.raises(ValueError, match="e.g."):
        check_name(bad)


def test_results_go_where_PL_RESULTS_DIR_points(monkeypatch, tmp_path):
    monkeypatch.setenv("PL_RESULTS_DIR", str(tmp_path))
    assert experiment_dir("demo") == tmp_path / "demo"
    monkeypatch.delenv("PL_RESULTS_DIR")
    assert experiment_dir("demo") == config.RESULTS_DIR / "demo"
