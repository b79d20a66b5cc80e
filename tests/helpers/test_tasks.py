"""Loading SWE-bench rows and splitting tasks into train and test."""

import json
import time

import pandas as pd
import pytest

from helpers.config import REPO_ROOT
from helpers.tasks import OfflineError, load_swebench, load_tasks, select_tasks, split_dataset

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


def test_offline_the_hub_fails_at_once_saying_how_to_use_a_local_file(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.monotonic()
    with pytest.raises(OfflineError, match="pass the file's path"):
        load_tasks("SWE-bench/SWE-bench_Lite")
    assert time.monotonic() - started < 2


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
    with pytest.raises(ValueError, match="only 24 tasks"):
        split_dataset(synthetic(), 20, 10)
    with pytest.raises(ValueError, match="by_repo"):
        split_dataset(synthetic(), 5, 5, strategy="by_author")
    with pytest.raises(ValueError, match="cannot give"):
        split_dataset(synthetic(n_repos=2), 7, 4, strategy="by_repo")


def test_the_house_source_loads_the_bundled_suite():
    assert set(load_tasks("house").suite) == {"house"}
