"""git, run quietly with a fixed identity and no user or system configuration."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from helpers.isolation.sandbox import host_program

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "prompt-learning",
    "GIT_AUTHOR_EMAIL": "prompt-learning@localhost",
    "GIT_COMMITTER_NAME": "prompt-learning",
    "GIT_COMMITTER_EMAIL": "prompt-learning@localhost",
}


class WorkspaceError(RuntimeError):
    """The task's repository could not be made ready (missing mirror, unknown commit)."""


def git_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment git runs with: a fixed identity, no user or system config, no prompt (plus `env`)."""
    return {
        **os.environ,
        **GIT_IDENTITY,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_GLOBAL": os.devnull,
        **(env or {}),
    }


def git(
    *args: str, cwd: Path | str, check: bool = True, input: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run git quietly with a fixed identity and no user or system config (plus `env`)."""
    # git by its absolute path: `cwd` is often an agent's workspace, where a relative PATH entry would find its own git
    return subprocess.run(
        [host_program("git"), *args],
        cwd=cwd,
        env=git_environment(env),
        check=check,
        input=input,
        capture_output=True,
        text=True,
    )


__all__ = ["GIT_IDENTITY", "WorkspaceError", "git", "git_environment"]
