"""A repository's own tests, run in the sandbox, read back one outcome per test id: the one way tests run.

    run = run_repo_tests(workspace, ["tests/test_money.py"])           # the default: pytest
    run.tests     # {"tests/test_money.py::test_rounding": "PASSED", ...}
    run.problem   # "" | "set-up failed: ..." | "tests timed out after 300 s"
    run.exit_status, run.reported    # 0, True: the test command's exit status; outcomes from its report

The set-up command (e.g. `python -m pip install -e .`) and the test command are shell commands run in
the workspace, in the sandbox (helpers.core.sandbox): the repository's code is not ours, and its tests may
do anything. `{python}` in either is this environment's interpreter (it has pytest); `{tests}` in the test
command is the test files or ids to run, shell-quoted; `{report}` is a path outside the workspace where
pytest writes its junit XML report. Without a set-up command the workspace and its `src/` folder are on
PYTHONPATH, which runs an ordinary flat or src-layout project as it stands. Test ids are pytest's node ids,
read from that report when the command names `{report}`, else from its `-rA` summary (`PASSED
tests/test_a.py::test_x`); a file that fails to import is one ERROR under the file's own path.

GRADING_COMMAND is the harness's own pytest run, for tasks that bring no test command (the house suite):
the repository's pytest configuration, plugins and the workspace's modules cannot change how pytest
starts or reports (see the comments on it).
"""

from __future__ import annotations

import re
import shlex
import sys
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Sequence

from helpers.core import config
from helpers.core.processes import remove_scratch, run_cli, safe_environment, scratch_dir

DEFAULT_SETUP_COMMAND = ""
DEFAULT_TEST_COMMAND = ("{python} -m pytest -q -rA -p no:cacheprovider --continue-on-collection-errors "
                        "--junitxml={report} -o junit_family=xunit1 {tests}")
# The harness's pytest run. -c /dev/null with --rootdir: no pytest.ini, tox.ini, setup.cfg or pyproject.toml of
# the repository is read (no addopts, plugins or test paths of its own); --confcutdir: no conftest.py above the
# workspace is either; no plugin loads from entry points; -P and an empty PYTHONPATH keep the workspace off
# sys.path until pytest and its plugins are imported (a pytest.py in the workspace cannot stand in for them),
# then pythonpath puts the workspace and its src/ first, for the code under test (absolute: relative ones would
# count from /dev).
GRADING_COMMAND = ("PYTHONPATH= PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {python} -P -m pytest -c /dev/null --rootdir . "
                   "--confcutdir . -o \"pythonpath='$PWD' '$PWD/src'\" -p no:cacheprovider -q -rA --tb=short "
                   "--junitxml={report} -o junit_family=xunit1 {tests}")
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
    exit_status: int | None = None  # the test command's, None when it did not finish
    reported: bool = False  # the outcomes come from the junit report at {report}, not from the output


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
                   sandbox: str | None = "required", setup_network: bool = config.SETUP_NETWORK) -> TestRun:
    """Run `setup_command` then `test_command` on `tests` in `workspace`, in the sandbox (`sandbox`: "required",
    "if-available" or None, as helpers.core.processes.sandboxed), each within `timeout_s`; the workspace keeps
    whatever they wrote (so a second run sees the first one's files). Whatever they start ends with them.
    Neither has any network, but for `setup_network=True`, which gives the set-up command (alone) the host's
    network to download what the project needs."""
    workspace = Path(workspace)
    home = scratch_dir("repo-tests-home")
    report = home / "report.xml"  # outside the workspace: the tree the code under test ships
    try:
        env = _environment(workspace, home)
        if setup_command.strip():
            setup = _filled(setup_command, [], report)
            out, err, timed_out, _ = _shell(setup, workspace, env, home, timeout_s, sandbox, network=setup_network)
            log = _tail(out + err)
            if timed_out:
                return TestRun(log=log, problem=f"set-up timed out after {timeout_s:.0f} s", kind="timeout")
            if _exit_status(out) != 0:
                return TestRun(log=log, problem=f"set-up failed: {_last_line(out + err)}", kind="setup")
        report.unlink(missing_ok=True)  # only the test command's own report counts
        out, err, timed_out, _ = _shell(_filled(test_command, tests, report), workspace, env, home, timeout_s, sandbox)
        reported = "{report}" in test_command
        outcomes = junit_outcomes(report) if reported else pytest_outcomes(out)
    finally:
        remove_scratch(home)
    log = _tail(out + err)
    if timed_out:
        return TestRun(outcomes, log, f"tests timed out after {timeout_s:.0f} s", "timeout", reported=reported)
    return TestRun(outcomes, log, exit_status=_exit_status(out), reported=reported)


