"""The Makefile's workshop targets do what they say and no more."""

import subprocess

from helpers.core.config import REPO_ROOT


def test_make_phoenix_installs_only_the_phoenix_server_before_serving_it(tmp_path):
    fresh = f"VENV={tmp_path}/venv", f"PHOENIX_VENV={tmp_path}/phoenix", f"PHOENIX_MARK={tmp_path}/phoenix/.mark"
    dry = subprocess.run(["make", "-n", "phoenix", *fresh], cwd=REPO_ROOT, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    assert "arize-phoenix==" in dry.stdout and "phoenix_loopback.py serve" in dry.stdout
    for other in ("npm", "node_modules", f"{tmp_path}/venv", "mini", "bwrap", "sandbox"):
        assert other not in dry.stdout, other


def test_make_test_runs_the_lint_and_the_type_check_before_the_suite(tmp_path):
    dry = subprocess.run(["make", "-n", "test", f"VENV={tmp_path}/venv", f"PHOENIX_VENV={tmp_path}/phoenix"],
                         cwd=REPO_ROOT, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    ruff, mypy, pytest = (next(i for i, line in enumerate(lines) if tool in line)
                          for tool in ("/bin/ruff check", "-m mypy", "-m pytest"))
    assert ruff < pytest and mypy < pytest
