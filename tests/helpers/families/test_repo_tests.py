"""A repository's tests run in the sandbox and read back from the report pytest writes for the harness."""

from helpers.families.coding.repo_tests import junit_outcomes, run_repo_tests

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

from helpers.core.sandbox import unavailable_reason  # noqa: E402

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
