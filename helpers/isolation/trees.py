"""Trees an agent or the code under test could have written, walked, measured, handed over and removed by one
bounded, iterative, no-follow layer (helpers.isolation.untrusted reads and writes one file of them).

    usage = tree_usage(workspace)                 # TreeUsage(bytes, largest, entries); TreeRefused past a limit
    chown_tree(workspace, uid, gid)               # everything in it, itself included
    left = remove_tree(workspace)                 # never raises; what could not be removed, named

No recursion: a 10,000-deep chain of folders is a loop over a stack of names, with one folder descriptor open at a
time (the next one down is opened relative to it with O_NOFOLLOW|O_DIRECTORY and checked to be the folder that was
listed; the way back up is "..", checked to be the folder it came from), so neither Python's stack nor the
descriptor table grows with depth. Nothing is followed: a link on any component is an entry like any other
(measured by lstat, handed over with lchown, unlinked), never a way in; a folder swapped for a link between the
listing and the open is refused. Nothing is opened but folders: a FIFO, socket or device node is measured and
unlinked, never opened. Walks stop at `max_depth` and `max_entries` (config.TREE_MAX_DEPTH, TREE_MAX_ENTRIES): past
either, TreeRefused names the limit (a tree that grows while it is walked reaches it and stops). Removal has no
limit (it must finish), holds a list of names per open level only, makes the agent's unreadable or unwritable
folders (chmod 000) its own again first, and never raises: it returns what it could not remove.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from helpers.core import config
from helpers.isolation.disks import detach_mounts
from helpers.isolation.untrusted import RefusedOutput, refused

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SHOWN_LEFT = 20  # what remove_tree names of what it could not remove (and how many more)


class TreeRefused(RefusedOutput):
    """A tree the host will not walk: over its depth or entry limit, changed under the walk, unreadable."""


@dataclass(frozen=True)
class TreeUsage:
    """What a tree holds: `bytes` allocated (blocks, as the disk sees them), its `largest` regular file's size,
    and how many `entries` (below the root)."""

    bytes: int
    largest: int
    entries: int


@dataclass
class _Level:
    identity: tuple[int, int]  # (st_dev, st_ino): the folder this level is, checked on the way back
    names: list[str]
    path: str  # relative to the root, for messages
    name: str  # its name in its parent ("" for the root)


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _open_below(fd: int, name: str, expected: os.stat_result) -> int:
    """The folder `name` in `fd`, opened without following a link and checked to be the one lstat saw."""
    child = os.open(name, _FOLDER, dir_fd=fd)
    if _identity(os.fstat(child)) != _identity(expected):
        os.close(child)
        raise FileNotFoundError(name)  # swapped between the listing and the open
    return child


def _up(fd: int, parent: _Level) -> int:
    """The folder above `fd`, checked to be `parent` (a folder moved while walked is not followed out)."""
    above = os.open("..", _FOLDER, dir_fd=fd)
    if _identity(os.fstat(above)) != parent.identity:
        os.close(above)
        raise TreeRefused(f"{refused(parent.path or '.', 'was moved while the host walked it')}")
    return above


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def walk_tree(
    root: Path | str, *, max_depth: int | None = None, max_entries: int | None = None
) -> Iterator[tuple[int, str, os.stat_result, str]]:
    """Every entry below the folder `root` (root itself excluded), folders before what they hold, as (the
    descriptor of its folder, valid until the next entry; its name; its lstat; its path relative to root).
    Iterative and no-follow (see the module); TreeRefused past `max_depth` or `max_entries` (default
    config.TREE_MAX_DEPTH, TREE_MAX_ENTRIES), for a folder that cannot be read, or one swapped or moved while
    walked. An entry gone before it was looked at is skipped. `root` itself is the host's: a link there is
    followed only if the caller passed one."""
    max_depth = config.TREE_MAX_DEPTH if max_depth is None else max_depth
    max_entries = config.TREE_MAX_ENTRIES if max_entries is None else max_entries
    fd = os.open(root, _FOLDER & ~os.O_NOFOLLOW)
    try:
        levels = [_Level(_identity(os.fstat(fd)), os.listdir(fd), "", "")]
        seen = 0
        while levels:
            level = levels[-1]
            if not level.names:
                levels.pop()
                if levels:
                    fd = _swap(fd, _up(fd, levels[-1]))
                continue
            name = level.names.pop()
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            seen += 1
            path = _join(level.path, name)
            if seen > max_entries:
                raise TreeRefused(f"{refused(path, f'is past the {max_entries} entries the host walks in one tree')}")
            yield fd, name, st, path
            if not stat.S_ISDIR(st.st_mode):
                continue
            if len(levels) >= max_depth:
                raise TreeRefused(f"{refused(path, f'is deeper than the {max_depth} folders the host walks')}")
            try:
                child = _open_below(fd, name, st)
                names = os.listdir(child)
            except FileNotFoundError:
                continue
            except OSError as error:
                raise TreeRefused(f"{refused(path, f'cannot be walked ({error.strerror})')}") from None
            fd = _swap(fd, child)
            levels.append(_Level(_identity(st), names, path, name))
    finally:
        os.close(fd)


def _swap(old: int, new: int) -> int:
    os.close(old)
    return new


def tree_usage(root: Path | str, *, max_depth: int | None = None, max_entries: int | None = None) -> TreeUsage:
    """What the folder `root` holds, itself included (walk_tree's limits and refusals)."""
    st = os.stat(root)
    used, largest, entries = st.st_blocks * 512, 0, 0
    for _, _, st, _ in walk_tree(root, max_depth=max_depth, max_entries=max_entries):
        used += st.st_blocks * 512
        entries += 1
        if stat.S_ISREG(st.st_mode):
            largest = max(largest, st.st_size)
    return TreeUsage(used, largest, entries)


def chown_tree(
    root: Path | str, uid: int, gid: int, *, max_depth: int | None = None, max_entries: int | None = None
) -> TreeUsage:
    """Hand the folder `root` and everything in it to (uid, gid), links themselves and never what they point to
    (a set-uid bit the agent left is cleared by the kernel as its file changes owner); returns what it holds
    (walk_tree's limits and refusals)."""
    os.chown(root, uid, gid, follow_symlinks=False)
    st = os.stat(root)
    used, largest, entries = st.st_blocks * 512, 0, 0
    for fd, name, st, _ in walk_tree(root, max_depth=max_depth, max_entries=max_entries):
        try:
            os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        used += st.st_blocks * 512
        entries += 1
        if stat.S_ISREG(st.st_mode):
            largest = max(largest, st.st_size)
    return TreeUsage(used, largest, entries)


def _writable(fd: int) -> None:
    """Make a folder the walk entered listable and writable by us (an agent may have left it chmod 000 or 500)."""
    mode = os.fstat(fd).st_mode
    if mode & 0o700 != 0o700:
        try:
            os.fchmod(fd, stat.S_IMODE(mode) | 0o700)
        except OSError:
            pass  # not ours to change: what cannot be removed is said


def _enter(fd: int, name: str, st: os.stat_result) -> int:
    """Open the folder `name` of `fd` (no-follow, checked), making it readable first when it is not."""
    try:
        return _open_below(fd, name, st)
    except PermissionError:
        path_fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
        try:  # chmod through the O_PATH descriptor: a link swapped in meanwhile cannot redirect it
            os.chmod(f"/proc/self/fd/{path_fd}", stat.S_IMODE(st.st_mode) | 0o700)
        finally:
            os.close(path_fd)
        return _open_below(fd, name, st)


def remove_tree(path: Path | str, *, note: Callable[[str], None] | None = None) -> list[str]:
    """Delete `path` (a folder and everything in it, or a file, link or special file; missing is fine) without
    following any link, without recursion and without raising: returns what could not be removed ("<path
    relative to `path`>: <why>"), empty when everything went; mounts at or below a folder (a run's capped disk:
    helpers.isolation.disks) are detached first. With `note` (say: print to stderr), what was
    left is also said in one line through it. `path`'s own folders above it are the host's."""
    path = Path(path)
    left: list[str] = []
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return left
    except OSError as error:
        left.append(f".: {error.strerror}")
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        _remove_entry(lambda: os.unlink(path), ".", left)
    elif st is not None:
        left += [
            f"{os.path.relpath(point, path)}: a mount point that could not be detached" for point in detach_mounts(path)
        ]  # a run's capped disk (helpers.isolation.disks) goes with it
        for _ in range(3):  # another pass only if the folder was moved under the first (nothing runs there now)
            try:
                _remove_folder(path, left)
                break
            except TreeRefused as error:
                left.append(str(error))
            except OSError as error:
                left.append(f".: {error.strerror or error}")
                break
    if left and note:
        shown = "; ".join(left[:_SHOWN_LEFT]) + (
            f"; and {len(left) - _SHOWN_LEFT} more" if len(left) > _SHOWN_LEFT else ""
        )
        note(f"Note: {path} could not be removed whole: {shown}")
    return left


def _remove_entry(remove: Callable[[], None], shown: str, left: list[str]) -> None:
    try:
        remove()
    except FileNotFoundError:
        pass
    except OSError as error:
        left.append(f"{shown}: {error.strerror or error}")


def _remove_folder(path: Path, left: list[str]) -> None:
    """Empty and delete the folder `path`, depth first, one descriptor open at a time (see the module)."""
    fd = os.open(path, _FOLDER)
    try:
        _writable(fd)
        levels = [_Level(_identity(os.fstat(fd)), os.listdir(fd), "", "")]
        while levels:
            level = levels[-1]
            if level.names:
                name = level.names.pop()
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                shown = _join(level.path, name)
                if not stat.S_ISDIR(st.st_mode):
                    _remove_entry(lambda: os.unlink(name, dir_fd=fd), shown, left)
                    continue
                try:
                    child = _enter(fd, name, st)
                except FileNotFoundError:
                    continue
                except OSError as error:
                    left.append(f"{shown}: {error.strerror or error}")
                    continue
                _writable(child)
                try:
                    names = os.listdir(child)
                except OSError as error:
                    os.close(child)
                    left.append(f"{shown}: {error.strerror or error}")
                    continue
                fd = _swap(fd, child)
                levels.append(_Level(_identity(st), names, shown, name))
                continue
            levels.pop()
            if levels:
                fd = _swap(fd, _up(fd, levels[-1]))
                _remove_entry(lambda: os.rmdir(level.name, dir_fd=fd), level.path, left)
    finally:
        os.close(fd)
    _remove_entry(lambda: os.rmdir(path), ".", left)


def say(line: str) -> None:
    """remove_tree's `note` for cleanup: one line on stderr."""
    print(line, file=sys.stderr)


__all__ = ["walk_tree", "tree_usage", "chown_tree", "remove_tree", "TreeUsage", "TreeRefused", "say"]
# documented in CODE_APPENDIX.md
