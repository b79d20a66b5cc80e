"""A run's disk cap, enforced by the kernel at write time (helpers.isolation.confinement uses it).

    capped = cap_disk([workspace, home], limits)   # True: every write there now lands on a file system of the cap's size
    disk_full(workspace)                           # True once a write past the cap failed (or would)
    detach_mounts(folder)                          # before a folder is removed (helpers.isolation.trees.remove_tree)

As root, each of a run's writable folders becomes an overlay mounted on itself: its lower layer is the folder as
the host made it (read-only from then on), its upper layer lies on one tmpfs of the run's own, `size=` the disk
cap and `nr_inodes=` its file cap. Everything the run writes or changes (a changed file is copied up whole) lands
in that tmpfs, so a write past the cap fails with ENOSPC
inside the run, whatever the writer does (fallocate, truncate, mmap, many files), and the host's disk never holds
more than the lower layer it wrote itself. That layer is the run's through an idmapped mount (the host's uid 0 is
the run's uid there: a file the run changes is copied up with that owner, nothing on disk changes owner, and no
walk runs); where the kernel cannot, the caller hands it to the run's uid before the overlay covers it. The
tmpfs's mount point is detached at once: the overlays alone hold it, so it lives exactly as long as they do, and
no other path reaches it. Its pages are memory: the run's own writes are charged to the run's memory cgroup (the
memory cap bounds disk and memory together), the host's (a hand-back) to the driver. The overlays stay mounted after the run, so the host reads the run's work at the
folder's own path (the patch, a trajectory); removing the folder detaches them first (`detach_mounts`, called by
helpers.isolation.trees.remove_tree), and a killed driver's are detached by the next start's sweep (its scratch folder
removed). A folder already an overlay (a second run in the same workspace) keeps the one it has: the cap holds
for what all its runs write. Only folders inside this process's scratch folder (helpers.isolation.processes.scratch_dir:
every workspace, home and grading copy the product makes) are capped so: they are removed after their run, or
swept after a kill, and their mounts with them; elsewhere (a folder a caller made), without root, or where the
kernel refuses the mounts, nothing is mounted and the caller falls back to sampling (said once by confinement).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from helpers.isolation.procfs import mounts, owner_tag
from helpers.isolation.scratch import scratch_dir, scratch_root


class DiskLimits(Protocol):
    """What cap_disk reads of a run's caps (helpers.isolation.confinement.Limits, which imports this module)."""

    @property
    def disk_bytes(self) -> int: ...

    @property
    def disk_files(self) -> int: ...


_MNT_DETACH = 2
_NOSUID_NODEV = 2 | 4  # MS_NOSUID | MS_NODEV: a set-uid file or device node the run left is inert on the host
_FULL_BYTES = 2**20  # a capped file system with less free than this is full: the next write fails
# the new mount API (Linux 5.12+, the same numbers on every architecture): an idmapped clone of a folder
_OPEN_TREE, _MOUNT_SETATTR = 428, 442
_OPEN_TREE_CLONE, _AT_EMPTY_PATH, _MOUNT_ATTR_IDMAP = 1, 0x1000, 0x00100000


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _mount(source: str, target: str, kind: str, options: str) -> None:
    if _libc().mount(source.encode(), target.encode(), kind.encode(), _NOSUID_NODEV, options.encode()) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {kind} on {target}: {os.strerror(error)}")


def _detach(target: str) -> bool:
    return bool(_libc().umount2(target.encode(), _MNT_DETACH) == 0)


def is_capped(folder: Path | str) -> bool:
    """Whether `folder` is a mount point of an overlay (one cap_disk made, or a run's before it)."""
    target = os.path.realpath(folder)
    return any(point == target and kind == "overlay" for point, kind, _ in mounts())


