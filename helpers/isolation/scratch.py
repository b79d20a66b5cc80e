"""Where a run's throwaway folders live: one folder per Python process, `<tmp>/pl-runs/<pid>-<start time>/`
(helpers.isolation.processes removes them and sweeps a killed process's; helpers.isolation.disks caps a run's disk only
inside it, where its removal or the next sweep is sure to come)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from helpers.isolation.procfs import owner_tag

SCRATCH_PARENT = "pl-runs"


def scratch_root() -> Path:
    return Path(tempfile.gettempdir()) / SCRATCH_PARENT


def scratch_dir(kind: str) -> Path:
    """A new folder for one run's `kind` of files, inside this process's scratch folder."""
    owner = scratch_root() / owner_tag()
    owner.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=owner))


__all__ = [
    "scratch_root",
    "scratch_dir",
    "SCRATCH_PARENT",
]  # documented in CODE_APPENDIX.md (helpers.isolation.processes)
