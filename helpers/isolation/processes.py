"""Scratch folders and stray processes: whatever a run starts, it ends, even after a kill -9.

Every folder a run works in (workspaces, agent state) lives under one folder per Python process,
`<tmp>/pl-runs/<pid>-<start time>/`. An agent's commands run inside its workspace, so the processes a
task left behind are found by their working directory, whatever process group or session they put
themselves in. At the next start, folders whose owner is gone are removed, and processes still
working in them are killed.

A run's command is made by helpers.isolation.sandboxed_command (sandboxed, confined, its relay open); this module
starts it as a process group, reads its output and ends it.

What this cannot see: a process that changed its working directory out of the scratch folder (a
daemon that chdir()s to /) after its parent died. Agents' commands rarely do; a cgroup would catch it
but needs privileges these machines do not grant to every user.
"""

from __future__ import annotations

import json
from collections import deque
from contextlib import contextmanager
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterator, NamedTuple, Sequence

from helpers.core import config
from helpers.isolation.procfs import alive, kill_processes_in, owner_tag, processes_in
from helpers.isolation.sandboxed_command import relayed, with_cap
from helpers.isolation.scratch import scratch_dir, scratch_root
from helpers.isolation.trees import remove_tree, say

if TYPE_CHECKING:  # the functions below import these where they use them, not on import
    from helpers.isolation.confinement import Limits
    from helpers.isolation.sandbox import SandboxPolicy

CLI_STOP_GRACE_S = 3.0  # after SIGINT to a CLI's process group, before SIGKILL
# What the code under test (and an agent's commands) may see of our environment: an allow-list, so a
# provider key or any other secret set for the notebook never reaches them.
SAFE_VARIABLES = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TERM",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)
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
        # A parent started in the background (nohup, `make ... &`) ignores SIGINT, and children inherit
        # that: restore it, so a timeout's interrupt reaches the CLI before the SIGKILL.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
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


def remove_scratch(folder: Path | str) -> list[str]:
    """End what still works in `folder`, then delete it with helpers.isolation.trees.remove_tree (no link followed,
    any depth, an agent's chmod 000 undone); never raises: returns what could not be removed, said on stderr."""
    try:
        kill_processes_in(folder)
    except OSError:
        pass  # /proc unreadable: the removal below still runs
    return remove_tree(folder, note=say)


def sweep_stale() -> list[Path]:
    """Remove the scratch folders of processes that are gone (killed mid-run), ending what still runs
    in them, and their sandbox cgroups (helpers.isolation.cgroups.sweep); returns the folders swept. Never raises:
    what a killed run left (a 10,000-deep tree, a folder made unreadable, an entry that cannot be removed) is
    removed as far as it can be and the rest said on stderr, never a reason for a later run not to start."""
    from helpers.isolation.cgroups import sweep

    try:
        sweep()
    except OSError as error:  # a cgroup that cannot be removed is said, never a reason not to start
        print(f"Note: stale sandbox cgroups were not swept: {error}", file=sys.stderr)
    root = scratch_root()
    swept: list[Path] = []
    try:
        owners = sorted(os.listdir(root))
    except OSError:  # no scratch folder yet (or none readable): nothing to sweep
        return swept
    for name in owners:
        if not alive(name):  # whatever a killed run left there (a deep tree, unremovable entries): never raises
            remove_scratch(root / name)
            swept.append(root / name)
    return swept


