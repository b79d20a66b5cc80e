"""Your own repository as a task suite: tasks mined from its history, the way SWE-bench, SWE-Gym and
SWE-smith build theirs, so the rules learned are your team's.

    report = mine_repository("/path/to/repo", "my-repo", max_commits=50)
    print(report.summary())           # commits scanned, kept, and why each other one was dropped
    tasks = load_tasks("mined:my-repo")   # SWE-bench-shaped rows, from act_results/my-repo/tasks.jsonl

A commit becomes a task when it changes tests and other files, and some of its changed tests fail at its
parent with only the test changes applied, and pass with the whole commit: those are FAIL_TO_PASS; the
other tests of the touched test files that pass at both ends are PASS_TO_PASS. Each end is run twice
(`reruns`): a test whose result differs is flaky and left out. Every run happens in a fresh clone, in the
sandbox, the way grading runs them (helpers.families.coding.repo_tests: the harness's interpreter and pytest).
A repository whose tests need its pytest configuration names that file (`test_config="pyproject.toml"`): its
text at each task's base commit is recorded in the task, and mining and grading use that copy, never the
version a commit or a patch brings. The problem statement is the commit message (plus the
title and body of an issue or pull request it names as #N, from an export file given), and a statement
that quotes a line the fix adds is refused: the task would hand the agent its answer
(helpers.families.coding.mined_statements).

Each commit's verdict is appended to act_results/<experiment>/mining.jsonl the moment it is known, with a
digest of the settings: a rerun with the same settings never runs a decided commit again, and a run that
was killed resumes. A crash while mining one commit is recorded as that commit's drop, with its reason.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from helpers.core import config
from helpers.core.names import check_name
from helpers.isolation.processes import remove_scratch, scratch_dir
from helpers.isolation.sandbox import SandboxPolicy
from helpers.core.progress import progress_bar
from helpers.core.wording import counted
from helpers.families.coding.git import git
from helpers.families.coding.mined_statements import problem_statement, quoted_line, read_issues
from helpers.families.coding.repo_tests import (
    DEFAULT_SETUP_COMMAND,
    PYTEST_CONFIG_NAMES,
    TestRun,
    is_test_file,
    run_repo_tests,
    run_setup,
    runnable_test_files,
)
from helpers.families.coding.workspaces import prepare_workspace, remove_workspace
from helpers.store.records import append_jsonl, experiment_dir, read_jsonl, write_atomic

SUITE = "mined"
# Why a commit is not a task; the report counts each.
DROPS = {
    "merge": "a merge commit (its change is its parents')",
    "no parent": "the first commit: nothing to compare with",
    "no tests touched": "changes no test file",
    "no source change": "changes tests only",
    "binary change": "changes a binary file, which a text patch cannot carry",
    "tests did not fail before": "no changed test fails at the parent with the new tests",
    "tests did not pass after": "no changed test that failed before passes with the whole commit",
    "flaky": "the only tests that went from fail to pass gave different results when run again",
    "set-up failed": "the set-up command failed",
    "no test result": "pytest ended without reporting a test (it crashed or was killed)",
    "timeout": "the set-up or the tests ran past the time limit",
    "statement quotes the fix": "the commit message (or issue) quotes a line of the fix",
    "error": "mining it failed (the reason is recorded)",
}


@dataclass
class MiningReport:
    """What mining found: each scanned commit's verdict (kept, or dropped with why) and the tasks."""

    experiment: str
    verdicts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tasks(self) -> pd.DataFrame:
        return pd.DataFrame([v["task"] for v in self.verdicts if v["kept"]])

    def reasons(self) -> Counter:
        return Counter(v["reason"] for v in self.verdicts if not v["kept"])

    def table(self) -> pd.DataFrame:
        """One row per scanned commit: sha, subject, kept, reason, detail."""
        return pd.DataFrame(
            [{k: v.get(k, "") for k in ("sha", "subject", "kept", "reason", "detail")} for v in self.verdicts]
        )

    def summary(self) -> str:
        kept = sum(v["kept"] for v in self.verdicts)
        lines = [
            f"Mined {counted(len(self.verdicts), 'commit')} of {self.experiment}: {kept} kept as tasks, "
            f"{len(self.verdicts) - kept} dropped."
        ]
        lines += [
            f"  {count:3d} dropped: {reason} ({DROPS.get(reason, reason)})"
            for reason, count in self.reasons().most_common()
        ]
        return "\n".join(lines)


