"""Mirrors of SWE-bench repositories made on first use, against a file:// remote made here."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers.families.coding.mirrors import ensure_mirror
from helpers.families.coding.git import WorkspaceError, git

REPO = "octo/widget"


def commit(upstream, text):
    (upstream / "widget.py").write_text(text)
    git("add", "-A", cwd=upstream)
    git("commit", "-q", "-m", text, cwd=upstream)
    return git("rev-parse", "HEAD", cwd=upstream).stdout.strip()


@pytest.fixture
def remote(tmp_path):
    """(remote_base URL, upstream working repository, its first commit)."""
    upstream = tmp_path / "remote" / "octo" / "widget.git"
    upstream.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=upstream)
    return f"file://{tmp_path / 'remote'}", upstream, commit(upstream, "version = 1\n")


def has_commit(mirror, sha):
    return git("cat-file", "-e", f"{sha}^{{commit}}", cwd=mirror, check=False).returncode == 0


def test_a_repository_is_cloned_once_for_two_tasks(tmp_path, remote):
    base, upstream, first = remote
    second = commit(upstream, "version = 2\n")
    lines = []
    paths = [ensure_mirror(REPO, sha, cache_dir=tmp_path / "cache", remote_base=base, progress=lines.append)
             for sha in (first, second)]
    assert paths[0] == paths[1] == tmp_path / "cache" / "octo__widget.git"
    assert len(lines) == 1 and lines[0].startswith("cloning") and "octo/widget.git" in lines[0]
    assert has_commit(paths[0], first) and has_commit(paths[0], second)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["octo__widget.git"]  # no temporary clone left


def test_a_commit_new_upstream_is_fetched_once(tmp_path, remote):
    base, upstream, first = remote
    ensure_mirror(REPO, first, cache_dir=tmp_path / "cache", remote_base=base, progress=lambda line: None)
    newer = commit(upstream, "version = 3\n")
    lines = []
    mirror = ensure_mirror(REPO, newer, cache_dir=tmp_path / "cache", remote_base=base, progress=lines.append)
    assert len(lines) == 1 and lines[0].startswith("fetching") and newer[:12] in lines[0]
    assert has_commit(mirror, newer)


def test_an_unknown_commit_is_an_error_naming_the_repository_and_commit(tmp_path, remote):
    base, _, _ = remote
    unknown = "0123456789abcdef0123456789abcdef01234567"
    lines = []
    with pytest.raises(WorkspaceError, match=f"octo/widget: commit {unknown} is not in"):
        ensure_mirror(REPO, unknown, cache_dir=tmp_path / "cache", remote_base=base, progress=lines.append)
    assert [line.split()[0] for line in lines] == ["cloning", "fetching"]


def test_a_repository_missing_upstream_is_an_error_and_leaves_no_half_mirror(tmp_path, remote):
    base, _, first = remote
    with pytest.raises(WorkspaceError, match="octo/nothing: cannot clone"):
        ensure_mirror("octo/nothing", first, cache_dir=tmp_path / "cache", remote_base=base, progress=lambda line: None)
    assert list((tmp_path / "cache").iterdir()) == []
    with pytest.raises(WorkspaceError, match="owner/name"):
        ensure_mirror("widget", first, cache_dir=tmp_path / "cache", remote_base=base)


def test_concurrent_calls_for_one_repository_clone_it_once(tmp_path, remote):
    base, _, first = remote
    lines = []
    start = threading.Barrier(4)

    def ask(_):
        start.wait()
        return ensure_mirror(REPO, first, cache_dir=tmp_path / "cache", remote_base=base, progress=lines.append)

    with ThreadPoolExecutor(4) as pool:
        paths = list(pool.map(ask, range(4)))  # a call's error is raised here, named
    assert len(paths) == 4 and len(set(paths)) == 1
    assert [line.split()[0] for line in lines] == ["cloning"]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["octo__widget.git"]
