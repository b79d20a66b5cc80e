"""Who an agent is inside the sandbox, and what its run may take: a run's privilege dropped and its caps.

    with confined(workspace, home, limits) as c:          # run_cli and helpers.core.processes.relayed do this
        command = sandbox_command(args, workspace, home, user=c.user, limits=c.limits, cgroup=c.cgroup)
        ...run it...
    c.cap                                                  # "" or "sandbox cap reached: the memory cap (4 GiB); ..."

As root (most containers and CI), a run gets a uid of its own, owning its workspace and home while it runs:
inside, the agent holds no capability and owns no file of the machine, so a root-only file (/etc/shadow)
stays unreadable and nothing can be mounted or made into a device node. bwrap starts as root (it can bind
any folder, even under a 0700 /root), hands its first command inside (sandbox_drop.py) only CAP_SETUID and
CAP_SETGID, and that command sets the run's rlimits and gives up root before the agent starts; bwrap has
set no_new_privs, and its binds are nosuid. (bwrap's own `--unshare-user --uid N` would not do: its user
namespace maps N to the caller, root, and every root-owned file inside would be the agent's.)
Not root, the run is the caller's uid, and can read no more than the caller.

Caps (Limits says what enforces each): a cgroup of the run's own, v2 when one can be made at the top of the
cgroup2 hierarchy (root, with pids and memory delegated), else v1 under this process's own cgroups (root,
hierarchies mounted writable), for processes and memory; RLIMIT_NPROC on the run's own uid where no cgroup
caps processes; RLIMIT_FSIZE for one file; a watcher for the workspace's and home's disk use; a tmpfs /tmp
of the disk cap's size. What nothing here can enforce is said once, in a "Note:" line.

A run that reaches a cap is ended (its cgroup, its uid's processes, what works in its folders, all killed)
and named: run_cli puts the cap's sentence last on stderr, helpers.agents.base.capped makes the agent's
result an error naming it, which helpers.core.outcomes counts as rule-induced. The driver, the gateway,
Phoenix and other runs are outside its cgroup and uid: untouched.

Out of reach: the agent may still make a user namespace of its own (root inside it, over nothing of the
host's; a seccomp filter would close that); without a cgroup, memory is uncapped (RLIMIT_AS breaks Node).
Measured (benchmarks/bench_sandbox.py): see the module's figures there.
"""

from __future__ import annotations

import functools
import os
import secrets
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from helpers.core import config
from helpers.core.procfs import alive, kill, kill_processes_in, owner_tag, processes_of

CAP_PREFIX = "sandbox cap reached:"  # how a cap that ended a run is named (helpers.core.outcomes: rule-induced)
CGROUP_FOLDER = "pl-sandbox"  # the folder of run cgroups, in each hierarchy used
USERS = (2**30, 2**31 - 2**16)  # a run's own uid is drawn from here: far above any real user or subuid range
WATCH_S = 1.0  # how often a run's caps are checked
WATCH_CPU_SHARE = 0.05  # the disk check (a walk of the workspace) takes at most this share of a core
KILL_WAIT_S = 5.0  # for a cgroup to empty after its processes were killed


