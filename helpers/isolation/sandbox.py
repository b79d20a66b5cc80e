"""The sandbox every agent run executes in: bubblewrap (`bwrap`), a Linux user-namespace sandbox.

An agent runs commands a model chose, over code strangers wrote. Inside the sandbox it sees:
- its own PID namespace: no other process of the machine (not the notebook kernel that may hold a key in
  its environment or memory, not the gateway, not Phoenix), and when the run ends, is killed or times
  out, the kernel kills everything it started (a `setsid` daemon included);
- a filesystem holding only the system folders read-only (/usr, /etc, the interpreter's and Node's
  install folders, the agent's CLI), a per-run home and its workspace read-write, and an empty /tmp:
  not the checkout (its `.env`, `.cache/` with hidden tests, results, other workspaces), not the user's
  home;
- its own network namespace, holding only `lo`: no other loopback service (Phoenix with its gold patches,
  a Ray cluster, any server), no other host, no DNS (no resolver is reachable: a lookup fails at once).
  The one way out is `reach`, the gateway's URL, on its own loopback address and port inside (the agent
  keeps its base URL), where a relay on the host (one thread of the process that started the run, at most
  RELAY_MAX_CONNECTIONS connections at once: helpers.isolation.relay) accepts each connection and connects
  it to the gateway. As root, the host makes the namespace itself, ahead of the run, and the relay listens
  in it (run_network: helpers.isolation.netns; the sandbox joins it before bwrap starts). Otherwise bwrap
  makes it, and a forwarder inside (sandbox_forwarder.py, run with the interpreter in isolated mode,
  listening before the agent starts) pipes each connection to a Unix socket bound in from the run's home,
  where the relay listens (reach_relay), as Anthropic's sandbox-runtime and Codex's proxy routing do. Bytes
  pass as they come (streams stay streams). A gateway on another machine (PL_GATEWAY_HOST, remote Ray nodes)
  cannot be given its own address inside: the agent is handed 127.0.0.1 on the same port (inside_url).
  `network=True` shares the host's network instead: only for a set-up command the user allowed to
  download. The host's side of that way out (run_network, reach_relay, inside_url) is sandbox_reach.py's.
Who the agent is inside and what it may take (helpers.isolation.confinement, which run_cli and `relayed` apply to
every agent run and every grading): as root, a uid of the run's own with no capability (root-only files stay
unreadable, nothing can be mounted or made into a device node); its processes, memory, disk use and file
size capped, a run over a cap ended and named.
On macOS nothing here applies (`srt`, Anthropic's sandbox-runtime, or `sandbox-exec` would be the
mechanism there): the opt-out below is required.

Measured (benchmarks/bench_sandbox.py, 2 cores; the figures are in docs/speed.md): bwrap adds a few ms to a run's
start; its own network, the relay, the run's own uid and its caps the rest of the whole added start (targets: 50 ms
for an agent run in 2,000 files, 30 ms for a grading); a model call gains about 0.2 ms on a kept-alive connection,
about 1 ms on a fresh one. It needs either root or unprivileged user namespaces (both hold on these
machines and most Linux distributions).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from helpers.core.protocols import SandboxPolicy
from helpers.isolation.netns import nsenter
from helpers.isolation.sandbox_reach import listen_host, reach_address, relay_socket

if TYPE_CHECKING:  # confinement imports this module; the type alone is needed here
    from helpers.isolation.confinement import Limits

# How a run is isolated: "required" (every run with a real model: in the sandbox, or not at all unless the user
# opted out), "if-available" (the scripted dry run, whose commands come from our own script: on the host where no
# sandbox can start), None (unsandboxed: unsafe, the tests' own runs). Checked once where it comes in.
SANDBOX_POLICIES: tuple[SandboxPolicy, ...] = ("required", "if-available", None)


def sandbox_policy(value: object) -> SandboxPolicy:
    """`value` as a SandboxPolicy; ValueError naming the choices for anything else."""
    for policy in SANDBOX_POLICIES:
        if value == policy:
            return policy
    raise ValueError(f"sandbox must be 'required', 'if-available' or None (unsafe), not {value!r}.")


# The explicit, unsafe opt-out: agents run on the host, seeing what the user's shell sees.
UNSAFE_OPT_OUT = "PL_UNSAFE_NO_SANDBOX"
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap)"
)
SYSTEM_FOLDERS = ("/usr", "/etc", "/opt/conda")
ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
INSIDE = "/run/pl-sandbox"  # where the forwarder and the relay's socket appear inside the sandbox
FORWARDER = Path(__file__).with_name("sandbox_forwarder.py")
DROP = Path(__file__).with_name("sandbox_drop.py")


def host_program(name: str) -> str:
    """The absolute path of the program `name` the host runs, found in PATH's absolute folders only: a relative entry
    ("", ".", "node_modules/.bin") is searched from the child's working directory, an agent's workspace, and would run
    the agent's own `sh`, `bwrap` or `git` on the host, as the host's user. FileNotFoundError when there is none."""
    folders = [folder for folder in os.environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(folder)]
    found = shutil.which(name, path=os.pathsep.join(folders))
    if not found:
        raise FileNotFoundError(2, f"{name} was not found in PATH's absolute folders", name)
    return os.path.abspath(found)


class SandboxUnavailable(RuntimeError):
    """No sandbox can start here, and the user did not opt out of it."""


def opted_out() -> bool:
    return os.environ.get(UNSAFE_OPT_OUT, "").strip().lower() in ("1", "true", "yes")


def unavailable_reason() -> str | None:
    """Why agents cannot be sandboxed on this machine (None when they can)."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox uses Linux namespaces and this is {sys.platform}"
    if not shutil.which("bwrap"):
        return f"bwrap was not found: {INSTALL_HINT}"
    probe = subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--die-with-parent", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        return (
            f"bwrap cannot create namespaces here ({probe.stderr.strip()[:200]}); enable unprivileged user "
            "namespaces (sysctl kernel.unprivileged_userns_clone=1) or install bwrap setuid"
        )
    return None