def mine_repository(
    repo: Path | str,
    experiment: str,
    *,
    branch: str = "HEAD",
    max_commits: int = 50,
    commits: str | None = None,
    setup_command: str = DEFAULT_SETUP_COMMAND,
    test_config: str | None = None,
    timeout_s: float = config.EVAL_TIMEOUT_S,
    reruns: int = 1,
    issues_json: Path | str | None = None,
    workers: int = config.WORKERS,
    results_root: Path | str | None = None,
    progress: bool = True,
    sandbox: SandboxPolicy = "required",
    setup_network: bool = config.SETUP_NETWORK,
) -> MiningReport:
    """Mine `repo`'s history into tasks and save them to act_results/<experiment>/tasks.jsonl.

    `commits` (a git range such as "v1.0..main") or the last `max_commits` commits of `branch` (first
    parent, newest first) are scanned. `setup_command` runs once in each clone, at the parent with the test
    changes (see helpers.families.coding.repo_tests: `{python}`), as grading runs it before the patch, then the
    harness's pytest at both ends, each within `timeout_s`, with no
    network but for `setup_network=True` (the set-up command alone gets the host's network; the tasks keep it,
    so grading sets up the same way). `test_config`: the name of the repository's pytest configuration file
    its tests need (one of repo_tests.PYTEST_CONFIG_NAMES, at its root), recorded per task; None: none is read.
    `issues_json`: a
    JSON list of issues or pull requests as GitHub's REST API returns them, for statements. Bad arguments
    raise before anything runs."""
    repo, experiment = _check_repo(repo), check_name(experiment, "experiment")
    if not isinstance(max_commits, int) or isinstance(max_commits, bool) or max_commits < 1:
        raise ValueError(f"max_commits must be a whole number of at least 1, not {max_commits!r}.")
    if test_config is not None and test_config not in PYTEST_CONFIG_NAMES:
        raise ValueError(
            f"test_config must name a pytest configuration file at the repository's root (one of "
            f"{', '.join(PYTEST_CONFIG_NAMES)}), or be None, not {test_config!r}."
        )
    issues = read_issues(issues_json) if issues_json else {}
    shas = _commits(repo, branch, commits, max_commits)
    folder = experiment_dir(experiment, results_root)
    folder.mkdir(parents=True, exist_ok=True)
    digest = _digest(
        setup_command,
        "harness-pytest",
        test_config,
        timeout_s,
        reruns,
        sorted(issues),
        *(["network"] if setup_network else []),
    )
    decided = {r["sha"]: r for r in read_jsonl(folder / "mining.jsonl") if r.get("settings") == digest}
    settings = dict(
        setup_command=setup_command,
        test_config=test_config,
        timeout_s=timeout_s,
        reruns=reruns,
        sandbox=sandbox,
        setup_network=bool(setup_network),
    )
    todo = [sha for sha in shas if sha not in decided]
    lock = threading.Lock()

    def keep(verdict: dict[str, Any]) -> None:
        verdict["settings"] = digest
        with lock:
            append_jsonl(folder / "mining.jsonl", verdict)  # the moment it is known: a kill loses nothing decided
            decided[verdict["sha"]] = verdict

    if todo:
        scratch = scratch_dir("mine")
        bar = progress_bar(len(todo), f"mining {experiment}", "commit", disable=not progress)
        try:
            with ThreadPoolExecutor(max_workers=max(1, int(workers)), thread_name_prefix="mine") as pool:
                futures = [pool.submit(_mine_one, repo, sha, scratch, issues, settings) for sha in todo]
                for future in as_completed(futures):
                    keep(future.result())
                    bar.update(1)
        finally:
            bar.close()
            remove_scratch(scratch)
    report = MiningReport(experiment, [decided[sha] for sha in shas])
    _save_tasks(report, folder)
    return report


def mined_tasks_path(experiment: str, results_root: Path | str | None = None) -> Path:
    """act_results/<experiment>/tasks.jsonl: the mined suite (helpers.families.coding.tasks.load_mined_tasks reads it)."""
    return experiment_dir(check_name(experiment, "experiment"), results_root) / "tasks.jsonl"


