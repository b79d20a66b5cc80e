"""Experiments in a real local Phoenix: datasets, runs with evaluations, ruleset versions; idempotent; kept when down;
and what a person sees in the compare view (patch and gold patch as diff blocks, the judge's explanation)."""

import json
import uuid

import httpx
import pandas as pd
import pytest

from helpers.tracking.phoenix_experiments import (PhoenixUnavailableWarning, flush_pending, log_experiment_to_phoenix,
                                         log_ruleset_version, pending_path, upload_dataset)
from helpers.tracking.phoenix_runs import run_output
from helpers.store.records import ruleset_sha
from helpers.tracking import phoenix_client

pytestmark = pytest.mark.slow


def tasks(n=3):
    return pd.DataFrame({"instance_id": [f"org__r-{i}" for i in range(n)], "repo": ["org/r"] * n,
                         "problem_statement": [f"Issue {i}" for i in range(n)], "patch": [f"GOLD {i}" for i in range(n)]})


def judged(n=3, loop=0):
    frame = tasks(n).rename(columns={"patch": "ground_truth_patch"})
    return frame.assign(output=[f"diff {i}" for i in range(n)], mode="act", ruleset_sha="0123456789abcdef", status=["completed"] * (n - 1) + ["timeout"],
                        error=[""] * (n - 1) + ["stopped after 900 s"], pass_or_fail=["pass"] + ["fail"] * (n - 1),
                        failed_tests=[[]] + [["t::x"]] * (n - 1), duration_s=[12.5] * n, cost_usd=[0.01] * n,
                        correctness=["correct", "incorrect"] + [""] * (n - 2),
                        explanation=["Good.", "Missed the changelog."] + [""] * (n - 2),
                        judge_error=["", ""] + ["unparseable judge answer"] * (n - 2), loop=loop)


def rest(url, path, **params):
    return httpx.get(f"{url}/{path}", params=params, timeout=30).json()


def records(url, experiment_id):
    """The experiment's JSON export, by example id: input, reference output, output, annotations."""
    return {r["example_id"]: r for r in json.loads(httpx.get(f"{url}/v1/experiments/{experiment_id}/json", timeout=30).text)}


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
    assert {e["output"]["patch"] for e in examples} == {f"```diff\nGOLD {i}\n```" for i in range(3)}
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


def test_with_phoenix_down_everything_is_kept_and_logged_later_with_one_call(phoenix_url, name, tmp_path, monkeypatch):
    monkeypatch.setattr(phoenix_client, "BACKOFF_S", 0.01)  # every retry still made, without 3.5 s of waits per call
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
    rules = "- [R1] Add a changelog entry.\n"
    first = log_ruleset_version(phoenix_url, None, name, 0, "", loop=0, results_root=tmp_path)
    second = log_ruleset_version(phoenix_url, None, name, 1, rules, loop=1, results_root=tmp_path)
    again = log_ruleset_version(phoenix_url, None, name, 1, rules, loop=1, results_root=tmp_path)
    assert again["id"] == second["id"] != first["id"]
    versions = rest(phoenix_url, f"v1/prompts/rules-{name}/versions")["data"]
    assert len(versions) == 2
    tagged = rest(phoenix_url, f"v1/prompts/rules-{name}/tags/loop-1")["data"]
    assert tagged["template"]["messages"][0]["content"][0]["text"] == rules
    assert tagged["metadata"]["ruleset_sha"] == ruleset_sha(rules)  # the hash records and the store use


def test_a_caller_names_the_prompt_and_a_ruleset_run_again_in_a_later_loop_gets_that_tag_too(phoenix_url, name, tmp_path):
    prompt = f"agentrules-{name}"
    kept = log_ruleset_version(phoenix_url, None, name, 1, "- [R1] x\n", loop=1, results_root=tmp_path, prompt=prompt)
    reused = log_ruleset_version(phoenix_url, None, name, 1, "- [R1] x\n", loop=2, results_root=tmp_path, prompt=prompt)
    assert reused["id"] == kept["id"] and len(rest(phoenix_url, f"v1/prompts/{prompt}/versions")["data"]) == 1
    assert rest(phoenix_url, f"v1/prompts/{prompt}/tags/loop-2")["data"]["id"] == kept["id"]


