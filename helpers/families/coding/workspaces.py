"""Workspaces: a task's repository at its base commit, as a clean git tree an agent may edit.

A task row names its source repository in `repo_path` (a local git repository or mirror: the house
suite sets it; for SWE-bench, a folder of mirrors, see `swebench_repo_path`). `prepare_workspace`
clones it (nothing fetched) and checks out `base_commit`. The clone is self-contained: no
`objects/info/alternates` pointing back into the cache (whose tasks.json holds hidden tests and gold
patches) and no hardlinks through which an agent could rewrite the cached objects.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable, Sequence

from helpers.core.names import check_inside, check_name
from helpers.core.protocols import Task
from helpers.core.rules import LEARNED_FILE, insert_section, remove_section, split_fenced
from helpers.families.coding.git import WorkspaceError, git

def swebench_repo_path(repo: str, mirrors_dir: Path | str) -> Path:
    """Where a SWE-bench repository's mirror is expected: <mirrors_dir>/<owner>__<name>."""
    return Path(mirrors_dir) / repo.replace("/", "__")


def prepare_workspace(task: Task, root: Path | str) -> Path:
    """A fresh clone of the task's repository at `base_commit` under `root`; returns its path.

    The repository is the task's `repo_path` (the house suite's, or a mirror in MIRRORS_DIR); a
    SWE-bench task without one gets a mirror cloned once into the cache (helpers.families.coding.mirrors).
    Raises WorkspaceError with what to do when the repository or commit is not available, and
    ValueError, touching nothing, when the instance id is not a safe folder name.
    """
    instance_id = check_name(task["instance_id"], "instance_id")
    source = task.get("repo_path")
    if not _is_repository(source):
        if task.get("suite") != "swebench" or not task.get("repo"):
            raise WorkspaceError(
                f"{instance_id}: no local repository for {task.get('repo')!r} (repo_path={source!r}). "
                "House tasks get one from load_house_suite(); SWE-bench tasks get a mirror cloned on first use, "
                "or from MIRRORS_DIR (a folder of `git clone --mirror` copies named owner__name)."
            )
        from helpers.families.coding.mirrors import ensure_mirror

        source = ensure_mirror(str(task["repo"]), str(task["base_commit"]))
    dest = Path(root) / instance_id
    if dest.exists():
        shutil.rmtree(check_inside(dest, root))
    dest.parent.mkdir(parents=True, exist_ok=True)
    clone = git("clone", "--quiet", "--no-hardlinks", "--no-checkout", str(source), str(dest), cwd=dest.parent,
                check=False)
    if clone.returncode != 0:
        raise WorkspaceError(f"{instance_id}: cannot clone {source}: {clone.stderr.strip()}")
    checkout = git("checkout", "--quiet", "--detach", task["base_commit"], cwd=dest, check=False)
    if checkout.returncode != 0:
        raise WorkspaceError(
            f"{instance_id}: base commit {task['base_commit']} not found in {source}: {checkout.stderr.strip()}"
        )
    return dest


def _is_repository(path: object) -> bool:
    return bool(path) and (Path(str(path), ".git").exists() or Path(str(path), "HEAD").exists())


def remove_workspace(path: Path | str, root: Path | str | None = None) -> None:
    """Delete a workspace folder (missing is fine); never `root` itself or anything outside it
    (default root: the workspace's parent folder, where prepare_workspace put it)."""
    target = check_inside(path, Path(path).parent if root is None else root)
    shutil.rmtree(target, ignore_errors=True)


# Never part of a patch: what running code leaves behind.
PATCH_DEBRIS = ("**/__pycache__/**", "**/*.pyc", ".pytest_cache/**", "**/*.egg-info/**")


def write_rules(workspace: Path | str, rules_file: str, ruleset: str) -> Callable[[], None]:
    """Put `ruleset` where the agent reads its rules; returns the function that takes it out again.

    A missing file is created with the ruleset as it is (an imported team file with its fence, or plain
    rules). A file already there (the team's own) keeps its text: the learned rules (a fenced ruleset's
    region) replace its fenced section, or are added as one. A folder gets a file of its own. The undo
    restores the team's text byte for byte (keeping any edit the agent made to it) and deletes what we
    created, so the patch holds only the agent's work. An empty ruleset writes nothing.
    """
    path = Path(workspace) / rules_file
    if not ruleset.strip():
        return lambda: None
    if path.is_dir():
        path = path / LEARNED_FILE
    if not path.exists():  # nothing of the team's here: the file is ours alone
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_exact(path, ruleset if ruleset.endswith("\n") else ruleset + "\n")
        return lambda: path.unlink(missing_ok=True)
    fenced = split_fenced(ruleset)
    learned = fenced[1] if fenced else ruleset
    if not learned.strip():  # an imported team file with nothing learned yet: the team's file says it all
        return lambda: None
    original = _read_exact(path)
    if split_fenced(original):  # the team's file already has a learned section: swap its content
        before, old, after = split_fenced(original)
        _write_exact(path, before + _with_newline(learned) + after)

        def undo() -> None:
            if path.exists() and split_fenced(_read_exact(path)):
                now_before, _, now_after = split_fenced(_read_exact(path))
                _write_exact(path, now_before + old + now_after)
        return undo
    _write_exact(path, insert_section(original, learned))

    def undo() -> None:
        if path.exists():
            _write_exact(path, remove_section(_read_exact(path)))
    return undo


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _read_exact(path: Path) -> str:
    """The file's bytes as text, line endings and undecodable bytes kept as they are."""
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


def _write_exact(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))


def workspace_patch(workspace: Path | str, base_commit: str, exclude: Sequence[str] = ()) -> str:
    """The change in `workspace` against `base_commit`, new files included, build debris and `exclude`
    (glob patterns) left out."""
    git("add", "-A", "-N", cwd=workspace, check=False)
    excludes = [f":(exclude,glob){pattern}" for pattern in (*PATCH_DEBRIS, *exclude)]
    return git("diff", base_commit, "--", ".", *excludes, cwd=workspace, check=False).stdout

__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "prepare_workspace", "remove_workspace", "swebench_repo_path", "git", "WorkspaceError", "write_rules",
    "workspace_patch", "insert_section", "remove_section",
]
