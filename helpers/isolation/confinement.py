"""Who an agent is inside the sandbox, and what its run may take: a run's privilege dropped and its caps.

    with confined(workspace, home, limits) as c:          # run_cli and helpers.isolation.sandboxed_command.relayed do this
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

Caps (Limits says what enforces each): a cgroup of the run's own (helpers.isolation.cgroups: v2, else v1) for
processes and memory; RLIMIT_NPROC on the run's own uid where no cgroup caps processes; RLIMIT_FSIZE for one
file; the kernel, at write time, for what the run writes to its workspace and home (helpers.isolation.disks: as root,
overlays whose writes land on a tmpfs of the disk cap), else a watcher sampling it; a tmpfs /tmp of the disk
cap's size. What nothing here can enforce is said once, in a "Note:" line. The watcher's walks go through
helpers.isolation.trees (any depth, no link followed, bounded); a watcher that cannot check ends the run, named.

A run that reaches a cap is ended (its cgroup, its uid's processes, what works in its folders, all killed)
and named: run_cli puts the cap's sentence last on stderr, helpers.agents.base.capped makes the agent's
result an error naming it, which helpers.stats.outcomes counts as rule-induced. The driver, the gateway,
Phoenix and other runs are outside its cgroup and uid: untouched.

No user namespace can be made inside (a seccomp filter bwrap installs, helpers.isolation.seccomp: unshare and
clone with CLONE_NEWUSER fail), so no "root" of the agent's own can mount anything either. Out of reach: without a cgroup, memory is
uncapped (RLIMIT_AS breaks Node); the kernel itself (a kernel bug reachable from an unprivileged process).
Measured (benchmarks/bench_sandbox.py, which prints `Confinement.stages` when the start misses its target; figures
in docs/speed.md): where the kernel idmaps (helpers.isolation.disks) no walk hands the tree over, the run's uid and
its user namespace are made one run ahead (helpers.isolation.ahead), and util-linux's prlimit and setpriv give up
root inside; the watcher then takes at most WATCH_CPU_SHARE of a core.
"""

from __future__ import annotations

import os
import secrets
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from helpers.isolation import cgroups, disks
from helpers.isolation.ahead import MadeAhead
from helpers.core import config
from helpers.isolation.procfs import kill, kill_processes_in, processes_of
from helpers.isolation.seccomp import SECCOMP_FILE, seccomp_program
from helpers.isolation.trees import chown_tree, remove_tree, tree_usage
from helpers.isolation.untrusted import REFUSED, RefusedOutput

CAP_PREFIX = "sandbox cap reached:"  # how a cap that ended a run is named (helpers.stats.outcomes: rule-induced)
USERS = (2**30, 2**31 - 2**16)  # a run's own uid is drawn from here: far above any real user or subuid range
KERNEL_DISK, SAMPLED_DISK = "the kernel, at write time", "a watcher, every WATCH_S"  # Confinement.disk
WATCH_S = 1.0  # how often a run's caps are checked
WATCH_CPU_SHARE = 0.05  # the disk check (a walk of the workspace) takes at most this share of a core
KILL_WAIT_S = 5.0  # for a run's processes to be gone after they were killed


@dataclass(frozen=True)
class Limits:
    """The caps of one sandboxed run (defaults: helpers.core.config SANDBOX_*). What enforces each (`confined`):

    - processes (and threads) at once: the cgroup's pids.max, where a cgroup can be made (v2, else v1 as
      root); else, as root, RLIMIT_NPROC on the run's own uid (a fork past it fails); else nothing (said once).
      A run that reaches it is ended.
    - memory_bytes (its processes' memory and /tmp, a tmpfs): the cgroup's memory limit (and swap: none
      beyond it); the kernel's OOM killer then kills inside the run only, and the run is ended. Without a
      cgroup nothing caps it (said once): RLIMIT_AS would break Node, which reserves large address ranges.
    - disk_bytes and disk_files (what the run writes to its workspace and home, in bytes and in files): as root,
      the kernel, at write time (helpers.isolation.disks: both folders become overlays whose writes land on one tmpfs
      of this size and inode count; a write past it fails with ENOSPC, whatever the writer does), and the
      watcher ends the run once it is full. Otherwise (not root, or the kernel refuses the mounts; said once)
      a watcher samples what they hold every WATCH_S (less often on a large tree) and ends the run past it: a
      fast writer can overshoot by what it writes in that time. /tmp is a tmpfs of disk_bytes (a write past it
      fails; its pages count as memory).
    - file_bytes (one file): RLIMIT_FSIZE inside (a write past it fails, SIGXFSZ ends the writer); the watcher
      ends a run that has a file at the cap in the workspace or home.
    """

    # read when a Limits is made, so a session (or a test) can change config's
    processes: int = field(default_factory=lambda: config.SANDBOX_PROCESSES)
    memory_bytes: int = field(default_factory=lambda: config.SANDBOX_MEMORY_BYTES)
    disk_bytes: int = field(default_factory=lambda: config.SANDBOX_DISK_BYTES)
    file_bytes: int = field(default_factory=lambda: config.SANDBOX_FILE_BYTES)
    disk_files: int = field(default_factory=lambda: config.SANDBOX_DISK_FILES)


