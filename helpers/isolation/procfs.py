"""What /proc says about processes: who started when, who works where, who runs as whom; and killing them.

helpers.isolation.processes (scratch folders, stray processes) and helpers.isolation.confinement (a run's own uid and
cgroup) both find processes this way.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path


def _start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot), or None when it is not running."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_tag(pid: int | None = None) -> str:
    """`<pid>-<start time>`: names this process's scratch folder; unique even after pid reuse."""
    pid = pid or os.getpid()
    return f"{pid}-{_start_time(pid) or 0}"


def alive(tag: str) -> bool:
    """Whether the process an owner_tag names still runs."""
    pid, _, started = tag.partition("-")
    return pid.isdigit() and _start_time(int(pid)) == started


def processes_in(folder: Path | str) -> list[int]:
    """Pids (other than ours) whose working directory is `folder` or below it, deleted or not."""
    root = os.path.realpath(folder)
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd").removesuffix(" (deleted)")
        except OSError:
            continue
        if cwd == root or cwd.startswith(root + os.sep):
            found.append(int(entry.name))
    return found


def kill_processes_in(folder: Path | str) -> int:
    """SIGKILL every process working in `folder`; returns how many there were."""
    pids = processes_in(folder)
    for pid in pids:
        kill(pid)
    return len(pids)


def processes_of(uid: int) -> list[int]:
    """Pids whose real uid is `uid`."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/status") as status:
                    for line in status:
                        if line.startswith("Uid:"):
                            if int(line.split()[1]) == uid:
                                found.append(int(entry.name))
                            break
            except (OSError, ValueError, IndexError):
                pass
    return found


def kill(pid: int) -> None:
    """SIGKILL `pid`, if it is still there and ours to kill."""
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def mounts() -> list[tuple[str, str, str]]:
    """(mount point, file system type, super options) of each mount this process sees, from /proc/self/mountinfo
    (octal escapes such as \\040 for a space decoded); [] when it cannot be read."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            found.append((point, tail[0], tail[2]))
    return found


__all__ = [
    "mounts",
    "owner_tag",
    "alive",
    "processes_in",
    "kill_processes_in",
    "processes_of",
    "kill",
]  # documented in CODE_APPENDIX.md
