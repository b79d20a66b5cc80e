"""The house suite's task files: read and checked before any build, and the same tasks the suite's Python modules
held before they became data files (snapshots made from those modules, at commit 068048f, in tests/fixtures)."""

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from helpers.families.coding.house_suite import build, load_house_suite
from helpers.families.coding.house_suite.task_files import TASKS, TaskFileError, libraries

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "house_suite"


def as_snapshot(library):
    """A Library in the snapshot's shape: what the old modules' CHECKS, TASKS and pass-to-pass tests held."""
    tasks = []
    for task in library.tasks:
        fields = dataclasses.asdict(task)
        del fields["number"]
        fields["conventions"] = list(task.conventions)
        for key in ("gold", "naive"):
            fields[key] = list(fields[key])
        fields["undo"] = {c: e if isinstance(e, str) else list(e) for c, e in task.undo.items()}
        tasks.append(fields)
    return {
        "folder": library.folder,
        "pass_to_pass": list(library.pass_to_pass),
        "checks": library.checks,
        "tasks": tasks,
    }


def test_the_task_files_hold_exactly_the_tasks_the_python_modules_held():
    before = json.loads((FIXTURES / "tasks_before_data_files.json").read_text())
    now = {repo: as_snapshot(library) for repo, library in libraries().items()}
    assert list(now) == ["house/ledger", "house/todo", "house/rows"]  # the rows' order
    assert sorted(now) == sorted(before)
    for repo in before:
        assert now[repo]["checks"] == before[repo]["checks"]
        assert [t["slug"] for t in now[repo]["tasks"]] == [t["slug"] for t in before[repo]["tasks"]]
        assert now[repo] == before[repo]


def test_the_built_rows_ids_patches_and_tests_are_the_ones_the_python_modules_built():
    before = json.loads((FIXTURES / "rows_before_data_files.json").read_text())
    rows = load_house_suite().drop(columns="repo_path").to_dict("records")
    now = {row["instance_id"]: hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest() for row in rows}
    assert list(now) == list(before)
    assert now == before


def test_the_shared_checks_are_written_into_every_library_that_names_them():
    for library in libraries().values():
        assert "# house check:" not in library.checks and "$" not in library.checks
        assert "def check_changelog" in library.checks and "def check_documented" in library.checks
        assert f"raises_{library.folder}_error" in library.checks
    assert libraries()["house/todo"].checks.count("except TodoError:") == 1


def corrupt(tmp_path, path, change):
    root = tmp_path / "tasks"
    shutil.copytree(TASKS, root)
    target = root / path
    change(target)
    return root, target


def replace(old, new):
    def change(path):
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))

    return change


BROKEN = {
    "not toml": ("ledger/01-overdraft.toml", replace('slug = "overdraft"', 'slug = "overdraft')),
    "a key missing": ("ledger/01-overdraft.toml", replace('created_at = "2026-01-05T09:12:00Z"\n', "")),
    "an unknown key": (
        "todo/02-priority-range.toml",
        replace('slug = "priority-range"', 'slug = "priority-range"\nhint = "x"'),
    ),
    "an unknown convention": ("ledger/01-overdraft.toml", replace('"changelog"]', '"changelogs"]')),
    "a convention with no undo": (
        "ledger/01-overdraft.toml",
        replace('conventions = ["errors", "changelog"]', 'conventions = ["errors", "changelog", "logging"]'),
    ),
    "an edit out of the repository": (
        "rows/03-select-unknown.toml",
        replace('path = "rows/transforms.py"', 'path = "../transforms.py"'),
    ),
    "an edit with no replace": ("rows/03-select-unknown.toml", replace("replace = ", "replaced = ")),
    "a slug not the file's": ("todo/02-priority-range.toml", replace('slug = "priority-range"', 'slug = "priorities"')),
    "a bad timestamp": ("todo/02-priority-range.toml", replace('created_at = "', 'created_at = "soon ')),
    "a gap in the numbers": ("todo/02-priority-range.toml", lambda p: p.rename(p.with_name("17-priority-range.toml"))),
    "a misnamed file": ("todo/02-priority-range.toml", lambda p: p.rename(p.with_name("2-priority-range.toml"))),
    "an unknown shared check": ("rows/library.toml", replace("# house check: logging", "# house check: logs")),
    "a library left out": ("suite.toml", replace('"todo", ', "")),
    "no list of libraries": ("suite.toml", replace("libraries = ", "library = ")),
    "an empty list of libraries": ("suite.toml", replace('["ledger", "todo", "rows"]', "[]")),
    "a file name with no number": (
        "todo/02-priority-range.toml",
        lambda p: p.rename(p.with_name("priority-range.toml")),
    ),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_malformed_task_file_is_one_error_naming_the_file(tmp_path, name):
    path, change = BROKEN[name]
    root, target = corrupt(tmp_path, path, change)
    with pytest.raises(TaskFileError) as error:
        libraries(root)
    named = str(error.value).split(": ", 1)[0].removeprefix("house suite task file ")
    assert Path(named) in (target, target.parent, root / "suite.toml", *target.parent.glob("*.toml")), str(error.value)


def test_the_build_stops_on_a_malformed_task_file_before_any_work(tmp_path, monkeypatch):
    root, target = corrupt(tmp_path, "rows/05-fill-missing.toml", replace('slug = "', 'slug = "x'))
    monkeypatch.setattr("helpers.families.coding.house_suite.task_files.TASKS", root)
    with pytest.raises(TaskFileError, match="05-fill-missing.toml"):
        build.build(tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_a_changed_task_file_names_a_new_build(tmp_path, monkeypatch):
    root, target = corrupt(tmp_path, "todo/03-empty-title.toml", lambda path: None)
    monkeypatch.setattr(build, "TASKS", root)
    before = build.source_hash()
    replace("Empty titles are accepted", "Blank titles are accepted")(target)
    assert build.source_hash() != before  # a build made from the old files is not reused
