"""What pytest reported, read back as one outcome per test id: its junit XML report (the one the host trusts as
far as the tripwires and the exit status agree with it, read through helpers.isolation.untrusted) and its -rA
short summary.

Separate from helpers.families.coding.repo_tests (which runs the tests in the sandbox): this part reads text and
a report file, and runs nothing.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from helpers.isolation.untrusted import read_untrusted

SUMMARY_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S.*?)(?: - .*)?$")
OUTCOMES = {"PASSED": "PASSED", "XPASS": "PASSED", "FAILED": "FAILED", "XFAIL": "FAILED", "ERROR": "ERROR"}
MAX_REPORT_BYTES = 16 * 2**20  # the most of a junit report the host reads (thousands of tests fit)


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


def junit_outcomes(report: Path | str, root: Path | str | None = None) -> dict[str, str]:
    """node id -> PASSED | FAILED | ERROR | SKIPPED from pytest's junit XML (junit_family=xunit1, which names
    each case's file), {} when there is no readable report. An xfail counts as FAILED, as in pytest_outcomes;
    a file that cannot be imported is one ERROR under its path; a test listed twice keeps its worst outcome.
    With `root` (a folder above the report), the report is a file the code under test could have written: it is
    read through helpers.isolation.untrusted.read_untrusted (at most MAX_REPORT_BYTES, no link followed on the way,
    never a FIFO or a device), and a link or special file in its place is a RefusedOutput naming it."""
    try:
        data = read_untrusted(report, root, MAX_REPORT_BYTES) if root is not None else Path(report).read_bytes()
        tree = ET.fromstring(data)
    except (OSError, ET.ParseError):
        return {}
    outcomes: dict[str, str] = {}
    rank = {"PASSED": 0, "SKIPPED": 1, "FAILED": 2, "ERROR": 3}
    for case in tree.iter("testcase"):
        node = _node_id(case.get("file") or "", case.get("classname") or "", case.get("name") or "")
        kinds = {child.tag: child.get("type") or "" for child in case}
        outcome = (
            "ERROR"
            if "error" in kinds
            else "FAILED"
            if "failure" in kinds
            else "FAILED"
            if kinds.get("skipped") == "pytest.xfail"
            else "SKIPPED"
            if "skipped" in kinds
            else "PASSED"
        )
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
    classes = classname[len(module) + 1 :].split(".") if classname != module else []
    return "::".join([file, *classes, name])


__all__ = ["junit_outcomes", "pytest_outcomes", "MAX_REPORT_BYTES"]  # documented in CODE_APPENDIX.md
