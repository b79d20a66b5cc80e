"""The swebench harness path: grading recorded logs offline, reading reports, failing early without Docker or
Modal, and batches through a stand-in for `swebench.harness.run_evaluation` (tests/fixtures/swebench)."""

import json
import os
import sys

import pytest

from helpers.core.config import REPO_ROOT
from helpers.families.coding.evaluation import evaluate_patch
from helpers.families.coding.swebench_grading import grade_log, read_report, swebench_test_spec
from helpers.families.coding.swebench_harness import (HARNESS_COMMAND, HarnessUnavailable, SWEbenchEvaluator, docker_available,
                                      harness_run_id, modal_available, require_backend)
from helpers.families.coding.swebench_harness import testbed_workspace as copy_testbed  # a name pytest would collect as a test
from helpers.families.coding.tasks import load_swebench

FIXTURES = REPO_ROOT / "tests/fixtures/swebench"
STAND_IN = FIXTURES / "stand_in_run_evaluation.py"
TRIO = ["psf__requests-2317", "sympy__sympy-20212", "django__django-16046"]


@pytest.fixture(scope="module")
def lite():
    return load_swebench(str(FIXTURES / "lite_sample.jsonl")).set_index("instance_id", drop=False)


def test_a_recorded_passing_log_grades_as_resolved_with_swebenchs_own_grading(lite):
    task = lite.loc["psf__requests-2317"].to_dict()
    result = grade_log(task, (FIXTURES / "requests_resolved/test_output.txt").read_text())
    assert result.resolved and not result.failed_tests
    assert set(result.tests) == set(task["FAIL_TO_PASS"]) | set(task["PASS_TO_PASS"])


def test_a_recorded_failing_log_names_the_failing_test(lite):
    result = grade_log(lite.loc["sympy__sympy-20212"].to_dict(), FIXTURES / "sympy_unresolved/test_output.txt")
    assert not result.resolved and result.failed_tests == ["test_zero"]
    assert result.log_path.endswith("test_output.txt") and "AssertionError" in result.log


def test_a_log_where_the_patch_did_not_apply_is_a_clear_failure(lite):
    result = grade_log(lite.loc["psf__requests-2317"].to_dict(), ">>>>> Patch Apply Failed\nerror: corrupt patch\n")
    assert not result.resolved and "did not apply" in result.error


def test_harness_reports_are_read_into_results(lite):
    resolved = read_report(FIXTURES / "requests_resolved/report.json", "psf__requests-2317")
    unresolved = read_report(FIXTURES / "sympy_unresolved/report.json", "sympy__sympy-20212")
    assert resolved.resolved and unresolved.failed_tests == ["test_zero"]
    assert unresolved.log_path.endswith("sympy_unresolved/test_output.txt")
    with pytest.raises(KeyError, match="no entry"):
        read_report(FIXTURES / "requests_resolved/report.json", "django__django-1")


def test_rows_without_a_known_log_parser_say_what_to_add(lite):
    with pytest.raises(ValueError, match="log_parser"):
        swebench_test_spec({**lite.iloc[0].to_dict(), "repo": "someone/else"})


@pytest.mark.skipif(docker_available() or modal_available(), reason="this machine can run the harness")
def test_without_docker_or_modal_evaluation_fails_before_any_work_saying_how_to_fix_it(lite):
    with pytest.raises(HarnessUnavailable, match="Docker engine.*modal token new.*house"):
        require_backend()
    with pytest.raises(HarnessUnavailable, match="modal"):
        evaluate_patch(lite.loc["psf__requests-2317"].to_dict(), "diff --git a/x b/x\n")


def a_patch(line):
    """A diff whose added line is `line`: the stand-in resolves exactly the patches that add "FIXED"."""
    return f"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-BROKEN\n+{line}\n"


FIXED, UNFIXED = a_patch("FIXED"), a_patch("STILL BROKEN")


