"""The sandbox: a command inside sees no other process, no key, none of the checkout's secrets or
hidden data, and nothing it starts outlives it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.core import sandbox
from helpers.core.processes import die_with_parent
from helpers.core.sandbox import SandboxUnavailable, require_sandbox, sandbox_command, unavailable_reason

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
REPO = Path(__file__).resolve().parents[3]
KEY = "plk-test-" + "7" * 24  # shaped like nothing real; the probes look for it


def run_inside(script: str, tmp_path: Path, monkeypatch) -> str:
    """`script` in the sandbox, with KEY in this process's environment (as a notebook kernel may hold it)."""
    monkeypatch.setenv("PROBE_KEY", KEY)
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir(), home.mkdir()
    command = sandbox_command(["sh", "-c", script], workspace, home, read_only=[Path(sys.prefix)])
    done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env={"PATH": f"{sys.prefix}/bin:/usr/bin:/bin", "HOME": str(home)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_no_process_outside_the_sandbox_is_visible_so_no_environment_or_memory_holds_the_key(tmp_path, monkeypatch):
    out = run_inside("for p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null; done | tr '\\0' '\\n';"
                     " ls /proc | grep -c '^[0-9]'", tmp_path, monkeypatch)
    assert KEY not in out
    assert int(out.strip().splitlines()[-1]) <= 5  # bwrap's init, the shell, its pipeline


def test_the_checkout_its_env_file_cache_and_the_users_home_are_out_of_sight(tmp_path, monkeypatch):
    out = run_inside(f"ls -a {REPO} {Path.home()} 2>&1; cat {REPO}/.env 2>&1; find / -name tasks.json 2>/dev/null;"
                     f" ls {REPO}/.cache 2>&1; echo end", tmp_path, monkeypatch)
    listed = set(out.split())
    assert "tasks.json" not in out and "pyproject.toml" not in listed and "helpers" not in listed
    assert "No such file" in out and out.strip().endswith("end")


def test_a_daemon_started_with_setsid_does_not_outlive_the_run(tmp_path, monkeypatch):
    marker = f"sleep {7000 + os.getpid() % 1000}"
    run_inside(f"(setsid {marker} >/dev/null 2>&1 &); (nohup {marker} >/dev/null 2>&1 &); echo started",
               tmp_path, monkeypatch)
    survivors = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert survivors == []


def test_the_workspace_is_writable_and_the_system_read_only(tmp_path, monkeypatch):
    out = run_inside("echo x > made.txt && cat made.txt; touch /usr/probe 2>&1 || echo refused;"
                     f" {sys.prefix}/bin/python -c 'import pytest; print(\"tests can run\")'", tmp_path, monkeypatch)
    assert (tmp_path / "ws" / "made.txt").read_text() == "x\n"
    assert "refused" in out and "tests can run" in out


def test_without_a_sandbox_a_run_refuses_to_start_unless_the_unsafe_opt_out_is_set(monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "unavailable_reason", lambda: "bwrap was not found: install bubblewrap")
    monkeypatch.delenv(sandbox.UNSAFE_OPT_OUT, raising=False)
    with pytest.raises(SandboxUnavailable, match=f"install bubblewrap.*{sandbox.UNSAFE_OPT_OUT}=1"):
        require_sandbox()
    monkeypatch.setenv(sandbox.UNSAFE_OPT_OUT, "1")
    assert require_sandbox() is False
    assert "unsandboxed" in capsys.readouterr().err


def _wait_for(path: Path, deadline_s: float = 60.0) -> None:
    import time

    stop = time.monotonic() + deadline_s
    while not path.exists():
        assert time.monotonic() < stop, f"{path} never appeared"
        time.sleep(0.05)


def _start(script: str, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir(), home.mkdir()
    process = subprocess.Popen(sandbox_command(["sh", "-c", script], workspace, home), start_new_session=True,
                               env={"PATH": "/usr/bin:/bin", "HOME": str(home)}, preexec_fn=die_with_parent())
    return process, workspace


@pytest.mark.parametrize("how", ["SIGINT", "SIGKILL"])  # a timeout interrupts, then kills
def test_stopping_the_sandbox_ends_every_process_it_started(tmp_path, how):
    import signal

    marker = f"sleep {8000 + os.getpid() % 1000}.{len(how)}"  # its own per case
    process, workspace = _start(f"(setsid {marker} &); touch ready; {marker}", tmp_path)
    _wait_for(workspace / "ready")
    os.killpg(process.pid, getattr(signal, how))
    process.wait(timeout=60)
    import time

    stop = time.monotonic() + 60  # the kernel tears the namespace down asynchronously
    while subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0:
        assert time.monotonic() < stop, "a process of the killed sandbox survived"
        time.sleep(0.05)
