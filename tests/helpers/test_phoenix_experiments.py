"""Experiments in a real local Phoenix: datasets, runs with evaluations, ruleset versions; idempotent; kept when down."""

import json
import uuid

import httpx
import pandas as pd
import pytest

from helpers.phoenix_experiments import (PhoenixUnavailableWarning, flush_pending, log_experiment_to_phoenix,
                                         log_ruleset_version, pending_path, upload_dataset)

pytestmark = pytest.mark.slow


def tasks(n=3):
    return pd.DataFrame({"instance_id": [f"org__r-{i}" for i in range(n)], "repo": ["org/r"] * n,
                         "problem_statement": [f"Issue {i}" for i in range(n)], "patch": [f"GOLD {i}" for i in range(n)]})


def judged(n=3, loop=0):
    frame = tasks(n).rename(columns={"patch": "ground_truth_patch"})
    return frame.assign(cline_patch=[f"diff {i}" for i in range(n)], status=["completed"] * (n - 1) + ["timeout"],
                        error=[""] * (n - 1) + ["stopped after 900 s"], pass_or_fail=["pass"] + ["fail"] * (n - 1),
                        failed_tests=[[]] + [["t::x"]] * (n - 1), duration_s=[12.5] * n, cost_usd=[0.01] * n,
                        correctness=["correct", "incorrect"] + [""] * (n - 2),
                        explanation=["Good.", "Missed the changelog."] + [""] * (n - 2),
                        judge_error=["", ""] + ["unparseable judge answer"] * (n - 2), loop=loop)


def rest(url, path, **params):
    return httpx.get(f"{url}/{path}", params=params, timeout=30).json()


def experiments(url, dataset_id):
    return rest(url, f"v1/datasets/{dataset_id}/experiments")["data"]


def annotations(url, experiment_id):
    text = httpx.get(f"{url}/v1/experiments/{experiment_id}/json", timeout=30).text
    return {r["example_id"]: {a["name"]: a for a in r.get("annotations", [])} for r in json.loads(text)}


@pytest.fixture
def name():
    return f"test-{uuid.uuid4().hex[:8]}"


def test_a_task_set_becomes_a_dataset_and_uploading_it_again_reuses_it(phoenix_url, name):
    first = upload_dataset(phoenix_url, name, tasks())
    again = upload_dataset(phoenix_url, name, tasks())
    assert first.id and again.id == first.id and again.version_id == first.version_id
    assert len(rest(phoenix_url, "v1/datasets", name=name)["data"]) == 1
    examples = rest(phoenix_url, f"v1/datasets/{first.id}/examples")["data"]["examples"]
    assert sorted(e["metadata"]["instance_id"] for e in examples) == ["org__r-0", "org__r-1", "org__r-2"]
    assert {e["output"]["patch"] for e in examples} == {"GOLD 0", "GOLD 1", "GOLD 2"}
    assert examples[0]["input"]["problem_statement"].startswith("Issue")


