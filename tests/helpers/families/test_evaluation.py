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

from helpers.isolation.sandbox import unavailable_reason
from helpers.families.coding.evaluation import evaluate_patch
from helpers.families.coding.git import git
from helpers.families.coding.house_suite import load_house_suite
from helpers.families.coding.patches import set_aside_note, suspect_lines


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


def patched(task, tmp_path, changes, start="", renames=None):
    """The patch an agent leaves after applying `start` (a patch), renaming `renames` (old path -> new) and
    writing `changes` (path -> new text, or a function of the old text) in a clone at the task's base commit."""
    clone = Path(tempfile.mkdtemp(prefix="clone-", dir=tmp_path))
    git("clone", "--quiet", str(task["repo_path"]), str(clone), cwd=tmp_path)
    git("checkout", "--quiet", "--detach", task["base_commit"], cwd=clone)
    if start:
        git("apply", "-", cwd=clone, input=start)
    for old, new in (renames or {}).items():
        git("mv", old, new, cwd=clone)
    for path, change in changes.items():
        target = clone / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(change(target.read_text()) if callable(change) else change)
    git("add", "-A", "-N", cwd=clone)
    return git("diff", "-M", task["base_commit"], cwd=clone).stdout


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


# --- forged grades: code under test that makes failing tests read as passing (docs/security.md) ---------------
# Each forger is real code under test, shipped by a patch that leaves the task's bug in place (task 0: overdrafts
# still allowed), so an honest grade fails. Whatever it does from inside pytest's process, the grade is never
# resolved: the tripwires show it forged, the read-only tests and the pid namespace leave it a plain fail, or the
# report it tampered with is a named error.
FORCE = """
def _force(reports):
    original = reports.TestReport.from_item_and_call.__func__

    def forced(cls, item, call):
        report = original(cls, item, call)
        report.outcome, report.longrepr = "passed", None
        return report

    reports.TestReport.from_item_and_call = classmethod(forced)
"""
ALL_PASS = """
def _all_pass(path=None):
    import sys
    report = path or next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))
    cases = "".join('<testcase classname="%s" name="%s" file="%s"/>' % (
        a.split("::")[0][:-3].replace("/", "."), "::".join(a.split("::")[1:]).split("::")[-1], a.split("::")[0])
        for a in sys.argv if "::" in a)
    open(report, "w").write("<testsuites><testsuite>%s</testsuite></testsuites>" % cases)
"""
FORCE_PLUGIN = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                "    report = (yield).get_result()\n    report.outcome, report.longrepr = 'passed', None\n")


def at_import(code):
    """ledger/__init__.py with `code` run first, when the tests import the package."""
    return lambda text: code + "\n" + text


def report_swapped_for(make):
    """ledger/__init__.py that, as pytest exits, removes the report it is writing and runs `make` (Python over
    `_o`, os, and `_r`, the report's path) to put something else in its place."""
    return at_import("import atexit as _a, os as _o, sys as _s\n\n\ndef _swap():\n"
                     "    _r = next(a.split('=', 1)[1] for a in _s.argv if a.startswith('--junitxml='))\n"
                     f"    _o.unlink(_r)\n    {make}\n\n\n_a.register(_swap)\n")


