"""A repository's tests run in the sandbox and read back from the report pytest writes for the harness."""

import ast

from helpers.families.coding.pytest_results import junit_outcomes
from helpers.families.coding.repo_tests import protected_paths, run_repo_tests

TESTS = '''import pytest


class TestAccounts:
    def test_opens(self):
        pass

    def test_breaks(self):
        assert False


@pytest.mark.parametrize("amount", ["1", "x y"])
def test_amounts(amount):
    assert amount == "1"


@pytest.mark.xfail
def test_known_bug():
    assert False


@pytest.mark.skip
def test_later():
    pass
'''


def workspace(tmp_path, files):
    root = tmp_path / "ws"
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def test_outcomes_come_from_the_report_by_pytests_own_node_ids(tmp_path):
    root = workspace(tmp_path, {"tests/test_a.py": TESTS, "tests/test_broken.py": "import nowhere\n"})
    run = run_repo_tests(root, ["tests/test_a.py", "tests/test_broken.py"],
                         timeout_s=120, sandbox="if-available")
    assert run.reported and run.exit_status == 1  # a file that cannot be imported does not stop the others
    assert run.tests == {
        "tests/test_broken.py": "ERROR",
        "tests/test_a.py::TestAccounts::test_opens": "PASSED", "tests/test_a.py::TestAccounts::test_breaks": "FAILED",
        "tests/test_a.py::test_amounts[1]": "PASSED", "tests/test_a.py::test_amounts[x y]": "FAILED",
        "tests/test_a.py::test_known_bug": "FAILED", "tests/test_a.py::test_later": "SKIPPED",
    }


def test_the_repositorys_pytest_configuration_and_a_pytest_module_in_the_workspace_change_nothing(tmp_path):
    root = workspace(tmp_path, {
        "tests/test_a.py": "def test_ok():\n    pass\n",
        "pytest.ini": "[pytest]\naddopts = -p no_such_plugin --collect-only\n",
        "pytest.py": "raise SystemExit('not the real pytest')\n",
    })
    run = run_repo_tests(root, ["tests/test_a.py::test_ok"], timeout_s=120,
                         sandbox="if-available")
    assert run.exit_status == 0 and run.tests == {"tests/test_a.py::test_ok": "PASSED"}, run.log


def test_no_report_or_a_broken_one_reads_as_no_outcomes(tmp_path):
    assert junit_outcomes(tmp_path / "missing.xml") == {}
    (tmp_path / "broken.xml").write_text("<testsuites><testcase")
    assert junit_outcomes(tmp_path / "broken.xml") == {}


# --- the network: none for tests, the host's for a set-up command only when the user allows it -----------------
import pytest  # noqa: E402
from sandbox_probes import LOOPBACK_SECRET, loopback_service  # noqa: E402

from helpers.isolation.sandbox import unavailable_reason  # noqa: E402

FETCH = "{python} -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:%d/', timeout=20).read().decode())\""
# The test itself tries the same fetch: it passes only when the fetch fails.
OFFLINE = ("import urllib.request\n\n\ndef test_ok():\n    try:\n        urllib.request.urlopen('http://127.0.0.1:%d/', "
           "timeout=20)\n    except OSError:\n        return\n    raise AssertionError('the test reached the network')\n")


@pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
@pytest.mark.parametrize("setup_network", [False, True])
def test_a_set_up_command_reaches_the_network_only_when_allowed_and_the_tests_never(tmp_path, setup_network):
    with loopback_service() as service:
        port = service.server_address[1]
        run = run_repo_tests(workspace(tmp_path, {"tests/test_ok.py": OFFLINE % port}), ["tests/test_ok.py"],
                             setup_command=FETCH % port, setup_network=setup_network)
    fetched_by_setup = "set-up failed" not in run.problem
    assert fetched_by_setup is setup_network, run.log
    if setup_network:
        assert service.hits == ["/"]  # the set-up's fetch only: the test's own found nothing
        assert run.tests == {"tests/test_ok.py::test_ok": "PASSED"}


