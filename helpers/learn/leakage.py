"""The optimizer's leakage guard: names that belong to one training task alone, and the rules that mention them.

    leaks = leaky_identifiers(train_df)      # name -> the one task it belongs to
    leaks_in("Call parse_frobnicator first.", leaks)

A rule that names a task's id, or a file, test or identifier found in only one task's patches, learns that
task rather than the codebase: the optimizer rejects (or flags) it. Separate from helpers.learn.optimizer
because what counts as task-specific is a question of the tasks' text, not of how edits are asked for.
"""

from __future__ import annotations

import builtins
import keyword
import re
import sys
from collections import defaultdict

import pandas as pd

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_COMMON = set(keyword.kwlist) | set(dir(builtins)) | {"self", "cls", "None", "True", "False"}


def _patch_identifiers(patch: str) -> set[str]:
    names = set()
    for line in (patch or "").splitlines():
        if line.startswith("diff --git "):
            for path in line.split()[2:]:
                path = path[2:] if path[:2] in ("a/", "b/") else path
                names.update({path, path.rsplit("/", 1)[-1]})
        elif line[:1] in "+-" and not line.startswith(("+++", "---")):
            names.update(_IDENTIFIER.findall(line[1:]))
    return names


def _specific(name: str) -> bool:
    """Identifier-shaped enough to be a task's own (not an English word or a Python builtin)."""
    if len(name) < 4 or name in _COMMON or name.startswith("__"):
        return False
    if "." in name and name.split(".")[0] in sys.stdlib_module_names:  # logging.getLogger: common API
        return False
    return "_" in name or "." in name or "/" in name or any(c.isupper() for c in name[1:])


def leaky_identifiers(dataset: pd.DataFrame) -> dict[str, set[str]]:
    """name -> the one training task it belongs to, for names found in only one task: instance ids,
    files, test names and identifiers of its gold and test patches."""
    owners: dict[str, set[str]] = defaultdict(set)
    for row in dataset.to_dict("records"):
        task = str(row["instance_id"])
        names = {task}
        for column in ("ground_truth_patch", "patch", "test_patch"):
            names |= {n for n in _patch_identifiers(str(row.get(column) or "")) if _specific(n)}
        for column in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            tests = row.get(column)
            for test in tests if isinstance(tests, list) else []:
                names.update({test, test.split("::")[-1].split("[")[0], test.split(" ")[0]})
        for name in names:
            owners[name].add(task)
    return {name: tasks for name, tasks in owners.items() if len(tasks) == 1}


def leaks_in(text: str, leaks: dict[str, set[str]]) -> dict[str, set[str]]:
    """The task-specific names `text` mentions (whole words only)."""
    found = {}
    for name, tasks in leaks.items():
        if name in text and re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text):
            found[name] = tasks
    return found


__all__ = ["leaky_identifiers", "leaks_in"]  # the public API, documented in CODE_APPENDIX.md
