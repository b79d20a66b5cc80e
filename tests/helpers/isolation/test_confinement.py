"""A run's caps hold whatever tree it builds: its folders are measured by a walk that neither recurses nor follows
a link, and a watcher that cannot measure ends the run (fail closed), named."""

import threading
from pathlib import Path

import pytest

from helpers.core import config
from helpers.isolation.confinement import CAP_PREFIX, Limits, cap_reached
from helpers.isolation.processes import remove_scratch, run_cli, scratch_dir
from helpers.isolation.sandbox import unavailable_reason

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
# a 1,100-deep chain of folders (made relative to each other, as an agent's program would)
DEEP = "python3 -c \"import os\nfor _ in range(1100): os.mkdir('d'); os.chdir('d')\nopen('f', 'w').write('x')\""
RUN_LIMIT_S = 90  # run_cli's limit on each run here: generous, so that a loaded machine never reaches it
NEVER_ENDS = f"sleep {RUN_LIMIT_S * 10}"  # a run's own end that never comes: only a cap (or the limit) ends it


def run(script: str, scratch: Path, limits: Limits | None = None) -> tuple[str, str]:
    """(stdout, stderr) of bash `script` run by run_cli in the sandbox, in `scratch`'s ws and home; a run that
    reached RUN_LIMIT_S fails here, saying so (a script ending in NEVER_ENDS was not ended by any cap)."""
    workspace, home = scratch / "ws", scratch / "home"
    workspace.mkdir(exist_ok=True), home.mkdir(exist_ok=True)
    done = run_cli(["bash", "-c", script.format(workspace=workspace)], workspace,
                   {"PATH": "/usr/bin:/bin", "HOME": str(home)}, "", RUN_LIMIT_S, set(),
                   threading.Lock(), home=home, sandbox="required", limits=limits)
    assert not done.timed_out, f"the run was ended by run_cli's {RUN_LIMIT_S} s limit, not by a cap: {done.err[-500:]}"
    assert done.cap == cap_reached(done.err)  # the watcher's own sentence is CLIRun.cap (stderr shows it last)
    return done.out, done.err


def test_a_run_that_built_a_1100_deep_tree_is_still_ended_at_its_disk_cap_and_its_folders_go():
    scratch = scratch_dir("run")
    try:
        limits = Limits(disk_bytes=24 * 2**20, file_bytes=16 * 2**20)
        out, err = run(DEEP + f"; for i in 1 2 3 4 5 6; do head -c 8000000 /dev/zero > f$i; done; {NEVER_ENDS}",
                       scratch, limits)
        assert cap_reached(err).startswith(f"{CAP_PREFIX} the disk cap (24 MiB"), err[-500:]  # ended by the cap
    finally:
        assert remove_scratch(scratch) == []
    assert not scratch.exists()


def test_a_tree_past_the_walks_limits_ends_the_run_named_the_watcher_fails_closed(monkeypatch):
    monkeypatch.setattr(config, "TREE_MAX_ENTRIES", 300)
    scratch = scratch_dir("run")
    try:
        out, err = run(f"mkdir many; cd many; for i in $(seq 400); do : > f$i; done; {NEVER_ENDS}", scratch)
        cap = cap_reached(err)  # the watcher ended it (it never ends on its own)
        assert cap.startswith(f"{CAP_PREFIX} the sandbox could not check the run's disk use (") and "300 entries" in cap
    finally:
        remove_scratch(scratch)


# --- the disk cap, enforced by the kernel at write time (helpers.isolation.disks) --------------------------------
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from helpers.isolation.disks import is_capped  # noqa: E402
from helpers.isolation.trees import tree_usage  # noqa: E402

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the kernel's disk cap needs root (else it is sampled)")
MiB = 2**20
SMALL = Limits(disk_bytes=24 * MiB, file_bytes=16 * MiB, disk_files=400)
MMAP = ("python3 -c \"import mmap, os\nf = os.open('m', os.O_RDWR | os.O_CREAT)\nos.ftruncate(f, 15 * 2**20)\n"
        "m = mmap.mmap(f, 15 * 2**20)\nfor i in range(0, 15 * 2**20, 4096): m[i] = 1\"")
