"""Loading SWE-bench rows and splitting tasks into train and test."""

import json

import pandas as pd
import pytest

from helpers.core.config import REPO_ROOT
from helpers.families.coding.tasks import OfflineError, load_swebench, load_tasks, select_tasks, split_dataset

SAMPLE = REPO_ROOT / "tests/fixtures/swebench/lite_sample.jsonl"


@pytest.fixture(scope="module")
def lite():
    return load_swebench(str(SAMPLE))


def synthetic(n_repos=4, per_repo=6):
    return pd.DataFrame([{"instance_id": f"r{r}__t-{i}", "repo": f"org/r{r}", "created_at": f"2024-0{1 + i % 9}-1{r}T00:00:00Z"}
                         for r in range(n_repos) for i in range(per_repo)])


def test_a_local_jsonl_file_loads_with_test_lists_decoded(lite):
    assert len(lite) == 8 and lite.instance_id.is_unique
    assert all(isinstance(v, list) and v for v in lite.FAIL_TO_PASS)
    assert set(lite.suite) == {"swebench"}


def test_json_and_parquet_files_load_the_same_rows(lite, tmp_path):
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    pd.DataFrame(rows).to_parquet(tmp_path / "rows.parquet")
    for path in ("rows.json", "rows.parquet"):
        assert list(load_swebench(str(tmp_path / path)).instance_id) == list(lite.instance_id)


def test_a_mirrors_folder_gives_each_task_its_repository(tmp_path):
    frame = load_swebench(str(SAMPLE), mirrors_dir=tmp_path)
    assert frame.repo_path[0] == str(tmp_path / frame.repo[0].replace("/", "__"))