@dataclass
class CappedDisk:
    """The disk cap_disk made for a run: `walked`, what the host walks to see what the run wrote (each newly capped
    folder's upper layer, reached through `fd`, the tmpfs's root, which no path reaches any more; a folder capped
    before, itself); close() lets the tmpfs go with its overlays."""

    fd: int
    walked: list[str]
    handed: list[str] = field(default_factory=list)  # folders the host hands over itself (see cap_disk)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def cap_disk(
    folders: Sequence[Path | str], limits: DiskLimits, users: int = -1, hand_over: Callable[[str], Any] | None = None
) -> CappedDisk | None:
    """Make each of `folders` an overlay whose writes land on one tmpfs of `limits.disk_bytes` (and
    `limits.disk_files` inodes): a CappedDisk when every folder is capped so, None when this cannot be done here
    (not root, the kernel refuses, a folder outside this process's scratch folder: nothing would ever detach its
    mount), with nothing left mounted. A folder already capped (a run before) keeps its cap.

    With `users` (a descriptor of user_namespace(the run's own uid)), a newly capped folder's lower layer is an
    idmapped view of it: the host's files (uid and gid 0 on disk) are the run's there, so the run can change them
    (copied up with that owner) and nothing on disk changes owner: no walk over the tree. Where the kernel cannot (no idmapped mounts here),
    `hand_over(folder)` runs first, on the host's own file system, before the overlay covers it. A folder already
    capped is in `handed`: the caller hands it over through its overlay."""
    own = os.path.realpath(scratch_root() / owner_tag())
    real = [os.path.realpath(f) for f in folders]
    if os.geteuid() != 0 or not all(f.startswith(own + "/") for f in real):
        return None  # only inside this process's scratch folder: removed with it, or swept after a kill
    todo = [f for f in real if not is_capped(f)]
    before = [f for f in real if f not in todo]
    if not todo:
        return CappedDisk(-1, before, before)
    # the tmpfs's mount point: a folder of this process's scratch (never inside a folder the sandbox binds)
    disk = str(scratch_dir("disk"))
    made: list[str] = []
    root = -1
    try:
        _mount("tmpfs", disk, "tmpfs", f"size={limits.disk_bytes},nr_inodes={limits.disk_files},mode=0700")
        try:
            root = os.open(disk, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            for i, folder in enumerate(todo):
                upper, work = f"{disk}/{i}/upper", f"{disk}/{i}/work"
                os.makedirs(upper)
                os.makedirs(work)
                lower = _idmapped(folder, users) if users >= 0 else -1
                if lower < 0 and hand_over:
                    hand_over(folder)
                lower = lower if lower >= 0 else os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                try:  # by descriptor: no character of the folder's path can break the option string
                    _mount(
                        "overlay",
                        folder,
                        "overlay",
                        f"lowerdir=/proc/self/fd/{lower},upperdir={upper},workdir={work},metacopy=on,redirect_dir=on",
                    )
                finally:
                    os.close(lower)
                made.append(folder)
        finally:
            _detach(disk)  # the overlays hold the tmpfs now; nothing else can reach it
    except BaseException as error:  # nothing left mounted; a refused hand-over (a tree past the walk's limits) raises
        for folder in reversed(made):
            _detach(folder)
        if root >= 0:
            os.close(root)
        if isinstance(error, OSError):
            return None
        raise
    finally:
        os.rmdir(disk)
    return CappedDisk(root, [f"/proc/self/fd/{root}/{i}/upper" for i in range(len(todo))] + before, before)


def user_namespace(user: int) -> int:
    """A descriptor of a new user namespace mapping uid and gid 0 (the host's files) to `user`, or -1 where one
    cannot be made. Made by util-linux's `unshare` (a process must be single-threaded to make one: this one
    is not), whose `cat` echoing a byte back says the namespace is there; the helper is gone before this returns."""
    program = shutil.which("unshare", path="/usr/bin:/bin")
    cat = shutil.which("cat", path="/usr/bin:/bin")
    if not program or not cat:
        return -1
    try:
        helper = subprocess.Popen(
            [program, "--user", "--", cat], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
    except OSError:
        return -1
    try:
        stdin, stdout = helper.stdin, helper.stdout  # pipes, as asked
        if stdin is None or stdout is None:
            return -1
        stdin.write(b"."), stdin.flush()
        if stdout.read(1) != b".":  # it could not make one (no user namespaces here)
            return -1
        for kind in ("uid_map", "gid_map"):
            Path(f"/proc/{helper.pid}/{kind}").write_text(f"0 {user} 1\n")
        return os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1
    finally:
        helper.kill()
        helper.communicate()


def _idmapped(folder: str, users: int) -> int:
    """A detached clone of `folder` whose owners are seen through the user namespace `users` (a descriptor an
    overlay takes as its lower layer), or -1 where the kernel or the file system cannot."""
    libc = _libc()
    fd: int = libc.syscall(_OPEN_TREE, -100, folder.encode(), _OPEN_TREE_CLONE | os.O_CLOEXEC)  # ctypes: a C int
    if fd < 0:
        return -1
    attr = _MountAttr(_MOUNT_ATTR_IDMAP, 0, 0, users)
    if libc.syscall(_MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))):
        os.close(fd)
        return -1
    return fd


def disk_full(folder: Path | str) -> bool:
    """Whether the file system under `folder` (a capped one: its tmpfs) has no room left: less than a MiB of
    blocks, or no inode."""
    facts = os.statvfs(folder)
    return facts.f_bavail * facts.f_frsize < _FULL_BYTES or (facts.f_files > 0 and facts.f_favail == 0)


def detach_mounts(folder: Path | str) -> list[str]:
    """Detach every mount at or below `folder` (deepest first; lazily: a process still inside keeps its view);
    returns those that could not be. helpers.isolation.trees.remove_tree calls it before removing a folder."""
    target = os.path.realpath(folder)
    points = sorted(
        {p for p, _, _ in mounts() if p == target or p.startswith(target.rstrip("/") + "/")}, key=len, reverse=True
    )
    left = []
    for point in points:
        for _ in range(8):  # mounts stacked on one point come off one at a time
            if not _detach(point):
                break
        if os.path.ismount(point):
            left.append(point)
    return left


__all__ = [
    "cap_disk",
    "user_namespace",
    "CappedDisk",
    "disk_full",
    "detach_mounts",
    "is_capped",
]  # documented in CODE_APPENDIX.md