def require_sandbox() -> bool:
    """True when agents run sandboxed; False only under the explicit opt-out (after saying what that
    exposes); SandboxUnavailable with the one-line fix otherwise."""
    if opted_out():
        print(
            f"WARNING: {UNSAFE_OPT_OUT} is set: agents run unsandboxed and their commands can read your files, "
            "every process's environment and memory you can read (a provider key included, if a process "
            "holding it is visible), and leave processes running.",
            file=sys.stderr,
        )
        return False
    reason = unavailable_reason()
    if reason:
        raise SandboxUnavailable(
            f"Agents run in a sandbox and none can start: {reason}. (Unsafe: set "
            f"{UNSAFE_OPT_OUT}=1 to run them unsandboxed; see docs/security.md.)"
        )
    return True


_noted: set[str] = set()


def use_sandbox(required: bool) -> bool:
    """Whether to run an agent in the sandbox: yes when one can start here. Otherwise: under the unsafe
    opt-out, no (said once); for a run that does not require it (the scripted dry run: every command the
    agent runs comes from our own script), no (said once); else SandboxUnavailable with the fix."""
    reason = _reason()
    if reason is None:
        return True
    if required and not opted_out():
        return require_sandbox()  # raises, saying how to get one
    note = f"{UNSAFE_OPT_OUT} is set" if opted_out() else "this run does not require one (the scripted dry run)"
    if note not in _noted:
        _noted.add(note)
        print(f"Note: agents run unsandboxed: {reason}; {note}.", file=sys.stderr)
    return False


@functools.lru_cache(maxsize=1)
def _reason() -> str | None:
    return unavailable_reason()


def _install_prefix(executable: str | None) -> Path | None:
    """The folder an interpreter (Node, Python) is installed in, when it is outside the system folders."""
    if not executable:
        return None
    real = Path(os.path.realpath(executable))
    prefix = real.parent.parent  # <prefix>/bin/<exe>
    return None if any(str(prefix).startswith(folder) for folder in SYSTEM_FOLDERS) else prefix


def _under_system(folder: str) -> bool:
    return any(folder == s or folder.startswith(s + "/") for s in (*SYSTEM_FOLDERS, *ROOT_LINKS, "/proc", "/dev"))


