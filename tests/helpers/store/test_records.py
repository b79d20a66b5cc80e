"""Results are written so that a kill at any moment loses nothing finished."""

import json
import os

import pandas as pd
import pytest

from helpers.core import config
from helpers.store.records import (RecordError, append_jsonl, check_name, experiment_dir, read_jsonl, write_atomic,
                                   write_csv, write_json)


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


# Every character str.splitlines splits at, NUL, and lone surrogates (high, low, and what surrogateescape makes)
HOSTILE_TEXTS = ["a\u2028b", "a\u2029b", "a\x85b", "a\x1cb\x1db\x1eb", "a\x0bb\x0cb\rb", "a\x00b", "a\ud800b",
                 "a\udc80b", "\udfff", "é\u2028ü 東京 🙂", '"}\n{"instance_id": "forged"}']


def test_any_text_in_a_record_keeps_it_whole_one_line_each_and_reads_back_as_written(tmp_path):
    path = tmp_path / "r.jsonl"
    records = [{"instance_id": f"t{i}", "output": text, "failed_tests": [text]} for i, text in enumerate(HOSTILE_TEXTS)]
    for record in records:
        append_jsonl(path, record)
    # as written, but a lone surrogate (which no UTF-8 file or data frame holds) as its escape's text
    kept = [{**r, "output": r["output"].encode("utf-8", "backslashreplace").decode(),
             "failed_tests": [r["output"].encode("utf-8", "backslashreplace").decode()]} for r in records]
    assert read_jsonl(path) == kept and kept[6]["output"] == "a\\ud800b" and kept[0]["output"] == "a\u2028b"
    assert path.read_bytes().count(b"\n") == len(records) and path.read_bytes().isascii()
    write_json(tmp_path / "r.json", records)  # whole files and frames take them too
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8")) == kept
    write_csv(pd.DataFrame(read_jsonl(path)), tmp_path / "r.csv")


def test_a_complete_line_that_cannot_be_read_is_one_error_naming_it_never_a_lost_record(tmp_path):
    path = tmp_path / "r.jsonl"
    append_jsonl(path, {"instance_id": "first"})
    with open(path, "a") as f:
        f.write('{"instance_id": "second", "output": "cut\n')  # a record broken in two, as splitlines once did
    append_jsonl(path, {"instance_id": "third"})
    with pytest.raises(RecordError, match=r"Line 2 of .*r.jsonl is not a readable record.*delete that line"):
        read_jsonl(path)


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


def test_an_agents_json_events_holding_raw_line_separators_are_read_whole():
    from cline.runner import parse_events
    from helpers.isolation.processes import json_lines

    # JSON allows U+2028, U+2029 and U+0085 raw in a string (Node's JSON.stringify writes them so)
    stdout = '{"type": "say", "text": "a\u2028b"}\n' + '{"type": "run_result", "text": "done\u2029\x85", "finishReason": "completed"}\n'
    assert [e["text"] for e in json_lines(stdout)] == ["a\u2028b", "done\u2029\x85"]
    final, _ = parse_events(stdout)
    assert final is not None and final["finishReason"] == "completed"
