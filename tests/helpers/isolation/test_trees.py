"""Trees an agent could have written are walked, measured, handed over and removed at any depth and size, never
through a link, never opening a special file, within limits that name themselves, and removal never raises."""

import os
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers.isolation.processes import remove_scratch, scratch_dir, scratch_root, sweep_stale
from helpers.isolation.trees import TreeRefused, chown_tree, remove_tree, tree_usage, walk_tree
from helpers.isolation.untrusted import REFUSED

ROOT = os.geteuid() == 0


@pytest.fixture
def fast(tmp_path):
    """A folder on a memory file system when there is one (deep trees cost a disk write per folder), else tmp_path."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        folder = Path(tempfile.mkdtemp(prefix="trees-", dir=shm))
        yield folder
        subprocess.run(["rm", "-rf", str(folder)], check=False)
    else:
        yield tmp_path


def chain(root: Path, depth: int, name: str = "d") -> None:
    """A chain of `depth` folders under `root` (made relative to each other: deeper than PATH_MAX), a file at
    its bottom."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)


def test_a_10000_deep_chain_is_walked_handed_over_and_removed_without_recursion_or_a_descriptor_per_level(fast):
    tree = fast / "tree"
    tree.mkdir()
    chain(tree, 10_000)
    before = set(os.listdir("/proc/self/fd"))
    usage = tree_usage(tree)
    assert usage.entries == 10_001 and usage.largest == 0
    if ROOT:
        assert chown_tree(tree, 4242, 4242).entries == 10_001
        assert os.stat(tree).st_uid == 4242
    assert remove_tree(tree) == [] and not tree.exists()
    assert not set(os.listdir("/proc/self/fd")) - before  # nothing left open (others' descriptors may close meanwhile)


def test_past_the_depth_or_entry_limit_a_walk_is_refused_naming_the_limit(fast):
    chain(fast, 30)
    with pytest.raises(TreeRefused, match=r"deeper than the 10 folders"):
        tree_usage(fast, max_depth=10)
    flat = fast / "flat"
    flat.mkdir()
    for i in range(100_000):  # a 100,000-entry flat folder
        os.close(os.open(flat / str(i), os.O_WRONLY | os.O_CREAT, 0o644))
    with pytest.raises(TreeRefused, match=r"past the 50000 entries") as refusal:
        tree_usage(flat, max_entries=50_000)
    assert str(refusal.value).startswith(REFUSED)
    assert remove_tree(flat) == [] and not flat.exists()


def test_links_and_special_files_are_measured_and_removed_never_followed_or_opened(fast, tmp_path):
    host = tmp_path / "host"
    host.mkdir()
    (host / "precious.txt").write_text("the host's")
    outside = fast / "outside.txt"  # the same file system: a hard link cannot cross one
    outside.write_text("outside")
    tree = fast / "tree"
    (tree / "a").mkdir(parents=True)
    os.mkfifo(tree / "a" / "fifo")  # opening it would block the host for ever
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tree / "a" / "sock"))
    (tree / "to-host").symlink_to(host)  # a folder link: never walked into
    (tree / "a" / "to-file").symlink_to(host / "precious.txt")
    os.link(outside, tree / "hard")  # a hard link to a file outside: the name goes, the file stays
    if ROOT:
        os.mknod(tree / "a" / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    paths = {path for _, _, _, path in walk_tree(tree)}
    assert "to-host" in paths and not any(p.startswith("to-host/") for p in paths)
    if ROOT:
        owner = os.stat(host / "precious.txt").st_uid
        chown_tree(tree, 4243, 4243)
        assert os.stat(host / "precious.txt").st_uid == owner and os.stat(host).st_uid == owner
        assert os.lstat(tree / "a" / "to-file").st_uid == 4243
    assert remove_tree(tree) == [] and not tree.exists()
    listener.close()
    assert (host / "precious.txt").read_text() == "the host's" and outside.read_text() == "outside"


def test_a_folder_swapped_for_a_link_while_walked_is_not_followed_out(fast, tmp_path):
    host = tmp_path / "host"
    (host / "inner").mkdir(parents=True)
    (host / "inner" / "secret.txt").write_text("x")
    tree = fast / "tree"
    (tree / "a" / "inner").mkdir(parents=True)
    seen = []
    with pytest.raises(TreeRefused, match="a cannot be walked"):
        for _, _, _, path in walk_tree(tree):
            seen.append(path)
            if path == "a":  # listed as a folder; swapped for a link before the walk opens it
                os.rename(tree / "a", tree / "gone")
                (tree / "a").symlink_to(host)
    assert seen == ["a"]  # the host folder's entries never came back
    assert remove_tree(tree) == [] and (host / "inner" / "secret.txt").exists()


def test_a_tree_that_grows_while_it_is_walked_stops_at_the_entry_limit(fast):
    tree = fast / "tree"
    tree.mkdir()
    (tree / "seed").mkdir()
    with pytest.raises(TreeRefused, match="past the 500 entries"):
        for fd, name, st, path in walk_tree(tree, max_entries=500):
            if stat.S_ISDIR(st.st_mode):  # each folder it enters gets two more: without a limit it never ends
                for child in ("x", "y"):
                    os.mkdir(os.path.join(tree, path, child))
    assert remove_tree(tree) == []


def test_folders_the_agent_made_unreadable_and_unwritable_are_removed(fast):
    tree = fast / "tree"
    chain(tree.parent, 0)
    (tree / "locked" / "deeper").mkdir(parents=True)
    (tree / "locked" / "deeper" / "f").write_text("x")
    (tree / "readonly").mkdir()
    (tree / "readonly" / "g").write_text("y")
    os.chmod(tree / "locked" / "deeper", 0)
    os.chmod(tree / "locked", 0)
    os.chmod(tree / "readonly", 0o500)
    os.chmod(tree, 0o500)
    assert remove_tree(tree) == [] and not tree.exists()


def immutable(path: Path, on: bool = True) -> bool:
    """Make `path` one nothing can remove (chattr +i, root only), or removable again; False where it cannot."""
    return subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True).returncode == 0