def test_two_loops_are_two_experiments_with_a_run_and_evaluations_per_task(phoenix_url, name, tmp_path):
    dataset = upload_dataset(phoenix_url, name, tasks())
    for loop in (0, 1):
        result = log_experiment_to_phoenix(hostname=phoenix_url, api_key=None, dataset_obj=dataset,
                                           experiment_name=f"Train {loop}", experiment_df=judged(loop=loop),
                                           metadata={"loop": loop, "train_accuracy": 1 / 3, "ruleset_version": loop,
                                                     "dry_run": True}, experiment=name, results_root=tmp_path)
        assert result.logged and result.runs_created == 3 and result.evaluations_created == 6
    found = {e["name"]: e for e in experiments(phoenix_url, dataset.id)}
    assert set(found) == {"Train 0 (scripted dry run)", "Train 1 (scripted dry run)"}
    meta = found["Train 1 (scripted dry run)"]["metadata"]
    assert meta["loop"] == 1 and meta["dry_run"] is True and "SCRIPTED DRY RUN" in meta["data_source"]
    runs = rest(phoenix_url, f"v1/experiments/{found['Train 0 (scripted dry run)']['id']}/runs")["data"]
    assert len(runs) == 3 and sum(1 for r in runs if r.get("error")) == 1  # the timed-out run is an error
    evals = annotations(phoenix_url, found["Train 0 (scripted dry run)"]["id"])
    by_task = {dataset.example_ids[f"org__r-{i}"]: i for i in range(3)}
    for example_id, named in evals.items():
        i = by_task[example_id]
        assert named["resolved"]["score"] == (1.0 if i == 0 else 0.0)
        assert set(named) == {"resolved", "correctness"}
    good = evals[dataset.example_ids["org__r-1"]]["correctness"]
    assert good["label"] == "incorrect" and good["explanation"] == "Missed the changelog."
    assert evals[dataset.example_ids["org__r-2"]]["correctness"]["error"] == "unparseable judge answer"


def test_logging_the_same_loop_twice_adds_nothing(phoenix_url, name, tmp_path):
    dataset = upload_dataset(phoenix_url, name, tasks())
    kw = dict(hostname=phoenix_url, api_key=None, dataset_obj=dataset, experiment_name="Test 0",
              experiment_df=judged(), metadata={"loop": 0}, experiment=name, results_root=tmp_path)
    log_experiment_to_phoenix(**kw)
    again = log_experiment_to_phoenix(**kw)
    assert again.runs_created == 0 and again.runs_existing == 3 and again.evaluations_created == 0
    (experiment,) = experiments(phoenix_url, dataset.id)
    assert len(rest(phoenix_url, f"v1/experiments/{experiment['id']}/runs")["data"]) == 3


def test_with_phoenix_down_everything_is_kept_and_logged_later_with_one_call(phoenix_url, name, tmp_path):
    dead = "http://127.0.0.1:9"
    with pytest.warns(PhoenixUnavailableWarning):
        dataset = upload_dataset(dead, name, tasks())
        result = log_experiment_to_phoenix(hostname=dead, api_key=None, dataset_obj=dataset, experiment_name="Train 0",
                                           experiment_df=judged(), metadata={"loop": 0}, experiment=name,
                                           results_root=tmp_path)
        assert log_ruleset_version(dead, None, name, 1, "- [R1] A rule.\n", loop=1, results_root=tmp_path) is None
    assert not result.logged and pending_path(name, tmp_path).exists()
    logged = flush_pending(name, hostname=phoenix_url, results_root=tmp_path)
    assert len(logged) == 2 and not pending_path(name, tmp_path).exists()
    (found,) = rest(phoenix_url, "v1/datasets", name=name)["data"]
    (experiment,) = experiments(phoenix_url, found["id"])
    assert len(rest(phoenix_url, f"v1/experiments/{experiment['id']}/runs")["data"]) == 3


def test_each_ruleset_version_is_a_prompt_version_tagged_with_its_loop(phoenix_url, name, tmp_path):
    first = log_ruleset_version(phoenix_url, None, name, 0, "", loop=0, results_root=tmp_path)
    second = log_ruleset_version(phoenix_url, None, name, 1, "- [R1] Add a changelog entry.\n", loop=1, results_root=tmp_path)
    again = log_ruleset_version(phoenix_url, None, name, 1, "- [R1] Add a changelog entry.\n", loop=1, results_root=tmp_path)
    assert again["id"] == second["id"] != first["id"]
    versions = rest(phoenix_url, f"v1/prompts/clinerules-{name}/versions")["data"]
    assert len(versions) == 2
    tagged = rest(phoenix_url, f"v1/prompts/clinerules-{name}/tags/loop-1")["data"]
    assert tagged["template"]["messages"][0]["content"][0]["text"] == "- [R1] Add a changelog entry.\n"