@pytest.fixture
def stand_in(tmp_path):
    return SWEbenchEvaluator(command=[sys.executable, str(STAND_IN)], dataset=str(FIXTURES / "lite_sample.jsonl"),
                             work_dir=tmp_path, workers=2)


def harness_calls(work_dir):
    """The argv of each stand-in invocation so far."""
    calls = work_dir / "stand-in-calls.jsonl"
    return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []


def argument(argv, name):
    return argv[argv.index(name) + 1]


def test_two_loops_get_their_own_verdicts_from_one_harness_call_each(lite, stand_in, tmp_path):
    tasks = [lite.loc[i].to_dict() for i in TRIO]
    loop0 = stand_in.evaluate_batch(tasks, [FIXED, UNFIXED, UNFIXED], run_key="exp.train_0")
    loop1 = stand_in.evaluate_batch(tasks, [UNFIXED, FIXED, FIXED], run_key="exp.train_1")
    assert [r.instance_id for r in loop0] == [r.instance_id for r in loop1] == TRIO
    assert [r.resolved for r in loop0] == [True, False, False]
    assert [r.resolved for r in loop1] == [False, True, True]
    assert loop0[1].failed_tests == tasks[1]["FAIL_TO_PASS"] and not loop1[1].failed_tests
    assert all(not r.error and r.log_path.endswith("test_output.txt") for r in loop0 + loop1)
    calls = harness_calls(tmp_path)
    assert len(calls) == 2 and all(argv[argv.index("--instance_ids") + 1:] == TRIO for argv in calls)
    predictions = [argument(argv, "--predictions_path") for argv in calls]
    assert len(set(predictions)) == 2
    for argv, patches in zip(calls, ([FIXED, UNFIXED, UNFIXED], [UNFIXED, FIXED, FIXED])):
        assert argument(argv, "--predictions_path").endswith(f"predictions-{argument(argv, '--run_id')}.jsonl")
        rows = [json.loads(line) for line in open(argument(argv, "--predictions_path"))]
        assert [(r["instance_id"], r["model_patch"], r["model_name_or_path"]) for r in rows] == \
            [(i, p, "prompt-learning") for i, p in zip(TRIO, patches)]
    assert [argument(argv, "--run_id").split(".")[:2] for argv in calls] == [["exp", "train_0"], ["exp", "train_1"]]


def test_the_same_run_key_rereads_the_harness_reports_and_other_patches_get_a_fresh_run(lite, tmp_path):
    evaluator = SWEbenchEvaluator(command=[sys.executable, str(STAND_IN)], dataset=str(FIXTURES / "lite_sample.jsonl"),
                                  work_dir=tmp_path, model_name="team/agent-x")
    tasks = [lite.loc[i].to_dict() for i in TRIO[:2]]
    first = evaluator.evaluate_batch(tasks, [FIXED, UNFIXED], run_key="exp.train_0")
    again = evaluator.evaluate_batch(tasks, [FIXED, UNFIXED], run_key="exp.train_0")
    assert [r.resolved for r in again] == [r.resolved for r in first] == [True, False]
    assert first[0].log_path == again[0].log_path and "/team__agent-x/" in first[0].log_path
    run_ids = [argument(argv, "--run_id") for argv in harness_calls(tmp_path)]
    assert run_ids[0] == run_ids[1]
    assert "2 instances already run, skipping..." in (tmp_path / f"harness-{run_ids[0]}.log").read_text()
    changed = evaluator.evaluate_batch(tasks, [UNFIXED, FIXED], run_key="exp.train_0")
    assert [r.resolved for r in changed] == [False, True]