def test_the_compare_view_shows_the_patch_and_the_gold_patch_as_diffs_and_the_judges_explanation(phoenix_url, name, tmp_path):
    gold = "diff --git a/CHANGELOG.md b/CHANGELOG.md\n--- a/CHANGELOG.md\n+++ b/CHANGELOG.md\n@@ -1 +1,2 @@\n # Changelog\n+- Fixed.\n"
    dataset = upload_dataset(phoenix_url, name, tasks(2).assign(patch=[gold, gold]))
    rows = judged(2).assign(output=["diff --git a/x.py b/x.py\n+fixed\n", ""])
    result = log_experiment_to_phoenix(hostname=phoenix_url, api_key=None, dataset_obj=dataset, experiment_name="Train 0",
                                       experiment_df=rows, metadata={"loop": 0}, experiment=name, results_root=tmp_path)
    assert result.url == f"{phoenix_url}/datasets/{dataset.id}/compare?experimentId={result.experiment_id}"
    shown = records(phoenix_url, result.experiment_id)
    first = shown[dataset.example_ids["org__r-0"]]
    # A lone string is what Phoenix renders as Markdown: the diff comes first, as a ```diff block.
    assert first["reference_output"] == {"patch": "```diff\n" + gold.rstrip("\n") + "\n```"}
    (patch,) = first["output"].values()
    assert patch.startswith("```diff\ndiff --git a/x.py b/x.py\n+fixed\n```") and "**tests**: pass" in patch
    assert "`0123456789abcdef`" in patch  # the run's ruleset_sha
    empty = shown[dataset.example_ids["org__r-1"]]["output"]["patch"]
    assert empty.startswith("*No patch") and "`t::x`" in empty  # the failed test is named
    judge = {a["name"]: a for a in shown[dataset.example_ids["org__r-1"]]["annotations"]}["correctness"]
    assert judge["explanation"] == "Missed the changelog." and judge["label"] == "incorrect"
    (experiment,) = experiments(phoenix_url, dataset.id)
    assert experiment["metadata"]["ruleset_sha"] == "0123456789abcdef"


def test_a_patch_a_plan_and_other_output_each_get_their_block_and_older_rows_are_read_through_their_aliases():
    plan = {"instance_id": "a", "mode": "plan", "output": "1. Raise InsufficientFundsError.\n```py\nx\n```"}
    (kind, text), = run_output(plan).items()
    assert kind == "plan" and text.startswith("````markdown\n1. Raise")  # a longer fence around the plan's own
    assert run_output({"instance_id": "a", "cline_patch": "diff --git a/y b/y"})["patch"].startswith("```diff\ndiff --git a/y")
    assert run_output({"instance_id": "a", "cline_patch": "", "plan": "Step 1"})["plan"].startswith("```markdown\nStep 1")
    assert run_output({"instance_id": "a", "output": "new", "cline_patch": "old", "mode": "act"})["patch"].startswith("```diff\nnew")
    page = run_output({"instance_id": "a", "output": '{"title": "Home"}'})  # a prompt task's answer, no mode
    assert page["output"].startswith('```json\n{"title": "Home"}\n```')


def test_other_tasks_under_the_same_dataset_name_become_its_new_version(phoenix_url, name):
    first = upload_dataset(phoenix_url, name, tasks(3))
    second = upload_dataset(phoenix_url, name, tasks(4))
    assert second.id == first.id and second.version_id != first.version_id and len(second.example_ids) == 4
    assert second.example_ids["org__r-0"] == first.example_ids["org__r-0"]  # the same task keeps its example


def test_the_cookbooks_own_client_and_dataset_are_accepted(phoenix_url, name, tmp_path):
    from phoenix.client import Client

    client = Client(base_url=phoenix_url)
    dataset = client.datasets.create_dataset(name=name, dataframe=tasks(), input_keys=["problem_statement"],
                                             output_keys=["patch"], metadata_keys=["instance_id", "repo"])
    result = log_experiment_to_phoenix(hostname=client, api_key=None, dataset_obj=dataset, experiment_name="Train 0",
                                       experiment_df=judged(), metadata={"loop": 0}, experiment=name, results_root=tmp_path)
    assert result.logged and result.dataset_id == dataset.id and result.runs_created == 3
    assert len(rest(phoenix_url, "v1/datasets", name=name)["data"]) == 1  # logged on that dataset, not a copy
