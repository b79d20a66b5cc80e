"""Evaluating a patch with the task's tests, graded like SWE-bench.

    result = evaluate_patch(task_row, patch)      # EvalResult(resolved, log, error, tests, ...)

House tasks (and any task with a local `repo_path` and no SWE-bench image) run here: a fresh clone at
`base_commit`, the patch, then the test patch, then exactly the FAIL_TO_PASS + PASS_TO_PASS tests under
pytest with a timeout. Tasks mined from a team's repository (helpers.families.coding.mining) carry their
own `setup_command` and `test_command`, and run in the sandbox (helpers.families.coding.repo_tests). SWE-bench tasks go to the swebench harness (Docker or Modal).
The agent's workspace is never touched; a bad patch is a failed task, never an exception.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Sequence

from helpers.core import config
from helpers.core.processes import safe_environment
from helpers.core.protocols import EvalResult, Task
from helpers.families.coding.git import WorkspaceError, git
from helpers.families.coding.repo_tests import run_repo_tests
from helpers.families.coding.workspaces import prepare_workspace

LOG_TAIL_CHARS = 20_000


def is_local_task(task: Task) -> bool:
    return task.get("suite") == "house" or (bool(task.get("repo_path")) and task.get("suite") != "swebench")


def evaluate_patch(task: Task, patch: str, *, timeout_s: float = config.EVAL_TIMEOUT_S) -> EvalResult:
    """The tests' verdict on `patch` for `task` (see helpers.core.protocols.EvalResult)."""
    evaluator = evaluator_for([task], timeout_s=timeout_s)
    evaluator.check([task])
    return evaluator.evaluate(task, patch)


def evaluator_for(tasks: Any, *, model_name: str = "prompt-learning", timeout_s: float | None = None) -> Any:
    """The Evaluator that `tasks` (a DataFrame or rows) need: local pytest for house and local tasks, the
    swebench harness for SWE-bench rows. A mix of both is refused: run them as two runs."""
    rows = tasks.to_dict("records") if hasattr(tasks, "to_dict") else list(tasks)
    local = {bool(is_local_task(row)) for row in rows}
    if local == {True, False}:
        raise ValueError("These tasks mix local (house-suite) tasks with SWE-bench tasks, which need different "
                         "evaluators; run each kind as a run of its own.")
    if local == {False}:
        from helpers.families.coding.swebench_harness import SWEbenchEvaluator

        return SWEbenchEvaluator(model_name=model_name, **({"timeout_s": timeout_s} if timeout_s else {}))
    return LocalEvaluator(timeout_s or config.EVAL_TIMEOUT_S)


class LocalEvaluator:
    """Runs a task's named tests with pytest in a scratch clone (the Evaluator protocol)."""

    batched = False

    def __init__(self, timeout_s: float = config.EVAL_TIMEOUT_S):
        self.timeout_s = timeout_s

    def check(self, tasks: Sequence[Task]) -> None:
        """Every task needs a local repository and named tests; raises ValueError naming those that lack them."""
        no_repo = [str(t["instance_id"]) for t in tasks if not t.get("repo_path") or not Path(t["repo_path"]).exists()]
        if no_repo:
            raise ValueError(f"No local repository for {len(no_repo)} task(s) ({', '.join(no_repo[:5])}): their "
                             "`repo_path` is missing or gone. Load them again with helpers.families.coding.tasks.load_tasks().")
        no_tests = [str(t["instance_id"]) for t in tasks if not (list(t.get("FAIL_TO_PASS") or []) + list(t.get("PASS_TO_PASS") or []))]
        if no_tests:
            raise ValueError(f"{len(no_tests)} task(s) name no tests in FAIL_TO_PASS or PASS_TO_PASS "
                             f"({', '.join(no_tests[:5])}): nothing could decide whether a patch resolves them.")

    def evaluate(self, task: Task, patch: str) -> EvalResult:
        started = time.monotonic()
        instance_id = str(task["instance_id"])
        with tempfile.TemporaryDirectory(prefix="eval-") as scratch:
            try:
                repo = prepare_workspace(task, scratch)
            except WorkspaceError as error:
                return EvalResult(instance_id, False, log=str(error), error=str(error))
            problem = _apply(repo, patch, "the agent's patch") or _apply(repo, task.get("test_patch") or "", "the test patch")
            if problem:
                return EvalResult(instance_id, False, log=problem, error=problem,
                                  duration_s=time.monotonic() - started)
            names = list(task.get("FAIL_TO_PASS") or []) + list(task.get("PASS_TO_PASS") or [])
            if task.get("test_command"):  # a mined task: the repository's own commands, sandboxed
                run = run_repo_tests(repo, names, setup_command=task.get("setup_command") or "",
                                     test_command=task["test_command"], timeout_s=self.timeout_s)
                log, outcomes, error = run.log, run.tests, run.problem
            else:
                log, outcomes, error = _run_pytest(repo, names, self.timeout_s)
        tests = {name: outcomes.get(name, "MISSING") for name in names}
        resolved = not error and bool(names) and all(v == "PASSED" for v in tests.values())
        return EvalResult(instance_id, resolved, log=_tail(log), error=error, tests=tests,
                          duration_s=time.monotonic() - started)


def _apply(repo: Path, patch: str, what: str) -> str:
    """'' when `patch` applied (or is empty), else why not."""
    if not patch.strip():
        return ""
    text = patch if patch.endswith("\n") else patch + "\n"
    applied = git("apply", "--whitespace=nowarn", "-", cwd=repo, input=text, check=False)
    if applied.returncode != 0:
        return f"{what} does not apply: {applied.stderr.strip()[:2000]}"
    return ""


def _run_pytest(repo: Path, names: list[str], timeout_s: float) -> tuple[str, dict[str, str], str]:
    """(output, node id -> PASSED|FAILED|ERROR|SKIPPED, error) for `names` run in `repo`."""
    if not names:
        return "no tests named (FAIL_TO_PASS and PASS_TO_PASS are empty)", {}, "no tests to run"
    report = repo / ".eval-junit.xml"
    env = safe_environment({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1",
                            "PYTHONPATH": str(repo)})  # no keys for the code under test
    command = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--tb=short",
               f"--junitxml={report}", "-o", "junit_family=xunit1", *names]
    process = subprocess.Popen(command, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return f"{output}\n[tests timed out after {timeout_s:.0f} s]", {}, f"tests timed out after {timeout_s:.0f} s"
    return output, _outcomes(report), ""


def _outcomes(report: Path) -> dict[str, str]:
    """node id -> outcome, from pytest's junit XML (classname a.b.test_x + name -> a/b/test_x.py::name)."""
    if not report.exists():
        return {}
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        path = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        node = f"{path}::{case.get('name')}"
        kinds = {child.tag for child in case}
        outcomes[node] = ("FAILED" if "failure" in kinds else "ERROR" if "error" in kinds
                          else "SKIPPED" if "skipped" in kinds else "PASSED")
    return outcomes


def _tail(log: str) -> str:
    return log if len(log) <= LOG_TAIL_CHARS else "[... earlier output cut ...]\n" + log[-LOG_TAIL_CHARS:]

__all__ = ["evaluate_patch", "evaluator_for", "LocalEvaluator"]  # the public API, documented in CODE_APPENDIX.md
