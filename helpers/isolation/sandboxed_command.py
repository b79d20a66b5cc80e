"""A run's command as it runs: in the sandbox or on the host (by the run's SandboxPolicy), as the run's own user
within its caps, with the relay that carries its connections to the gateway open exactly while it runs; and the
cap that ended it, said back.

Apart from processes.py, which starts and ends the process (its group, its output, its timeout, the scratch
folders): this module decides only what the command is and what must be held open around it.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

if TYPE_CHECKING:  # the functions below import these where they use them, not on import
    from helpers.isolation.confinement import Limits
    from helpers.isolation.sandbox import SandboxPolicy


def _runs_sandboxed(sandbox: SandboxPolicy) -> bool:
    from helpers.isolation.sandbox import use_sandbox

    return sandbox is not None and use_sandbox(required=sandbox == "required")


def reached_at(reach: str | None, sandbox: SandboxPolicy) -> str | None:
    """The URL a run's command uses for `reach` (see `relayed`): in the sandbox, helpers.isolation.sandbox_reach's
    inside_url(reach) (reach itself on loopback; a remote gateway's URL with 127.0.0.1 for its host); on the
    host, reach itself."""
    from helpers.isolation.sandbox_reach import inside_url

    return inside_url(reach) if reach and _runs_sandboxed(sandbox) else reach


class SandboxedCommand(list[str]):
    """A run's command (its arguments: a list, as Popen takes it), `user`, the uid it runs as (None: the
    caller's), and, once its `relayed` block has ended, `cap`: the sandbox cap that ended the run (a sentence
    starting helpers.isolation.confinement.CAP_PREFIX), or ""."""

    cap = ""
    user: int | None = None  # the run's own uid (helpers.isolation.confinement), None: the caller's
    stages: dict[str, float] = {}  # a confined run's: Confinement.stages (class default: none, never written)


@contextmanager
def relayed(
    args: list[str],
    workspace: Path,
    home: Path | None,
    read_only: Sequence[Path | str] = (),
    sandbox: SandboxPolicy = "required",
    *,
    reach: str | None = None,
    network: bool = False,
    limits: Limits | None = None,
) -> Iterator[SandboxedCommand]:
    """`args` as they run, as a SandboxedCommand: in the sandbox (helpers.isolation.sandbox: its own PID and network
    namespaces, the workspace and `home` writable, `read_only` and this Python's environment visible) unless
    `sandbox` is None; "required" refuses to run without one (unless the user opted out), "if-available" (the
    scripted dry run) runs on the host when no sandbox can start here.

    In the sandbox the command runs unprivileged and within `limits` (helpers.isolation.confinement.confined: the
    run's own uid when we are root, its caps, a watcher ending it at the first cap reached; `limits` a
    helpers.isolation.confinement.Limits, default config's). Network: none, except `reach` (the gateway's URL,
    reachable inside at `reached_at(reach, sandbox)`), through a relay open while the block runs (start the
    command inside it, as run_cli does); `network=True` shares the host's network (a set-up command the user
    allowed to download). On leaving, nothing of the run or the relay is left, and the command's `cap` names the
    cap that ended it, if one did."""
    from helpers.isolation.confinement import confined
    from helpers.isolation.sandbox import sandbox_command
    from helpers.isolation.sandbox_reach import reach_relay, run_network

    if not _runs_sandboxed(sandbox):
        yield SandboxedCommand(args)
        return
    if reach and not network and home is None:
        raise ValueError("a sandbox with `reach` needs the run's `home`: the relay's socket lives there")
    home = home or workspace
    with confined(workspace, home, limits) as confinement, run_network(reach, network) as namespace:
        command = SandboxedCommand(
            sandbox_command(
                args,
                workspace,
                home,
                read_only=[*read_only, sys.prefix],
                reach=reach,
                network=network,
                user=confinement.user,
                limits=confinement.limits,
                cgroup=confinement.cgroup,
                seccomp=confinement.seccomp,
                network_namespace=namespace,
            )
        )
        command.user, command.stages = confinement.user, confinement.stages
        with reach_relay(None if network or namespace else reach, home):  # its own network's relay: run_network's
            yield command
    command.cap = confinement.cap


def with_cap(err: str, command: list[str]) -> str:
    """`err` with the cap that ended the run of `command` (a SandboxedCommand after its block) as its last
    line, if one did."""
    cap = getattr(command, "cap", "")
    return f"{err.rstrip(chr(10))}\n{cap}\n" if cap else err


__all__ = ["relayed", "SandboxedCommand", "with_cap", "reached_at"]  # documented in CODE_APPENDIX.md