def junit_outcomes(report: Path | str) -> dict[str, str]:
    """node id -> PASSED | FAILED | ERROR | SKIPPED from pytest's junit XML (junit_family=xunit1, which names
    each case's file), {} when there is no readable report. An xfail counts as FAILED, as in pytest_outcomes;
    a file that cannot be imported is one ERROR under its path; a test listed twice keeps its worst outcome."""
    try:
        root = ET.parse(report).getroot()
    except (OSError, ET.ParseError):
        return {}
    outcomes: dict[str, str] = {}
    rank = {"PASSED": 0, "SKIPPED": 1, "FAILED": 2, "ERROR": 3}
    for case in root.iter("testcase"):
        node = _node_id(case.get("file") or "", case.get("classname") or "", case.get("name") or "")
        kinds = {child.tag: child.get("type") or "" for child in case}
        outcome = ("ERROR" if "error" in kinds else "FAILED" if "failure" in kinds
                   else "FAILED" if kinds.get("skipped") == "pytest.xfail" else "SKIPPED" if "skipped" in kinds
                   else "PASSED")
        if rank[outcome] >= rank[outcomes.get(node, "PASSED")]:
            outcomes[node] = outcome
    return outcomes


def _node_id(file: str, classname: str, name: str) -> str:
    """pytest's node id of a junit case (tests/test_a.py, tests.test_a.TestX, test_y ->
    tests/test_a.py::TestX::test_y); a collection error has no classname and names the module: its file's path."""
    if not classname:
        return file or name.replace(".", "/") + ".py"
    module = file[:-3].replace("/", ".") if file.endswith(".py") else ""
    if not module or not (classname == module or classname.startswith(module + ".")):
        module, file = classname, classname.replace(".", "/") + ".py"  # no file attribute: a module-level test
    classes = classname[len(module) + 1:].split(".") if classname != module else []
    return "::".join([file, *classes, name])


def _environment(workspace: Path, home: Path) -> dict[str, str]:
    paths = [str(workspace)] + ([str(workspace / "src")] if (workspace / "src").is_dir() else [])
    venv_bin = str(Path(sys.executable).parent)
    env = safe_environment({"PYTHONPATH": ":".join(paths), "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(home)})
    env["PATH"] = venv_bin + ":" + env.get("PATH", "/usr/bin:/bin")  # `python` is this environment's, with pytest
    return env


def _filled(command: str, tests: Sequence[str], report: Path) -> str:
    return (command.replace("{python}", shlex.quote(sys.executable)).replace("{report}", shlex.quote(str(report)))
            .replace("{tests}", " ".join(shlex.quote(t) for t in tests)))


def _shell(command: str, workspace: Path, env: dict[str, str], home: Path, timeout_s: float,
           sandbox: str | None, network: bool = False) -> tuple[str, str, bool, float]:
    # the exit status goes last on stdout: run_cli reports output, not the status
    script = f"{command}\nstatus=$?\necho\necho \"__exit_status__=$status\""
    return run_cli(["bash", "-c", script], workspace, env, "", timeout_s, _live, _live_lock, home=home,
                   sandbox=sandbox, network=network)


def _exit_status(out: str) -> int | None:
    """The status _shell's script wrote last on stdout (None when it never got there)."""
    found = re.findall(r"__exit_status__=(\d+)", out)
    return int(found[-1]) if found else None


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip() and "__exit_status__" not in line]
    return lines[-1][:300] if lines else "(no output)"


def _tail(text: str) -> str:
    text = re.sub(r"\n?__exit_status__=\d+\n?", "\n", text)
    return text if len(text) <= LOG_TAIL_CHARS else "[... earlier output cut ...]\n" + text[-LOG_TAIL_CHARS:]


__all__ = ["run_repo_tests", "pytest_outcomes", "junit_outcomes", "is_test_file", "runnable_test_files", "TestRun",
           "DEFAULT_TEST_COMMAND", "DEFAULT_SETUP_COMMAND", "GRADING_COMMAND"]  # documented in CODE_APPENDIX.md
