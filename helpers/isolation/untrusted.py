"""Files an agent could have written (its workspace, its run's home), read and written as hostile data.

    text = read_untrusted(state / "traj.json", state, max_bytes=config.MAX_READBACK_BYTES).decode()
    write_untrusted(workspace / ".clinerules" / "learned-rules.md", workspace, data, make_folders=True)
    remove_untrusted(workspace / ".clinerules" / "learned-rules.md", workspace)

The host never follows a link there, on any component of the path (an agent can swap a folder for a link to a
host folder: a delete through it would reach the host), and never opens anything but a folder on the way and a
regular file at the end: a FIFO would block the reader for ever, a device (or a link to /dev/zero) would read
until memory runs out. Each component is checked with lstat and opened relative to its folder with O_NOFOLLOW
(so a swap between the check and the open is refused too), files with O_NONBLOCK (an open never waits), and
every read is capped. What is refused is a RefusedOutput whose message starts with REFUSED and names the path
and the reason: the agent's doing, counted as a rule-induced error (helpers.stats.outcomes.RULE_INDUCED).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

REFUSED = "refused the agent's output"  # how every refusal's message starts (outcomes.RULE_INDUCED matches it)
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class RefusedOutput(RuntimeError):
    """A file or folder an agent left that the host will not read, write or take: a link, a special file, a
    nested git repository, a file over its size cap. The message names the path and the reason."""


def refused(what: object, reason: str) -> RefusedOutput:
    """The refusal of `what` (a path relative to its root, or a description) for `reason`."""
    return RefusedOutput(f"{REFUSED}: {what} {reason}")


def kind_of(mode: int) -> str:
    """What an lstat mode is, in words ("a symbolic link", "a FIFO (named pipe)", "a folder", ...)."""
    for test, name in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISREG, "a file"),
    ):
        if test(mode):
            return name
    return "a special file"


def _parts(path: Path | str, root: Path | str) -> tuple[str, ...]:
    """`path`'s components below `root` (lexically: nothing resolved); ValueError when it is not below it."""
    relative = Path(os.path.normpath(path)).relative_to(os.path.normpath(root))
    if not relative.parts or ".." in relative.parts:
        raise ValueError(f"{path} is not a path below {root}.")
    return relative.parts


def _open_folder(fd: int, name: str, shown: str, make: bool) -> int:
    """The folder `name` in the folder `fd`, opened without following a link (made first when `make`)."""
    try:
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        if not make:
            raise
        os.mkdir(name, 0o755, dir_fd=fd)
        mode = stat.S_IFDIR
    if not stat.S_ISDIR(mode):
        raise refused(
            shown,
            f"is {kind_of(mode)}, where a folder was expected; the host follows no link and "
            "opens no special file in an agent's folders",
        )
    try:
        return os.open(name, _FOLDER_FLAGS, dir_fd=fd)
    except OSError as error:  # swapped for a link between the check and the open
        raise refused(shown, f"changed under the host ({error.strerror})") from None


def _parent(path: Path | str, root: Path | str, make: bool = False) -> tuple[int, str, str]:
    """(an open fd of `path`'s folder, reached from `root` without following any link; its last component; the
    path as shown in messages, relative to root). The caller closes the fd."""
    parts = _parts(path, root)
    fd = os.open(root, _FOLDER_FLAGS & ~os.O_NOFOLLOW)  # the root is the host's own folder
    try:
        for i, name in enumerate(parts[:-1]):
            inner = _open_folder(fd, name, "/".join(parts[: i + 1]), make)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1], "/".join(parts)


def _mode(fd: int, name: str) -> int | None:
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None


def _refuse_unless_file(mode: int, shown: str) -> None:
    if not stat.S_ISREG(mode):
        raise refused(
            shown,
            f"is {kind_of(mode)}, not a regular file; the host follows no link and reads no special file an agent left",
        )


def untrusted_kind(path: Path | str, root: Path | str) -> str:
    """ "missing", "file" or "folder": what `path` is, reached from `root` without following a link; a link or
    special file on the way or at the end is a RefusedOutput naming it."""
    try:
        fd, name, shown = _parent(path, root)
    except FileNotFoundError:
        return "missing"
    try:
        mode = _mode(fd, name)
    finally:
        os.close(fd)
    if mode is None:
        return "missing"
    if stat.S_ISDIR(mode):
        return "folder"
    _refuse_unless_file(mode, shown)
    return "file"


def read_untrusted(path: Path | str, root: Path | str, max_bytes: int) -> bytes:
    """The bytes of the regular file `path` below `root`, at most `max_bytes` of them: never through a link,
    never from a FIFO, device or socket (a RefusedOutput naming the path and what it is), never more (a
    RefusedOutput naming the cap). A missing file is FileNotFoundError. Never blocks: files open O_NONBLOCK."""
    fd, name, shown = _parent(path, root)
    try:
        mode = _mode(fd, name)
        if mode is None:
            raise FileNotFoundError(f"No file {shown} in {root}.")
        _refuse_unless_file(mode, shown)
        try:
            file = os.open(name, os.O_RDONLY | _FILE_FLAGS, dir_fd=fd)
        except OSError as error:
            raise refused(shown, f"changed under the host ({error.strerror})") from None
    finally:
        os.close(fd)
    with os.fdopen(file, "rb") as stream:
        _refuse_unless_file(os.fstat(file).st_mode, shown)
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise refused(shown, f"is larger than the {max_bytes} bytes the host reads of it")
    return data


def write_untrusted(path: Path | str, root: Path | str, data: bytes, *, make_folders: bool = False) -> None:
    """Write `data` as the whole of the regular file `path` below `root` (created when missing; its folders too
    when `make_folders`), never through a link, into a special file or a hard-linked file (a RefusedOutput)."""
    fd, name, shown = _parent(path, root, make=make_folders)
    try:
        mode = _mode(fd, name)
        if mode is not None:
            _refuse_unless_file(mode, shown)
        try:
            file = os.open(name, os.O_WRONLY | os.O_CREAT | _FILE_FLAGS, 0o644, dir_fd=fd)
        except OSError as error:
            raise refused(shown, f"changed under the host ({error.strerror})") from None
    finally:
        os.close(fd)
    with os.fdopen(file, "wb") as stream:
        facts = os.fstat(file)
        _refuse_unless_file(facts.st_mode, shown)
        if facts.st_nlink > 1:  # another name for the same file, maybe outside the workspace
            raise refused(shown, f"is a hard link ({facts.st_nlink} names); the host writes no file with other names")
        os.ftruncate(file, 0)
        stream.write(data)


def remove_untrusted(path: Path | str, root: Path | str) -> None:
    """Delete the regular file `path` below `root` (missing is fine), reached without following any link; a link
    or special file on the way or at the end is a RefusedOutput, and nothing is deleted."""
    try:
        fd, name, shown = _parent(path, root)
    except FileNotFoundError:
        return
    try:
        mode = _mode(fd, name)
        if mode is None:
            return
        _refuse_unless_file(mode, shown)
        os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


__all__ = [
    "RefusedOutput",
    "REFUSED",
    "refused",
    "kind_of",
    "untrusted_kind",
    "read_untrusted",
    "write_untrusted",
    "remove_untrusted",
]  # documented in CODE_APPENDIX.md
