"""SWE-bench evaluation through the swebench harness, kept thin over its own API.

    evaluate_swebench(task_row, patch)                    # one task, on local Docker (or Modal)
    evaluate_swebench_batch(rows, patches, workers=8)     # many tasks in one harness run
    grade_log(task_row, log_text)                         # grade a test log offline with swebench's grading
    read_report(report_path, instance_id)                 # a harness report.json as an EvalResult

The harness runs each task's tests in a Docker image (`run_evaluation`), locally or on Modal. Neither
is available everywhere: the backend is checked first and a missing one fails at once, saying how to
get it. Grading a recorded log needs neither. swebench 5.x builds a TestSpec from rows that carry
`image`, `eval_script`, `log_parser` and `eval_type` (the SWE-bench/SWE-bench_Lite rows on the hub);
older rows without them can still be graded, with the log parser of their repository.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

from helpers import config
from helpers.protocols import EvalResult, Task

MODEL_NAME = "cline"  # the harness files runs under logs/run_evaluation/<run_id>/<model>/<instance_id>/
LOG_EXCERPT_CHARS = 20_000
LOG_PARSER_BY_REPO = {
    "astropy/astropy": "parse_log_astropy", "django/django": "parse_log_django",
    "matplotlib/matplotlib": "parse_log_matplotlib", "mwaskom/seaborn": "parse_log_seaborn",
    "pallets/flask": "parse_log_flask", "psf/requests": "parse_log_requests", "pydata/xarray": "parse_log_xarray",
    "pylint-dev/pylint": "parse_log_pylint", "pytest-dev/pytest": "parse_log_pytest",
    "scikit-learn/scikit-learn": "parse_log_scikit", "sphinx-doc/sphinx": "parse_log_sphinx",
    "sympy/sympy": "parse_log_sympy",
}


class HarnessUnavailable(RuntimeError):
    """Neither a Docker engine nor Modal credentials: SWE-bench tests cannot run on this machine."""


def docker_available(timeout_s: float = 2.0) -> bool:
    """True when a Docker engine answers a ping (bounded by `timeout_s`)."""
    try:
        import docker

        client = docker.from_env(timeout=timeout_s)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # no SDK, no socket, no daemon: all mean "not here"
        return False


def modal_available() -> bool:
    """True when the modal package is installed and credentials are configured."""
    if importlib.util.find_spec("modal") is None:
        return False
    has_env = bool(os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET"))
    return has_env or (Path.home() / ".modal.toml").exists()


def require_backend(backend: str | None = None) -> str:
    """The backend to use ("docker" or "modal"), or HarnessUnavailable saying how to get one."""
    if backend not in (None, "docker", "modal"):
        raise ValueError(f"backend must be 'docker' or 'modal', not {backend!r}.")
    if backend in (None, "docker") and docker_available():
        return "docker"
    if backend in (None, "modal") and modal_available():
        return "modal"
    wanted = backend or "Docker or Modal"
    raise HarnessUnavailable(
        f"SWE-bench tests need {wanted} and this machine has {'neither' if backend is None else 'none'}: start a "
        "Docker engine (docker info should answer), or `pip install modal && modal token new` to run them on "
        "Modal. The bundled house suite (TASK_SOURCE='house') runs without either."
    )


def swebench_test_spec(task: Task) -> Any:
    """swebench's TestSpec for a task row (built by swebench when the row has its 5.x fields)."""
    from swebench.types import TestSpec

    if all(task.get(k) for k in ("image", "eval_script", "log_parser", "eval_type")):
        from swebench.harness.utils import make_test_spec

        return make_test_spec(dict(task))
    parser = task.get("log_parser") or LOG_PARSER_BY_REPO.get(str(task.get("repo")))
    if not parser:
        raise ValueError(f"{task.get('instance_id')}: no log parser known for repository {task.get('repo')!r}; "
                         "give the row a `log_parser` (a name in swebench's PARSER_REGISTRY).")
    return TestSpec(instance_id=str(task["instance_id"]), image=str(task.get("image") or ""), eval_script_list=[],
                    repo=str(task["repo"]), version=str(task.get("version") or ""),
                    FAIL_TO_PASS=list(task["FAIL_TO_PASS"]), PASS_TO_PASS=list(task["PASS_TO_PASS"]),
                    log_parser=parser, eval_type=str(task.get("eval_type") or "pass_and_fail"))


