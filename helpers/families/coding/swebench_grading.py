"""SWE-bench grading of what the harness recorded, offline: a test log graded with swebench's own grading, a
harness report.json read as an EvalResult, the TestSpec a task row gives.

    grade_log(task_row, log_text)                          # grade a test log offline with swebench's grading
    read_report(report_path, instance_id)                  # a harness report.json as an EvalResult

Separate from helpers.families.coding.swebench_harness (which runs the harness, on Docker or Modal): grading
a recorded log needs neither. swebench 5.x builds a TestSpec from rows that carry `image`, `eval_script`,
`log_parser` and `eval_type` (the SWE-bench/SWE-bench_Lite rows on the hub); older rows without them can still
be graded, with the log parser of their repository.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from helpers.core.protocols import EvalResult, Task

DEFAULT_MODEL_NAME = "prompt-learning"  # the harness files runs under logs/run_evaluation/<run_id>/<model>/<id>/
LOG_EXCERPT_CHARS = 20_000
LOG_PARSER_BY_REPO = {
    "astropy/astropy": "parse_log_astropy",
    "django/django": "parse_log_django",
    "matplotlib/matplotlib": "parse_log_matplotlib",
    "mwaskom/seaborn": "parse_log_seaborn",
    "pallets/flask": "parse_log_flask",
    "psf/requests": "parse_log_requests",
    "pydata/xarray": "parse_log_xarray",
    "pylint-dev/pylint": "parse_log_pylint",
    "pytest-dev/pytest": "parse_log_pytest",
    "scikit-learn/scikit-learn": "parse_log_scikit",
    "sphinx-doc/sphinx": "parse_log_sphinx",
    "sympy/sympy": "parse_log_sympy",
}


def swebench_test_spec(task: Task) -> Any:
    """swebench's TestSpec for a task row (built by swebench when the row has its 5.x fields)."""
    from swebench.types import TestSpec

    if all(task.get(k) for k in ("image", "eval_script", "log_parser", "eval_type")):
        from swebench.harness.utils import make_test_spec

        return make_test_spec(dict(task))
    parser = task.get("log_parser") or LOG_PARSER_BY_REPO.get(str(task.get("repo")))
    if not parser:
        raise ValueError(
            f"{task.get('instance_id')}: no log parser known for repository {task.get('repo')!r}; "
            "give the row a `log_parser` (a name in swebench's PARSER_REGISTRY)."
        )
    return TestSpec(
        instance_id=str(task["instance_id"]),
        image=str(task.get("image") or ""),
        eval_script_list=[],
        repo=str(task["repo"]),
        version=str(task.get("version") or ""),
        FAIL_TO_PASS=list(task["FAIL_TO_PASS"]),
        PASS_TO_PASS=list(task["PASS_TO_PASS"]),
        log_parser=parser,
        eval_type=str(task.get("eval_type") or "pass_and_fail"),
    )


def _result(instance_id: str, entry: dict[str, Any], log_path: str = "") -> EvalResult:
    """An EvalResult from one instance's entry of a harness report."""
    tests: dict[str, str] = {}
    for kind, outcomes in (entry.get("tests_status") or {}).items():
        for test in outcomes.get("success", []):
            tests[test] = "PASSED"
        for test in outcomes.get("failure", []):
            tests[test] = "FAILED"
    log = (
        Path(log_path).read_text(errors="replace")[-LOG_EXCERPT_CHARS:] if log_path and Path(log_path).exists() else ""
    )
    error = ""
    if not entry.get("patch_successfully_applied", True):
        error = "the patch did not apply, or the tests produced no parseable output"
        if entry.get("infra_failure_reason"):
            error += f" ({entry['infra_failure_reason']})"
    return EvalResult(instance_id, bool(entry.get("resolved")), log=log, error=error, tests=tests, log_path=log_path)


def read_report(report_path: Path | str, instance_id: str, log_path: Path | str | None = None) -> EvalResult:
    """An EvalResult from a harness report.json (and its test_output.txt beside it, if there)."""
    report_path = Path(report_path)
    report = json.loads(report_path.read_text())
    if instance_id not in report:
        raise KeyError(f"{report_path} has no entry for {instance_id!r} (it has {sorted(report)[:5]}).")
    log = Path(log_path) if log_path else report_path.with_name("test_output.txt")
    return _result(instance_id, report[instance_id], str(log) if log.exists() else "")


def grade_log(task: Task, log: str | Path, patch: str = "(patch)") -> EvalResult:
    """Grade a harness test log (its text or path) with swebench's own grading, offline."""
    from swebench.harness.grading import get_eval_report

    path = Path(log) if isinstance(log, Path) else None
    with tempfile.TemporaryDirectory(prefix="swebench-log-") as tmp:
        if path is None:
            path = Path(tmp) / "test_output.txt"
            path.write_text(str(log))
        prediction = {
            "instance_id": str(task["instance_id"]),
            "model_name_or_path": DEFAULT_MODEL_NAME,
            "model_patch": patch,
        }
        report = get_eval_report(swebench_test_spec(task), prediction, str(path), include_tests_status=True)
        result = _result(str(task["instance_id"]), report[str(task["instance_id"])], str(path))
    if isinstance(log, Path):
        return result
    result.log_path = ""
    return result


__all__ = ["grade_log", "read_report", "swebench_test_spec"]  # documented in CODE_APPENDIX.md
