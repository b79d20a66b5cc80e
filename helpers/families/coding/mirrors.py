"""Local `git clone --mirror` copies of SWE-bench repositories, made on first use and kept in the cache.

    mirror = ensure_mirror("psf/requests", task["base_commit"])   # .cache/mirrors/psf__requests.git

A SWE-bench task's workspace is a clone of its repository at `base_commit`. A user-provided folder of
mirrors (MIRRORS_DIR) still wins; this module makes one when there is none: it clones each repository
once, and fetches again only when a task's commit is not in the mirror yet.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path
from typing import Callable

from helpers.core import config
from helpers.families.coding.git import WorkspaceError, git

REMOTE_BASE = "https://github.com"  # where "owner/name" repositories are cloned from (tests use a file:// folder)

_LOCKS: dict[str, threading.Lock] = {}  # one per mirror path: a repository is cloned or fetched by one thread
_LOCKS_GUARD = threading.Lock()


def ensure_mirror(
    repo: str,
    base_commit: str,
    *,
    cache_dir: Path | str | None = None,
    remote_base: str | None = None,
    progress: Callable[[str], object] = print,
) -> Path:
    """The path of a bare mirror of `repo` ("owner/name") that holds `base_commit`.

    Clones `<remote_base>/<owner>/<name>.git` with `--mirror` into `<cache_dir>/<owner>__<name>.git` the
    first time (cache_dir defaults to config.cache_root()/"mirrors", remote_base to REMOTE_BASE), and
    fetches once when `base_commit` is missing; calls `progress` with one line before a clone or fetch.
    Raises WorkspaceError naming the repository (and commit) when the clone fails or the commit is still
    missing after the fetch. Safe to call from many threads at once: one clone per repository.
    """
    owner, name = _owner_and_name(repo)
    if not base_commit:
        raise WorkspaceError(f"{repo}: no base commit given.")
    cache = Path(cache_dir) if cache_dir else config.cache_root() / "mirrors"
    mirror = cache / f"{owner}__{name}.git"
    url = f"{(remote_base or REMOTE_BASE).rstrip('/')}/{owner}/{name}.git"
    with _lock_for(mirror):
        if not (mirror / "HEAD").exists():
            progress(f"cloning {url} into {mirror} (once per repository; a large one takes minutes)")
            _clone(url, mirror, repo)
        if not _has_commit(mirror, base_commit):
            progress(f"fetching {url}: the mirror lacks {repo}@{base_commit[:12]}")
            fetched = git("fetch", "--quiet", "--prune", "origin", cwd=mirror, check=False)
            if not _has_commit(mirror, base_commit):
                why = fetched.stderr.strip() or f"{url} has no such commit"
                raise WorkspaceError(f"{repo}: commit {base_commit} is not in {url} (fetched into {mirror}): {why}")
    return mirror


def _owner_and_name(repo: str) -> tuple[str, str]:
    parts = repo.split("/")
    if len(parts) != 2 or not all(parts) or ".." in parts:
        raise WorkspaceError(f"repository {repo!r} is not of the form 'owner/name'.")
    return parts[0], parts[1]


def _lock_for(mirror: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(mirror.resolve()), threading.Lock())


def _clone(url: str, mirror: Path, repo: str) -> None:
    """Clone into a temporary folder beside `mirror`, then rename: a killed clone leaves no half mirror,
    and another process that finished first wins."""
    mirror.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=mirror.parent, prefix=f".{mirror.name}.tmp-"))
    try:
        cloned = git("clone", "--quiet", "--mirror", url, str(scratch), cwd=mirror.parent, check=False)
        if cloned.returncode != 0:
            raise WorkspaceError(f"{repo}: cannot clone {url}: {cloned.stderr.strip()}")
        try:
            scratch.rename(mirror)
        except OSError:
            if not (mirror / "HEAD").exists():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _has_commit(mirror: Path, commit: str) -> bool:
    return git("cat-file", "-e", f"{commit}^{{commit}}", cwd=mirror, check=False).returncode == 0


__all__ = ["ensure_mirror", "REMOTE_BASE"]  # the public API, documented in CODE_APPENDIX.md