def _result(instance_id: str, entry: dict[str, Any], log_path: str = "") -> EvalResult:
    """An EvalResult from one instance's entry of a harness report."""
    tests: dict[str, str] = {}
    for kind, outcomes in (entry.get("tests_status") or {}).items():
        for test in outcomes.get("success", []):
            tests[test] = "PASSED"
        for test in outcomes.get("failure", []):
            tests[test] = "FAILED"
    log = Path(log_path).read_text(errors="replace")[-LOG_EXCERPT_CHARS:] if log_path and Path(log_path).exists() else ""
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
        prediction = {"instance_id": str(task["instance_id"]), "model_name_or_path": MODEL_NAME, "model_patch": patch}
        report = get_eval_report(swebench_test_spec(task), prediction, str(path), include_tests_status=True)
        result = _result(str(task["instance_id"]), report[str(task["instance_id"])], str(path))
    if isinstance(log, Path):
        return result
    result.log_path = ""
    return result


def evaluate_swebench_batch(rows: Sequence[Task], patches: Sequence[str], *, workers: int = 4,
                            run_id: str = "prompt-learning", backend: str | None = None,
                            timeout_s: float = 1_800, dataset: str = config.SWEBENCH_DATASET,
                            split: str = config.SWEBENCH_SPLIT, work_dir: Path | str | None = None) -> list[EvalResult]:
    """Run the harness once for many tasks (`python -m swebench.harness.run_evaluation`) and read each
    instance's report. Raises HarnessUnavailable before doing anything when no backend is there."""
    chosen = require_backend(backend)
    work = Path(work_dir or config.cache_root() / "swebench")
    work.mkdir(parents=True, exist_ok=True)
    predictions = work / f"predictions-{run_id}.jsonl"
    predictions.write_text("".join(json.dumps({"instance_id": str(r["instance_id"]), "model_name_or_path": MODEL_NAME,
                                               "model_patch": p}) + "\n" for r, p in zip(rows, patches)))
    command = [sys.executable, "-m", "swebench.harness.run_evaluation", "--dataset_name", dataset, "--split", split,
               "--predictions_path", str(predictions), "--max_workers", str(workers), "--run_id", run_id,
               "--timeout", str(int(timeout_s)), "--modal", str(chosen == "modal").lower(),
               "--instance_ids", *[str(r["instance_id"]) for r in rows]]
    done = subprocess.run(command, cwd=work, capture_output=True, text=True)
    results = []
    for row in rows:
        folder = work / "logs" / "run_evaluation" / run_id / MODEL_NAME / str(row["instance_id"])
        if (folder / "report.json").exists():
            results.append(read_report(folder / "report.json", str(row["instance_id"])))
        else:
            why = (done.stderr or done.stdout).strip()[-2000:] or "no report written"
            results.append(EvalResult(str(row["instance_id"]), False, log=why, error=f"harness produced no report: {why[-300:]}"))
    return results


def evaluate_swebench(task: Task, patch: str, *, timeout_s: float = 1_800, backend: str | None = None,
                      run_id: str = "prompt-learning", **kwargs: Any) -> EvalResult:
    """One task through the harness (see evaluate_swebench_batch)."""
    return evaluate_swebench_batch([task], [patch], workers=1, run_id=run_id, backend=backend,
                                   timeout_s=max(timeout_s, 60), **kwargs)[0]

__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "evaluate_swebench", "evaluate_swebench_batch", "grade_log", "read_report", "swebench_test_spec",
    "require_backend", "docker_available", "modal_available", "HarnessUnavailable",
]