@dataclass(frozen=True)
class Limits:
    """The caps of one sandboxed run (defaults: helpers.core.config SANDBOX_*). What enforces each (`confined`):

    - processes (and threads) at once: the cgroup's pids.max, where a cgroup can be made (v2, else v1 as
      root); else, as root, RLIMIT_NPROC on the run's own uid (a fork past it fails); else nothing (said once).
      A run that reaches it is ended.
    - memory_bytes (its processes' memory and /tmp, a tmpfs): the cgroup's memory limit (and swap: none
      beyond it); the kernel's OOM killer then kills inside the run only, and the run is ended. Without a
      cgroup nothing caps it (said once): RLIMIT_AS would break Node, which reserves large address ranges.
    - disk_bytes (what the workspace and the run's home hold, in allocated blocks): a watcher checks every
      WATCH_S (less often on a large tree) and ends the run past it: a fast writer can overshoot by what it
      writes in that time, never more than file_bytes per file. /tmp is a tmpfs of this size (a write past
      it fails; its pages count as memory).
    - file_bytes (one file): RLIMIT_FSIZE inside (a write past it fails, SIGXFSZ ends the writer); the watcher
      ends a run that has a file at the cap in the workspace or home.
    """

    # read when a Limits is made, so a session (or a test) can change config's
    processes: int = field(default_factory=lambda: config.SANDBOX_PROCESSES)
    memory_bytes: int = field(default_factory=lambda: config.SANDBOX_MEMORY_BYTES)
    disk_bytes: int = field(default_factory=lambda: config.SANDBOX_DISK_BYTES)
    file_bytes: int = field(default_factory=lambda: config.SANDBOX_FILE_BYTES)


@dataclass
class Confinement:
    """One run's privilege and caps (from `confined`): `user`, its own uid (None: the caller is not root and
    the run is the caller's uid); `limits`; `cgroup`, the cgroup.procs files it joins (empty: no cgroup);
    `cap`, once its run is over, the cap that ended it (a sentence starting CAP_PREFIX) or ""."""

    user: int | None
    limits: Limits
    cgroup: list[Path] = field(default_factory=list)
    cap: str = ""


def _size(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def cap_reached(text: str) -> str:
    """The cap a run's stderr names (run_cli adds it last: CAP_PREFIX ...), or ""."""
    found = [line for line in text.splitlines() if line.startswith(CAP_PREFIX)]
    return found[-1] if found else ""


# cgroups: v2 (one folder, both controllers) is preferred; v1 (a folder per controller) as root.
@dataclass(frozen=True)
class _Cgroups:
    version: int
    parents: dict[str, Path]  # controller ("pids", "memory") -> the folder run cgroups are made in


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, file system type, super options) of each mount of this process."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3:
            found.append((fields[4].replace("\\040", " "), tail[0], tail[2]))
    return found


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
        return True
    except OSError:
        return False


def _v2_parent() -> Path | None:
    """A folder at the top of the cgroup2 hierarchy whose children get pids and memory, or None (no cgroup2,
    no write access, or its top holds processes and cannot hand controllers down: a container's namespace)."""
    for point, kind, _ in _mounts():
        if kind != "cgroup2":
            continue
        top = Path(point)
        try:
            if not {"pids", "memory"} <= set((top / "cgroup.controllers").read_text().split()):
                continue
            enabled = set((top / "cgroup.subtree_control").read_text().split())
        except OSError:
            continue
        if not {"pids", "memory"} <= enabled and not _write(top / "cgroup.subtree_control", "+pids +memory"):
            continue
        parent = top / CGROUP_FOLDER
        try:
            parent.mkdir(exist_ok=True)
        except OSError:
            continue
        if _write(parent / "cgroup.subtree_control", "+pids +memory"):
            return parent
    return None


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
    for point, kind, options in _mounts():
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
def _cgroups() -> _Cgroups | None:
    v2 = _v2_parent()
    if v2:
        return _Cgroups(2, {"pids": v2, "memory": v2})
    v1 = _v1_parents()
    return _Cgroups(1, v1) if v1 else None


_counter = iter(range(1, 2**62))


def _make_cgroup(groups: _Cgroups, limits: Limits) -> dict[str, Path]:
    """controller -> this run's new cgroup, its caps set; {} when one cannot be made."""
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
        _remove_cgroup(made)
        return {}
    return made


def _cgroup_procs(folders: dict[str, Path]) -> list[Path]:
    return [folder / "cgroup.procs" for folder in dict.fromkeys(folders.values())]


def _kill_cgroup(folders: dict[str, Path]) -> None:
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


