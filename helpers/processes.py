"""Scratch folders and stray processes: whatever a run starts, it ends, even after a kill -9.

Every folder a run works in (workspaces, agent state) lives under one folder per Python process,
`<tmp>/pl-runs/<pid>-<start time>/`. An agent's commands run inside its workspace, so the processes a
task left behind are found by their working directory, whatever process group or session they put
themselves in. At the next start, folders whose owner is gone are removed, and processes still
working in them are killed.

What this cannot see: a process that changed its working directory out of the scratch folder (a
daemon that chdir()s to /) after its parent died. Agents' commands rarely do; a cgroup would catch it
but needs privileges these machines do not grant to every user.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Callable

SCRATCH_PARENT = "pl-runs"
# What the code under test (and an agent's commands) may see of our environment: an allow-list, so a
# provider key or any other secret set for the notebook never reaches them.
SAFE_VARIABLES = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM",
                  "VIRTUAL_ENV", "CONDA_PREFIX", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY",
                  "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
SAFE_PREFIXES = ("LC_",)


def safe_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of os.environ, plus `extra`."""
    kept = {k: v for k, v in os.environ.items() if k in SAFE_VARIABLES or k.startswith(SAFE_PREFIXES)}
    return {**kept, **(extra or {})}


def die_with_parent() -> Callable[[], None]:
    """A preexec_fn for subprocess.Popen: the child is SIGKILLed when the thread that started it dies,
    so a killed run leaves no agent behind. It also covers a parent killed while the child was still
    starting (before the kernel knew whom to watch), which prctl alone misses."""
    parent = os.getpid()

    def preexec() -> None:
        if not sys.platform.startswith("linux"):
            return
        try:
            import ctypes

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            return
        if os.getppid() != parent:  # the parent died before prctl: nobody will signal us
            os.kill(os.getpid(), signal.SIGKILL)
    return preexec


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


def _alive(tag: str) -> bool:
    pid, _, started = tag.partition("-")
    return pid.isdigit() and _start_time(int(pid)) == started


def scratch_root() -> Path:
    return Path(tempfile.gettempdir()) / SCRATCH_PARENT


def scratch_dir(kind: str) -> Path:
    """A new folder for one run's `kind` of files, inside this process's scratch folder."""
    owner = scratch_root() / owner_tag()
    owner.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=owner))


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
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return len(pids)


def remove_scratch(folder: Path | str) -> None:
    """End what still works in `folder`, then delete it."""
    kill_processes_in(folder)
    shutil.rmtree(folder, ignore_errors=True)


def sweep_stale() -> list[Path]:
    """Remove the scratch folders of processes that are gone (killed mid-run), ending what still runs
    in them; returns the folders removed."""
    root = scratch_root()
    swept = []
    for owner in sorted(root.iterdir()) if root.is_dir() else ():
        if owner.is_dir() and not _alive(owner.name):
            remove_scratch(owner)
            swept.append(owner)
    return swept

__all__ = ["die_with_parent", "safe_environment", "scratch_dir", "remove_scratch", "kill_processes_in", "processes_in", "sweep_stale", "owner_tag"]  # public API, documented in CODE_APPENDIX.md