def test_what_cannot_be_removed_is_returned_and_said_never_raised(tmp_path, capsys):
    tree = tmp_path / "tree"
    (tree / "deeper").mkdir(parents=True)
    (tree / "other.txt").write_text("x")
    (tree / "deeper" / "locked.txt").write_text("x")
    if not (ROOT and immutable(tree / "deeper" / "locked.txt")):
        pytest.skip("an entry this process cannot remove needs chattr +i, which needs root on ext4 or the like")
    try:
        left = remove_tree(tree, note=lambda line: print(line, file=sys.stderr))
        assert left[0] == "deeper/locked.txt: Operation not permitted" and not (tree / "other.txt").exists()
        assert "could not be removed whole: deeper/locked.txt: Operation not permitted" in capsys.readouterr().err
    finally:
        immutable(tree / "deeper" / "locked.txt", on=False)
    assert remove_tree(tree) == [] and not tree.exists()


def test_a_mount_left_in_a_tree_is_detached_and_the_tree_removed(fast):
    if not ROOT:
        pytest.skip("mounting needs root")
    tree = fast / "tree"
    (tree / "mounted").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "none", str(tree / "mounted")], check=True)
    (tree / "mounted" / "inside.txt").write_text("x")
    assert remove_tree(tree) == [] and not tree.exists()


def test_a_file_a_link_or_nothing_at_the_path_is_removed_or_fine(fast):
    (fast / "file").write_text("x")
    (fast / "link").symlink_to(fast / "file")
    assert remove_tree(fast / "link") == [] and (fast / "file").exists()
    assert remove_tree(fast / "file") == [] and remove_tree(fast / "missing") == []


def test_a_killed_runs_scratch_folder_with_a_deep_tree_never_stops_a_later_start(capsys, memory_scratch):
    """The issue's example: a 1,100-deep tree (and an entry that cannot be removed) in the scratch folder of a
    run killed mid-way made every later run fail at sweep_stale."""
    stale = scratch_root() / "1-0"  # pid 1 never has start time 0: its owner is gone
    workspace = stale / "run-x" / "task"
    workspace.mkdir(parents=True)
    chain(workspace, 1_100)
    (workspace / "locked").mkdir()
    os.chmod(workspace / "locked", 0)
    stuck = workspace / "stuck.txt"  # an entry nothing can remove (where chattr +i can be set)
    stuck.write_text("x")
    locked = ROOT and immutable(stuck)
    try:
        swept = sweep_stale()
        assert stale in swept and not (workspace / "d").exists() and not (workspace / "locked").exists()
        assert not locked or "could not be removed whole: run-x/task/stuck.txt: " in capsys.readouterr().err
        mine = scratch_dir("run")  # and the next run starts
        assert remove_scratch(mine) == []
    finally:
        immutable(stuck, on=False)
        remove_tree(stale)
    assert not stale.exists()