def sandbox_command(
    args: Sequence[str],
    workspace: Path | str,
    home: Path | str,
    read_only: Sequence[Path | str] = (),
    *,
    reach: str | None = None,
    network: bool = False,
    user: int | None = None,
    limits: Limits | None = None,
    cgroup: Sequence[Path | str] = (),
    seccomp: Path | str | None = None,
    network_namespace: str | None = None,
) -> list[str]:
    """`args` wrapped to run in the sandbox: `workspace` and `home` read-write, `read_only` folders (the
    agent's CLI, a virtualenv) visible read-only at their own paths (one inside `workspace` or `home`, such as a
    grading's hidden tests, stays read-only there, and no folder above it can be renamed or removed: each is a mount
    point), the working directory `workspace`.

    Network: none (its own namespace, only `lo`), except `reach`, a URL (the gateway's) whose host and port
    are reachable inside through the forwarder, at `inside_url(reach)`; reach_relay(reach, home) must be
    open while the command runs. `network=True` shares the host's network instead (everything in reach).

    Privilege and caps (helpers.isolation.confinement.confined gives all three, with its watcher; run_cli and
    `relayed` use it): `user`,
    the unprivileged uid `args` run as (the caller must be root; `workspace` and `home` must be that uid's);
    `limits`, whose process and file-size caps become rlimits inside and whose disk cap sizes /tmp;
    `cgroup`, the cgroup.procs files the whole sandbox joins before bwrap starts; `seccomp`, a filter file
    (cBPF) bwrap installs for the command; `network_namespace`, the run's own network made by the host
    (run_network's path: joined before bwrap starts; `reach` is then the relay's, listening in it, and no forwarder
    runs inside), else bwrap makes one.
    """
    own = network_namespace is not None and not network
    # No --new-session: the caller runs bwrap without a terminal, in a process group of its own (TIOCSTI
    # has nothing to inject into), and signals to that group reach the CLI too. bwrap does not forward
    # signals: an interrupt ends bwrap, and --die-with-parent then kills what runs inside.
    # every program the host starts is named by its absolute path (host_program): the child starts in the workspace
    command = [
        host_program("bwrap"),
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        *([] if network or own else ["--unshare-net"]),
    ]
    if seccomp:  # the start-up shell (below) opens it as descriptor 9
        command += ["--seccomp", "9"]
    if user is not None:  # root hands the drop (sandbox_drop.py) only what it needs to give up root
        command += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    for folder in SYSTEM_FOLDERS:
        command += ["--ro-bind-try", folder, folder]
    for link in ROOT_LINKS:  # merged-/usr systems link these; others have real folders
        if os.path.islink(link):
            command += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            command += ["--ro-bind", link, link]
    tmp_size = ["--size", str(limits.disk_bytes)] if limits else []
    # /tmp before the binds (they may lie in /tmp); anyone's to write in, as on the host
    command += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", *tmp_size, "--tmpfs", "/tmp"]
    extra = [
        _install_prefix(shutil.which("node")),
        _install_prefix(sys.executable),
        Path(sys.base_prefix),
        *map(Path, read_only),
    ]
    binds = [
        ["--ro-bind", folder, folder]
        for folder in dict.fromkeys(str(p) for p in extra if p)
        if Path(folder).exists() and not any(folder.startswith(s + "/") or folder == s for s in SYSTEM_FOLDERS)
    ]
    binds += [["--bind", str(home), str(home)], ["--bind", str(workspace), str(workspace)]]
    binds += _pinned(read_only, (workspace, home))
    # outer binds first: a `read_only` path inside the workspace (a grading's hidden tests) is bound over it, so
    # it stays read-only there, and, a mount point as each folder above it is (_pinned), cannot be renamed or
    # removed from inside, nor moved aside with a folder above it
    binds.sort(key=lambda bind: len(Path(bind[2]).parts))
    # The folders above each bind, made open to all (bwrap would copy the host's modes: /root is 0700, and the
    # run's own user could not reach its interpreter or workspace).
    for parent in dict.fromkeys(
        p
        for _, _, target in binds
        for p in reversed(Path(target).parents)
        if str(p) not in ("/", "/tmp") and not _under_system(str(p))
    ):
        command += ["--perms", "0755", "--dir", str(parent)]
    command += [arg for bind in binds for arg in bind]
    command += ["--perms", "0755", "--dir", INSIDE]  # the forwarder and the drop, open to the run's own user
    python = os.path.realpath(sys.executable)  # its install folder is visible (above), a virtualenv's may not be
    forwarder: list[str] = []
    if reach and not network and not own:
        command += [
            "--ro-bind",
            str(relay_socket(home)),
            f"{INSIDE}/gateway.sock",
            "--ro-bind",
            str(FORWARDER),
            f"{INSIDE}/forwarder.py",
        ]
        host, port = reach_address(reach)
        forwarder = [
            python,
            "-I",
            "-S",
            f"{INSIDE}/forwarder.py",
            f"{INSIDE}/gateway.sock",
            listen_host(host),
            str(port),
            "--",
        ]
    # A port below 1024 (a remote gateway on 443) takes a capability to listen on: then the forwarder listens
    # before root is given up, holding only that one, SETUID and SETGID; otherwise it runs as the run's user.
    privileged_port = bool(forwarder) and user is not None and int(forwarder[-2]) < 1024
    if privileged_port:
        command += ["--cap-add", "CAP_NET_BIND_SERVICE"]
    tools = _drop_tools() if user is not None or limits else None
    if user is not None or limits:  # first inside: the run's rlimits, then root given up
        if not tools:
            command += ["--ro-bind", str(DROP), f"{INSIDE}/drop.py"]
        elif user is not None:  # bwrap enters the workspace (as root, but with none of root's other powers)
            command += ["--cap-add", "CAP_DAC_READ_SEARCH"]
        drop = _drop(tools, python, user, limits, workspace)
        args = [*forwarder, *drop, *args] if privileged_port else [*drop, *forwarder, *args]
    else:
        args = [*forwarder, *args]
    command += ["--chdir", "/" if user is not None and not tools else str(workspace), "--"]
    command = command + [str(a) for a in args]
    if own:  # joined by the host's root, before bwrap: nothing of the run is ever outside it
        command = [str(nsenter()), f"--net={network_namespace}", "--", *command]
    if cgroup or seccomp:  # a shell joins the cgroup before bwrap starts: nothing of the run is ever outside it
        command = [host_program("sh"), "-c", START, "sh", str(seccomp or "-"), *map(str, cgroup), "--", *command]
    return command


