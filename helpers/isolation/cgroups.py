"""A cgroup of a run's own, for its process and memory caps (helpers.isolation.confinement uses it).

v2 is preferred: a folder at the top of the cgroup2 hierarchy (root) or beside this process's own cgroup (a
systemd delegation), handing pids and memory down to one cgroup per run. Else v1 (root, hierarchies mounted
writable): a folder under this process's own pids and memory cgroups. Run cgroups are named
`<owner_tag>-<n>`, so the next start sweeps those of a killed driver (`sweep`). Untested here: v2 (this
machine's cgroup2 holds no controllers); v1 is what the tests run.
"""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from helpers.isolation.procfs import alive, kill, mounts, owner_tag


class CgroupLimits(Protocol):
    """What make() reads of a run's caps (helpers.isolation.confinement.Limits, which imports this module)."""

    @property
    def processes(self) -> int: ...

    @property
    def memory_bytes(self) -> int: ...


CGROUP_FOLDER = "pl-sandbox"  # the folder of run cgroups, in each hierarchy used
KILL_WAIT_S = 5.0  # for a cgroup to empty after its processes were killed


@dataclass(frozen=True)
class Cgroups:
    """Where run cgroups are made: `version` 2 (one folder, both controllers) or 1 (a folder per controller)."""

    version: int
    parents: dict[str, Path]  # controller ("pids", "memory") -> the folder run cgroups are made in


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
        return True
    except OSError:
        return False


def _v2_parent() -> Path | None:
    """A folder of the cgroup2 hierarchy whose children get pids and memory, or None. Tried: the top of the
    hierarchy (root), then the parent of this process's own cgroup (a systemd delegation to a user). Neither
    works where that folder holds processes and cannot hand controllers down (a container's namespace)."""
    own = ""
    try:
        own = next(
            (line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::")), ""
        )
    except OSError:
        pass
    for point, kind, _ in mounts():
        if kind != "cgroup2":
            continue
        top = Path(point)
        candidates = [top, *([(top / own.lstrip("/")).parent] if own.strip("/") else [])]
        for base in dict.fromkeys(candidates):
            parent = _v2_folder(base)
            if parent:
                return parent
    return None


def _v2_folder(base: Path) -> Path | None:
    """base/CGROUP_FOLDER, made and handing pids and memory down to its children, or None."""
    try:
        if not {"pids", "memory"} <= set((base / "cgroup.controllers").read_text().split()):
            return None
        enabled = set((base / "cgroup.subtree_control").read_text().split())
    except OSError:
        return None
    if not {"pids", "memory"} <= enabled and not _write(base / "cgroup.subtree_control", "+pids +memory"):
        return None
    parent = base / CGROUP_FOLDER
    try:
        parent.mkdir(exist_ok=True)
    except OSError:
        return None
    return parent if _write(parent / "cgroup.subtree_control", "+pids +memory") else None


def _v1_parents() -> dict[str, Path]:
    """controller -> a folder under this process's own cgroup of that v1 hierarchy, where run cgroups can be
    made (pids, memory; those whose hierarchy is mounted writable here)."""
    own = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                own[controller] = path
    except (OSError, ValueError):
        return {}
    parents = {}
    for point, kind, options in mounts():
        for controller in ("pids", "memory"):
            if kind == "cgroup" and controller in options.split(",") and controller in own:
                parent = Path(point) / own[controller].lstrip("/") / CGROUP_FOLDER
                try:
                    parent.mkdir(exist_ok=True)
                except OSError:
                    continue
                parents[controller] = parent
    return parents


@functools.lru_cache(maxsize=1)
def available() -> Cgroups | None:
    """Where run cgroups can be made here (v2 preferred, else v1), or None; looked up once."""
    v2 = _v2_parent()
    if v2:
        return Cgroups(2, {"pids": v2, "memory": v2})
    v1 = _v1_parents()
    return Cgroups(1, v1) if v1 else None


_counter = iter(range(1, 2**62))


def make(groups: Cgroups, limits: CgroupLimits) -> dict[str, Path]:
    """controller -> a new run cgroup, named for this process (owner_tag), with `limits`' process and memory
    caps set (a helpers.isolation.confinement.Limits); {} when one cannot be made."""
    name = f"{owner_tag()}-{next(_counter)}"  # whose it is: the sweep removes those of processes gone
    made: dict[str, Path] = {}
    for controller, parent in groups.parents.items():
        folder = parent / name
        try:
            folder.mkdir(exist_ok=True)
        except OSError:
            continue
        made[controller] = folder
    pids, memory = made.get("pids"), made.get("memory")
    ok = True
    if pids:
        ok &= _write(pids / "pids.max", str(limits.processes))
    if memory and groups.version == 2:
        ok &= _write(memory / "memory.max", str(limits.memory_bytes))
        _write(memory / "memory.swap.max", "0")  # absent without swap accounting
        _write(memory / "memory.oom.group", "1")
    elif memory:
        ok &= _write(memory / "memory.limit_in_bytes", str(limits.memory_bytes))
        _write(memory / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))  # absent without swap accounting
    if not ok:
        remove(made)
        return {}
    return made


def procs_files(folders: dict[str, Path]) -> list[Path]:
    """The cgroup.procs file of each folder of a run cgroup (what a process writes itself into, to join)."""
    return [folder / "cgroup.procs" for folder in dict.fromkeys(folders.values())]


def kill_all(folders: dict[str, Path]) -> None:
    """SIGKILL every process in a run cgroup (v2: cgroup.kill; v1: its members until none is left)."""
    for folder in dict.fromkeys(folders.values()):
        if _write(folder / "cgroup.kill", "1"):  # v2: the kernel kills them all, new forks included
            continue
        for procs in (folder / "cgroup.procs",):
            for _ in range(100):  # v1: until no fork slips between reading and killing
                try:
                    pids = [int(p) for p in procs.read_text().split()]
                except OSError:
                    break
                if not pids:
                    break
                for pid in pids:
                    kill(pid)


def remove(folders: dict[str, Path]) -> None:
    """Kill what is left in the run's cgroup and remove it (waiting up to KILL_WAIT_S for the kernel)."""
    kill_all(folders)
    for folder in dict.fromkeys(folders.values()):
        deadline = time.monotonic() + KILL_WAIT_S
        while folder.exists():
            try:
                folder.rmdir()
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    print(
                        f"Note: the sandbox's cgroup {folder} could not be removed; the next start sweeps it.",
                        file=sys.stderr,
                    )
                    break
                kill_all({"": folder})
                time.sleep(0.01)


def sweep() -> list[Path]:
    """Remove the run cgroups of processes that are gone (a killed driver's), ending what still runs in
    them; returns those removed. helpers.isolation.processes.sweep_stale calls it at each start."""
    groups = available()
    swept = []
    for parent in dict.fromkeys(groups.parents.values()) if groups else ():
        for folder in sorted(parent.iterdir()) if parent.is_dir() else ():
            if folder.is_dir() and not alive(folder.name.rsplit("-", 1)[0]):
                remove({"": folder})
                swept.append(folder)
    return swept


# the run's own uid, and the folders it owns while it runs


def counter(path: Path, key: str) -> int:
    """The number after `key` in a cgroup events file (pids.events max, memory.events oom_kill), 0 if none."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


__all__ = [
    "available",
    "make",
    "procs_files",
    "kill_all",
    "remove",
    "sweep",
    "counter",
    "Cgroups",
]  # documented in CODE_APPENDIX.md