# --- what the host reads of a run: no channel the code under test shares (docs/security.md) -------------------
needs_sandbox = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
# A test module that, once pytest has ended, prints the old exit-status marker and swaps the report for SWAP.
LATE = '''import atexit
import os
import sys


def _late():
    report = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))
    os.unlink(report)
    {swap}
    print("__exit_status__=0")


atexit.register(_late)


def test_fails():
    assert False
'''
@needs_sandbox
def test_a_report_swapped_for_a_folder_is_a_named_problem_and_the_printed_marker_counts_for_nothing(tmp_path):
    # a FIFO and a link to a root-only host file in its place are tried through evaluate_patch (test_evaluation.py)
    module = LATE.replace("{swap}", "os.mkdir(report)")
    run = run_repo_tests(workspace(tmp_path, {"tests/test_a.py": module}), ["tests/test_a.py::test_fails"],
                         timeout_s=120)
    assert run.tests == {} and run.kind == "report" and not run.reported
    assert run.problem.startswith("the test report: refused the agent's output: report.xml is a folder"), run.problem
    assert run.exit_status == 1  # the process's own status: the marker it printed counts for nothing
    assert "__exit_status__=0" in run.log


@needs_sandbox
def test_the_exit_status_is_the_test_processes_own_whatever_it_prints(tmp_path):
    module = 'print("__exit_status__=0")\n\n\ndef test_fails():\n    print("\\n__exit_status__=0")\n    assert False\n'
    run = run_repo_tests(workspace(tmp_path, {"tests/test_a.py": module}), ["tests/test_a.py"], timeout_s=120)
    assert run.exit_status == 1 and run.tests == {"tests/test_a.py::test_fails": "FAILED"}


REWRITER = '''import os
from pathlib import Path


def test_rewrites():
    found = {}
    for what, act in [("write", lambda: Path("tests/test_hidden.py").write_text("def test_x():\\n    pass\\n")),
                      ("create", lambda: Path("tests/conftest.py").write_text("")),
                      ("rename", lambda: os.rename("tests", "old_tests")),
                      ("remove", lambda: os.unlink("tests/test_hidden.py")),
                      ("chmod", lambda: os.chmod("tests/test_hidden.py", 0o777)),
                      ("config", lambda: Path("pytest.ini").write_text("[pytest]\\naddopts = -p forged\\n")),
                      ("workspace", lambda: Path("mine.txt").write_text("the rest of the tree stays writable"))]:
        try:
            act()
            found[what] = "done"
        except OSError as error:
            found[what] = error.strerror
    print("FOUND", found)
'''


@needs_sandbox
def test_protected_hidden_tests_and_the_recorded_configuration_cannot_be_rewritten_renamed_or_removed(tmp_path):
    root = workspace(tmp_path, {"tests/test_hidden.py": "def test_x():\n    assert False\n",
                                "rewriter/test_r.py": REWRITER})
    run = run_repo_tests(root, ["rewriter/test_r.py::test_rewrites"], timeout_s=120,
                         test_config={"path": "pytest.ini", "text": "[pytest]\n"},
                         protect=protected_paths(["tests/test_hidden.py::test_x"]))
    found = ast.literal_eval(run.log.split("FOUND ", 1)[1].splitlines()[0])  # the dict the test printed
    assert found == {"write": "Read-only file system", "create": "Read-only file system",
                     "rename": "Device or resource busy",
                     "remove": "Read-only file system", "chmod": "Read-only file system",
                     "config": "Read-only file system", "workspace": "done"}, found
    assert (root / "tests" / "test_hidden.py").read_text() == "def test_x():\n    assert False\n"


def test_protected_paths_are_the_top_level_entries_the_hidden_tests_lie_under():
    assert protected_paths(["tests/unit/test_a.py::test_x", "tests/test_b.py::T::test_y", "test_root.py::test_z",
                            "pkg/tests/test_c.py"]) == ["tests", "test_root.py", "pkg"]