def _remove_cgroup(folders: dict[str, Path]) -> None:
    """Kill what is left in the run's cgroup and remove it (waiting up to KILL_WAIT_S for the kernel)."""
    _kill_cgroup(folders)
    for folder in dict.fromkeys(folders.values()):
        deadline = time.monotonic() + KILL_WAIT_S
        while folder.exists():
            try:
                folder.rmdir()
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    print(f"Note: the sandbox's cgroup {folder} could not be removed; the next start sweeps it.",
                          file=sys.stderr)
                    break
                _kill_cgroup({"": folder})
                time.sleep(0.01)


def sweep_cgroups() -> list[Path]:
    """Remove the run cgroups of processes that are gone (a killed driver's), ending what still runs in
    them; returns those removed. helpers.core.processes.sweep_stale calls it."""
    groups = _cgroups()
    swept = []
    for parent in dict.fromkeys(groups.parents.values()) if groups else ():
        for folder in sorted(parent.iterdir()) if parent.is_dir() else ():
            if folder.is_dir() and not alive(folder.name.rsplit("-", 1)[0]):
                _remove_cgroup({"": folder})
                swept.append(folder)
    return swept


# the run's own uid, and the folders it owns while it runs
def _owners(folders: Sequence[Path]) -> list[tuple[Path, int, int]]:
    return [(folder, (st := folder.stat()).st_uid, st.st_gid) for folder in folders]


def _hand_over(folder: Path, uid: int, gid: int) -> None:
    """Everything in `folder` (itself included) owned by uid:gid; links are changed, never followed.
    (A set-uid bit the agent left is cleared by the kernel when its file changes owner.)"""
    os.chown(folder, uid, gid, follow_symlinks=False)
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            try:
                os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)
            except OSError:
                pass  # gone meanwhile


def _run_user() -> int | None:
    """A uid of this run's own when the caller is root (no file on the machine is its, no other process),
    else None (the run is the caller's uid: it can read no more than the caller)."""
    return USERS[0] + secrets.randbelow(USERS[1] - USERS[0]) if os.geteuid() == 0 else None


# what the watcher measures
def _counter_in(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _disk_use(folders: Sequence[Path], file_cap: int) -> tuple[int, bool]:
    """(bytes allocated under `folders`, whether any one file is at `file_cap`); links are not followed."""
    used, at_cap = 0, False
    for folder in dict.fromkeys(folders):
        for root, dirs, files in os.walk(folder):
            for name in dirs + files:
                try:
                    st = os.lstat(os.path.join(root, name))
                except OSError:
                    continue
                used += st.st_blocks * 512
                at_cap |= st.st_size >= file_cap and not os.path.islink(os.path.join(root, name))
    return used, at_cap


class _Watch:
    """Checks one run's caps until stopped; the first one reached is `cap`, and ends the run."""

    def __init__(self, confinement: Confinement, cgroup: dict[str, Path], folders: Sequence[Path]):
        self.confinement, self.cgroup, self.folders = confinement, cgroup, list(folders)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="sandbox-watch")
        self.thread.start()

    def _run(self) -> None:
        wait = WATCH_S
        while not self.stopped.wait(wait):
            started = time.monotonic()
            if self.check():
                self.end()
                return
            wait = max(WATCH_S, (time.monotonic() - started) / WATCH_CPU_SHARE)

    def check(self) -> str:
        """The cap reached (a sentence starting CAP_PREFIX), or ""; the first one found is kept in `cap`."""
        if self.confinement.cap:
            return self.confinement.cap
        limits, pids, memory = self.confinement.limits, self.cgroup.get("pids"), self.cgroup.get("memory")
        user = self.confinement.user
        reached = ""
        if (pids and _counter_in(pids / "pids.events", "max")) or (
                not pids and user is not None and len(processes_of(user)) >= limits.processes):
            reached = f"the process cap ({limits.processes} processes at once)"
        elif memory and _counter_in(memory / ("memory.events" if _cgroups().version == 2 else "memory.oom_control"),
                                    "oom_kill"):
            reached = f"the memory cap ({_size(limits.memory_bytes)})"
        else:
            used, at_file_cap = _disk_use(self.folders, limits.file_bytes)
            if used > limits.disk_bytes:
                reached = (f"the disk cap ({_size(limits.disk_bytes)} in the workspace and home; "
                           f"{_size(used)} written)")
            elif at_file_cap:
                reached = f"the file-size cap ({_size(limits.file_bytes)} per file)"
        if reached:
            self.confinement.cap = f"{CAP_PREFIX} {reached}; the run was ended."
        return self.confinement.cap

    def end(self) -> None:
        """Kill everything of the run: its cgroup, its own uid's processes, what works in its folders."""
        _kill_cgroup(self.cgroup)
        if self.confinement.user is not None:
            for pid in processes_of(self.confinement.user):
                kill(pid)
        for folder in self.folders:  # bwrap itself works in the workspace
            kill_processes_in(folder)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