def _pinned(read_only: Sequence[Path | str], writable: Sequence[Path | str]) -> list[list[str]]:
    """A bind of each folder between a writable bind and a `read_only` path inside it onto itself: a mount point
    cannot be renamed or removed (the kernel's EBUSY), so no folder above a read-only one (tests/ above
    tests/unit/, bound read-only) can be moved aside and another put in its place; what they hold stays writable."""
    pinned: dict[str, None] = {}
    for path in map(Path, read_only):
        for top in map(Path, writable):
            if top in path.parents:
                between = path.relative_to(top).parents  # "a/b/c" -> a/b, a, .
                pinned.update(
                    (str(top / part), None)
                    for part in between
                    if str(part) != "." and (top / part).is_dir() and not (top / part).is_symlink()
                )
    return [["--bind", folder, folder] for folder in pinned]


def _drop(
    tools: tuple[str, str] | None, python: str, user: int | None, limits: "Limits | None", workspace: Path | str
) -> list[str]:
    """The command that, first inside, sets the run's rlimits, gives up root (when `user`) and enters `workspace`,
    then becomes what follows it: util-linux's prlimit and setpriv (`tools`: programs, a millisecond each; bwrap
    has entered the workspace), else sandbox_drop.py (a Python start: 20 ms on a quiet machine, over 100 on a
    loaded one). Both leave the command no capability in any set, no supplementary group, and the default SIGPIPE
    and SIGXFSZ (signals as the host's subprocess set them: nothing on the way ignores one)."""
    # RLIMIT_NPROC counts per real uid: only a uid of the run's own makes it this run's cap
    processes = str(limits.processes) if limits and user is not None else "-"
    file_bytes = str(limits.file_bytes) if limits else "-"
    if not tools:
        return [
            python,
            "-I",
            "-S",
            f"{INSIDE}/drop.py",
            "-" if user is None else str(user),
            processes,
            file_bytes,
            str(workspace),
            "--",
        ]
    prlimit, setpriv = tools
    caps = [f"--{name}={value}" for name, value in (("nproc", processes), ("fsize", file_bytes)) if value != "-"]
    drop = [prlimit, *caps, "--"] if caps else []
    if user is None:
        return drop
    # setpriv fails (and the command never runs) unless every uid and gid is `user`; with them all non-zero the
    # kernel clears the effective and permitted sets (CAP_DAC_READ_SEARCH too, which let bwrap enter a workspace
    # that is `user`'s alone), --inh-caps the inheritable one.
    return [*drop, setpriv, f"--reuid={user}", f"--regid={user}", "--clear-groups", "--inh-caps=-all", "--"]


@functools.lru_cache(maxsize=1)
def _drop_tools() -> tuple[str, str] | None:
    """(prlimit, setpriv) from util-linux, when both are in the system folders the sandbox shows; else None."""
    found = [shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin") for name in ("prlimit", "setpriv")]
    if not all(found) or not all(_under_system(os.path.realpath(p)) for p in found if p):
        return None
    return found[0], found[1]  # type: ignore[return-value]


# The whole run (bwrap included) joins its cgroup (helpers.isolation.confinement) before bwrap starts, and bwrap gets
# the seccomp filter on descriptor 9: `sh -c START sh FILTER|- PROCS... -- COMMAND...`.
START = (
    'filter=$1; shift; while [ "$1" != -- ]; do echo 0 > "$1" || { echo "sandbox: cannot join $1" >&2; '
    'exit 125; }; shift; done; shift; if [ "$filter" = - ]; then exec "$@"; else exec "$@" 9< "$filter"; fi'
)


__all__ = [
    "host_program",
    "sandbox_command",
    "sandbox_policy",
    "SandboxPolicy",
    "SANDBOX_POLICIES",
    "use_sandbox",
    "require_sandbox",
    "unavailable_reason",
    "opted_out",
    "SandboxUnavailable",
    "UNSAFE_OPT_OUT",
]  # documented in CODE_APPENDIX.md