@dataclass
class Confinement:
    """One run's privilege and caps (from `confined`): `user`, its own uid (None: the caller is not root and
    the run is the caller's uid); `limits`; `cgroup`, the cgroup.procs files it joins (empty: no cgroup);
    `seccomp`, the filter file bwrap installs (no new user namespace inside; None: none for this machine);
    `disk`, what enforces the disk cap (KERNEL_DISK or SAMPLED_DISK); `cap`, once its run is over, the cap that
    ended it (a sentence starting CAP_PREFIX) or ""; `stages`, the seconds each step of setting the run up and
    ending it took (benchmarks/bench_sandbox.py prints them when the sandbox's start misses its target)."""

    user: int | None
    limits: Limits
    cgroup: list[Path] = field(default_factory=list)
    seccomp: Path | None = None
    disk: str = ""
    cap: str = ""
    stages: dict[str, float] = field(default_factory=dict)  # seconds each step of its set-up and end took


def _size(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def cap_reached(text: str) -> str:
    """The cap a run's stderr names (run_cli adds it last: CAP_PREFIX ...), or ""."""
    found = [line for line in text.splitlines() if line.startswith(CAP_PREFIX)]
    return found[-1] if found else ""


def _owners(folders: Sequence[Path]) -> list[tuple[Path, int, int]]:
    return [(folder, (st := folder.stat()).st_uid, st.st_gid) for folder in folders]


def _tree(folder: Path, owner: tuple[int, int] | None = None) -> tuple[int, int]:
    """(bytes allocated under `folder`, the size of its largest file); with `owner` (uid, gid), everything in
    it, itself included, is handed to that owner on the way. Walked by helpers.isolation.trees: iterative (any
    depth), never following a link, bounded (TreeRefused past its limits); a missing folder holds nothing."""
    try:
        usage = chown_tree(folder, *owner) if owner else tree_usage(folder)
    except FileNotFoundError:
        return 0, 0
    return usage.bytes, usage.largest


def _run_user() -> tuple[int | None, int]:
    """(a uid of this run's own, a user namespace mapping the host's files to it: a descriptor, -1 for none) when
    the caller is root (no file on the machine is its, no other process), else (None, -1): the run is the
    caller's uid, and can read no more than the caller."""
    return _users.take() if os.geteuid() == 0 else (None, -1)


def _new_user() -> tuple[int, int]:
    user = USERS[0] + secrets.randbelow(USERS[1] - USERS[0])
    return user, disks.user_namespace(user)


_users = MadeAhead(_new_user, "sandbox-next-user")  # a helper process each: made off a run's start


# what the watcher measures
class _Watch:
    """Checks one run's caps until stopped; the first one reached is `cap`, and ends the run."""

    def __init__(
        self,
        confinement: Confinement,
        cgroup: dict[str, Path],
        folders: Sequence[Path],
        walked: Sequence[Path | str] = (),
    ):
        self.confinement, self.cgroup, self.folders = confinement, cgroup, list(folders)
        self.kernel_disk = confinement.disk == KERNEL_DISK
        self.walked = [Path(p) for p in walked] or self.folders  # what the run wrote (the kernel's cap), or all
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="sandbox-watch")
        self.thread.start()

    def _run(self) -> None:
        wait = WATCH_S
        while not self.stopped.wait(wait):
            started = time.monotonic()
            try:
                reached = self.check()
            except Exception as error:  # a watcher that cannot watch ends the run: it fails closed, never silently
                reached = self.failed(error)
            if reached:
                self.end()
                return
            wait = max(WATCH_S, (time.monotonic() - started) / WATCH_CPU_SHARE)

    def failed(self, error: BaseException) -> str:
        """The run's end when its caps cannot be checked (a tree past the walk's limits, an unreadable folder)."""
        reason = (
            str(error).removeprefix(f"{REFUSED}: ")
            if isinstance(error, RefusedOutput)
            else (f"{type(error).__name__}: {error}")
        )
        return self._reached(f"the sandbox could not check the run's disk use ({reason[:300]})")

    def check(self) -> str:
        """The cap reached (a sentence starting CAP_PREFIX), or ""; the first one found is kept in `cap`."""
        return self.check_events() or self.check_full() or self.check_disk(*self.disk_use())

    def check_full(self) -> str:
        """The disk cap, where the kernel enforces it and the run's file system is full (a write failed)."""
        if self.kernel_disk and any(disks.disk_full(folder) for folder in self.folders):
            return self._reached(
                f"the disk cap ({_size(self.confinement.limits.disk_bytes)} written to the "
                "workspace and home; a write past it failed)"
            )
        return self.confinement.cap

    def check_events(self) -> str:
        """The process or memory cap, if the run reached one (its cgroup's events; else its uid's processes)."""
        limits, pids, memory = self.confinement.limits, self.cgroup.get("pids"), self.cgroup.get("memory")
        user = self.confinement.user
        if (pids and cgroups.counter(pids / "pids.events", "max")) or (
            not pids and user is not None and len(processes_of(user)) >= limits.processes
        ):
            return self._reached(f"the process cap ({limits.processes} processes at once)")
        groups = cgroups.available()  # there is a memory cgroup only where there are cgroups
        events = "memory.events" if groups is not None and groups.version == 2 else "memory.oom_control"
        if memory and cgroups.counter(memory / events, "oom_kill"):
            return self._reached(f"the memory cap ({_size(limits.memory_bytes)})")
        return self.confinement.cap

    def disk_use(self) -> tuple[int, int]:
        """(bytes allocated in the run's folders, their largest file's size): in what the run wrote, with the
        kernel's cap (its overlays' upper layers); else in all they hold."""
        trees = [_tree(folder) for folder in self.walked]
        return sum(used for used, _ in trees), max(largest for _, largest in trees)

    def check_disk(self, used: int, largest: int) -> str:
        """The disk or file-size cap, if `used` or `largest` (disk_use's) reached one."""
        limits = self.confinement.limits
        if (
            used > limits.disk_bytes and not self.kernel_disk
        ):  # with the kernel's cap, the host's files below don't count
            return self._reached(
                f"the disk cap ({_size(limits.disk_bytes)} in the workspace and home; {_size(used)} written)"
            )
        if largest >= limits.file_bytes:
            return self._reached(f"the file-size cap ({_size(limits.file_bytes)} per file)")
        return self.confinement.cap

    def _reached(self, cap: str) -> str:
        if not self.confinement.cap:
            self.confinement.cap = f"{CAP_PREFIX} {cap}; the run was ended."
        return self.confinement.cap

    def end(self) -> None:
        """Kill everything of the run: its cgroup; else its own uid's processes (until none is left); else
        what works in its folders (bwrap itself works in the workspace)."""
        user = self.confinement.user
        if self.cgroup:
            cgroups.kill_all(self.cgroup)
        elif user is not None:
            deadline = time.monotonic() + KILL_WAIT_S
            while (left := processes_of(user)) and time.monotonic() < deadline:
                for pid in left:
                    kill(pid)
                time.sleep(0.01)
        else:
            for folder in self.folders:
                kill_processes_in(folder)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