# --- one commit -----------------------------------------------------------------------------------------
def _mine_one(repo: Path, sha: str, scratch: Path, issues: dict[int, str], settings: dict[str, Any]) -> dict[str, Any]:
    """The verdict on one commit; never raises (a failure is the commit's drop, with its reason)."""
    subject = git("log", "-1", "--format=%s", sha, cwd=repo).stdout.strip()
    verdict = {"sha": sha, "subject": subject, "kept": False, "reason": "", "detail": ""}
    try:
        reason, detail, task = _judge(repo, sha, scratch, issues, settings)
    except Exception as error:  # one commit's failure never sinks the mining
        reason, detail, task = "error", f"{type(error).__name__}: {error}", None
    verdict.update(kept=task is not None, reason=reason, detail=detail, task=task)
    return verdict


def _judge(repo: Path, sha: str, scratch: Path, issues: dict[int, str], settings: dict[str, Any]):
    parents = git("log", "-1", "--format=%P", sha, cwd=repo).stdout.split()
    if len(parents) != 1:
        return ("merge", f"{len(parents)} parents", None) if parents else ("no parent", "", None)
    parent = parents[0]
    changed = [
        line.split("\t") for line in git("diff", "--numstat", "--no-renames", parent, sha, cwd=repo).stdout.splitlines()
    ]
    if any(row[0] == "-" for row in changed):
        return "binary change", ", ".join(row[2] for row in changed if row[0] == "-")[:300], None
    paths = [row[-1] for row in changed]
    test_paths = [p for p in paths if is_test_file(p)]
    source_paths = [p for p in paths if not is_test_file(p)]
    runnable = runnable_test_files(test_paths)
    if not runnable:
        return "no tests touched", ", ".join(paths[:8]), None
    if not source_paths:
        return "no source change", ", ".join(test_paths[:8]), None
    test_patch = _diff(repo, parent, sha, test_paths)
    patch = _diff(repo, parent, sha, source_paths)
    statement = problem_statement(repo, sha, issues)
    leaked = quoted_line(statement, patch)
    if leaked:
        return "statement quotes the fix", f"quotes {leaked[:120]!r}", None
    files = [p for p in runnable if _exists_at(repo, sha, p)]
    recorded = _recorded_config(repo, parent, settings["test_config"])
    reason, detail, fail_to_pass, pass_to_pass = _run_both_ends(
        repo, sha, parent, patch, test_patch, files, scratch, {**settings, "test_config": recorded}
    )
    if reason:
        return reason, detail, None
    task = _task_row(
        repo,
        sha,
        parent,
        patch,
        test_patch,
        statement,
        fail_to_pass,
        pass_to_pass,
        {**settings, "test_config": recorded},
    )
    return "", f"{len(fail_to_pass)} fail-to-pass, {len(pass_to_pass)} pass-to-pass", task


def _run_both_ends(
    repo: Path,
    sha: str,
    parent: str,
    patch: str,
    test_patch: str,
    files: list[str],
    scratch: Path,
    settings: dict[str, Any],
):
    """(drop reason, detail, FAIL_TO_PASS, PASS_TO_PASS): reason "" when the commit is a task."""
    workspace = prepare_workspace(
        {"instance_id": sha, "repo_path": str(repo), "base_commit": parent, "suite": SUITE}, scratch
    )
    run = {k: settings[k] for k in ("test_config", "timeout_s", "sandbox")}
    try:
        _apply(workspace, test_patch, "the test changes")
        # set up once, at the parent, as grading does before the patch: what mining keeps, grading can resolve
        setup = run_setup(
            workspace,
            settings["setup_command"],
            timeout_s=settings["timeout_s"],
            sandbox=settings["sandbox"],
            setup_network=settings["setup_network"],
        )
        problem = _problem([setup], "at the parent") if setup.problem else None  # kind "setup" or "timeout"
        if problem:
            return (*problem, [], [])
        before = [run_repo_tests(workspace, files, **run) for _ in range(1 + settings["reruns"])]
        problem = _problem(before, "at the parent")
        if problem:
            return (*problem, [], [])
        _apply(workspace, patch, "the source changes")
        after = [run_repo_tests(workspace, files, **run) for _ in range(1 + settings["reruns"])]
        problem = _problem(after, "with the commit")
        if problem:
            return (*problem, [], [])
    finally:
        remove_workspace(workspace, scratch)  # refuses anything outside the scratch folder
    flaky = {
        t
        for runs in (before, after)
        for t in set().union(*(r.tests for r in runs))
        if len({r.tests.get(t) for r in runs}) > 1
    }
    passed_after = {t for t, o in after[0].tests.items() if o == "PASSED" and "::" in t} - flaky
    before_outcomes = before[0].tests
    fail_to_pass = sorted(t for t in passed_after if before_outcomes.get(t) != "PASSED")
    pass_to_pass = sorted(t for t in passed_after if before_outcomes.get(t) == "PASSED")
    if fail_to_pass:
        return "", "", fail_to_pass, pass_to_pass
    if flaky:
        return "flaky", ", ".join(sorted(flaky))[:300], [], []
    if not [t for t, o in before_outcomes.items() if o != "PASSED"]:
        return "tests did not fail before", f"{len(before_outcomes)} test(s) passed at the parent", [], []
    failing = sorted(t for t, o in after[0].tests.items() if o != "PASSED")
    return "tests did not pass after", f"still failing: {', '.join(failing)[:300]}", [], []