_noted_caps: set[str] = set()


def _note_unenforced(groups: _Cgroups | None, user: int | None) -> None:
    """Say once which caps nothing on this machine enforces."""
    missing = []
    if not (groups and "pids" in groups.parents) and user is None:
        missing.append("processes (no cgroup can be made here, and RLIMIT_NPROC needs the run's own uid, "
                       "which needs root)")
    if not (groups and "memory" in groups.parents):
        missing.append("memory (no cgroup can be made here; /tmp is still a tmpfs of the disk cap)")
    note = "; ".join(missing)
    if note and note not in _noted_caps:
        _noted_caps.add(note)
        print(f"Note: the sandbox cannot cap a run's {note}. Disk use and file size stay capped.", file=sys.stderr)


@contextmanager
def confined(workspace: Path | str, home: Path | str, limits: Limits | None = None) -> Iterator[Confinement]:
    """While open, a run whose command is sandbox_command(..., user=c.user, limits=c.limits, cgroup=c.cgroup)
    runs unprivileged within `limits` (default: Limits()):

    - as root, the run gets a uid of its own (drawn from USERS), owning `workspace` and `home` while it runs:
      no file of the machine is its (a root-only file such as /etc/shadow stays unreadable), it holds no
      capability (nothing can be mounted or made a device node), and RLIMIT_NPROC counts only it. Not root:
      the run is the caller, and reads no more than the caller can.
    - a cgroup of its own (v2, else v1) caps processes and memory, where one can be made; otherwise what
      cannot be capped is said once (a "Note:" line). See Limits for what enforces each cap.
    - a watcher ends the run at the first cap reached (killing its cgroup, its uid's processes and what
      works in its folders); `cap` names it.
    On leaving, whatever is left of the run is killed, its cgroup removed (a killed driver's are swept at
    the next start: sweep_cgroups), and `workspace` and `home` handed back to their owners.
    """
    limits = limits or Limits()
    folders = [Path(workspace), Path(home)]
    user = _run_user()
    groups = _cgroups()
    _note_unenforced(groups, user)
    owners = _owners(folders) if user is not None else []
    cgroup = _make_cgroup(groups, limits) if groups else {}
    confinement = Confinement(user, limits, _cgroup_procs(cgroup))
    watch = None
    try:
        for folder, _, _ in owners:
            _hand_over(folder, user, user)
        watch = _Watch(confinement, cgroup, folders)
        yield confinement
    finally:
        if watch:
            watch.stop()
            watch.check()  # a cap reached in the last moments still names why the run ended
            watch.end()
        _remove_cgroup(cgroup)
        for folder, uid, gid in owners:
            if folder.exists():
                _hand_over(folder, uid, gid)


__all__ = ["confined", "Limits", "Confinement", "cap_reached", "sweep_cgroups", "CAP_PREFIX"]  # documented in CODE_APPENDIX.md