WRITERS = {  # each writes past 24 MiB in well under a second, each its own way
    "fallocate burst": "for i in 1 2 3 4 5; do fallocate -l 10M f$i; done",  # the example, scaled down
    "mmap": f"{MMAP}; cp m m2",
    "home and workspace": "head -c 15000000 /dev/zero > a; head -c 15000000 /dev/zero > $HOME/b",
    "many small files": "mkdir many; for i in $(seq 600); do echo $i > many/$i; done",
    "dd in parallel": "for i in 1 2 3 4; do dd if=/dev/zero of=d$i bs=1M count=10 & done; wait",
}


@needs_root
@pytest.mark.parametrize("writer", list(WRITERS))
def test_writes_past_the_disk_cap_fail_at_once_whatever_the_writer_and_the_run_ends_named(writer):
    scratch = scratch_dir("run")
    try:
        whole = writer == "fallocate burst"  # all or nothing: a refused one leaves room, and the run goes on
        out, err = run(WRITERS[writer] + ("; echo went on" if whole else f"; {NEVER_ENDS}"), scratch, SMALL)
        workspace, home = scratch / "ws", scratch / "home"
        assert is_capped(workspace) and is_capped(home)
        assert "No space left" in err or "Bus error" in err, err[-500:]
        written = os.statvfs(workspace)
        used = (written.f_blocks - written.f_bfree) * written.f_frsize
        assert used <= 24 * MiB, used  # never past the cap, not even for a moment: it is the file system's size
        if whole:
            assert used == 20 * MiB and out == "went on\n"
        else:  # a write that filled it: the run is ended, named (it never ends on its own)
            assert cap_reached(err).startswith(f"{CAP_PREFIX} the disk cap (24 MiB"), err[-500:]
        assert tree_usage(workspace).entries > 0  # the host still reads the run's work at its own path
    finally:
        assert remove_scratch(scratch) == []
    assert not scratch.exists() and not is_capped(scratch / "ws")


@needs_root
def test_a_sparse_file_takes_no_room_and_a_run_under_the_cap_is_not_ended():
    scratch = scratch_dir("run")
    try:
        out, err = run("truncate -s 15M sparse; head -c 8000000 /dev/zero > real; du -k sparse", scratch, SMALL)
        assert not cap_reached(err) and int(out.split()[0]) == 0, (out, err)
        assert (scratch / "ws" / "real").stat().st_size == 8_000_000
    finally:
        remove_scratch(scratch)


@needs_root
def test_a_killed_drivers_capped_folders_are_detached_and_removed_at_the_next_start():
    from helpers.isolation.processes import sweep_stale

    driver = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time\n"
        "from helpers.isolation.confinement import Limits\n"
        "from helpers.isolation.disks import cap_disk\n"
        "from helpers.isolation.processes import scratch_dir\n"
        "ws = scratch_dir('run')\n"
        "assert cap_disk([ws], Limits(disk_bytes=2**20))\n"
        "print(ws, flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[3])
    workspace = Path(driver.stdout.readline().strip())
    assert is_capped(workspace)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    assert workspace.parent in sweep_stale()
    assert not is_capped(workspace) and not workspace.parent.exists()


