"""A repository's own tests, run in the sandbox, read back one outcome per test id: the one way tests run
(grading every local task source, and mining).

    run = run_repo_tests(workspace, ["tests/test_money.py"])           # the harness's pytest
    run.tests     # {"tests/test_money.py::test_rounding": "PASSED", ...}
    run.problem   # "" | "set-up failed: ..." | "tests timed out after 300 s" | "the test report: refused ..."
    run.exit_status, run.reported    # 0, True: pytest's exit status; outcomes from its junit report

The set-up command (e.g. `{python} -m pip install --target .deps -r requirements.txt`) is a shell command run
in the workspace, in the sandbox (helpers.isolation.sandbox): the repository's code is not ours, and its tests may
do anything. Grading and mining run it (run_setup) before the code under test is applied, so that it runs the
repository's own code, never a patch's, and nothing it writes can be the patch's doing. `{python}` in it is this environment's interpreter. The tests then run with the harness's own
interpreter and pytest, started so that nothing in the work tree can change how pytest starts or reports
(run_pytest_args and BOOTSTRAP, below): no start-up hook (sitecustomize, usercustomize, *.pth) loads, no module
of the work tree stands in for the standard library, pytest, its plugins or any package of this environment,
no plugin autoloads, and the repository's pytest configuration is not read: only the copy recorded when the
task was mined (`test_config`: {"path": "pyproject.toml", "text": ...}), written over whatever the work tree
holds at that name just before pytest starts. The workspace and its `src/` folder are on sys.path after the
harness's paths. Test ids are pytest's node ids, read from the junit report pytest writes outside the workspace
(helpers.families.coding.pytest_results);
a file that fails to import is one ERROR under the file's own path.

What the host takes from a run, it takes from no channel the code under test shares (docs/security.md): the exit
status is the wait status of the process the host started (bwrap's, which is pytest's own; no shell wrapper prints
it), never text on the output; the report is read back through helpers.isolation.untrusted.read_untrusted (bounded,
no link followed, no FIFO or device opened: one in its place is a named problem, never a hang or a host read);
`protect` names paths of the work tree bound read-only into the sandbox (a grading's hidden tests, its recorded
configuration): the code under test can neither rewrite nor replace them before it runs pytest again. Everything
inside pytest's own process (the report's content, the status it exits with) can still be forged from there: the
grading's tripwires (helpers.families.coding.tripwires) catch that.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import sysconfig
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Sequence

from helpers.core import config
from helpers.core.names import check_inside
from helpers.isolation.processes import remove_scratch, run_cli, safe_environment, scratch_dir
from helpers.isolation.untrusted import RefusedOutput
from helpers.isolation.sandbox import SandboxPolicy
from helpers.families.coding.pytest_results import junit_outcomes

DEFAULT_SETUP_COMMAND = ""
# pytest's configuration file names (pytest 9): the only names a mined task may record its configuration under.
PYTEST_CONFIG_NAMES = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)
# The harness's pytest run, started by `python -I -S -B -c BOOTSTRAP workspace site-paths pytest-args...`:
# -I ignores every PYTHON* variable and the user's site folder and keeps the working directory off sys.path;
# -S skips the site module, so no sitecustomize, usercustomize or *.pth runs (wherever the work tree or a
# set-up command put one). The bootstrap then builds sys.path itself, the harness's paths (the standard
# library, this environment's packages: pytest, its plugins and dependencies) first, and a finder at the head of
# sys.meta_path keeps it so for every top-level module those paths hold, whatever pytest's import mode, a
# `pythonpath` setting or the tests later put in front: a pytest.py, a decimal.py or a pluggy/ in the work tree
# is never imported in their place. A package of the work tree named like one of this environment's loses to it.
BOOTSTRAP = r"""
import importlib.machinery, os, sys
workspace, harness = sys.argv[1], [p for p in sys.argv[2].split(os.pathsep) if p]
trusted = [p for p in sys.path if p] + harness
class HarnessFirst:
    @staticmethod
    def find_spec(name, path=None, target=None):
        return importlib.machinery.PathFinder.find_spec(name, trusted) if path is None else None
sys.meta_path.insert(0, HarnessFirst)
sys.path[:] = trusted + [workspace, os.path.join(workspace, "src")]
for name in [n for n in os.environ if n.startswith("PYTEST_")]:
    del os.environ[name]