# --- running an agent's CLI as a process group (the agent packages share it) -------------------------
def signal_group(process: subprocess.Popen[str], sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_processes(live: set[subprocess.Popen[str]], lock: threading.Lock) -> None:
    """SIGKILL the process group of every process in `live` (used when a run is interrupted)."""
    with lock:
        processes = list(live)
    for process in processes:
        signal_group(process, signal.SIGKILL)


def read_capped(
    stream: IO[str], kept: deque[str], limit: int | None = None, heard: threading.Event | None = None
) -> None:
    """Read a CLI's output `stream` (text) to its end, keeping its last `limit` characters in `kept`
    (config.MAX_READBACK_BYTES): lines read at most 64 KiB at a time, older ones dropped, and their count said
    in a first line. An agent's commands can print without end; the driver keeps a bounded tail (where a
    CLI's final event is). `heard` is set at the first output."""
    limit = config.MAX_READBACK_BYTES if limit is None else limit
    size = dropped = 0
    for line in iter(lambda: stream.readline(2**16), ""):
        kept.append(line)
        size += len(line)
        if heard is not None:
            heard.set()
        while size > limit and len(kept) > 1:
            size -= len(kept.popleft())
            dropped += 1
    if dropped:
        kept.appendleft(f"[{dropped} earlier lines of output dropped: over the {limit} characters kept]\n")


def _feed(stream: IO[str], text: str) -> None:
    try:
        stream.write(text)
        stream.close()
    except (BrokenPipeError, OSError, ValueError):
        pass  # it exited before reading its task; its output says why


class CLIRun(NamedTuple):
    """One CLI run as the host saw it: its output (agent data), whether the host's timeout stopped it, how long it
    ran, its exit status from the host's own wait (None: not known; negative: the signal that ended it), and the
    sandbox cap that ended it as the host's watcher saw it ("" when none did). `err` ends with the same sentence
    for a reader, but stderr is the agent's to write: a cap is read from `cap`, never from `err`."""

    out: str
    err: str
    timed_out: bool
    seconds: float
    exit_status: int | None
    cap: str = ""


# Called once the CLI's process has started (its output being read), with it and an Event set at its first output,
# before the wait for its end: Cline's runner waits there for its start-up to pass (cline.runner).
Started = Callable[[subprocess.Popen[str], threading.Event], None]


def run_cli(
    args: list[str],
    workspace: Path,
    env: dict[str, str],
    stdin_text: str,
    timeout_s: float,
    live: set[subprocess.Popen[str]],
    lock: threading.Lock,
    pass_fds: tuple[int, ...] = (),
    *,
    home: Path | None = None,
    read_only: Sequence[Path | str] = (),
    sandbox: SandboxPolicy = None,
    reach: str | None = None,
    network: bool = False,
    limits: Limits | None = None,
    started: Started | None = None,
) -> CLIRun:
    """One CLI run in its own process group, as a CLIRun (in the sandbox with `home`, `read_only`, `reach`,
    `network` and `limits` unless `sandbox` is None: see `relayed`; the relay to `reach` lives exactly as long as
    the run). `started`, when given, is called once the process has started (see Started); the timeout counts
    from the start all the same.

    On timeout the group gets SIGINT, then SIGKILL after CLI_STOP_GRACE_S; whatever is left in the group is
    killed when the CLI ends. The child dies with the thread that started it (die_with_parent). A run that a
    sandbox cap ended has that cap's sentence as the last line of stderr (helpers.isolation.confinement.cap_reached
    reads it back). Its exit status is the host's own observation of the process it started (Popen's returncode:
    bwrap's, which is its command's; negative for a signal), never what the run printed: how the run ended is the
    host's to say (helpers.agents.base.ended_as_seen).
    """
    with relayed(args, workspace, home, read_only, sandbox, reach=reach, network=network, limits=limits) as command:
        user = command.user
        if user is not None:
            for fd in pass_fds:  # a key's pipe: the run's own uid opens it
                os.fchown(fd, user, user)
        start = time.monotonic()
        process = subprocess.Popen(
            command,
            cwd=workspace,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
            pass_fds=pass_fds,
            preexec_fn=die_with_parent(),
        )
        with lock:
            live.add(process)
        try:
            out, err, timed_out = _until_ended(process, stdin_text, start + timeout_s, started)
        finally:
            with lock:
                live.discard(process)
        seconds = time.monotonic() - start
    cap = getattr(command, "cap", "")  # the watcher's own observation, after the block (never the run's words)
    return CLIRun(out, with_cap(err, command), timed_out, seconds, process.returncode, cap)


def _until_ended(
    process: subprocess.Popen[str], stdin_text: str, deadline: float, started: Started | None
) -> tuple[str, str, bool]:
    """(stdout, stderr, timed_out) of a process started in its own group, fed `stdin_text`, ended at `deadline`
    (time.monotonic()); nothing of its group is left when this returns."""
    out: deque[str] = deque()  # a bounded tail of each (read_capped)
    err: deque[str] = deque()
    heard = threading.Event()
    threads = [
        threading.Thread(target=_feed, args=(process.stdin, stdin_text), daemon=True),
        threading.Thread(target=read_capped, args=(process.stdout, out, None, heard), daemon=True),
        threading.Thread(target=read_capped, args=(process.stderr, err), daemon=True),
    ]
    for thread in threads:
        thread.start()
    timed_out = False
    try:
        if started is not None:
            started(process, heard)
        process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out = True
        signal_group(process, signal.SIGINT)
        try:
            process.wait(timeout=CLI_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            signal_group(process, signal.SIGKILL)
            process.wait()
    finally:
        signal_group(process, signal.SIGKILL)  # whatever it started in its group
        for thread in threads:
            thread.join(timeout=CLI_STOP_GRACE_S)  # a stray holder of its pipes must not hang us
    return "".join(out), "".join(err), timed_out


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM ends what runs inside like Ctrl-C (its cleanup runs: agents stopped, scratch removed, executed
    notebooks scrubbed) instead of dying in place. A no-op outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects among a CLI's output lines (other lines skipped). Lines end at "\\n" only: an event's
    text may hold U+2028 or U+0085 raw (JSON allows it), which str.splitlines would split it at."""
    events = []
    for line in stdout.split("\n"):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def last_lines(text: str, lines: int = 5) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


__all__ = [
    "run_cli",
    "CLIRun",
    "Started",
    "read_capped",
    "alive",
    "stop_processes",
    "signal_group",
    "json_lines",
    "last_lines",
    "die_with_parent",
    "safe_environment",
    "scratch_dir",
    "remove_scratch",
    "kill_processes_in",
    "processes_in",
    "sweep_stale",
    "owner_tag",
    "terminate_as_interrupt",
]  # public API, documented in CODE_APPENDIX.md
