"""The local evaluator grades a patch like SWE-bench: resolved only when every named test passes, in the
sandbox, with the patch's changes to tests and test configuration set aside.

Every house task's gold, naive and empty patch is graded once, in tests/helpers/families/test_house_suite.py,
where the real grading path must agree test by test with the batch grading on one task per library."""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from helpers.core.sandbox import unavailable_reason
from helpers.families.coding.evaluation import evaluate_patch
from helpers.families.coding.git import git
from helpers.families.coding.house_suite import load_house_suite
from helpers.families.coding.patches import set_aside_note


@pytest.fixture(scope="module")
def tasks():
    return load_house_suite()  # the build every run shares (nothing here changes it: test_house_suite.py builds its own)


def test_a_patch_that_does_not_apply_is_a_clear_failure(tasks):
    row = tasks.iloc[0]
    result = evaluate_patch(row, sandbox="if-available", patch="diff --git a/nowhere.py b/nowhere.py\n--- a/nowhere.py\n+++ b/nowhere.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert not result.resolved and "does not apply" in result.error


def test_a_hanging_test_is_stopped_at_the_timeout(tasks):
    row = tasks.iloc[1].to_dict()
    hang = ("diff --git a/ledger/money.py b/ledger/money.py\n--- a/ledger/money.py\n+++ b/ledger/money.py\n"
            "@@ -1,3 +1,5 @@\n \"\"\"Amounts of money are Decimals with two places.\"\"\"\n+import time\n+time.sleep(60)\n \n"
            " from decimal import Decimal, InvalidOperation\n \n")
    result = evaluate_patch(row, hang, timeout_s=3, sandbox="if-available")
    assert not result.resolved and "timed out" in result.error


def test_the_agents_workspace_is_not_needed_or_touched(tasks):
    row = tasks.iloc[0]
    evaluate_patch(row, row["patch"], sandbox="if-available")
    from helpers.families.coding.git import git

    assert git("status", "--porcelain", cwd=row["repo_path"]).stdout == ""


# --- grading the agent cannot game (docs/security.md) ---------------------------------------------------
# Each patch below is written as an agent would leave it: files changed in a clone at the base commit, then
# `git diff`. They are graded in the sandbox (a real run's policy), so these tests need one.
needs_sandbox = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
SECRET = "plk-grading-" + "5" * 24  # shaped like nothing real
FORCE_PASSES = '''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    report.outcome = "passed"
'''


def patched(task, tmp_path, changes, start=""):
    """The patch an agent leaves after applying `start` (a patch) and writing `changes` (path -> new text, or a
    function of the old text) in a clone at the task's base commit."""
    clone = Path(tempfile.mkdtemp(prefix="clone-", dir=tmp_path))
    git("clone", "--quiet", str(task["repo_path"]), str(clone), cwd=tmp_path)
    git("checkout", "--quiet", "--detach", task["base_commit"], cwd=clone)
    if start:
        git("apply", "-", cwd=clone, input=start)
    for path, change in changes.items():
        target = clone / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(change(target.read_text()) if callable(change) else change)
    git("add", "-A", "-N", cwd=clone)
    return git("diff", task["base_commit"], cwd=clone).stdout


def in_parse_amount(code):
    """ledger/money.py with `code` defined at the top and run, once, when a test first parses an amount."""
    def change(text):
        text = text.replace('from decimal import', code + '\n_done = []\n\nfrom decimal import', 1)
        return text.replace('    try:\n        value = Decimal(', '    if not _done:\n        _done.append(_once())\n'
                                                             '    try:\n        value = Decimal(', 1)
    return change


@needs_sandbox
def test_code_under_test_finds_no_key_and_no_file_outside_its_workspace(tasks, tmp_path, monkeypatch):
    monkeypatch.setenv("PL_PROBE_SECRET", SECRET)  # as a notebook kernel holding the key
    secret_file = tmp_path / "outside.txt"
    secret_file.write_text("file-" + SECRET)
    task = tasks.iloc[0].to_dict()
    probe = f'''import glob


def _once():
    found = []
    for path in glob.glob("/proc/*/environ"):
        try:
            found += [v.decode() for v in open(path, "rb").read().split(b"\\0") if b"PL_PROBE_SECRET" in v]
        except OSError:
            pass
    try:
        found.append(open({str(secret_file)!r}).read())
    except OSError as error:
        found.append(type(error).__name__)
    print("probe ran, found:", found)
'''
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],  # the driver: key in its environment
                              env={**os.environ, "PL_PROBE_SECRET": SECRET})
    try:
        result = evaluate_patch(task, patched(task, tmp_path, {"ledger/money.py": in_parse_amount(probe)}))
    finally:
        driver.kill()
        driver.wait()
    assert "probe ran, found:" in result.log
    assert SECRET not in result.log and "FileNotFoundError" in result.log