def test_a_missing_field_and_duplicate_ids_are_named(tmp_path):
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    del rows[0]["test_patch"]
    (tmp_path / "bad.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(ValueError, match="test_patch"):
        load_swebench(str(tmp_path / "bad.jsonl"))
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    (tmp_path / "dup.jsonl").write_text("\n".join(json.dumps(r) for r in rows + rows[:1]))
    with pytest.raises(ValueError, match=rows[0]["instance_id"]):
        load_swebench(str(tmp_path / "dup.jsonl"))


def test_unknown_instance_ids_are_named(lite):
    assert list(select_tasks(lite, ["psf__requests-2317"]).instance_id) == ["psf__requests-2317"]
    with pytest.raises(KeyError, match="nope-1"):
        select_tasks(lite, ["psf__requests-2317", "nope-1"])


def test_offline_the_hub_fails_saying_how_to_use_a_local_file(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OfflineError, match="pass the file's path"):
        load_tasks("SWE-bench/SWE-bench_Lite")


@pytest.mark.parametrize("strategy", ["random", "by_repo", "chronological"])
def test_splits_are_disjoint_exactly_sized_and_deterministic(strategy):
    tasks = synthetic()
    train, test = split_dataset(tasks, 10, 10, strategy=strategy, seed=3)
    again = split_dataset(tasks, 10, 10, strategy=strategy, seed=3)
    assert len(train) == 10 and len(test) == 10
    assert not set(train.instance_id) & set(test.instance_id)
    assert list(train.instance_id) == list(again[0].instance_id) and list(test.instance_id) == list(again[1].instance_id)


def test_a_by_repo_split_keeps_every_repository_on_one_side():
    train, test = split_dataset(synthetic(), 12, 12, strategy="by_repo", seed=1)
    assert not set(train.repo) & set(test.repo)


def test_a_chronological_split_trains_on_the_older_tasks_of_each_repository():
    train, test = split_dataset(synthetic(), 8, 12, strategy="chronological")
    for repo in set(train.repo) & set(test.repo):
        assert train[train.repo == repo].created_at.max() <= test[test.repo == repo].created_at.min()


def test_sizes_larger_than_the_data_or_an_unknown_strategy_are_clear_errors():
    with pytest.raises(ValueError, match=r"= 30, but the source has 24 tasks: the largest split that fits is "
                                         r"TRAIN_SIZE \+ TEST_SIZE = 24, e\.g\. TRAIN_SIZE=16, TEST_SIZE=8"):
        split_dataset(synthetic(), 20, 10)
    with pytest.raises(ValueError, match=r"TRAIN_SIZE=12, TEST_SIZE=12"):  # SWE-bench Lite's 150 + 150 on 24
        split_dataset(synthetic(), 150, 150)
    with pytest.raises(ValueError, match=r"TRAIN_SIZE=23, TEST_SIZE=1"):  # at least one task on each side
        split_dataset(synthetic(), 300, 1)
    with pytest.raises(ValueError, match="by_repo"):
        split_dataset(synthetic(), 5, 5, strategy="by_author")
    with pytest.raises(ValueError, match="cannot give"):
        split_dataset(synthetic(n_repos=2), 7, 4, strategy="by_repo")


def test_the_house_source_loads_the_bundled_suite():
    assert set(load_tasks("house").suite) == {"house"}


# Bad input: one error naming the fault and the fix, never a traceback from inside json or pandas.

def sample_rows():
    return [json.loads(line) for line in SAMPLE.read_text().splitlines()]


def test_a_missing_file_is_named_resolved_with_the_accepted_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # were it taken for a data-set id, this would say "hub"
    monkeypatch.chdir(tmp_path)
    for source in ("x.csv", "data/tasks.jsonl", "./SWE-bench_Lite"):
        with pytest.raises(FileNotFoundError, match="No such file") as caught:
            load_tasks(source)
        assert str(tmp_path / source.removeprefix("./")) in str(caught.value)
        assert ".jsonl" in str(caught.value) and ".csv" in str(caught.value) and "owner/name" in str(caught.value)


def test_a_csv_file_loads_the_same_tasks_as_its_jsonl(lite, tmp_path):
    rows = sample_rows()
    pd.DataFrame(rows).to_csv(tmp_path / "rows.csv", index=False)  # test lists as JSON strings in cells
    lite.to_csv(tmp_path / "decoded.csv", index=False)  # test lists as pandas writes lists: Python's repr
    for name in ("rows.csv", "decoded.csv"):
        frame = load_tasks(str(tmp_path / name))
        assert list(frame.instance_id) == list(lite.instance_id)
        assert list(frame.FAIL_TO_PASS) == list(lite.FAIL_TO_PASS) and list(frame.PASS_TO_PASS) == list(lite.PASS_TO_PASS)
        assert list(frame.problem_statement) == list(lite.problem_statement)


def test_a_task_row_holding_raw_unicode_line_separators_loads_whole(tmp_path):
    rows = sample_rows()[:2]
    rows[0]["problem_statement"] = "First\u2028second\u2029third\x85fourth\x1cfifth."
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    frame = load_tasks(str(tmp_path / "rows.jsonl"))
    assert len(frame) == 2 and frame.problem_statement[0] == rows[0]["problem_statement"]


def test_a_torn_jsonl_line_is_named_by_file_and_number(tmp_path):
    lines = [json.dumps(r) for r in sample_rows()]
    lines[3] = lines[3][:50]  # a line cut short, as a killed download leaves it
    (tmp_path / "torn.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"torn\.jsonl, line 4: not valid JSON"):
        load_tasks(str(tmp_path / "torn.jsonl"))
    (tmp_path / "torn.json").write_text("[" + ",\n".join(lines) + "]")
    with pytest.raises(ValueError, match=r"torn\.json, line 4: not valid JSON"):
        load_tasks(str(tmp_path / "torn.json"))


@pytest.mark.parametrize("name, text, says", [("empty.jsonl", "", "is empty"), ("blank.json", "\n  \n", "is empty"),
                                              ("empty.csv", "", "is empty"), ("none.json", "[]", "holds no task rows"),
                                              ("header.csv", "instance_id,repo\n", "holds no task rows")])
def test_an_empty_file_says_it_is_empty(tmp_path, name, text, says):
    (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=says) as caught:
        load_tasks(str(tmp_path / name))
    assert str(tmp_path / name) in str(caught.value) and "field" not in str(caught.value)


def test_an_unsupported_file_format_lists_the_accepted_ones(tmp_path):
    (tmp_path / "tasks.txt").write_text("sympy__sympy-20212\n")
    with pytest.raises(ValueError, match=r"\.txt is not a task file format.*\.jsonl, \.parquet or \.csv"):
        load_tasks(str(tmp_path / "tasks.txt"))


def test_a_bad_test_list_names_the_task_the_field_and_the_value_cut(tmp_path):
    rows = sample_rows()
    rows[2]["PASS_TO_PASS"] = "tests/test_a.py::test_one, " * 20  # a comma list, not JSON
    (tmp_path / "bad.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(ValueError) as caught:
        load_tasks(str(tmp_path / "bad.jsonl"))
    message = str(caught.value)
    assert rows[2]["instance_id"] in message and "PASS_TO_PASS" in message and "'tests/test_a.py::test_one, " in message
    assert len(message) < 250 and message.count("test_one") < 5  # the value is cut, not pasted whole


def test_one_id_given_as_a_string_is_one_id(lite):
    assert list(select_tasks(lite, "psf__requests-2317").instance_id) == ["psf__requests-2317"]
    with pytest.raises(KeyError, match=r"\['psf__requests-2317,nope-1'\] \(1 of the 1 asked\)"):
        select_tasks(lite, "psf__requests-2317,nope-1")  # never split at commas
    with pytest.raises(KeyError, match=r"\['nope-1', 'nope-2'\] \(2 of the 3 asked\)"):
        select_tasks(lite, ["nope-1", "psf__requests-2317", "nope-2"])


@pytest.mark.parametrize("train_size, test_size, named", [(2.5, 3, "train_size"), (3, "3", "test_size"),
                                                          (0, 3, "train_size"), (3, -1, "test_size"),
                                                          (True, 3, "train_size"), (3, None, "test_size")])
def test_split_sizes_must_be_positive_whole_numbers(train_size, test_size, named):
    bad = train_size if named == "train_size" else test_size
    with pytest.raises(ValueError, match=rf"^{named} must be a positive whole number of tasks \(e\.g\. 6\), got {bad!r}\.$"):
        split_dataset(synthetic(), train_size, test_size)


def test_whole_float_split_sizes_are_taken_as_ints():
    train, test = split_dataset(synthetic(), 3.0, 4.0, strategy="by_repo")
    assert (len(train), len(test)) == (3, 4)