FORGERS = {
    # the examples
    "runpy from a .txt": ({"ledger/ROUNDING.txt": FORCE + "import _pytest.reports\n_force(_pytest.reports)\n",
                           "ledger/__init__.py": at_import("import os as _o, runpy as _r\n_r.run_path(_o.path.join("
                                                           "_o.path.dirname(__file__), 'ROUNDING.txt'))\n")}, "forged"),
    "a README renamed into the forger's module": ({"ledger/__init__.py": at_import("from ledger import _notes\n")},
                                                  "forged"),
    "sys . modules in string pieces": ({"ledger/__init__.py": at_import(
        FORCE + "_t = getattr(__import__('s' + 'ys'), 'mod' + 'ules')\n__import__('_py' + 'test.reports')\n"
        "_force(_t['_py' + 'test.reports'])\n")}, "forged"),
    "hidden tests rewritten at import, then pytest run again": ({"ledger/__init__.py": at_import(
        "import glob as _g, os as _o, sys as _s\n"
        "for _p in _g.glob('tests/*.py'):\n    try:\n        _x = open(_p).read().replace('assert ', 'assert True or ')\n"
        "        open(_p, 'w').write(_x)\n    except OSError:\n        pass\n"
        "if not _o.environ.get('FORGED_AGAIN'):\n    _o.environ['FORGED_AGAIN'] = '1'\n"
        "    _o.execv(_s.executable, _s.orig_argv)\n")}, "failed"),
    "a late thread rewriting the report and printing the exit marker": ({"ledger/__init__.py": at_import(
        ALL_PASS + "import threading as _th\n\n\ndef _late():\n    _th.main_thread().join()\n    _all_pass()\n"
        "    print('__exit_status__=0', flush=True)\n\n\n_th.Thread(target=_late).start()\n")}, "forged"),
    "the report swapped for a FIFO": ({"ledger/__init__.py": report_swapped_for("_o.mkfifo(_r)")}, "report"),
    "the report swapped for a link to a root-only host file": (
        {"ledger/__init__.py": report_swapped_for("_o.symlink('{secret}', _r)")}, "report"),
    # variants the issue does not name
    "PYTEST_ADDOPTS and a -p plugin of its own, then pytest run again": ({
        "ledger/forge_plugin.py": FORCE_PLUGIN,
        "ledger/__init__.py": at_import(
            "import os as _o, sys as _s\nif not _o.environ.get('FORGED_AGAIN'):\n    _o.environ['FORGED_AGAIN'] = '1'\n"
            "    _o.environ['PYTEST_ADDOPTS'] = '-p ledger.forge_plugin'\n    _v = list(_s.orig_argv)\n"
            "    _v[_v.index('--'):_v.index('--')] = ['-p', 'ledger.forge_plugin']\n    _o.execv(_s.executable, _v)\n")},
        "forged"),
    "the junit writer patched to drop failures": ({"ledger/__init__.py": at_import(
        "import _pytest.junitxml as _j\n_j._NodeReporter.append_failure = lambda self, report: None\n")}, "forged"),
    "os._exit(0) from an atexit handler": ({"ledger/__init__.py": at_import(
        "import atexit as _a, os as _o\n_a.register(lambda: _o._exit(0))\n")}, "forged"),
    "a forked child that outlives pytest and rewrites the report": ({"ledger/__init__.py": at_import(
        ALL_PASS + "import os as _o, time as _t\n_parent = _o.getpid()\nif _o.fork() == 0:\n"
        "    while _o.getppid() == _parent:\n        _t.sleep(0.01)\n    _all_pass()\n    _o._exit(0)\n")},
        "forged or failed"),  # the sandbox ends with pytest: the child is killed, or caught if it wrote in time
    "pytest's report sent elsewhere and a fake one written in its place": ({"ledger/__init__.py": at_import(
        ALL_PASS + "import atexit as _a, gc as _gc, sys as _s\n_real = next(a.split('=', 1)[1] for a in _s.argv "
        "if a.startswith('--junitxml='))\nfor _x in _gc.get_objects():\n    if type(_x).__name__ == 'LogXML':\n"
        "        _x.logfile = '/tmp/elsewhere.xml'\n_a.register(lambda: _all_pass(_real))\n")}, "forged"),
    "pytest run again on tests of its own": ({
        "ledger/own_check.py": "def test_fine():\n    pass\n",
        "ledger/__init__.py": at_import(
            "import os as _o, sys as _s\nif not _o.environ.get('FORGED_AGAIN'):\n    _o.environ['FORGED_AGAIN'] = '1'\n"
            "    _v = list(_s.orig_argv)\n    _o.execv(_s.executable, _v[:_v.index('--') + 1] + ['ledger/own_check.py'])\n")},
        "forged"),  # its own test passes: pytest exits 0, which no honest run beside a must-fail test does
}


def forged_patch(task, tmp_path, forger, secret=""):
    changes, _ = FORGERS[forger]
    changes = {path: (change.replace("{secret}", secret) if isinstance(change, str)
                      else lambda text, change=change: change(text).replace("{secret}", secret))
               for path, change in changes.items()}
    if forger == "a README renamed into the forger's module":  # git diff shows it as a rename: README.md -> ...
        return patched(task, tmp_path, {**changes, "ledger/_notes.py": lambda _: FORCE + "import _pytest.reports\n"
                                        "_force(_pytest.reports)\n"}, renames={"README.md": "ledger/_notes.py"})
    return patched(task, tmp_path, changes)


