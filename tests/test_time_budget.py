"""The suite's time budget (tests/time_budget.py) is on in every run and fails a test over it, on xdist workers too.

Checked on a tiny suite of its own, run by pytest in a subprocess with a budget of a fraction of a second: the
budget is on the suite's tests, so that is where it is tried."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).parent

TINY_SUITE = textwrap.dedent("""
    import time
    import pytest

    @pytest.fixture(scope="session")
    def slow_shared_setup():
        time.sleep(0.6)

    def test_quick():
        pass

    def test_slow_call():
        time.sleep(0.6)

    @pytest.mark.xdist_group("shared")
    def test_slow_setup(slow_shared_setup):
        pass

    @pytest.mark.xdist_group("shared")
    def test_after_the_shared_setup_is_paid(slow_shared_setup):
        pass

    @pytest.mark.real
    def test_real_tier_is_not_budgeted():
        time.sleep(0.6)

    def test_failing_for_its_own_reason():
        time.sleep(0.6)
        assert False, "its own assertion"
""")


def run_tiny_suite(tmp_path, *options):
    (tmp_path / "test_tiny.py").write_text(TINY_SUITE)
    env = {**{k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")},  # CI: untruncated summaries
           "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "time_budget", "-p", "no:cacheprovider", "-rA",
                           "-W", "ignore::pytest.PytestUnknownMarkWarning", *options, "test_tiny.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def outcomes(output: str) -> dict[str, str]:
    return {name: outcome for outcome, name in re.findall(r"^(PASSED|FAILED|ERROR) test_tiny\.py::(\w+)", output, re.M)}


def test_a_test_over_its_budget_fails_named_on_xdist_workers_and_the_rest_pass(tmp_path):
    # each slow phase takes 0.6 s: over a budget of 0.04 s unless the load per core is above 15
    run = run_tiny_suite(tmp_path, "--time-budget", "0.04", "-n", "2", "--dist", "loadgroup")
    assert run.returncode == 1, run.stdout[-3000:]
    assert outcomes(run.stdout) == {
        "test_quick": "PASSED",
        "test_slow_call": "FAILED",  # named, with what it took and the budget
        "test_slow_setup": "ERROR",  # a shared setup over the budget is charged to the first test paying for it
        "test_after_the_shared_setup_is_paid": "PASSED",
        "test_real_tier_is_not_budgeted": "PASSED",
        "test_failing_for_its_own_reason": "FAILED",
    }, run.stdout[-3000:]
    assert re.search(r"test_tiny\.py::test_slow_call: its call took [\d.]+ s, over the suite's time budget of 0\.04 s",
                     run.stdout), run.stdout[-3000:]
    assert re.search(r"test_slow_setup\S*: its setup took [\d.]+ s", run.stdout)
    assert "its own assertion" in run.stdout  # a real failure keeps its own reason
    assert run.stdout.count("over the suite's time budget") == 2


def test_within_the_budget_only_the_real_failure_fails(tmp_path):
    run = run_tiny_suite(tmp_path, "--time-budget", "30")
    assert outcomes(run.stdout)["test_slow_call"] == "PASSED", run.stdout[-3000:]
    assert "over the suite's time budget" not in run.stdout
    assert [name for name, outcome in outcomes(run.stdout).items() if outcome != "PASSED"] == [
        "test_failing_for_its_own_reason"]


def test_the_budget_is_on_in_this_suite_by_default(pytestconfig):
    import time_budget

    assert pytestconfig.pluginmanager.has_plugin("time_budget")
    assert pytestconfig.getoption("time_budget") == time_budget.BUDGET_S <= 180
