"""Mining a repository's history into tasks: each commit kept or dropped for its stated reason."""

import json
import subprocess

import pytest

from helpers.isolation.sandbox import unavailable_reason
from helpers.families.coding.evaluation import LocalEvaluator
from helpers.families.coding.mining import mine_repository
from helpers.families.coding.tasks import load_mined_tasks
from helpers.families.coding.pytest_results import pytest_outcomes
from helpers.families.coding.repo_tests import is_test_file

# one xdist worker mines the history (make test runs with --dist loadgroup): spread over two, each would mine it
# again for its share of this module's tests
pytestmark = pytest.mark.xdist_group("mined-history")
CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"
TESTS = "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
# Passes on its first run in a workspace and fails on the second: a test whose result changes on a rerun.
FLAKY = ("from pathlib import Path\n\n\ndef test_sometimes():\n    mark = Path(__file__).with_name('.ran')\n"
         "    first = not mark.exists()\n    mark.write_text('x') if first else mark.unlink()\n    assert first\n")

# The set-up runs at the parent with the commit's tests (before any source change): this one fails when those
# tests say they need a build step it cannot do.
NO_BUILD = "test ! -e tests/needs_build.py"


def commit(repo, message, files):
    for name, text in files.items():
        path = repo / name
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qm", message],
                   cwd=repo, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A small project whose history holds one commit of each kind, newest last."""
    repo = tmp_path_factory.mktemp("ledger-repo")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    shas = {"root": commit(repo, "Start the calculator", {"src/calc/__init__.py": CALC, "tests/test_calc.py": TESTS})}
    shas["fix"] = commit(repo, "Fix sub (#7)", {
        "src/calc/__init__.py": CALC.replace("return a + b\n", "return a - b\n").replace("return a - b\n", "return a + b\n", 1),
        "tests/test_calc.py": TESTS + "\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"})
    shas["refactor"] = commit(repo, "Tidy the docstring", {"README.md": "# calc\n"})
    shas["passes_before"] = commit(repo, "Document add, with a test", {
        "src/calc/__init__.py": '"""A calculator."""\n' + (repo / "src/calc/__init__.py").read_text(),
        "tests/test_more.py": "from calc import add\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n"})
    shas["flaky"] = commit(repo, "Add a timing check", {"src/calc/timing.py": "TICK = 1\n", "tests/test_timing.py": FLAKY})
    shas["tests_only"] = commit(repo, "More tests", {"tests/test_more.py": "from calc import add\n\n\ndef test_add_zero():\n"
                                                     "    assert add(0, 0) == 0\n\n\ndef test_add_neg():\n    assert add(-1, 1) == 0\n"})
    shas["leak"] = commit(repo, "Make mul multiply: return a * b if b else 0  # the whole fix", {
        "src/calc/mul.py": "def mul(a, b):\n    return a * b if b else 0  # the whole fix\n",
        "tests/test_mul.py": "from calc.mul import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"})
    shas["broken_setup"] = commit(repo, "Add div (needs a new build step)", {
        "tests/needs_build.py": "STEP = \"make div\"\n", "src/calc/div.py": "def div(a, b):\n    return a / b\n",
        "tests/test_div.py": "from calc.div import div\n\n\ndef test_div():\n    assert div(6, 3) == 2\n"})
    return repo, shas


@pytest.fixture(scope="module")
def mined(history, tmp_path_factory):
    repo, shas = history
    root = tmp_path_factory.mktemp("results")
    report = mine_repository(repo, "calc-mined", max_commits=20, setup_command=NO_BUILD,
                             results_root=root, progress=False, workers=2, timeout_s=120)
    return report, root


def test_each_commit_is_kept_or_dropped_for_its_stated_reason(history, mined):
    repo, shas = history
    report, _ = mined
    verdicts = {v["sha"]: v for v in report.verdicts}
    assert len(verdicts) == len(shas)
    expected = {"root": "no parent", "refactor": "no tests touched", "passes_before": "tests did not fail before",
                "flaky": "flaky", "tests_only": "no source change", "leak": "statement quotes the fix",
                "broken_setup": "set-up failed"}
    assert {name: verdicts[shas[name]]["reason"] for name in expected} == expected
    assert [v["sha"] for v in report.verdicts if v["kept"]] == [shas["fix"]]
    summary = report.summary()
    assert "Mined 8 commits of calc-mined: 1 kept as tasks, 7 dropped." in summary and "1 dropped: flaky" in summary


def test_a_kept_commit_is_a_swebench_shaped_task_that_leaks_no_answer(history, mined):
    repo, shas = history
    report, root = mined
    task = load_mined_tasks("calc-mined", root).iloc[0]
    assert task.instance_id == f"{repo.name}__{shas['fix'][:10]}" and task.base_commit == shas["root"]
    assert list(task.FAIL_TO_PASS) == ["tests/test_calc.py::test_sub"]
    assert list(task.PASS_TO_PASS) == ["tests/test_calc.py::test_add"]
    assert "src/calc/__init__.py" in task.patch and "tests/" not in task.patch
    assert "tests/test_calc.py" in task.test_patch and "src/" not in task.test_patch
    assert task.problem_statement == "Fix sub (#7)" and task.suite == "mined"
    lines = (root / "calc-mined" / "tasks.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["FAIL_TO_PASS"] == ["tests/test_calc.py::test_sub"]


def test_the_gold_patch_passes_the_local_evaluator_and_an_empty_patch_fails(mined):
    _, root = mined
    task = load_mined_tasks("calc-mined", root).iloc[0].to_dict()
    evaluator = LocalEvaluator(timeout_s=120)
    evaluator.check([task])
    gold, empty = evaluator.evaluate(task, task["patch"]), evaluator.evaluate(task, "")
    assert gold.resolved and gold.tests == {"tests/test_calc.py::test_sub": "PASSED", "tests/test_calc.py::test_add": "PASSED"}
    assert not empty.resolved and empty.tests["tests/test_calc.py::test_sub"] == "FAILED"


def test_mining_again_runs_no_decided_commit(history, mined):
    repo, _ = history
    report, root = mined
    log = root / "calc-mined" / "mining.jsonl"
    before = log.read_text().splitlines()
    again = mine_repository(repo, "calc-mined", max_commits=20, setup_command=NO_BUILD,
                            results_root=root, progress=False, timeout_s=120)
    assert log.read_text().splitlines() == before  # nothing run, nothing appended
    assert [v["reason"] for v in again.verdicts] == [v["reason"] for v in report.verdicts]


def test_other_settings_decide_the_commits_again(history, tmp_path):
    repo, _ = history
    first = mine_repository(repo, "two", max_commits=2, setup_command=NO_BUILD, results_root=tmp_path,
                            progress=False, timeout_s=120)
    second = mine_repository(repo, "two", max_commits=2, results_root=tmp_path, progress=False, timeout_s=120)
    assert [v["reason"] for v in first.verdicts] == ["set-up failed", "statement quotes the fix"]
    assert [v["reason"] for v in second.verdicts] == ["", "statement quotes the fix"]  # no set-up: div is a task
    assert len((tmp_path / "two" / "mining.jsonl").read_text().splitlines()) == 4
    assert list(load_mined_tasks("two", tmp_path).FAIL_TO_PASS[0]) == ["tests/test_div.py::test_div"]


def test_tests_that_report_nothing_are_said_so_not_called_a_failure(history, tmp_path):
    repo, _ = history  # a set-up that leaves pytest nothing to import: it reports no test at all
    report = mine_repository(repo, "quiet", max_commits=1, setup_command="rm -rf tests", results_root=tmp_path,
                             progress=False, timeout_s=60)
    assert [v["reason"] for v in report.verdicts] == ["no test result"] and "reported no test" in report.verdicts[0]["detail"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(repo="/no/such/folder"), "is not a folder"),
    (dict(max_commits=0), "max_commits"),
    (dict(test_config="ci/pytest.ini"), "test_config"),
    (dict(experiment="../x"), "experiment"),
    (dict(commits="no-such-branch"), "not a branch"),
])
def test_bad_arguments_are_one_clear_error_before_anything_runs(history, tmp_path, kwargs, match):
    repo, _ = history
    arguments = dict(repo=repo, experiment="x", results_root=tmp_path, progress=False) | kwargs
    with pytest.raises(ValueError, match=match):
        mine_repository(arguments.pop("repo"), arguments.pop("experiment"), **arguments)
    assert not (tmp_path / "x" / "mining.jsonl").exists()


def test_a_folder_that_is_no_repository_and_a_missing_suite_say_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="not a git repository"):
        mine_repository(tmp_path, "x", results_root=tmp_path / "r", progress=False)
    with pytest.raises(FileNotFoundError, match="mine them first"):
        load_mined_tasks("nothing-mined", tmp_path)


def test_test_files_and_pytest_ids_are_read_as_pytest_names_them():
    assert [p for p in ("tests/util.py", "test_a.py", "pkg/a_test.py", "src/app.py", "tests/data.json")
            if is_test_file(p)] == ["tests/util.py", "test_a.py", "pkg/a_test.py"]
    summary = ("PASSED tests/a.py::test_x\nFAILED tests/a.py::T::test_y - assert 1 == 2\n"
               "ERROR tests/b.py - ModuleNotFoundError: no\nXFAIL tests/a.py::test_z - later\nSKIPPED [1] tests/a.py:3: no")
    assert pytest_outcomes(summary) == {"tests/a.py::test_x": "PASSED", "tests/a.py::T::test_y": "FAILED",
                                        "tests/b.py": "ERROR", "tests/a.py::test_z": "FAILED"}


@pytest.mark.slow
@pytest.mark.parametrize("agent, model", [("cline", "claude-sonnet-4-5"), ("claude-code", "claude-sonnet-4-5"),
                                          ("codex", "gpt-5")])
def test_a_mined_task_flows_through_the_scripted_dry_run_with_each_agent(mined, tmp_path, agent, model):
    from helpers.core.registry import make_agent
    from helpers.engine.runs import run_tasks
    from helpers.llm.scripted_server import ScriptedModelServer
    from helpers.stand_ins.dry_run import DryRunScript

    _, root = mined
    tasks = load_mined_tasks("calc-mined", root)
    with ScriptedModelServer(DryRunScript(tasks).script()) as server:
        runner = make_agent(agent, model=model, base_url=server.base_url, api_key="scripted-key", timeout_s=120)
        df = run_tasks(tasks, runner, run_id="dry", experiment="calc-mined", results_root=tmp_path, progress=False)
    assert df["status"].tolist() == ["completed"], df["error"].tolist()
    assert df["pass_or_fail"].tolist() == ["pass"], df["test_log"].tolist()  # the scripted agent writes the commit's fix
    assert "src/calc/__init__.py" in df["output"][0] and "tests/" not in df["output"][0]


# --- a mined task is graded like a house task: nothing in the work tree changes how pytest starts or reports ---
# Each patch leaves the bug in place and adds one thing that, on a path that reads the work tree, made every named
# test pass: it writes an all-pass junit report and summary for the ids on its command line, then exits 0.
FORGER = '''import os
_args = [a.decode() for a in open("/proc/self/cmdline", "rb").read().split(b"\\\\0") if a]
if any("pytest" in a for a in _args):
    _ids = [a for a in _args if "::" in a]
    for _a in _args:
        if _a.startswith("--junitxml="):
            _cases = "".join('<testcase classname="%s" name="%s" file="%s"/>' % (
                i.split("::")[0][:-3].replace("/", "."), i.split("::")[1], i.split("::")[0]) for i in _ids)
            open(_a.split("=", 1)[1], "w").write("<testsuites><testsuite>%s</testsuite></testsuites>" % _cases)
    print("\\\\n".join("PASSED " + i for i in _ids), flush=True)
    os._exit(0)
'''
FORGERIES = {
    "pytest.py at the root": {"pytest.py": FORGER},
    "pytest.py under src": {"src/pytest.py": FORGER},
    "a standard module pytest imports": {"src/fnmatch.py": FORGER},
    "pytest's own dependency": {"pluggy/__init__.py": FORGER},
    "a standard module the code imports": {"src/decimal.py": FORGER,
                                           "src/calc/__init__.py": lambda text: "import decimal\n" + text},
    "a renamed .pytest.ini": {".pytest.ini": "[pytest]\naddopts = -p calc_forge\n", "src/calc_forge.py": FORGER},
    "a pytest.toml": {"pytest.toml": '[pytest]\naddopts = ["-p", "calc_forge"]\n', "src/calc_forge.py": FORGER},
    "a sitecustomize package": {"src/sitecustomize/__init__.py": FORGER},
}


def forged_patch(repo, base, tmp_path, changes):
    """The patch an agent leaves after writing `changes` (path -> text, or a function of the old text) in a
    clone of `repo` at `base`."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", "--detach", base], cwd=clone, check=True)
    for path, change in changes.items():
        target = clone / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(change(target.read_text()) if callable(change) else change)
    subprocess.run(["git", "add", "-A", "-N"], cwd=clone, check=True)
    return subprocess.run(["git", "diff", base], cwd=clone, capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_nothing_a_patch_adds_to_the_work_tree_forges_a_mined_tasks_grade(mined, tmp_path, forgery):
    repo_root, root = mined
    task = load_mined_tasks("calc-mined", root).iloc[0].to_dict()
    patch = forged_patch(task["repo_path"], task["base_commit"], tmp_path, FORGERIES[forgery])
    result = LocalEvaluator(timeout_s=120).evaluate(task, patch)
    assert result.set_aside == [] and not result.resolved, result.log
    assert result.tests["tests/test_calc.py::test_sub"] == "FAILED", result.log  # the hidden test ran, and failed
    assert result.tests["tests/test_calc.py::test_add"] == "PASSED"


def test_a_mined_tasks_recorded_configuration_is_used_and_the_patchs_never(tmp_path):
    repo = tmp_path / "checks"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    config = "[pytest]\npython_functions = check_*\npythonpath = lib\n"  # the team's tests need both settings
    commit(repo, "Start", {"pytest.ini": config, "lib/shapes.py": "def area(w, h):\n    return w + h\n",
                           "tests/test_shapes.py": "from shapes import area\n\n\ndef check_square():\n    assert area(2, 2) == 4\n"})
    commit(repo, "Fix area", {"lib/shapes.py": "def area(w, h):\n    return w * h\n",
                              "tests/test_shapes.py": "from shapes import area\n\n\ndef check_square():\n    assert area(2, 2) == 4\n"
                                                      "\n\ndef check_rectangle():\n    assert area(2, 3) == 6\n"})
    report = mine_repository(repo, "checks", max_commits=1, test_config="pytest.ini", results_root=tmp_path / "r",
                             progress=False, timeout_s=60, sandbox="if-available")
    task = load_mined_tasks("checks", tmp_path / "r").iloc[0].to_dict()
    assert report.verdicts[0]["kept"] and task["test_config"] == {"path": "pytest.ini", "text": config}
    assert list(task["FAIL_TO_PASS"]) == ["tests/test_shapes.py::check_rectangle"]
    assert list(task["PASS_TO_PASS"]) == ["tests/test_shapes.py::check_square"]
    evaluator = LocalEvaluator(timeout_s=60, sandbox="if-available")
    assert evaluator.evaluate(task, task["patch"]).resolved
    # The patch's own pytest.ini (set aside by name) and a setup.cfg beside it are never read.
    other = forged_patch(repo, task["base_commit"], tmp_path, {
        "pytest.ini": "[pytest]\npython_functions = nothing_*\n", "setup.cfg": "[tool:pytest]\naddopts = -x -p nowhere\n"})
    result = evaluator.evaluate(task, task["patch"] + other)
    assert result.resolved and result.set_aside == ["pytest.ini", "setup.cfg"], result.log


@pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
def test_a_set_up_command_runs_before_the_patch_so_the_patchs_build_script_never_runs(mined, tmp_path):
    _, root = mined
    task = load_mined_tasks("calc-mined", root).iloc[0].to_dict()
    task["setup_command"] = "test ! -e tools/build.py || {python} tools/build.py"  # a team's optional build step
    force_passes = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                    "    (yield).get_result().outcome = 'passed'\n")
    build = f"open('tests/conftest.py', 'w').write({force_passes!r})\nprint('built')\n"
    patch = forged_patch(task["repo_path"], task["base_commit"], tmp_path, {"tools/build.py": build})
    result = LocalEvaluator(timeout_s=120).evaluate(task, patch)
    assert result.set_aside == [] and not result.resolved and "built" not in result.log, result.log
    assert result.tests["tests/test_calc.py::test_sub"] == "FAILED", result.log


@pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
def test_an_in_package_forgery_of_a_mined_tasks_report_is_a_forged_grade(mined, tmp_path):
    _, root = mined
    task = load_mined_tasks("calc-mined", root).iloc[0].to_dict()
    forgery = ("import _pytest.reports as _r\n_m = _r.TestReport.from_item_and_call.__func__\n\n\n"
               "def _passed(cls, item, call):\n    report = _m(cls, item, call)\n"
               "    report.outcome, report.longrepr = 'passed', None\n    return report\n\n\n"
               "_r.TestReport.from_item_and_call = classmethod(_passed)\n")
    patch = forged_patch(task["repo_path"], task["base_commit"], tmp_path,
                         {"src/calc/__init__.py": lambda text: forgery + text})
    result = LocalEvaluator(timeout_s=120).evaluate(task, patch)
    assert not result.resolved and result.forged and result.error.startswith("forged: "), result.log
