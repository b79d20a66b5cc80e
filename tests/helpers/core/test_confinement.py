"""A run's caps hold whatever tree it builds: its folders are measured by a walk that neither recurses nor follows
a link, and a watcher that cannot measure ends the run (fail closed), named."""

import threading
import time
from pathlib import Path

import pytest

from helpers.core import config
from helpers.core.confinement import CAP_PREFIX, Limits, cap_reached
from helpers.core.processes import remove_scratch, run_cli, scratch_dir
from helpers.core.sandbox import unavailable_reason

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
# a 1,100-deep chain of folders (made relative to each other, as an agent's program would)
DEEP = "python3 -c \"import os\nfor _ in range(1100): os.mkdir('d'); os.chdir('d')\nopen('f', 'w').write('x')\""


def run(script: str, scratch: Path, limits: Limits | None = None) -> tuple[str, str, float]:
    """(stdout, stderr, seconds) of bash `script` run by run_cli in the sandbox, in `scratch`'s ws and home."""
    workspace, home = scratch / "ws", scratch / "home"
    workspace.mkdir(), home.mkdir()
    started = time.monotonic()
    out, err, timed_out, _ = run_cli(["bash", "-c", script.format(workspace=workspace)], workspace,
                                     {"PATH": "/usr/bin:/bin", "HOME": str(home)}, "", 90, set(), threading.Lock(),
                                     home=home, sandbox="required", limits=limits)
    assert not timed_out, err
    return out, err, time.monotonic() - started


def test_a_run_that_built_a_1100_deep_tree_is_still_ended_at_its_disk_cap_and_its_folders_go():
    scratch = scratch_dir("run")
    try:
        limits = Limits(disk_bytes=24 * 2**20, file_bytes=16 * 2**20)
        out, err, seconds = run(DEEP + "; for i in 1 2 3 4 5 6; do head -c 8000000 /dev/zero > f$i; done; sleep 30",
                                scratch, limits)
        assert cap_reached(err).startswith(f"{CAP_PREFIX} the disk cap (24 MiB"), err[-500:]
        assert seconds < 30  # ended by the cap, not by its own end
    finally:
        assert remove_scratch(scratch) == []
    assert not scratch.exists()


def test_a_tree_past_the_walks_limits_ends_the_run_named_the_watcher_fails_closed(monkeypatch):
    monkeypatch.setattr(config, "TREE_MAX_ENTRIES", 300)
    scratch = scratch_dir("run")
    try:
        out, err, seconds = run("mkdir many; cd many; for i in $(seq 400); do : > f$i; done; sleep 30", scratch)
        cap = cap_reached(err)
        assert cap.startswith(f"{CAP_PREFIX} the sandbox could not check the run's disk use (") and "300 entries" in cap
        assert seconds < 30
    finally:
        remove_scratch(scratch)