@needs_sandbox
@pytest.mark.parametrize("where", ["conftest.py", "tests/conftest.py"])
def test_a_conftest_that_forces_passes_is_set_aside_and_the_task_fails(tasks, tmp_path, where):
    task = tasks.iloc[0].to_dict()
    result = evaluate_patch(task, patched(task, tmp_path, {where: FORCE_PASSES}))
    assert not result.resolved and result.failed_tests
    assert result.set_aside == [where]
    assert set_aside_note(result.set_aside) == f"the patch's {where} was not used in grading (tests and test configuration are the task's own)"


@needs_sandbox
@pytest.mark.parametrize("own_test", ["tests/test_refusals.py", "tests/test_overdraft.py"])  # the second: the hidden test's own path
def test_a_fix_that_brings_its_own_test_passes_on_the_hidden_tests(tasks, tmp_path, own_test):
    task = tasks.iloc[0].to_dict()
    patch = patched(task, tmp_path, {own_test: "def test_mine():\n    assert True\n"}, start=task["patch"])
    result = evaluate_patch(task, patch)
    assert result.resolved, result.log
    assert result.set_aside == [own_test] and set(result.tests) == set(task["FAIL_TO_PASS"]) | set(task["PASS_TO_PASS"])


FORGE_REPORT = '''import atexit
import sys


def _forge():
    report = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))
    cases = "".join('<testcase classname="%s" name="%s" file="%s"/>' % (a.split("::")[0][:-3].replace("/", "."),
                    a.split("::")[1], a.split("::")[0]) for a in sys.argv if "::" in a)
    open(report, "w").write("<testsuites><testsuite>%s</testsuite></testsuites>" % cases)


def _once():
    atexit.register(_forge)
'''
QUIT_EARLY = '''import os


def _once():
    os._exit(0)
'''


@needs_sandbox
@pytest.mark.parametrize("trick", [FORGE_REPORT, QUIT_EARLY], ids=["a forged all-pass report", "exit 0 mid-run"])
def test_a_run_whose_exit_status_disagrees_with_its_report_is_a_failed_grade(tasks, tmp_path, trick):
    task = tasks.iloc[0].to_dict()
    result = evaluate_patch(task, patched(task, tmp_path, {"ledger/money.py": in_parse_amount(trick)}))
    assert not result.resolved and not result.infra
    assert result.error == "the test run's exit status disagrees with its report"


@needs_sandbox
def test_nothing_the_tests_start_outlives_the_evaluation(tasks, tmp_path):
    task = tasks.iloc[0].to_dict()
    mark = f"{4000 + os.getpid() % 1000}.{time.time_ns() % 10**6}"  # sleep's argument: unique to this test
    daemon = f'''import subprocess


def _once():
    subprocess.Popen(["setsid", "sleep", "{mark}"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    print("daemon started")
'''
    try:
        result = evaluate_patch(task, patched(task, tmp_path, {"ledger/money.py": in_parse_amount(daemon)}))
        assert "daemon started" in result.log
        assert survivors(mark) == []
    finally:
        for pid in survivors(mark):
            os.kill(pid, signal.SIGKILL)


def survivors(mark, wait_s=2.0):
    """Pids of processes whose command line holds `mark`, once any killed ones are gone (up to `wait_s`)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and mark.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_grading_that_requires_the_sandbox_refuses_to_run_without_one(tasks, monkeypatch):
    from helpers.core import sandbox

    for probe in ("_reason", "unavailable_reason"):  # no sandbox can start here
        monkeypatch.setattr(sandbox, probe, lambda: "bwrap was not found: install bubblewrap")
    monkeypatch.delenv(sandbox.UNSAFE_OPT_OUT, raising=False)
    task = tasks.iloc[0].to_dict()
    with pytest.raises(sandbox.SandboxUnavailable, match="bubblewrap"):
        evaluate_patch(task, task["patch"])  # "required", every real run's policy, is the default
    assert evaluate_patch(task, task["patch"], sandbox="if-available").resolved  # the scripted dry run's


@pytest.fixture
def memory_scratch(monkeypatch):
    """Scratch folders on a memory file system where there is one: 1,100 folders cost a disk write each here."""
    if not os.access("/dev/shm", os.W_OK):
        yield
        return
    folder = tempfile.mkdtemp(prefix="pl-scratch-", dir="/dev/shm")
    monkeypatch.setattr(tempfile, "tempdir", folder)
    yield
    subprocess.run(["rm", "-rf", folder], check=False)


def test_a_patch_with_a_1100_deep_path_is_graded_without_raising_and_leaves_no_copy(tasks, memory_scratch):
    """The issue's example: evaluate_patch raised removing its copy (a recursive removal) and left it behind."""
    from helpers.core.processes import scratch_root
    from helpers.core.procfs import owner_tag

    deep = "d/" * 1100 + "f.txt"
    patch = f"diff --git a/{deep} b/{deep}\nnew file mode 100644\n--- /dev/null\n+++ b/{deep}\n@@ -0,0 +1 @@\n+x\n"
    mine = scratch_root() / owner_tag()
    before = set(os.listdir(mine)) if mine.exists() else set()
    result = evaluate_patch(tasks.iloc[0], patch, sandbox="if-available")
    assert not result.resolved and "does not apply" not in (result.error or "")
    assert {name for name in os.listdir(mine) if name.startswith("eval-")} <= before
