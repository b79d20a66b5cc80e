"""The row a run keeps for one task: its columns (COLUMNS), what the agent did, and the tests' verdict.

    row = record(task, result, output, verdict, agent, ids)     # one line of runs/<run_id>.jsonl

A row is final once its verdict is in: a batched evaluation not run yet leaves it PENDING, an evaluation that
broke leaves it HARNESS_ERROR (both graded again on the next call), a pass of a patch that reaches into the
test machinery is SUSPECT and a grade forged from inside the test run is FORGED (helpers.stats.outcomes counts
both apart). Separate from helpers.engine.runs, which runs the agents: the row's shape is read by every layer
above (stats, store, analysis), while how runs are scheduled, metered and resumed concerns the engine alone.
"""

from __future__ import annotations

from typing import Any

from helpers.core.protocols import Agent, AgentResult, EvalResult, Patch
from helpers.core.tokens import truncate_chars

TEST_LOG_CHARS = 6_000
COLUMNS = (
    "instance_id",
    "repo",
    "problem_statement",
    "ground_truth_patch",
    "test_patch",
    "output",
    "mode",
    "pass_or_fail",
    "status",
    "error",
    "iterations",
    "input_tokens",
    "cached_tokens",
    "output_tokens",
    "cost_usd",
    "duration_s",
    "run_id",
    "attempt",
    "ruleset_sha",
    "agent",
    "model",
    "eval_error",
    "failed_tests",
    "test_log",
    "log_path",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "suite",
    "transient",
    "trajectory_summary",
    "set_aside",
    "suspect",
    "forged",
    "host_error",
    "tries",
)  # set_aside: paths of the patch grading did not
# apply; suspect: the lines of it that reach into the test machinery (Patch.suspect, read where the patch is taken);
# forged: the grading's tripwires caught outcomes forged from inside the test run (eval_error says how);
# host_error: the failure the host saw outside the sandbox ("" for the agent's own: helpers.stats.outcomes);
# tries: the task's runs so far in this run id with this ruleset, agent and model. All absent from older records.
PENDING = "pending"  # pass_or_fail of a finished agent run whose batched evaluation has not run yet
HARNESS_ERROR = "error"  # pass_or_fail when the evaluation itself failed (eval_error says why): evaluated again
SUSPECT = "suspect"  # pass_or_fail of a pass whose patch reaches into the test machinery: never counted as resolved
FORGED = "forged"  # pass_or_fail of a grade forged from inside the test run (helpers.stats.outcomes.FORGED): a fail


def record(
    task: dict[str, Any],
    result: AgentResult,
    output: Patch | str,
    verdict: EvalResult | None,
    agent: Agent,
    ids: dict[str, Any],
    pending: bool = False,
) -> dict[str, Any]:
    """The row of one task (COLUMNS): the task, what the agent did (its Patch in act mode, as the family took it;
    its plan), and the tests' verdict. The patch's suspect lines (Patch.suspect: lines that reach into what
    grades it) are the row's `suspect` list, and a pass of such a patch is SUSPECT, not "pass"."""
    suspect = list(output.suspect) if isinstance(output, Patch) else []
    output = output.text if isinstance(output, Patch) else output
    if pending:
        outcome = {"pass_or_fail": PENDING}
    elif verdict is not None:
        outcome = verdict_fields(verdict, suspect)
    else:
        outcome = {"pass_or_fail": "not_evaluated" if result.status == "completed" else "fail"}
    return {
        "instance_id": result.instance_id,
        "repo": task.get("repo", ""),
        "problem_statement": task.get("problem_statement", ""),
        "ground_truth_patch": task.get("patch", ""),
        "test_patch": task.get("test_patch", ""),
        "output": output,
        "mode": agent.mode,
        "status": result.status,
        "error": result.error,
        "iterations": result.iterations,
        "input_tokens": result.usage.get("input_tokens", 0),
        "cached_tokens": result.usage.get("cached_tokens", 0),
        "output_tokens": result.usage.get("output_tokens", 0),
        "cost_usd": result.cost_usd,
        "duration_s": result.duration_s,
        **ids,
        "agent": agent.name,
        "model": result.model or agent.model,
        "eval_error": "",
        "failed_tests": [],
        "test_log": "",
        "log_path": "",
        "set_aside": [],
        "suspect": suspect,
        "forged": False,
        "FAIL_TO_PASS": list(task.get("FAIL_TO_PASS") or []),
        "PASS_TO_PASS": list(task.get("PASS_TO_PASS") or []),
        "suite": task.get("suite", ""),
        "transient": bool(result.transient),
        "trajectory_summary": result.trajectory_summary,
        "host_error": result.host_error,
        "tries": 1,
        **outcome,
    }


def verdict_fields(verdict: EvalResult, suspect: list[str]) -> dict[str, Any]:
    """A verdict as record fields; an evaluation that failed for infrastructure reasons is HARNESS_ERROR, and a
    pass of a patch with `suspect` lines is SUSPECT, and a grade the tripwires caught forged is FORGED (both
    counted apart: helpers.stats.outcomes)."""
    outcome = (
        HARNESS_ERROR
        if verdict.infra
        else FORGED
        if verdict.forged
        else (SUSPECT if suspect else "pass")
        if verdict.resolved
        else "fail"
    )
    return {
        "pass_or_fail": outcome,
        "eval_error": verdict.error,
        "forged": bool(verdict.forged),
        "failed_tests": verdict.failed_tests,
        "test_log": truncate_chars(verdict.log, TEST_LOG_CHARS),
        "log_path": verdict.log_path,
        "set_aside": list(verdict.set_aside),
    }


__all__ = ["record", "verdict_fields", "COLUMNS", "PENDING", "HARNESS_ERROR", "SUSPECT", "FORGED", "TEST_LOG_CHARS"]
