"""Files an agent could have written are hostile data: no link followed on any component, no special file
opened, every read capped, and each refusal named at once (a FIFO never blocks, /dev/zero never floods)."""

import os
import stat
import time

import pytest

from helpers.stats.outcomes import RULES, run_outcome
from helpers.isolation.untrusted import RefusedOutput, read_untrusted, remove_untrusted, untrusted_kind, write_untrusted


@pytest.fixture
def tree(tmp_path):
    """(a workspace with a file and a folder, a host folder with a secret beside it)."""
    root, host = tmp_path / "ws", tmp_path / "host"
    (root / "folder").mkdir(parents=True)
    (root / "folder" / "file.txt").write_text("agent's text")
    host.mkdir()
    (host / "secret.txt").write_text("host secret")
    return root, host


def special(path, kind, host):
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":  # as root can make one (here, outside a sandbox): /dev/null's numbers
        os.mknod(path, stat.S_IFCHR | 0o600, os.stat("/dev/null").st_rdev)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "link to a host file":
        path.symlink_to(host / "secret.txt")


KINDS = {"fifo": "a FIFO", "device": "a character device", "link to /dev/zero": "a symbolic link",
         "link to a host file": "a symbolic link"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_special_file_or_link_is_refused_by_name_at_once(tree, kind):
    root, host = tree
    if kind == "device" and os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    target = root / "folder" / "traj.json"
    special(target, kind, host)
    started = time.monotonic()
    for call in (lambda: read_untrusted(target, root, 1000), lambda: write_untrusted(target, root, b"x"),
                 lambda: remove_untrusted(target, root), lambda: untrusted_kind(target, root)):
        with pytest.raises(RefusedOutput, match=f"refused the agent's output: folder/traj.json is {KINDS[kind]}"):
            call()
    assert time.monotonic() - started < 2  # a FIFO with no writer never blocks the host
    assert (host / "secret.txt").read_text() == "host secret" and os.path.lexists(target)


def test_a_folder_on_the_way_swapped_for_a_link_is_never_followed(tree):
    root, host = tree
    (host / "file.txt").write_text("host file")
    (root / "folder").rename(root / "moved")
    (root / "folder").symlink_to(host)  # folder/file.txt now names the host's file
    for call in (lambda: read_untrusted(root / "folder" / "file.txt", root, 1000),
                 lambda: write_untrusted(root / "folder" / "file.txt", root, b"x"),
                 lambda: write_untrusted(root / "folder" / "new" / "f.txt", root, b"x", make_folders=True),
                 lambda: remove_untrusted(root / "folder" / "file.txt", root)):
        with pytest.raises(RefusedOutput, match="folder is a symbolic link, where a folder was expected"):
            call()
    assert sorted(p.name for p in host.iterdir()) == ["file.txt", "secret.txt"]
    assert (host / "file.txt").read_text() == "host file"


def test_reads_are_capped_writes_refuse_hard_links_and_plain_files_work(tree):
    root, host = tree
    path = root / "folder" / "file.txt"
    assert read_untrusted(path, root, 100) == b"agent's text"
    with pytest.raises(RefusedOutput, match="folder/file.txt is larger than the 5 bytes"):
        read_untrusted(path, root, 5)
    write_untrusted(root / "a" / "b" / "new.md", root, b"ours", make_folders=True)
    assert (root / "a/b/new.md").read_bytes() == b"ours" and untrusted_kind(root / "a", root) == "folder"
    os.link(host / "secret.txt", root / "hard.txt")  # another name of a host file
    with pytest.raises(RefusedOutput, match="hard.txt is a hard link"):
        write_untrusted(root / "hard.txt", root, b"overwritten")
    assert (host / "secret.txt").read_text() == "host secret"
    remove_untrusted(path, root)
    remove_untrusted(path, root)  # missing is fine
    assert untrusted_kind(path, root) == "missing" and not path.exists()
    with pytest.raises(FileNotFoundError):
        read_untrusted(path, root, 100)


def test_a_refusal_counts_as_the_agents_doing():
    error = str(RefusedOutput("refused the agent's output: traj.json is a FIFO (named pipe)"))
    assert run_outcome({"status": "error", "error": f"RefusedOutput: {error}"}) == RULES


def test_a_cli_that_prints_without_end_leaves_a_bounded_tail_with_its_last_line():
    import io
    from collections import deque

    from helpers.isolation.processes import read_capped

    flood = io.StringIO("x" * 300_000 + "\n" + "line\n" * 50_000 + '{"type": "run_result"}\n')  # one huge line too
    kept: deque[str] = deque()
    read_capped(flood, kept, limit=10_000)
    text = "".join(kept)
    assert len(text) < 10_200 and text.endswith('{"type": "run_result"}\n') and "earlier lines of output dropped" in text