def _problem(runs: list[TestRun], where: str) -> tuple[str, str] | None:
    for run in runs:
        if run.kind == "setup":
            return "set-up failed", f"{where}: {run.problem}"
        if run.kind == "timeout":
            return "timeout", f"{where}: {run.problem}"
    if not runs[0].tests:
        return "no test result", f"{where}: the test command reported no test ({runs[0].log.strip()[-200:]!r})"
    return None


def _task_row(
    repo: Path,
    sha: str,
    parent: str,
    patch: str,
    test_patch: str,
    statement: str,
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    settings: dict[str, Any],
) -> dict[str, Any]:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", repo.name).strip("-.") or "repo"
    created = git("log", "-1", "--format=%aI", sha, cwd=repo).stdout.strip()
    return {
        "instance_id": check_name(f"{name}__{sha[:10]}", "instance_id"),
        "repo": name,
        "base_commit": parent,
        "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": fail_to_pass,
        "PASS_TO_PASS": pass_to_pass,
        "problem_statement": statement,
        "created_at": created,
        "version": sha[:10],
        "environment_setup_commit": parent,
        "hints_text": "",
        "repo_path": str(repo),
        "suite": SUITE,
        "setup_command": settings["setup_command"],
        "test_config": settings["test_config"],
        "setup_network": settings["setup_network"],
    }


# --- small helpers --------------------------------------------------------------------------------------
def _check_repo(repo: Path | str) -> Path:
    path = Path(repo).expanduser().resolve()
    if not path.is_dir():
        raise ValueError(f"REPO {repo!r} is not a folder: give the path of a local git repository.")
    if git("rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=path, check=False).returncode:
        raise ValueError(f"REPO {str(path)!r} is not a git repository with a commit (mining reads its history).")
    return path


def _commits(repo: Path, branch: str, commits: str | None, max_commits: int) -> list[str]:
    spec = commits or branch
    listed = git("rev-list", "--first-parent", f"--max-count={max_commits}", spec, "--", cwd=repo, check=False)
    if listed.returncode:
        raise ValueError(f"{spec!r} is not a branch, commit or range of {repo}: {listed.stderr.strip()}")
    return listed.stdout.split()


def _diff(repo: Path, parent: str, sha: str, paths: list[str]) -> str:
    return git(
        "diff", "--no-color", "--no-ext-diff", "--no-renames", "--full-index", parent, sha, "--", *paths, cwd=repo
    ).stdout


def _recorded_config(repo: Path, parent: str, name: str | None) -> dict[str, str] | None:
    """The repository's pytest configuration `name` as it is at `parent` ({"path", "text"}), None when it has
    none there (or none was asked for): the copy mining and grading use for this task."""
    if not name or not _exists_at(repo, parent, name):
        return None
    return {"path": name, "text": git("show", f"{parent}:{name}", cwd=repo).stdout}


def _exists_at(repo: Path, sha: str, path: str) -> bool:
    return not git("cat-file", "-e", f"{sha}:{path}", cwd=repo, check=False).returncode


def _apply(workspace: Path, patch: str, what: str) -> None:
    if patch.strip():
        git("apply", "--whitespace=nowarn", "-", cwd=workspace, input=patch, check=True)


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:12]


def _save_tasks(report: MiningReport, folder: Path) -> None:
    rows = [json.dumps(v["task"]) for v in report.verdicts if v["kept"]]
    write_atomic(mined_tasks_path(report.experiment, folder.parent), "".join(row + "\n" for row in rows))
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_atomic(
        folder / "mining_report.txt",
        f"{report.summary()}\n(at {stamp})\n\n" + report.table().to_string(index=False) + "\n",
    )


__all__ = ["mine_repository", "mined_tasks_path", "MiningReport", "DROPS", "SUITE"]  # documented in CODE_APPENDIX.md
