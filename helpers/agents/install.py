"""The agent CLIs' own install, on first use: `make quickstart` installs only the chosen agent's CLI, and
CLIAgent.binary() (helpers.agents.base) installs any other here, pinned as `make agent AGENT=<name>` would."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
from pathlib import Path

from helpers.isolation.processes import safe_environment

NPM_INSTALL = ("install", "--no-audit", "--no-fund", "--loglevel=error")  # the Makefile's own command
_installing = threading.Lock()


def install_on_first_use(package_dir: Path, name: str) -> None:
    """Install the agent CLI pinned in `package_dir` (its package.json and package-lock.json) into its
    node_modules if it is not there yet, saying so in one line: what `make agent AGENT=<name>` does, for an
    agent the quickstart's install left out. Installed means node_modules/.installed exists (the Makefile's
    marker); a package without a package.json has nothing to install. One install at a time, across threads
    and processes (a lock file). npm runs with the allow-listed environment and its own settings only: no key
    reaches the packages' install scripts. Raises FileNotFoundError naming the fix when npm is missing or fails."""
    marker = package_dir / "node_modules" / ".installed"
    if marker.exists() or not (package_dir / "package.json").exists():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise FileNotFoundError(
            f"The {name} CLI is not installed, and npm is not found to install it: install "
            f"Node.js 20+ (it brings npm), then run `make agent AGENT={name}`."
        )
    marker.parent.mkdir(exist_ok=True)
    with _installing, open(marker.parent / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():  # another process installed it while this one waited
            return
        print(
            f"Installing the {name} CLI on first use (npm install in {package_dir.name}/, the version pinned there; "
            "once).",
            flush=True,
        )
        own = {k: v for k, v in os.environ.items() if k.lower().startswith("npm_config_") or k == "NODE_EXTRA_CA_CERTS"}
        done = subprocess.run(
            [npm, *NPM_INSTALL],
            cwd=package_dir,
            env=safe_environment(own),
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if done.returncode != 0:
            raise FileNotFoundError(
                f"Installing the {name} CLI failed (npm install in {package_dir}, exit "
                f"{done.returncode}): {(done.stderr or done.stdout).strip()[-800:]} Run "
                f"`make agent AGENT={name}` to see it whole."
            )
        marker.touch()


__all__ = ["install_on_first_use"]  # documented in CODE_APPENDIX.md
