"""Turn the shipped sources and task edits into git repositories, patches and task rows.

The build is deterministic (fixed identity and dates), so `base_commit` is the same hash on every
machine. It goes to <cache>/house_suite/<hash of the sources>/, built in a temporary folder and renamed
into place, so concurrent builders never see half a build and a changed source gets a fresh build.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from helpers.core import config
from helpers.families.coding.house_suite.tasks import TASKS
from helpers.families.coding.git import git

SOURCE = Path(__file__).resolve().parent / "repos"
REPOS = {"house/ledger": "ledger"}  # repo name -> folder under repos/
COMMIT_DATE = "2026-01-01T00:00:00+00:00"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.egg-info")
VERSION = "1.0"


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted([*SOURCE.rglob("*"), Path(__file__).with_name("tasks.py"), Path(__file__)]):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(str(path.relative_to(SOURCE.parent)).encode() + b"\0" + path.read_bytes())
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
    work = scratch / "work"
    shutil.rmtree(work, ignore_errors=True)
    git("clone", "-q", "--shared", str(source), str(work), cwd=scratch)
    git("checkout", "-q", "--detach", base, cwd=work)
    apply_edits(work, edits)
    git("add", "-A", cwd=work)
    return git("diff", "--cached", base, cwd=work).stdout


def _rows(repos: dict[str, Path], commits: dict[str, str], scratch: Path) -> list[dict[str, Any]]:
    rows = []
    for number, task in enumerate(TASKS, 1):
        repo = "house/ledger"
        source, base = repos[repo], commits[repo]
        name, body = task["tests"]
        test_edit = [{"path": f"tests/test_{name}.py", "create": _test_file(body)}]
        tests = _test_ids(f"tests/test_{name}.py", body)
        rows.append({
            "instance_id": f"house__ledger-{number:04d}", "repo": repo, "base_commit": base,
            "problem_statement": task["problem_statement"],
            "patch": _patch(source, base, task["gold"], scratch),
            "naive_patch": _patch(source, base, task["naive"], scratch),
            "test_patch": _patch(source, base, test_edit, scratch),
            "FAIL_TO_PASS": tests, "PASS_TO_PASS": list(BASE_TESTS),
            "created_at": task["created_at"], "version": VERSION, "hints_text": "",
            "environment_setup_commit": base, "conventions": list(task["conventions"]), "suite": "house",
            "slug": task["slug"],
        })
    return rows


BASE_TESTS = ("tests/test_basic.py::test_deposit_and_withdraw", "tests/test_basic.py::test_unknown_account",
              "tests/test_basic.py::test_json_export")


def _test_file(body: str) -> str:
    from helpers.families.coding.house_suite.tasks import CHECKS

    return CHECKS + "\n\n" + body.strip() + "\n"


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
    root = Path(root or config.cache_root() / "house_suite")
    target = root / source_hash()
    repos = {repo: target / folder for repo, folder in REPOS.items()}
    if (target / "tasks.json").exists():
        return target, repos
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".build-"))
    try:
        commits = {}
        for repo, folder in REPOS.items():
            shutil.copytree(SOURCE / folder, tmp / folder, ignore=IGNORED)
            git("init", "-q", "-b", "main", cwd=tmp / folder)
            commits[repo] = _commit_all(tmp / folder, f"{repo} {VERSION}")
        scratch = Path(tempfile.mkdtemp(prefix="house-patches-"))
        try:
            rows = _rows({repo: tmp / folder for repo, folder in REPOS.items()}, commits, scratch)
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