def test_patches_that_get_no_report_fail_with_the_harness_output_and_empty_ones_cost_no_call(lite, stand_in, tmp_path):
    tasks = [lite.loc[i].to_dict() for i in TRIO]
    results = stand_in.evaluate_batch(tasks, ["not a diff\n", "", FIXED], run_key="exp.test_2")
    assert [r.resolved for r in results] == [False, False, True]
    assert "wrote no report for psf__requests-2317" in results[0].error and "Patch Apply Failed" in results[0].error
    assert results[1].error == "the patch is empty: nothing to test"
    assert harness_calls(tmp_path)[0][-2:] == [TRIO[0], TRIO[2]]  # the empty patch was not sent
    only_empty = stand_in.evaluate_batch(tasks[:1], [""], run_key="exp.test_3")
    assert only_empty[0].error and len(harness_calls(tmp_path)) == 1
    single = stand_in.evaluate(tasks[0], FIXED)
    assert single.resolved and len(harness_calls(tmp_path)) == 2


def test_run_keys_are_made_safe_and_a_batch_must_be_well_formed(lite, stand_in):
    run_id = harness_run_id("exp/train 3:a0", ["x"], ["p"], "m")
    assert run_id.startswith("exp-train-3-a0.") and all(c.isalnum() or c in "._-" for c in run_id)
    assert run_id != harness_run_id("exp/train 3:a0", ["x"], ["other"], "m")
    with pytest.raises(ValueError, match="no letters"):
        harness_run_id("///", ["x"], ["p"], "m")
    task = lite.loc[TRIO[0]].to_dict()
    with pytest.raises(ValueError, match="1 tasks but 2 patches"):
        stand_in.evaluate_batch([task], [FIXED, FIXED], run_key="k")
    with pytest.raises(ValueError, match="once"):
        stand_in.evaluate_batch([task, task], [FIXED, FIXED], run_key="k")
    with pytest.raises(ValueError, match="no rows for"):
        stand_in.check([{**task, "instance_id": "astropy__astropy-1"}])
    assert SWEbenchEvaluator.batched is True


@pytest.fixture
def no_backend(monkeypatch, tmp_path):
    """This machine as a user without Docker or Modal credentials sees it, whatever the caller's shell has."""
    if docker_available():
        pytest.skip("a Docker engine answers here")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in [n for n in os.environ if n.startswith("MODAL_")]:
        monkeypatch.delenv(name)


def test_check_refuses_before_any_agent_runs_and_says_how_to_fix_it(lite, tmp_path, no_backend):
    task = lite.loc[TRIO[0]].to_dict()
    evaluator = SWEbenchEvaluator(work_dir=tmp_path / "work")
    with pytest.raises(HarnessUnavailable, match=r"Docker engine.*modal token new.*TASK_SOURCE='house'"):
        evaluator.check([task])
    with pytest.raises(HarnessUnavailable, match="Modal"):
        SWEbenchEvaluator(backend="modal").check([task])
    with pytest.raises(HarnessUnavailable):
        evaluator.evaluate_batch([task], [FIXED], run_key="exp.train_0")
    assert not (tmp_path / "work").exists()  # nothing written, nothing run
    SWEbenchEvaluator(command=[sys.executable, str(STAND_IN)]).check([task])  # a stand-in needs neither


def test_the_testbed_copy_needs_docker(lite, tmp_path, no_backend):
    with pytest.raises(HarnessUnavailable, match="Docker engine.*ensure_mirror"):
        copy_testbed(lite.loc[TRIO[0]].to_dict(), tmp_path / "testbed")
    assert not (tmp_path / "testbed").exists()


@pytest.mark.slow
def test_the_real_harness_accepts_the_command_line_and_its_failure_reaches_each_result(lite, tmp_path, monkeypatch,
                                                                                      no_backend):
    """The installed swebench parses our arguments, loads the predictions and a data set named relative to the
    caller's folder, and stops only at Docker; that last output becomes each instance's error."""
    monkeypatch.chdir(REPO_ROOT)
    evaluator = SWEbenchEvaluator(command=HARNESS_COMMAND, dataset="tests/fixtures/swebench/lite_sample.jsonl",
                                  work_dir=tmp_path)
    [result] = evaluator.evaluate_batch([lite.loc[TRIO[0]].to_dict()], [FIXED], run_key="exp.train_0")
    assert not result.resolved and "wrote no report for psf__requests-2317" in result.error
    assert "DockerException" in result.error and "usage:" not in result.log
    assert len(list((tmp_path / "logs/run_evaluation").glob("exp.train_0.*/run.json"))) == 1