@pytest.fixture(scope="module")
def root_only(tmp_path_factory):
    """A host file only root may read, holding an all-pass report of task 0's tests (a pass, if it were read)."""
    secret = tmp_path_factory.mktemp("host") / "root-only.xml"
    secret.write_text('<testsuites><testsuite><testcase classname="tests.test_overdraft" '
                      'name="test_an_overdraft_is_refused_and_the_balance_kept" file="tests/test_overdraft.py"/>'
                      '</testsuite></testsuites>')
    secret.chmod(0o600)
    return secret


@needs_sandbox
@pytest.mark.parametrize("forger", list(FORGERS))
def test_a_forger_in_the_code_under_test_never_makes_a_resolved_grade(tasks, tmp_path, forger, root_only):
    task = tasks.iloc[0].to_dict()
    result = evaluate_patch(task, forged_patch(task, tmp_path, forger, str(root_only)))
    expected = FORGERS[forger][1]
    assert not result.resolved and not result.infra, result.log
    assert result.set_aside == []  # nothing of the forger is a test or test configuration
    if expected == "forged" or (expected == "forged or failed" and result.forged):
        assert result.forged and result.error.startswith("forged: "), (result.error, result.log)
    elif expected == "report":
        assert not result.forged and result.error.startswith("the test report: refused the agent's output: "
                                                             "report.xml is "), result.error
    else:
        assert not result.forged and result.tests["tests/test_overdraft.py::test_an_overdraft_raises_a_ledger_error"] \
            == "FAILED", (result.error, result.log)


def test_the_suspect_check_the_second_signal_names_every_forger(tasks, tmp_path):
    task = tasks.iloc[0].to_dict()
    unnamed = [forger for forger in FORGERS if not suspect_lines(forged_patch(task, tmp_path, forger, "/x"))]
    assert unnamed == []


def test_where_the_tests_cannot_be_protected_the_tripwires_still_catch_a_rewrite(tasks, tmp_path):
    task = tasks.iloc[0].to_dict()  # on the host (no sandbox: no read-only binds), the rewrite of the tests lands
    patch = forged_patch(task, tmp_path, "hidden tests rewritten at import, then pytest run again")
    result = evaluate_patch(task, patch, sandbox=None)
    assert not result.resolved and result.forged, result.log


@needs_sandbox
def test_a_plain_correct_fix_still_resolves_and_its_log_shows_only_the_tasks_tests(tasks):
    task = tasks.iloc[0].to_dict()
    result = evaluate_patch(task, task["patch"])
    names = list(task["FAIL_TO_PASS"]) + list(task["PASS_TO_PASS"])
    assert result.resolved and not result.forged and result.error == "", result.log
    assert set(result.tests) == set(names)
    assert f"{len(names)} passed in" in result.log and "failed" not in result.log, result.log
    assert "value.upper()" not in result.log


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
    from helpers.isolation import sandbox

    for probe in ("_reason", "unavailable_reason"):  # no sandbox can start here
        monkeypatch.setattr(sandbox, probe, lambda: "bwrap was not found: install bubblewrap")
    monkeypatch.delenv(sandbox.UNSAFE_OPT_OUT, raising=False)
    task = tasks.iloc[0].to_dict()
    with pytest.raises(sandbox.SandboxUnavailable, match="bubblewrap"):
        evaluate_patch(task, task["patch"])  # "required", every real run's policy, is the default
    assert evaluate_patch(task, task["patch"], sandbox="if-available").resolved  # the scripted dry run's


def test_a_patch_with_a_1100_deep_path_is_graded_without_raising_and_leaves_no_copy(tasks, memory_scratch):
    """The issue's example: evaluate_patch raised removing its copy (a recursive removal) and left it behind."""
    from helpers.isolation.processes import scratch_root
    from helpers.isolation.procfs import owner_tag

    deep = "d/" * 1100 + "f.txt"
    patch = f"diff --git a/{deep} b/{deep}\nnew file mode 100644\n--- /dev/null\n+++ b/{deep}\n@@ -0,0 +1 @@\n+x\n"
    mine = scratch_root() / owner_tag()
    before = set(os.listdir(mine)) if mine.exists() else set()
    result = evaluate_patch(tasks.iloc[0], patch, sandbox="if-available")
    assert not result.resolved and "does not apply" not in (result.error or "")
    assert {name for name in os.listdir(mine) if name.startswith("eval-")} <= before