_noted_caps: set[str] = set()


def _note_unenforced(groups: cgroups.Cgroups | None, user: int | None, disk: str = KERNEL_DISK) -> None:
    """Say once which caps nothing on this machine enforces, and a disk cap only sampled."""
    missing = []
    if disk != KERNEL_DISK:
        missing.append(
            "disk use at write time (not root, the kernel refused the mounts, or a folder outside this "
            "process's scratch folder: it is sampled every second instead, and a fast writer overshoots "
            "by what it writes in that time)"
        )
    if not (groups and "pids" in groups.parents) and user is None:
        missing.append(
            "processes (no cgroup can be made here, and RLIMIT_NPROC needs the run's own uid, which needs root)"
        )
    if not (groups and "memory" in groups.parents):
        missing.append("memory (no cgroup can be made here; /tmp is still a tmpfs of the disk cap)")
    if not seccomp_program():
        missing.append(
            "user namespaces (no seccomp filter for this architecture: the agent may make one of "
            "its own, root inside it over nothing of the host's)"
        )
    note = "; ".join(missing)
    if note and note not in _noted_caps:
        _noted_caps.add(note)
        print(f"Note: the sandbox cannot cap a run's {note}. File size stays capped.", file=sys.stderr)


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
    the next start: helpers.isolation.cgroups.sweep), and `workspace` and `home` handed back to their owners.
    """
    limits = limits or Limits()
    folders = list(dict.fromkeys([Path(workspace), Path(home)]))
    stages: dict[str, float] = {}
    lap = _laps(stages)
    user, users = _run_user()
    lap("uid and user namespace")
    groups = cgroups.available()
    owners = _owners(folders) if user is not None else []
    # As root, each folder's own files become the run's without a walk where the kernel can (an idmapped lower
    # layer: helpers.isolation.disks); else handed over on the host's own file system, before an overlay covers it
    try:
        capped = disks.cap_disk(
            folders,
            limits,
            users,  # it caps (and hands over) only as root, when user is set
            hand_over=None if user is None else (lambda folder: _tree(Path(folder), (user, user))),
        )
    finally:
        if users >= 0:
            os.close(users)
    disk = KERNEL_DISK if capped else SAMPLED_DISK
    lap("disk cap (tmpfs and overlays)")
    _note_unenforced(groups, user, disk)
    if capped and user is not None:
        for handed in capped.handed:  # capped by a run before: handed over through its overlay
            _tree(Path(handed), (user, user))
        for folder, _, _ in owners:  # an overlay's top folder is its upper layer's, made by the host: the run's too
            os.chown(folder, user, user)
        owners = []  # nothing to hand back after the run (below)
    if user is not None:  # else no owners: only root hands folders over
        for folder, _, _ in owners:  # no kernel cap: handed over on the host's file system, and back after the run
            _tree(folder, (user, user))
    lap("hand-over walks")
    cgroup = cgroups.make(groups, limits) if groups else {}
    confinement = Confinement(user, limits, cgroups.procs_files(cgroup), disk=disk, stages=stages)
    lap("cgroup")
    watch = None
    program = seccomp_program()
    try:
        if program:  # the host's file (after the hand-over): read by bwrap before anything of the run starts
            confinement.seccomp = Path(home) / SECCOMP_FILE
            confinement.seccomp.unlink(missing_ok=True)
            confinement.seccomp.write_bytes(program)
        watch = _Watch(confinement, cgroup, folders, capped.walked if capped else ())
        lap("seccomp filter and watcher")
        if user is not None:
            _users.refill()  # the next run's uid and user namespace, made while this one runs
        yield confinement
    finally:
        lap("the run")
        if watch:
            watch.stop()
            watch.check_events()  # a cap reached in the last moments still names why the run ended
            watch.end()  # whatever is left of the run
        cgroups.remove(cgroup)
        lap("end: watcher, kill, cgroup removed")
        # nothing of the run runs now: its folders are handed back (and measured) with no race. Capped by the
        # kernel, they are not: what the run wrote goes with the overlay when the folder is removed, the host
        # reads it as root meanwhile, and the overlay is mounted nosuid and nodev (a set-uid file is inert).
        if confinement.seccomp:
            remove_tree(confinement.seccomp)  # in the run's home: whatever the agent put there, never raises
        try:
            walked = [Path(p) for p in capped.walked] if capped else folders
            trees = [_tree(folder, (uid, gid)) for folder, uid, gid in owners] or [_tree(f) for f in walked]
            if watch:
                watch.check_disk(sum(used for used, _ in trees), max(largest for _, largest in trees))
        except (OSError, RefusedOutput) as error:  # past the walk's limits: the rest goes with the workspace
            if watch:
                watch.failed(error)
        finally:
            if capped:
                capped.close()
            lap("end: disk-use walks")


def _laps(stages: dict[str, float]) -> Callable[[str], None]:
    """lap(name): the seconds since the last lap, kept in `stages` under `name` (added to what is there)."""
    last = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        stages[name] = stages.get(name, 0.0) + now - last[0]
        last[0] = now

    return lap


__all__ = ["confined", "Limits", "Confinement", "cap_reached", "CAP_PREFIX"]  # documented in CODE_APPENDIX.md
