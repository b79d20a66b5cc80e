"""The processes this test worker started: what "nothing it starts outlives its run" is checked against.

Under pytest-xdist other workers run agents at the same time; a process is this worker's when it works
in this worker's pytest folders or in this process's scratch folder (helpers.isolation.processes).
"""

import os
from pathlib import Path

from helpers.isolation.processes import owner_tag, scratch_root


def _ours(pid: str) -> bool:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return True
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return f"/popen-{worker}/" in cwd or cwd.startswith(str(scratch_root() / owner_tag()))


def command_lines() -> list[tuple[int, list[bytes]]]:
    """(pid, argv) of every process of this worker's, other than this one."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid() and _ours(proc.name):
            try:
                found.append((int(proc.name), (proc / "cmdline").read_bytes().split(b"\0")))
            except OSError:
                continue
    return found
