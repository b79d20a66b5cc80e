"""Evaluating a patch with the task's tests, graded like SWE-bench.

    result = evaluate_patch(task_row, patch)      # EvalResult(resolved, log, error, tests, set_aside, ...)

Every local task source (the house suite, tasks mined from a team's repository, any task with a local
`repo_path` and no SWE-bench image) is graded by one path, LocalEvaluator.evaluate: a fresh clone at
`base_commit`, the test patch, the task's `setup_command` (mined tasks may have one: it runs the repository's
own code, before any of the patch is in the tree; a set-up that fails is an infrastructure error, not the
patch's), then the graded part of the patch (helpers.families.coding.patches: its changes to tests and test
configuration set aside), then exactly the FAIL_TO_PASS + PASS_TO_PASS tests, in the sandbox with a timeout, under the harness's own
interpreter and pytest (helpers.families.coding.repo_tests.run_repo_tests, the one way tests run): nothing in
the work tree stands in for pytest, its plugins or the modules of the standard library and this environment,
no start-up hook loads, and the only pytest configuration read is the copy a mined task recorded
(`test_config`), never the patch's. A task's own `test_command` (older mined suites) is not used. The code
under test sees no key, no host file and no host process, and nothing it starts outlives the evaluation.
The grade comes from what the host observes, not from a channel the code under test shares (docs/security.md):
pytest's exit status is its process's own; the hidden tests' folders and the recorded configuration are
read-only to the tests (bound over the clone); the junit report is read through the bounded no-follow reader;
and tripwires (helpers.families.coding.tripwires), tests made for this grading that must fail and that must
pass, run among the task's own in the same files. A grade whose tripwire passed (or that exited 0, or whose
task tests passed while a tripwire came out wrong) is forged: EvalResult.forged, never resolved, the reason in
`error`. A run whose exit status disagrees with its report (anything but 1, pytest's "tests failed", for an
honest pass beside its failing tripwires) is a failed grade, never a pass.
SWE-bench tasks go to the swebench harness (Docker or Modal).
The agent's workspace is never touched; a bad patch is a failed task, never an exception.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from helpers.core import config
from helpers.isolation.processes import remove_scratch, scratch_dir
from helpers.core.protocols import EvalResult, Task
from helpers.families.coding.git import WorkspaceError, git
from helpers.families.coding.patches import grading_patch, patch_paths
from helpers.families.coding.repo_tests import TestRun, check_test_config, protected_paths, run_repo_tests, run_setup
from helpers.families.coding.tripwires import Tripwires, forged_reason, plant_tripwires, without_tripwires
from helpers.families.coding.workspaces import prepare_workspace
from helpers.isolation.sandbox import SandboxPolicy, sandbox_policy

DISAGREEMENT = "the test run's exit status disagrees with its report"


def is_local_task(task: Task) -> bool:
    return task.get("suite") == "house" or (bool(task.get("repo_path")) and task.get("suite") != "swebench")


def evaluate_patch(
    task: Task, patch: str, *, timeout_s: float = config.EVAL_TIMEOUT_S, sandbox: SandboxPolicy = "required"
) -> EvalResult:
    """The tests' verdict on `patch` for `task` (helpers.core.protocols.EvalResult); `sandbox` as LocalEvaluator's."""
    evaluator = evaluator_for([task], timeout_s=timeout_s, sandbox=sandbox)
    evaluator.check([task])
    return evaluator.evaluate(task, patch)


def evaluator_for(
    tasks: Any,
    *,
    model_name: str = "prompt-learning",
    timeout_s: float | None = None,
    sandbox: SandboxPolicy = "required",
) -> Any:
    """The Evaluator that `tasks` (a DataFrame or rows) need: local pytest for house and local tasks, the
    swebench harness for SWE-bench rows. A mix of both is refused: run them as two runs. `sandbox` is the
    local tests' sandbox policy (the engine passes the agent's: see LocalEvaluator)."""
    rows = tasks.to_dict("records") if hasattr(tasks, "to_dict") else list(tasks)
    local = {bool(is_local_task(row)) for row in rows}
    if local == {True, False}:
        raise ValueError(
            "These tasks mix local (house-suite) tasks with SWE-bench tasks, which need different "
            "evaluators; run each kind as a run of its own."
        )
    if local == {False}:
        from helpers.families.coding.swebench_harness import SWEbenchEvaluator

        if timeout_s:
            return SWEbenchEvaluator(model_name=model_name, timeout_s=timeout_s)
        return SWEbenchEvaluator(model_name=model_name)
    return LocalEvaluator(timeout_s or config.EVAL_TIMEOUT_S, sandbox=sandbox)


class LocalEvaluator:
    """Runs a task's named tests with pytest in a scratch clone, in the sandbox (the Evaluator protocol).

    `sandbox` follows the agent's policy: "required" (every real run) grades only in the sandbox, and check()
    raises helpers.isolation.sandbox.SandboxUnavailable, saying how to get one, before any agent runs;
    "if-available" (the scripted dry run, whose patches come from our own script) grades on the host, saying
    so, where no sandbox can start; None grades on the host (the agent's own explicit, unsafe choice).
    """

    batched = False

    def __init__(self, timeout_s: float = config.EVAL_TIMEOUT_S, *, sandbox: SandboxPolicy = "required"):
        self.timeout_s, self.sandbox = timeout_s, sandbox_policy(sandbox)

    def check(self, tasks: Sequence[Task]) -> None:
        """Every task needs a local repository and named tests; raises ValueError naming those that lack them,
        and SandboxUnavailable when grading requires a sandbox and none can start here."""
        no_repo = [str(t["instance_id"]) for t in tasks if not t.get("repo_path") or not Path(t["repo_path"]).exists()]
        if no_repo:
            raise ValueError(
                f"No local repository for {len(no_repo)} task(s) ({', '.join(no_repo[:5])}): their "
                "`repo_path` is missing or gone. Load them again with helpers.families.coding.tasks.load_tasks()."
            )
        no_tests = [
            str(t["instance_id"])
            for t in tasks
            if not (list(t.get("FAIL_TO_PASS") or []) + list(t.get("PASS_TO_PASS") or []))
        ]
        if no_tests:
            raise ValueError(
                f"{len(no_tests)} task(s) name no tests in FAIL_TO_PASS or PASS_TO_PASS "
                f"({', '.join(no_tests[:5])}): nothing could decide whether a patch resolves them."
            )
        for task in tasks:
            check_test_config(task.get("test_config"))
        if self.sandbox is not None:
            from helpers.isolation.sandbox import use_sandbox

            use_sandbox(required=self.sandbox == "required")

    def evaluate(self, task: Task, patch: str) -> EvalResult:
        """The verdict on `patch`; never raises for a bad patch (helpers.core.protocols.EvalResult)."""
        started = time.monotonic()
        instance_id = str(task["instance_id"])
        graded, set_aside = grading_patch(patch, task.get("test_patch") or "")
        scratch = scratch_dir("eval")  # removed by helpers.isolation.trees: any depth the patch made, never raising
        try:
            try:
                repo = prepare_workspace(task, scratch)
            except WorkspaceError as error:
                return EvalResult(instance_id, False, log=str(error), error=str(error), set_aside=set_aside)
            problem = _apply(repo, task.get("test_patch") or "", "the test patch")
            # The set-up runs on the repository's own code and tests, before the patch: nothing of the patch
            # runs until the tests do, and what the set-up writes is not its doing (a failure: not the patch's).
            setup = (
                run_setup(
                    repo,
                    task.get("setup_command") or "",
                    timeout_s=self.timeout_s,
                    sandbox=self.sandbox,
                    setup_network=bool(task.get("setup_network")),
                )
                if not problem
                else None
            )
            if setup is not None and setup.problem:
                return EvalResult(
                    instance_id,
                    False,
                    log=setup.log,
                    error=setup.problem,
                    set_aside=set_aside,
                    infra=True,
                    duration_s=time.monotonic() - started,
                )
            problem = problem or _apply(repo, graded, "the agent's patch")
            if problem:
                return EvalResult(
                    instance_id,
                    False,
                    log=problem,
                    error=problem,
                    set_aside=set_aside,
                    duration_s=time.monotonic() - started,
                )
            names = list(task.get("FAIL_TO_PASS") or []) + list(task.get("PASS_TO_PASS") or [])
            wires = plant_tripwires(repo, names)
            hidden = [*names, *patch_paths(task.get("test_patch") or "")]
            run = run_repo_tests(
                repo,
                wires.command_order(names),
                test_config=task.get("test_config"),
                timeout_s=self.timeout_s,
                sandbox=self.sandbox,
                protect=protected_paths(hidden),
            )
        finally:
            remove_scratch(scratch)
        tests = {name: run.tests.get(name, "MISSING") for name in names}
        forged = "" if run.kind == "timeout" else forged_reason(wires, run.tests, run.exit_status, names)
        fault = forged or run.problem or _disagreement(run, tests, wires)
        resolved = not fault and bool(names) and all(v == "PASSED" for v in tests.values())
        return EvalResult(
            instance_id,
            resolved,
            log=without_tripwires(run.log, wires, run.tests),
            error=fault,
            tests=tests,
            set_aside=set_aside,
            duration_s=time.monotonic() - started,
            forged=bool(forged),
        )


def _disagreement(run: TestRun, tests: dict[str, str], wires: Tripwires) -> str:
    """DISAGREEMENT when the run's exit status contradicts its report on the named tests, else "". With
    tripwires, an honest run always has failed tests: it exits 1 (pytest's "tests failed"), whatever the task's
    tests did; without, 0 goes with every named test passed."""
    if not run.reported or run.exit_status is None or not tests:
        return ""
    passed = all(outcome == "PASSED" for outcome in tests.values())
    broken = any(outcome in ("FAILED", "ERROR", "MISSING") for outcome in tests.values())
    if wires.must_fail:
        return DISAGREEMENT if passed and run.exit_status != 1 else ""
    return DISAGREEMENT if (run.exit_status == 0 and broken) or (run.exit_status != 0 and passed) else ""


def _apply(repo: Path, patch: str, what: str) -> str:
    """'' when `patch` applied (or is empty), else why not."""
    if not patch.strip():
        return ""
    text = patch if patch.endswith("\n") else patch + "\n"
    applied = git("apply", "--whitespace=nowarn", "-", cwd=repo, input=text, check=False)
    if applied.returncode != 0:
        return f"{what} does not apply: {applied.stderr.strip()[:2000]}"
    return ""


__all__ = ["evaluate_patch", "evaluator_for", "LocalEvaluator"]  # the public API, documented in CODE_APPENDIX.md