@needs_root
def test_the_run_changes_the_hosts_files_the_host_reads_its_work_and_nothing_it_left_is_set_uid_or_a_device():
    scratch = scratch_dir("run")
    try:
        workspace = scratch / "ws"
        workspace.mkdir()
        (workspace / "app.py").write_text("x = 1\n")  # the host's, before the run
        out, err = run("echo 'x = 2' >> app.py && cp /usr/bin/true mine && chmod u+s mine && echo ok", scratch,
                          SMALL)
        assert out == "ok\n" and not cap_reached(err), err
        assert (workspace / "app.py").read_text() == "x = 1\nx = 2\n" and is_capped(workspace)
        flags = os.statvfs(workspace).f_flag
        assert flags & os.ST_NOSUID and flags & os.ST_NODEV  # the set-uid file it left is inert on the host
    finally:
        remove_scratch(scratch)
    assert not scratch.exists()


@needs_root
@pytest.mark.parametrize("mapped", [True, False], ids=["idmapped", "handed-over-by-a-walk"])
def test_each_run_owns_the_hosts_files_and_what_the_host_wrote_between_runs_while_on_disk_they_stay_the_hosts(
        mapped, monkeypatch):
    from helpers.isolation import confinement, disks
    from helpers.isolation.ahead import MadeAhead

    if not mapped:  # a kernel or file system without idmapped mounts: the host hands the tree over by a walk
        monkeypatch.setattr(disks, "user_namespace", lambda user: -1)
    monkeypatch.setattr(confinement, "_users", MadeAhead(confinement._new_user, "test-next-user"))
    scratch = scratch_dir("run")
    try:
        workspace = scratch / "ws"
        (workspace / "pkg").mkdir(parents=True)
        (workspace / "pkg" / "app.py").write_text("x = 1\n")  # the host's, before the run
        out, err = run("stat -c %u pkg/app.py; id -u; echo 'x = 2' >> pkg/app.py && touch pkg/new.py && echo ok",
                          scratch, SMALL)
        owner, first, done = out.split()
        assert owner == first != "0" and done == "ok", err
        (workspace / "pkg" / "host.py").write_text("h = 1\n")  # the host writes between two runs (a patch applied)
        out, err = run("id -u; echo 'x = 3' >> pkg/app.py && echo 'h = 2' >> pkg/host.py && echo ok", scratch,
                          SMALL)
        second, done = out.split()
        assert second not in ("0", first) and done == "ok", err  # a uid of its own again, owning all of it
        assert (workspace / "pkg" / "app.py").read_text() == "x = 1\nx = 2\nx = 3\n"
        detach_mounts(workspace)  # the host's own file system under the run's overlay
        assert (workspace / "pkg" / "app.py").read_text() == "x = 1\n" and not (workspace / "pkg" / "new.py").exists()
        if mapped:  # no file of the host's changed owner on disk
            assert {p.stat().st_uid for p in [workspace, *workspace.rglob("*")]} == {0}
    finally:
        remove_scratch(scratch)
    assert not scratch.exists()


from helpers.isolation.disks import detach_mounts  # noqa: E402


@needs_root
def test_a_hand_over_past_the_walks_limits_is_refused_with_nothing_left_mounted(monkeypatch):
    from helpers.isolation import confinement, disks
    from helpers.isolation.ahead import MadeAhead
    from helpers.isolation.confinement import confined
    from helpers.isolation.trees import TreeRefused

    monkeypatch.setattr(disks, "user_namespace", lambda user: -1)  # no idmapped mounts: the walk hands it over
    monkeypatch.setattr(confinement, "_users", MadeAhead(confinement._new_user, "test-next-user"))
    monkeypatch.setattr(config, "TREE_MAX_ENTRIES", 50)
    scratch = scratch_dir("run")
    try:
        workspace, home = scratch / "ws", scratch / "home"
        home.mkdir(), workspace.mkdir()
        for i in range(80):  # in the second folder capped: the first one's overlay, made by then, is taken off
            (home / f"f{i}").write_text("x")
        with pytest.raises(TreeRefused, match="50 entries"):
            with confined(workspace, home, SMALL):
                pass
        assert not is_capped(workspace) and not is_capped(home)
    finally:
        remove_scratch(scratch)
    assert not scratch.exists()
