"""The sandbox every agent run executes in: bubblewrap (`bwrap`), a Linux user-namespace sandbox.

An agent runs commands a model chose, over code strangers wrote. Inside the sandbox it sees:
- its own PID namespace: no other process of the machine (not the notebook kernel that may hold a key in
  its environment or memory, not the gateway, not Phoenix), and when the run ends, is killed or times
  out, the kernel kills everything it started (a `setsid` daemon included);
- a filesystem holding only the system folders read-only (/usr, /etc, the interpreter's and Node's
  install folders, the agent's CLI), a per-run home and its workspace read-write, and an empty /tmp:
  not the checkout (its `.env`, `.cache/` with hidden tests, results, other workspaces), not the user's
  home.
What it does not do: filter the network. The agent reaches the model only through the gateway on
loopback with a token of its own (the key never enters the sandbox), but its commands can still open
outside connections, as the user's own shell could. `srt` (Anthropic's sandbox-runtime) adds a
network allow-list on top of the same mechanism; on macOS it (or `sandbox-exec`) is the only option,
and nothing here sandboxes macOS runs: the opt-out below is required there.

Measured choice (benchmarks/bench_sandbox.py): bwrap adds well under 0.1 s to a run's start; it needs either
root or unprivileged user namespaces (both hold on these machines and most Linux distributions).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

# The explicit, unsafe opt-out: agents run on the host, seeing what the user's shell sees.
UNSAFE_OPT_OUT = "PL_UNSAFE_NO_SANDBOX"
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap)"
SYSTEM_FOLDERS = ("/usr", "/etc", "/opt/conda")
ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


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
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--die-with-parent", "true"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return (f"bwrap cannot create namespaces here ({probe.stderr.strip()[:200]}); enable unprivileged user "
                "namespaces (sysctl kernel.unprivileged_userns_clone=1) or install bwrap setuid")
    return None


def require_sandbox() -> bool:
    """True when agents run sandboxed; False only under the explicit opt-out (after saying what that
    exposes); SandboxUnavailable with the one-line fix otherwise."""
    if opted_out():
        print(f"WARNING: {UNSAFE_OPT_OUT} is set: agents run unsandboxed and their commands can read your files, "
              "every process's environment and memory you can read (a provider key included, if a process "
              "holding it is visible), and leave processes running.", file=sys.stderr)
        return False
    reason = unavailable_reason()
    if reason:
        raise SandboxUnavailable(f"Agents run in a sandbox and none can start: {reason}. (Unsafe: set "
                                 f"{UNSAFE_OPT_OUT}=1 to run them unsandboxed; see README, Security model.)")
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
    note = (f"{UNSAFE_OPT_OUT} is set" if opted_out() else "this run does not require one (the scripted dry run)")
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


def sandbox_command(args: Sequence[str], workspace: Path | str, home: Path | str,
                    read_only: Sequence[Path | str] = ()) -> list[str]:
    """`args` wrapped to run in the sandbox: `workspace` and `home` read-write, `read_only` folders (the
    agent's CLI, a virtualenv) visible read-only at their own paths, the working directory `workspace`."""
    # No --new-session: the caller runs bwrap without a terminal, in a process group of its own (TIOCSTI
    # has nothing to inject into), and signals to that group reach the CLI too. bwrap does not forward
    # signals: an interrupt ends bwrap, and --die-with-parent then kills what runs inside.
    command = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try"]
    for folder in SYSTEM_FOLDERS:
        command += ["--ro-bind-try", folder, folder]
    for link in ROOT_LINKS:  # merged-/usr systems link these; others have real folders
        if os.path.islink(link):
            command += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            command += ["--ro-bind", link, link]
    command += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # before the binds: they may lie in /tmp
    extra = [_install_prefix(shutil.which("node")), _install_prefix(sys.executable),
             Path(sys.base_prefix), *map(Path, read_only)]
    for folder in dict.fromkeys(str(p) for p in extra if p):
        if Path(folder).exists() and not any(folder.startswith(s + "/") or folder == s for s in SYSTEM_FOLDERS):
            command += ["--ro-bind", folder, folder]
    command += ["--bind", str(home), str(home), "--bind", str(workspace), str(workspace),
                "--chdir", str(workspace), "--"]
    return command + [str(a) for a in args]


__all__ = ["sandbox_command", "use_sandbox", "require_sandbox", "unavailable_reason", "opted_out", "SandboxUnavailable",
           "UNSAFE_OPT_OUT"]  # documented in CODE_APPENDIX.md
