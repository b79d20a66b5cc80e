"""Workspaces: a task's repository at its base commit, as a clean git tree an agent may edit.

A task row names its source repository in `repo_path` (a local git repository or mirror: the house
suite sets it; for SWE-bench, a folder of mirrors, see `swebench_repo_path`). `prepare_workspace`
clones it cheaply (objects shared, nothing fetched) and checks out `base_commit`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from helpers.protocols import Task

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "prompt-learning", "GIT_AUTHOR_EMAIL": "prompt-learning@localhost",
    "GIT_COMMITTER_NAME": "prompt-learning", "GIT_COMMITTER_EMAIL": "prompt-learning@localhost",
}


class WorkspaceError(RuntimeError):
    """The task's repository could not be made ready (missing mirror, unknown commit)."""


def git(*args: str, cwd: Path | str, check: bool = True, input: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run git quietly with a fixed identity and no user or system config (plus `env`)."""
    env = {**os.environ, **GIT_IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
           "GIT_CONFIG_GLOBAL": os.devnull, **(env or {})}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=check, input=input,
                          capture_output=True, text=True)


def swebench_repo_path(repo: str, mirrors_dir: Path | str) -> Path:
    """Where a SWE-bench repository's mirror is expected: <mirrors_dir>/<owner>__<name>."""
    return Path(mirrors_dir) / repo.replace("/", "__")


def prepare_workspace(task: Task, root: Path | str) -> Path:
    """A fresh clone of the task's repository at `base_commit` under `root`; returns its path.

    Raises WorkspaceError with what to do when the repository or commit is not available.
    """
    source = task.get("repo_path")
    instance_id = task["instance_id"]
    if not source or not Path(source, ".git").exists() and not Path(source, "HEAD").exists():
        raise WorkspaceError(
            f"{instance_id}: no local repository for {task.get('repo')!r} (repo_path={source!r}). "
            "House tasks get one from load_house_suite(); for SWE-bench pass mirrors_dir= to "
            "load_swebench (a folder of `git clone --mirror` copies named owner__name)."
        )
    dest = Path(root) / instance_id
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    clone = git("clone", "--quiet", "--shared", "--no-checkout", str(source), str(dest), cwd=dest.parent, check=False)
    if clone.returncode != 0:
        raise WorkspaceError(f"{instance_id}: cannot clone {source}: {clone.stderr.strip()}")
    checkout = git("checkout", "--quiet", "--detach", task["base_commit"], cwd=dest, check=False)
    if checkout.returncode != 0:
        raise WorkspaceError(
            f"{instance_id}: base commit {task['base_commit']} not found in {source}: {checkout.stderr.strip()}"
        )
    return dest


def remove_workspace(path: Path | str) -> None:
    """Delete a workspace folder (missing is fine)."""
    shutil.rmtree(path, ignore_errors=True)

__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "prepare_workspace", "remove_workspace", "swebench_repo_path", "git", "WorkspaceError",
]