# --- failures that are not the patch's ------------------------------------------------------------------

def test_a_docker_error_is_an_infrastructure_error_with_the_harness_words_and_a_bad_patch_is_a_fail(lite, stand_in):
    tasks = [lite.loc[i].to_dict() for i in TRIO]
    results = stand_in.evaluate_batch(tasks, [FIXED, a_patch("INFRA"), "not a diff\n"], run_key="exp.train_0")
    assert results[0].resolved and not results[0].infra
    docker = results[1]
    assert not docker.resolved and docker.infra
    assert "the harness failed, not the patch" in docker.error and "docker.errors.APIError" in docker.error
    assert "listed in the run report's error_ids" in docker.error  # the harness's run report, read
    assert not results[2].infra and "the patch" in results[2].error and "Patch Apply Failed" in results[2].error


def test_grading_follows_the_task_source_not_swebench_lite(lite, tmp_path):
    """With no dataset named, the harness grades against the tasks' own rows (here a task Lite does not
    have, as SWE-bench Verified or a team's own file would hold), written beside its logs."""
    verified = {**lite.loc[TRIO[0]].to_dict(), "instance_id": "psf__requests-9999", "repo_path": "/somewhere"}
    evaluator = SWEbenchEvaluator(command=[sys.executable, str(STAND_IN)], work_dir=tmp_path)
    evaluator.check([verified])  # no data set to look the task up in: nothing to refuse
    [result] = evaluator.evaluate_batch([verified], [FIXED], run_key="exp.test_0")
    assert result.resolved and not result.error
    dataset = argument(harness_calls(tmp_path)[0], "--dataset_name")
    assert dataset.startswith(str(tmp_path)) and "/tasks-" in dataset and dataset.endswith(".jsonl")
    [row] = [json.loads(line) for line in open(dataset)]
    assert row["instance_id"] == "psf__requests-9999" and "repo_path" not in row
    assert json.loads(row["FAIL_TO_PASS"]) == verified["FAIL_TO_PASS"]  # JSON text, as the hub rows hold it
    with pytest.raises(ValueError, match="no rows for"):  # naming Lite explicitly still checks against it
        SWEbenchEvaluator(command=[sys.executable, str(STAND_IN)], dataset=str(FIXTURES / "lite_sample.jsonl")).check([verified])


def test_the_patchs_changes_to_tests_and_test_configuration_never_reach_the_harness(lite, stand_in, tmp_path):
    tasks = [lite.loc[i].to_dict() for i in TRIO[:2]]
    forcing = ("diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n+++ b/conftest.py\n"
               "@@ -0,0 +1 @@\n+FIXED\n")  # the stand-in would call it resolved
    results = stand_in.evaluate_batch(tasks, [forcing, FIXED + forcing.replace("conftest.py", "tests/test_mine.py")],
                                      run_key="exp.train_0")
    assert [r.resolved for r in results] == [False, True]
    assert results[0].error == "the patch is empty: nothing to test" and results[0].set_aside == ["conftest.py"]
    assert results[1].set_aside == ["tests/test_mine.py"]
    rows = [json.loads(line) for line in open(argument(harness_calls(tmp_path)[0], "--predictions_path"))]
    assert [(r["instance_id"], r["model_patch"]) for r in rows] == [(TRIO[1], FIXED)]


def test_without_the_swebench_extra_grading_is_one_error_naming_the_install_and_the_house_suite(monkeypatch):
    import importlib.util

    from helpers.families.coding.swebench_harness import require_backend

    found = importlib.util.find_spec
    # a quickstart-sized install: the package without its swebench extra
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "swebench" else found(name, *a))
    for backend in (None, "docker", "modal"):
        with pytest.raises(HarnessUnavailable, match=r"swebench extra.*pip install -e '\.\[swebench\]'.*house"):
            require_backend(backend)
