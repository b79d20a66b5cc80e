"""Turn the shipped sources and task edits into git repositories, patches and task rows.

The build is deterministic (fixed identity and dates), so `base_commit` is the same hash on every
machine. It goes to <cache>/house_suite/<hash of the sources>/, built in a temporary folder and renamed
into place, so concurrent builders never see half a build and a changed source gets a fresh build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from helpers.core import config
from helpers.families.coding.git import git
from helpers.families.coding.house_suite.task_files import TASKS, HouseTask, libraries

SOURCE = Path(__file__).resolve().parent / "repos"
COMMIT_DATE = "2026-01-01T00:00:00+00:00"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.egg-info")
VERSION = "1.0"


def source_hash() -> str:
    digest = hashlib.sha256()
    files = [(str(p.relative_to(SOURCE.parent)), p) for p in [*SOURCE.rglob("*"), *Path(__file__).parent.glob("*.py")]]
    files += [(f"tasks/{p.relative_to(TASKS)}", p) for p in TASKS.rglob("*")]  # the task files, wherever they are
    for name, path in sorted(files):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _commit_all(repo: Path, message: str) -> str:
    dates = {"GIT_AUTHOR_DATE": COMMIT_DATE, "GIT_COMMITTER_DATE": COMMIT_DATE}
    git("add", "-A", cwd=repo)
    git("commit", "-q", "--no-gpg-sign", "-m", message, cwd=repo, env=dates)
    return git("rev-parse", "HEAD", cwd=repo).stdout.strip()


def apply_edits(repo: Path, edits: list[dict[str, str]]) -> None:
    """Apply a task's edits to a working tree; raises ValueError when a `find` is not there exactly once."""
    for edit in edits:
        path = repo / edit["path"]
        if "create" in edit:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(edit["create"])
            continue
        text = path.read_text()
        if text.count(edit["find"]) != 1:
            raise ValueError(f"edit of {edit['path']}: {edit['find'][:60]!r} occurs {text.count(edit['find'])} times")
        path.write_text(text.replace(edit["find"], edit["replace"]))


def _patch(source: Path, base: str, edits: list[dict[str, str]], scratch: Path) -> str:
    """The diff that `edits` make to `base`, made in one scratch clone per repository (reset between patches)."""
    work = scratch / source.name
    if not work.exists():
        git("clone", "-q", "--shared", str(source), str(work), cwd=scratch)
    git("checkout", "-q", "--detach", "-f", base, cwd=work)
    git("clean", "-q", "-fdx", cwd=work)
    apply_edits(work, edits)
    git("add", "-A", cwd=work)
    return git("diff", "--cached", base, cwd=work).stdout


def _rows(repos: dict[str, Path], commits: dict[str, str], scratch: Path) -> list[dict[str, Any]]:
    rows = []
    for repo, library in libraries().items():
        source, base = repos[repo], commits[repo]
        for task in library.tasks:
            test_path = f"tests/test_{task.test_name}.py"
            test_edit = [{"path": test_path, "create": _test_file(library.checks, task.tests)}]
            rows.append(
                {
                    "instance_id": instance_id(library.folder, task),
                    "repo": repo,
                    "base_commit": base,
                    "problem_statement": task.problem_statement,
                    "patch": _patch(source, base, list(task.gold), scratch),
                    "naive_patch": _patch(source, base, list(task.naive), scratch),
                    "test_patch": _patch(source, base, test_edit, scratch),
                    "FAIL_TO_PASS": _test_ids(test_path, task.tests),
                    "PASS_TO_PASS": list(library.pass_to_pass),
                    "created_at": task.created_at,
                    "version": VERSION,
                    "hints_text": "",
                    "environment_setup_commit": base,
                    "conventions": list(task.conventions),
                    "suite": "house",
                    "slug": task.slug,
                }
            )
    return rows


def instance_id(folder: str, task: HouseTask) -> str:
    return f"house__{folder}-{task.number:04d}"


def _undone(task: HouseTask, convention: str) -> list[dict[str, str]]:
    """The gold edits with `convention` undone (the task's `undo` for it: edits applied after the gold ones, or
    the string meaning "without the changelog entry")."""
    undo = task.undo[convention]
    if isinstance(undo, str):
        return [edit for edit in task.gold if edit["path"] != "CHANGELOG.md"]
    return [*task.gold, *undo]


def _test_file(checks: str, body: str) -> str:
    return checks + "\n\n" + body.strip() + "\n"


def _test_ids(path: str, body: str) -> list[str]:
    """Node ids of the test functions in `body` (parametrized ones as their parametrized ids)."""
    import re

    ids = []
    for match in re.finditer(r'(?:@pytest\.mark\.parametrize\("(\w+)", \[([^\]]*)\]\)\n)?def (test_\w+)\(', body):
        values = re.findall(r'"([^"]*)"', match.group(2) or "")
        ids += [f"{path}::{match.group(3)}[{v}]" for v in values] or [f"{path}::{match.group(3)}"]
    return ids


def build(root: Path | str | None = None) -> tuple[Path, dict[str, Path]]:
    """(the build folder, repo name -> built repository). Builds once per source hash."""
    folders = {repo: library.folder for repo, library in libraries().items()}  # a malformed task file stops here
    root = Path(root or config.cache_root() / "house_suite")
    target = root / source_hash()
    repos = {repo: target / folder for repo, folder in folders.items()}
    if (target / "tasks.json").exists():
        return target, repos
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".build-"))
    try:
        commits = {}
        for repo, folder in folders.items():
            shutil.copytree(SOURCE / folder, tmp / folder, ignore=IGNORED)
            git("init", "-q", "-b", "main", cwd=tmp / folder)
            commits[repo] = _commit_all(tmp / folder, f"{repo} {VERSION}")
        scratch = Path(tempfile.mkdtemp(prefix="house-patches-"))
        try:
            rows = _rows({repo: tmp / folder for repo, folder in folders.items()}, commits, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        (tmp / "tasks.json").write_text(json.dumps(rows, indent=1))
        try:
            tmp.rename(target)
        except OSError:  # another process finished the same build first: theirs is identical
            if not (target / "tasks.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target, repos


def load(root: Path | str | None = None):
    import pandas as pd

    target, repos = build(root)
    rows = json.loads((target / "tasks.json").read_text())
    for row in rows:
        row["repo_path"] = str(repos[row["repo"]])
    return pd.DataFrame(rows)


def undone_patches(root: Path | str | None = None) -> dict[str, dict[str, str]]:
    """instance id -> {convention: the task's gold patch with that one convention undone}: each must fail the
    task (the suite's own check that every convention a task names is checked by its hidden tests). Made on
    first use and kept beside the build."""
    target, repos = build(root)
    path = target / "undone.json"
    if not path.exists():
        rows = {row["instance_id"]: row for row in json.loads((target / "tasks.json").read_text())}
        undone = {}
        with tempfile.TemporaryDirectory(prefix="house-undone-") as scratch:
            for repo, library in libraries().items():
                for task in library.tasks:
                    row = rows[instance_id(library.folder, task)]
                    undone[row["instance_id"]] = {
                        c: _patch(repos[repo], row["base_commit"], _undone(task, c), Path(scratch))
                        for c in task.conventions
                    }
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(undone, indent=1))
        partial.replace(path)
    return json.loads(path.read_text())
