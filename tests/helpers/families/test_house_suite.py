"""The house suite: tasks on three libraries whose hidden tests check conventions the issues never state.

The suite's own checks grade every task's gold patch, naive patch, empty patch and gold patch with each of its
conventions undone: some 240 gradings, each graded once (the `graded` fixture) and asked every question here.
The real grading path (LocalEvaluator: a clone, the sandbox, one pytest process per patch) takes 1-2 s each here
and has no batch mode, so it grades a sample of one task per library for each patch kind and must agree with the
batch test by test; the rest run in batches: one pytest process per library that runs each variant's tests in
turn (pytest.main on a copy of the repository with the patch and the test patch applied by git apply, the
package's modules dropped between runs). No gold or naive patch touches a test or the test configuration (checked
below), so the real path's setting aside of them changes nothing the batch grades."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from helpers.core.protocols import TASK_FIELDS
from helpers.families.coding.house_suite import CONVENTIONS, build_house_repos, load_house_suite
from helpers.families.coding.house_suite.build import undone_patches
from helpers.families.coding.house_suite.task_files import libraries
from helpers.families.coding.tasks import split_dataset

# one xdist worker grades the suite (make test runs with --dist loadgroup): spread over two, each would build and
# grade it again for its share of this module's tests
pytestmark = pytest.mark.xdist_group("house-suite-grading")
# Words that would give a convention away in an issue (checked on every task whose tests check it).
GIVEAWAYS = {
    "errors": ["LedgerError", "TodoError", "RowsError", "exception type", "exception class"],
    "changelog": ["changelog"],
    "logging": ["logger", "logging"],
    "docs_types": ["docstring", "type hint", "annotat"],
    "registry": ["register", "registry", "EXPORTERS"],
    "decimal": ["Decimal", "float"],
    "cli_help": ["help"],
    "cli_exit": ["exit", "status", "EXIT_", "stderr"],
    "rows_pure": ["in place", "mutat", "copy", "copies", "modif"],
    "rows_missing": [r"\bNone\b", "null"],
}
ALWAYS = ["changelog", "logger", "docstring", "type hint", "register(", "test_", "hidden test", "convention"]

DRIVER = r'''
import json, os, sys
import pytest

package, jobs = sys.argv[1], json.loads(sys.stdin.read())


class Outcomes:
    def __init__(self):
        self.tests, self.log = {}, []

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.tests[report.nodeid] = "FAILED"
            self.log.append(report.longreprtext)
        elif report.when == "call" and report.nodeid not in self.tests:
            self.tests[report.nodeid] = "PASSED"


results = {}
for folder, names in jobs.items():
    os.chdir(folder)
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".") or m.startswith("test_")]:
        del sys.modules[name]
    outcomes = Outcomes()
    pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", folder, "-W", "ignore", *names], plugins=[outcomes])
    results[folder] = {"tests": {n: outcomes.tests.get(n, "MISSING") for n in names}, "log": "\n".join(outcomes.log)}
print("RESULTS" + json.dumps(results))
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("house")
    return root, load_house_suite(root)


@pytest.fixture(scope="module")
def tasks(built):
    return built[1]


@pytest.fixture(scope="module")
def graded(built, tmp_path_factory):
    """(instance id, variant) -> {"tests": test -> PASSED/FAILED/MISSING, "log": the failures' reports}, for every
    task's gold, naive and empty patch and its gold patch with each convention undone; graded in one pytest
    process per library."""
    began = time.monotonic()
    root, tasks = built
    undone = undone_patches(root)
    scratch = tmp_path_factory.mktemp("variants")
    jobs: dict[str, dict] = {}
    for row in tasks.to_dict("records"):
        variants = {"gold": row["patch"], "naive": row["naive_patch"], "empty": "",
                    **{f"undone:{c}": patch for c, patch in undone[row["instance_id"]].items()}}
        for variant, patch in variants.items():
            folder = scratch / row["instance_id"] / variant.replace(":", "-")
            shutil.copytree(row["repo_path"], folder, ignore=shutil.ignore_patterns(".git"))
            for text in (patch, row["test_patch"]):
                if text.strip():
                    subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=folder, input=text, text=True,
                                   check=True, capture_output=True)
            jobs.setdefault(row["repo"], {})[str(folder)] = (row["instance_id"], variant,
                                                            list(row["FAIL_TO_PASS"]) + list(row["PASS_TO_PASS"]))

    def run(repo):
        package = libraries()[repo].folder
        names = {folder: job[2] for folder, job in jobs[repo].items()}
        done = subprocess.run([sys.executable, "-c", DRIVER, package], input=json.dumps(names), text=True,
                              capture_output=True, timeout=600, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        found = re.search(r"^RESULTS(.*)$", done.stdout, re.M)
        assert found, f"the batch for {repo} did not finish: {done.stderr[-2000:]}"
        results = json.loads(found.group(1))
        return {jobs[repo][folder][:2]: grade for folder, grade in results.items()}

    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        graded = {key: resolved for part in pool.map(run, jobs) for key, resolved in part.items()}
    print(f"graded {len(graded)} patches in {time.monotonic() - started:.1f} s (copies made in {started - began:.1f} s)")
    return graded


def test_there_are_at_least_48_tasks_over_three_libraries_with_every_swebench_field_and_unique_ids(tasks):
    assert len(tasks) >= 48
    assert set(tasks.repo) == {"house/ledger", "house/todo", "house/rows"}
    assert min(tasks.groupby("repo").size()) >= 12
    assert set(TASK_FIELDS) <= set(tasks.columns)
    assert tasks.instance_id.is_unique and tasks.created_at.is_unique
    assert [f"house__ledger-{n:04d}" for n in range(1, 13)] == list(tasks.instance_id[:12])  # the first 12 kept their ids
    for row in tasks.itertuples():
        assert row.patch.startswith("diff --git") and row.test_patch.startswith("diff --git")
        assert row.naive_patch.startswith("diff --git")
        assert row.FAIL_TO_PASS and row.PASS_TO_PASS and row.suite == "house"


def resolved(grade: dict) -> bool:
    return all(v == "PASSED" for v in grade["tests"].values())


def test_every_gold_patch_resolves_its_task_and_every_naive_empty_or_convention_undone_patch_fails(tasks, graded):
    failures = []
    for row in tasks.itertuples():
        if not resolved(graded[(row.instance_id, "gold")]):
            failures.append(f"{row.instance_id}: gold does not resolve")
        for variant in ["naive", "empty", *(f"undone:{c}" for c in row.conventions)]:
            if resolved(graded[(row.instance_id, variant)]):
                failures.append(f"{row.instance_id}: {variant} resolves")
    assert not failures, failures
    assert len(graded) == 3 * len(tasks) + sum(len(c) for c in tasks.conventions)


def test_a_fix_that_breaks_a_convention_fails_only_hidden_tests_and_the_log_names_the_convention(tasks, graded):
    for row in tasks.itertuples():
        naive = graded[(row.instance_id, "naive")]
        failed = [t for t, outcome in naive["tests"].items() if outcome != "PASSED"]
        assert failed and all(t in row.FAIL_TO_PASS for t in failed), row.instance_id
        assert "house convention broken" in naive["log"], row.instance_id


def test_no_gold_or_naive_patch_touches_a_test_or_the_test_configuration(tasks):
    from helpers.families.coding.patches import grading_patch

    for row in tasks.itertuples():
        for patch in (row.patch, row.naive_patch):
            assert grading_patch(patch, row.test_patch)[1] == [], row.instance_id


def test_the_real_grading_path_agrees_test_by_test_on_one_task_per_library(tasks, graded):
    from helpers.families.coding.evaluation import evaluator_for

    sample = tasks.groupby("repo").tail(1).to_dict("records")
    evaluator = evaluator_for(sample, sandbox="if-available")
    evaluator.check(sample)
    jobs = [(row, kind, variant) for row in sample for kind, variant in (("patch", "gold"), ("naive_patch", "naive"),
                                                                         (None, "empty"))]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda job: evaluator.evaluate(job[0], job[0][job[1]] if job[1] else ""), jobs))
    for (row, _, variant), result in zip(jobs, results):
        batch = graded[(row["instance_id"], variant)]
        assert result.resolved == (variant == "gold") == resolved(batch), (row["instance_id"], variant, result.log)
        assert result.tests == batch["tests"], (row["instance_id"], variant)
        if variant == "naive":
            assert "house convention broken" in result.log, row["instance_id"]


def test_every_convention_recurs_in_three_tasks_is_stated_as_a_rule_and_says_where_it_holds(tasks):
    counts = Counter(c for conventions in tasks.conventions for c in conventions)
    assert set(counts) == set(CONVENTIONS)
    assert min(counts.values()) >= 3
    for cid, convention in CONVENTIONS.items():
        assert {"title", "rule", "check", "scope"} <= set(convention) and convention["rule"].endswith(".")
        repos = set(tasks[tasks.conventions.map(lambda c: cid in c)].repo)
        if convention["scope"] == "team":  # team-wide: seen in more than one library
            assert len(repos) >= 2, cid
        else:  # one library's own: only there, and its rule says where it holds
            assert repos == {convention["scope"]}, cid
            assert convention["rule"].startswith("In the "), cid


def test_every_convention_is_in_train_and_in_test_under_the_chronological_split(tasks):
    train, test = split_dataset(tasks, len(tasks) - 16, 16, "chronological")
    seen = lambda frame: {c for row in frame.conventions for c in row}  # noqa: E731
    assert seen(train) == seen(test) == set(CONVENTIONS)
    assert set(train.repo) == set(test.repo) == set(tasks.repo)


@pytest.mark.parametrize("train_size", [6, 32])
def test_no_rule_names_what_only_one_training_task_shows_so_the_leakage_guard_lets_it_in(tasks, train_size):
    from helpers.learn.leakage import leaks_in, leaky_identifiers

    train, _ = split_dataset(tasks, train_size, 16, "chronological")
    leaks = leaky_identifiers(train)
    assert {cid: leaks_in(c["rule"], leaks) for cid, c in CONVENTIONS.items() if leaks_in(c["rule"], leaks)} == {}


def test_no_problem_statement_gives_its_conventions_or_hidden_tests_away(tasks):
    for row in tasks.itertuples():
        text = row.problem_statement
        for word in ALWAYS + [w for c in row.conventions for w in GIVEAWAYS[c]]:
            pattern, flags = (word if word.startswith("\\b") else re.escape(word)), (re.I if word.islower() else 0)
            assert not re.search(pattern, text, flags), (row.instance_id, word)
        for test in row.FAIL_TO_PASS:
            assert test.split("::")[0] not in text and test.split("::")[-1].split("[")[0] not in text


def test_the_build_is_deterministic(tmp_path, built):
    first = build_house_repos(tmp_path / "a")["house/ledger"]
    a, b = load_house_suite(tmp_path / "a"), built[1]
    assert first != Path(b.repo_path[0])
    assert list(a.base_commit) == list(b.base_commit) and list(a.patch) == list(b.patch)


def test_a_built_suite_is_reused_not_rebuilt(built):
    root = built[0]
    repo = build_house_repos(root)["house/ledger"]
    marker = repo / "untracked-marker"
    marker.write_text("still here")
    build_house_repos(root)
    assert marker.exists()
    marker.unlink()


def test_the_scripted_agent_writes_a_tasks_gold_fix_in_any_library_only_when_the_rules_state_every_convention(tasks):
    """The dry run knows a rule by its sentence: a library's own rule teaches only that library's convention."""
    from helpers.stand_ins.dry_run import DryRunScript
    from helpers.stand_ins.file_edit_tools import PATCH_END, ShellTool

    script = DryRunScript(tasks, edit_tools=[ShellTool("bash")])
    assert script.known_conventions(CONVENTIONS["cli_exit"]["rule"]) == {"cli_exit"}
    tool = [{"type": "function", "function": {"name": "bash", "parameters": {"properties": {"command": {}}}}}]
    for row in tasks.groupby("repo").tail(2).to_dict("records"):
        def patch_written(conventions):
            rules = "\n".join(f"- {CONVENTIONS[c]['rule']}" for c in conventions)
            request = {"messages": [{"role": "system", "content": rules}, {"role": "user", "content": row["problem_statement"]}],
                       "tools": tool}
            command = script.agent_reply(request).tool_calls[0]["arguments"]["command"]
            return command.split("\n", 1)[1].rsplit(f"\n{PATCH_END}", 1)[0]

        assert patch_written(row["conventions"]) == row["patch"].rstrip()
        assert patch_written(row["conventions"][:-1]) == row["naive_patch"].rstrip()
