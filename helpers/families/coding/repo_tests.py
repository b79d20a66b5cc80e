"""A repository's own tests, run in the sandbox, read back one outcome per test id.

    run = run_repo_tests(workspace, ["tests/test_money.py"])           # the default: pytest
    run.tests     # {"tests/test_money.py::test_rounding": "PASSED", ...}
    run.problem   # "" | "set-up failed: ..." | "tests timed out after 300 s"

The set-up command (e.g. `python -m pip install -e .`) and the test command are shell commands run in
the workspace, in the sandbox (helpers.core.sandbox): the repository's code is not ours, and its tests may
do anything. `{python}` in either is this environment's interpreter (it has pytest); `{tests}` in the test
command is the test files or ids to run, shell-quoted. Without a set-up command the workspace and its
`src/` folder are on PYTHONPATH, which runs an ordinary flat or src-layout project as it stands. Test ids
are pytest's node ids, read from its `-rA` summary (`PASSED tests/test_a.py::test_x`); a file that fails
to import is one ERROR under the file's own path.
"""

from __future__ import annotations

import re
import shlex
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Sequence

from helpers.core import config
from helpers.core.processes import remove_scratch, run_cli, safe_environment, scratch_dir

DEFAULT_SETUP_COMMAND = ""
DEFAULT_TEST_COMMAND = "{python} -m pytest -q -rA -p no:cacheprovider --continue-on-collection-errors {tests}"
SUMMARY_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S.*?)(?: - .*)?$")
OUTCOMES = {"PASSED": "PASSED", "XPASS": "PASSED", "FAILED": "FAILED", "XFAIL": "FAILED", "ERROR": "ERROR"}
TEST_DIRS = {"test", "tests", "testing"}
LOG_TAIL_CHARS = 20_000
_live: set = set()
_live_lock = threading.Lock()


@dataclass
class TestRun:
    """One run of a repository's tests: each test's outcome, the output, and why it could not run ("")."""

    tests: dict[str, str] = field(default_factory=dict)
    log: str = ""
    problem: str = ""
    kind: str = ""  # "" | "setup" | "timeout"


def is_test_file(path: str) -> bool:
    """A Python test file by pytest's default names (test_*.py, *_test.py), conftest.py, or any .py file
    under a tests/ (test/, testing/) folder."""
    parts = PurePosixPath(path)
    if parts.suffix != ".py":
        return False
    name = parts.name
    return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or any(part in TEST_DIRS for part in parts.parts[:-1]))


def runnable_test_files(paths: Sequence[str]) -> list[str]:
    """The test files pytest collects tests from (conftest.py and helpers under tests/ are not run alone)."""
    return [p for p in paths if is_test_file(p) and (PurePosixPath(p).name.startswith("test_")
                                                      or PurePosixPath(p).name.endswith("_test.py"))]


def pytest_outcomes(output: str) -> dict[str, str]:
    """node id -> PASSED | FAILED | ERROR from pytest's -rA short summary (XPASS counts as passed, XFAIL as
    failed; skipped tests are not listed). A test listed twice keeps its worst outcome."""
    outcomes: dict[str, str] = {}
    rank = {"PASSED": 0, "FAILED": 1, "ERROR": 2}
    for line in output.splitlines():
        match = SUMMARY_LINE.match(line.rstrip())
        if match:
            node, outcome = match.group(2).strip(), OUTCOMES[match.group(1)]
            if rank[outcome] >= rank[outcomes.get(node, "PASSED")]:
                outcomes[node] = outcome
    return outcomes


def run_repo_tests(workspace: Path | str, tests: Sequence[str], *, setup_command: str = DEFAULT_SETUP_COMMAND,
                   test_command: str = DEFAULT_TEST_COMMAND, timeout_s: float = config.EVAL_TIMEOUT_S,
                   sandbox: str | None = "required") -> TestRun:
    """Run `setup_command` then `test_command` on `tests` in `workspace`, in the sandbox, each within
    `timeout_s`; the workspace keeps whatever they wrote (so a second run sees the first one's files)."""
    workspace = Path(workspace)
    home = scratch_dir("repo-tests-home")
    try:
        env = _environment(workspace, home)
        if setup_command.strip():
            out, err, timed_out, _ = _shell(_filled(setup_command, []), workspace, env, home, timeout_s, sandbox)
            log = _tail(out + err)
            if timed_out:
                return TestRun(log=log, problem=f"set-up timed out after {timeout_s:.0f} s", kind="timeout")
            if _failed_setup(out, err):
                return TestRun(log=log, problem=f"set-up failed: {_last_line(out + err)}", kind="setup")
        out, err, timed_out, _ = _shell(_filled(test_command, tests), workspace, env, home, timeout_s, sandbox)
    finally:
        remove_scratch(home)
    log = _tail(out + err)
    if timed_out:
        return TestRun(pytest_outcomes(out), log, f"tests timed out after {timeout_s:.0f} s", "timeout")
    return TestRun(pytest_outcomes(out), log)


def _environment(workspace: Path, home: Path) -> dict[str, str]:
    paths = [str(workspace)] + ([str(workspace / "src")] if (workspace / "src").is_dir() else [])
    venv_bin = str(Path(sys.executable).parent)
    env = safe_environment({"PYTHONPATH": ":".join(paths), "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(home)})
    env["PATH"] = venv_bin + ":" + env.get("PATH", "/usr/bin:/bin")  # `python` is this environment's, with pytest
    return env


def _filled(command: str, tests: Sequence[str]) -> str:
    return command.replace("{python}", shlex.quote(sys.executable)).replace(
        "{tests}", " ".join(shlex.quote(t) for t in tests))


def _shell(command: str, workspace: Path, env: dict[str, str], home: Path, timeout_s: float,
           sandbox: str | None) -> tuple[str, str, bool, float]:
    # the exit status goes last on stdout: run_cli reports output, not the status
    script = f"{command}\nstatus=$?\necho\necho \"__exit_status__=$status\""
    return run_cli(["bash", "-c", script], workspace, env, "", timeout_s, _live, _live_lock, home=home,
                   sandbox=sandbox)


def _failed_setup(out: str, err: str) -> bool:
    found = re.findall(r"__exit_status__=(\d+)", out)
    return not found or found[-1] != "0"


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip() and "__exit_status__" not in line]
    return lines[-1][:300] if lines else "(no output)"


def _tail(text: str) -> str:
    text = re.sub(r"\n?__exit_status__=\d+\n?", "\n", text)
    return text if len(text) <= LOG_TAIL_CHARS else "[... earlier output cut ...]\n" + text[-LOG_TAIL_CHARS:]


__all__ = ["run_repo_tests", "pytest_outcomes", "is_test_file", "runnable_test_files", "TestRun",
           "DEFAULT_TEST_COMMAND", "DEFAULT_SETUP_COMMAND"]  # documented in CODE_APPENDIX.md