os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
import pytest
sys.exit(pytest.main(sys.argv[3:]))
"""
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
    kind: str = ""  # "" | "setup" | "timeout" | "report" (a link, FIFO or device where the report should be)
    exit_status: int | None = None  # the test process's, as the host saw it end; None when it did not finish
    reported: bool = False  # the outcomes come from the junit report at {report}, not from the output


def is_test_file(path: str) -> bool:
    """A Python test file by pytest's default names (test_*.py, *_test.py), conftest.py, or any .py file
    under a tests/ (test/, testing/) folder."""
    parts = PurePosixPath(path)
    if parts.suffix != ".py":
        return False
    name = parts.name
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(part in TEST_DIRS for part in parts.parts[:-1])
    )


def runnable_test_files(paths: Sequence[str]) -> list[str]:
    """The test files pytest collects tests from (conftest.py and helpers under tests/ are not run alone)."""
    return [
        p
        for p in paths
        if is_test_file(p) and (PurePosixPath(p).name.startswith("test_") or PurePosixPath(p).name.endswith("_test.py"))
    ]


def run_repo_tests(
    workspace: Path | str,
    tests: Sequence[str],
    *,
    setup_command: str = DEFAULT_SETUP_COMMAND,
    test_config: dict[str, str] | None = None,
    timeout_s: float = config.EVAL_TIMEOUT_S,
    sandbox: SandboxPolicy = "required",
    setup_network: bool = config.SETUP_NETWORK,
    protect: Sequence[str] = (),
) -> TestRun:
    """Run `setup_command` (run_setup), then the harness's pytest on `tests` (files or node ids) in `workspace`,
    in the sandbox (`sandbox`: "required", "if-available" or None, as helpers.isolation.sandboxed_command.relayed), each
    within `timeout_s`; the workspace keeps whatever they wrote (so a second run sees the first one's files).
    Whatever they start ends with them. The tests have no network. `test_config` (see check_test_config) is the
    pytest configuration recorded for the task, None for none: the work tree's own is never read. A bad
    `test_config` raises ValueError before anything runs. Grading and mining call run_setup themselves, before
    the code under test is in the tree, and this with no set-up command. `protect`: paths relative to
    `workspace` the tests see read-only in the sandbox (a grading's hidden tests' folders); the recorded
    configuration is always among them. The exit status is the process's own; a report that is a link or a
    special file is `problem` (kind "report"), never read."""
    workspace = Path(workspace)
    config_name = check_test_config(test_config)
    if setup_command.strip():
        setup = run_setup(workspace, setup_command, timeout_s=timeout_s, sandbox=sandbox, setup_network=setup_network)
        if setup.problem:
            return setup
    home = scratch_dir("repo-tests-home")
    report = home / "report.xml"  # outside the workspace: the tree the code under test ships
    try:
        ini = _place_config(workspace, config_name, test_config) if config_name and test_config else "/dev/null"
        read_only = [
            workspace / path
            for path in dict.fromkeys([*protect, *([config_name] if config_name else [])])
            if (workspace / path).exists() and not (workspace / path).is_symlink()
        ]
        out, err, timed_out, status = _run(
            run_pytest_args(workspace, tests, report, ini),
            workspace,
            _environment(workspace, home),
            home,
            timeout_s,
            sandbox,
            read_only,
        )
        try:
            outcomes, refusal = junit_outcomes(report, home), ""
        except RefusedOutput as error:
            outcomes, refusal = {}, f"the test report: {error}"
    finally:
        remove_scratch(home)
    log = _tail(out + err)
    if timed_out:
        return TestRun(outcomes, log, f"tests timed out after {timeout_s:.0f} s", "timeout", reported=True)
    if refusal:
        return TestRun({}, log, refusal, "report", exit_status=status)
    return TestRun(outcomes, log, exit_status=status, reported=True)


def run_setup(
    workspace: Path | str,
    setup_command: str,
    *,
    timeout_s: float = config.EVAL_TIMEOUT_S,
    sandbox: SandboxPolicy = "required",
    setup_network: bool = config.SETUP_NETWORK,
) -> TestRun:
    """Run a task's set-up command in `workspace`, in the sandbox within `timeout_s` (`{python}` in it: this
    environment's interpreter; the workspace and its `src/` on PYTHONPATH), with no network but for
    `setup_network=True`. A TestRun with no tests: `problem` "" when it succeeded (or there is none), else why
    not, with kind "setup" or "timeout". Call it before the code under test is in the tree: what the set-up runs
    (a setup.py, a Makefile) is then the repository's, and whatever it writes (a conftest.py, a test file) is
    written before the patch, never by it."""
    if not setup_command.strip():
        return TestRun()
    workspace = Path(workspace)
    home = scratch_dir("repo-setup-home")
    try:
        command = _filled(setup_command, [], home / "report.xml")
        out, err, timed_out, status = _run(
            ["bash", "-c", command],
            workspace,
            _environment(workspace, home),
            home,
            timeout_s,
            sandbox,
            network=setup_network,
        )
    finally:
        remove_scratch(home)
    log = _tail(out + err)
    if timed_out:
        return TestRun(log=log, problem=f"set-up timed out after {timeout_s:.0f} s", kind="timeout")
    if status != 0:
        return TestRun(log=log, problem=f"set-up failed: {_last_line(out + err)}", kind="setup")
    return TestRun(log=log)


def run_pytest_args(
    workspace: Path | str, tests: Sequence[str], report: Path | str, ini: str = "/dev/null"
) -> list[str]:
    """The command line of the harness's pytest run (see BOOTSTRAP): this environment's interpreter, isolated,
    on `tests` in `workspace`, its junit report at `report`, `ini` its only configuration file (/dev/null: none;
    --rootdir and --confcutdir keep every conftest.py above the workspace out). The named tests decide what runs:
    an -x, -k or -m in the configuration's addopts neither stops the run at its first failure nor deselects a
    named test (a grading's tripwires among them)."""
    workspace = str(workspace)
    harness = os.pathsep.join(dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib")))
    return [
        sys.executable,
        "-I",
        "-S",
        "-B",
        "-c",
        BOOTSTRAP,
        workspace,
        harness,
        "-c",
        ini,
        "--rootdir",
        workspace,
        "--confcutdir",
        workspace,
        "-p",
        "no:cacheprovider",
        "-q",
        "-rA",
        "--tb=short",
        "--color=no",
        "--continue-on-collection-errors",
        f"--junitxml={report}",
        "-o",
        "junit_family=xunit1",
        "--maxfail=0",
        "-k",
        "",
        "-m",
        "",
        "--",
        *tests,
    ]


def protected_paths(paths: Sequence[str]) -> list[str]:
    """What `run_repo_tests(protect=...)` is given for hidden tests at `paths` (files or node ids, relative to the
    workspace): the top-level entry each lies under (`tests` for tests/unit/test_a.py::test_x, the file itself
    at the root). A folder bound read-only at the top is a mount point: code under test can neither write in it
    nor rename it, or a folder above it, to put other tests in its place."""
    tops = [PurePosixPath(path.split("::", 1)[0]).parts for path in paths]
    return list(dict.fromkeys(parts[0] for parts in tops if parts and parts[0] not in ("..", "/")))


def check_test_config(test_config: dict[str, str] | None) -> str:
    """The file name of a task's recorded pytest configuration ({"path": one of PYTEST_CONFIG_NAMES, at the
    repository's root; "text": its content}), "" for None (or a missing value read from a table); raises
    ValueError naming what is wrong with any other value."""
    if test_config is None or (isinstance(test_config, float) and test_config != test_config):
        return ""
    if (
        not isinstance(test_config, dict)
        or test_config.get("path") not in PYTEST_CONFIG_NAMES
        or not isinstance(test_config.get("text"), str)
    ):
        raise ValueError(
            f"test_config must be {{'path': one of {', '.join(PYTEST_CONFIG_NAMES)}, 'text': its "
            f"content}}, not {str(test_config)[:200]!r}."
        )
    return test_config["path"]


def _place_config(workspace: Path, name: str, test_config: dict[str, str]) -> str:
    """Write the recorded configuration at `name` in the workspace's root, over whatever the patch or the set-up
    left there (a file, a link, a folder: removed, never followed), and return its path. pytest reads it before
    any code of the work tree runs; at the root, its relative paths (pythonpath) count from where they did."""
    target = workspace / name
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(check_inside(target, workspace))
    elif target.exists() or target.is_symlink():
        target.unlink()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(test_config["text"])
    return str(target)


def _environment(workspace: Path, home: Path) -> dict[str, str]:
    paths = [str(workspace)] + ([str(workspace / "src")] if (workspace / "src").is_dir() else [])
    venv_bin = str(Path(sys.executable).parent)
    env = safe_environment({"PYTHONPATH": ":".join(paths), "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(home)})
    env["PATH"] = venv_bin + ":" + env.get("PATH", "/usr/bin:/bin")  # `python` is this environment's, with pytest
    return env


def _filled(command: str, tests: Sequence[str], report: Path) -> str:
    return (
        command.replace("{python}", shlex.quote(sys.executable))
        .replace("{report}", shlex.quote(str(report)))
        .replace("{tests}", " ".join(shlex.quote(t) for t in tests))
    )


def _run(
    args: list[str],
    workspace: Path,
    env: dict[str, str],
    home: Path,
    timeout_s: float,
    sandbox: SandboxPolicy,
    read_only: Sequence[Path] = (),
    network: bool = False,
) -> tuple[str, str, bool, int | None]:
    """(stdout, stderr, timed_out, exit status) of `args` run in the sandbox; the status is the one the host saw
    the process it started end with (bwrap passes its command's on), not anything the run printed."""
    run = run_cli(
        args,
        workspace,
        env,
        "",
        timeout_s,
        _live,
        _live_lock,
        home=home,
        read_only=read_only,
        sandbox=sandbox,
        network=network,
    )
    return run.out, run.err, run.timed_out, None if run.timed_out else run.exit_status


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


def _tail(text: str) -> str:
    return text if len(text) <= LOG_TAIL_CHARS else "[... earlier output cut ...]\n" + text[-LOG_TAIL_CHARS:]


__all__ = [
    "run_repo_tests",
    "run_setup",
    "protected_paths",
    "run_pytest_args",
    "check_test_config",
    "is_test_file",
    "runnable_test_files",
    "TestRun",
    "DEFAULT_SETUP_COMMAND",
    "PYTEST_CONFIG_NAMES",
    "BOOTSTRAP",
]  # documented in CODE_APPENDIX.md
