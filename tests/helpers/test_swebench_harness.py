"""The swebench harness path: grading recorded logs offline, reading reports, failing early without Docker or Modal."""

import time
from pathlib import Path

import pytest

from helpers.config import REPO_ROOT
from helpers.evaluation import evaluate_patch
from helpers.swebench_harness import (HarnessUnavailable, docker_available, grade_log, modal_available, read_report,
                                      require_backend, swebench_test_spec)
from helpers.tasks import load_swebench

FIXTURES = REPO_ROOT / "tests/fixtures/swebench"


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
def test_without_docker_or_modal_evaluation_fails_at_once_saying_how_to_fix_it(lite):
    started = time.monotonic()
    with pytest.raises(HarnessUnavailable, match="Docker engine.*modal token new.*house"):
        require_backend()
    with pytest.raises(HarnessUnavailable, match="modal"):
        evaluate_patch(lite.loc["psf__requests-2317"].to_dict(), "diff --git a/x b/x\n")
    assert time.monotonic() - started < 10
