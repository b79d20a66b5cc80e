"""Read the house suite's task files (tasks/), checking every one before any build starts.

tasks/suite.toml lists the libraries in the order of the suite's rows; tasks/<library>/library.toml holds the
library's repository name, base error class, the tests that pass before any task and the first lines of its hidden
test files (its checks); tasks/checks.toml the checks two or more libraries share, one per convention, named in a
library's checks by a line `# house check: <convention>`. tasks/<library>/NN-<slug>.toml is task NN (its instance
id is house__<library>-00NN): the issue, the hidden tests, the gold and naive fixes as edits and, per convention,
the edits that undo it in the gold fix.

An edit is {"path", "find", "replace"} (`find` must occur once) or {"path", "create"}. A malformed file is one
TaskFileError naming the file and what is wrong with it.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from string import Template
from typing import Any, NoReturn, TypeGuard

from helpers.families.coding.house_suite import CONVENTIONS

TASKS = Path(__file__).resolve().parent / "tasks"
# An undo that is this string, not edits: the gold fix without its changelog entry.
NO_CHANGELOG = "drop the changelog entry"
_TASK_FILE = re.compile(r"^(\d{2})-([a-z0-9]+(?:-[a-z0-9]+)*)\.toml$")
_CHECK_LINE = re.compile(r"^# house check: (\w+)\n", re.M)
_TASK_KEYS = {"slug", "created_at", "conventions", "problem_statement", "test_name", "tests", "gold", "naive", "undo"}
_LIBRARY_KEYS = {"repo", "base_error", "pass_to_pass", "checks"}

Edit = dict[str, str]


class TaskFileError(ValueError):
    """A house suite task file that cannot be read as one: its path and what is wrong."""


@dataclass(frozen=True)
class HouseTask:
    number: int  # its place in the library, from the file name: the instance id's number
    slug: str
    created_at: str
    conventions: tuple[str, ...]  # ids of CONVENTIONS its hidden tests check
    problem_statement: str
    test_name: str  # the hidden tests are tests/test_<test_name>.py
    tests: str  # the hidden tests' own part, after the library's checks
    gold: tuple[Edit, ...]
    naive: tuple[Edit, ...]
    undo: dict[str, tuple[Edit, ...] | str]  # convention -> edits after the gold ones, or NO_CHANGELOG


@dataclass(frozen=True)
class Library:
    repo: str  # "house/ledger"
    folder: str  # its source under repos/ and its task files under tasks/
    pass_to_pass: tuple[str, ...]
    checks: str  # the first lines of every hidden test file, shared checks written in
    tasks: tuple[HouseTask, ...]


def libraries(root: Path | None = None) -> dict[str, Library]:
    """repo name -> its Library, read and checked from the task files under `root` (default: the shipped ones),
    once per process per folder."""
    return _read(Path(root or TASKS))


@functools.cache
def _read(root: Path) -> dict[str, Library]:
    shared = _read_toml(root / "checks.toml")
    for name, text in shared.items():
        _require(
            root / "checks.toml",
            name in CONVENTIONS and isinstance(text, str) and text.strip(),
            f"{name!r} must be a convention's id with the text of its check",
        )
    order = _read_toml(root / "suite.toml").get("libraries")
    if not (_strings(order) and order):
        _fail(root / "suite.toml", "libraries is the list of the suite's library folders")
    folders = {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    _require(
        root / "suite.toml",
        set(order) == folders and len(order) == len(folders),
        f"libraries must list each library folder once: {sorted(folders)}",
    )
    return {(library := _library(root / name, shared)).repo: library for name in order}


def _library(folder: Path, shared: dict[str, str]) -> Library:
    path = folder / "library.toml"
    data = _read_toml(path)
    _require(path, set(data) == _LIBRARY_KEYS, f"needs exactly the keys {sorted(_LIBRARY_KEYS)}, has {sorted(data)}")
    _require(
        path,
        all(isinstance(data[k], str) for k in ("repo", "base_error", "checks")),
        "repo, base_error and checks are strings",
    )
    _require(path, data["repo"] == f"house/{folder.name}", f"repo must be 'house/{folder.name}', not {data['repo']!r}")
    _require(path, _strings(data["pass_to_pass"]), "pass_to_pass is a list of test ids")
    unknown = [name for name in _CHECK_LINE.findall(data["checks"]) if name not in shared]
    _require(path, not unknown, f"names checks that tasks/checks.toml does not hold: {unknown}")
    names = {"package": folder.name, "Error": data["base_error"]}
    checks = _CHECK_LINE.sub(lambda m: Template(shared[m.group(1)]).substitute(names), data["checks"])
    files = sorted(folder.glob("*.toml"))
    tasks = tuple(_task(p) for p in files if p.name != "library.toml")
    _require(
        folder,
        [t.number for t in tasks] == list(range(1, len(tasks) + 1)) and tasks,
        "task files must be numbered 01, 02, ... with no gap",
    )
    return Library(data["repo"], folder.name, tuple(data["pass_to_pass"]), checks, tasks)


def _task(path: Path) -> HouseTask:
    name = _TASK_FILE.match(path.name)
    if not name:
        _fail(path, "a task file is named NN-<slug>.toml (lower-case slug with hyphens)")
    data = _read_toml(path)
    _require(path, set(data) == _TASK_KEYS, f"needs exactly the keys {sorted(_TASK_KEYS)}, has {sorted(data)}")
    _require(path, data["slug"] == name.group(2), f"slug {data['slug']!r} is not the file's ({name.group(2)!r})")
    _require(
        path,
        all(isinstance(data[k], str) and data[k].strip() for k in ("problem_statement", "tests")),
        "problem_statement and tests are non-empty strings",
    )
    _require(
        path,
        isinstance(data["test_name"], str) and re.fullmatch(r"\w+", data["test_name"]),
        "test_name is a word (the hidden tests go to tests/test_<test_name>.py)",
    )
    _require(
        path,
        isinstance(data["created_at"], str) and _is_timestamp(data["created_at"]),
        f"created_at is an ISO 8601 time, not {data['created_at']!r}",
    )
    conventions = data["conventions"]
    _require(
        path,
        _strings(conventions) and conventions and len(set(conventions)) == len(conventions),
        "conventions is a list of distinct convention ids",
    )
    unknown = [c for c in conventions if c not in CONVENTIONS]
    _require(path, not unknown, f"unknown conventions {unknown}: they are {sorted(CONVENTIONS)}")
    undo = data["undo"]
    _require(
        path, isinstance(undo, dict) and set(undo) == set(conventions), "undo has one entry per convention of the task"
    )
    for convention, edits in undo.items():
        _require(
            path,
            not isinstance(edits, str) or (edits == NO_CHANGELOG and convention == "changelog"),
            f"undo.{convention}: the only undo that is not edits is changelog = {NO_CHANGELOG!r}",
        )
    return HouseTask(
        int(name.group(1)),
        data["slug"],
        data["created_at"],
        tuple(conventions),
        data["problem_statement"],
        data["test_name"],
        data["tests"],
        _edits(path, "gold", data["gold"]),
        _edits(path, "naive", data["naive"]),
        {c: e if isinstance(e, str) else _edits(path, f"undo.{c}", e) for c, e in undo.items()},
    )


def _edits(path: Path, key: str, edits: Any) -> tuple[Edit, ...]:
    _require(path, isinstance(edits, list) and edits, f"{key} is a non-empty list of edits")
    for n, edit in enumerate(edits, 1):
        where = f"{key} edit {n}"
        _require(
            path,
            isinstance(edit, dict) and set(edit) in ({"path", "find", "replace"}, {"path", "create"}),
            f"{where} has path, find and replace, or path and create",
        )
        _require(path, all(isinstance(v, str) for v in edit.values()), f"{where}: its values are strings")
        target = PurePosixPath(edit["path"])
        _require(
            path,
            edit["path"] and not target.is_absolute() and ".." not in target.parts,
            f"{where}: {edit['path']!r} is not a path inside the repository",
        )
        _require(path, "find" not in edit or edit["find"], f"{where}: find is empty")
    return tuple(edits)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise TaskFileError(f"house suite task file {path}: {error}") from None


def _require(path: Path, ok: Any, what: str) -> None:
    if not ok:
        _fail(path, what)


def _fail(path: Path, what: str) -> NoReturn:
    raise TaskFileError(f"house suite task file {path}: {what}")


def _strings(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_timestamp(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True
