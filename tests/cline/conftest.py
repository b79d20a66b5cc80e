"""Small git repositories as tasks, for running the real Cline CLI against the scripted model server."""

from pathlib import Path

import pytest

from helpers.families.coding.git import git
from worker_processes import command_lines

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST_PATCH = """diff --git a/test_calc.py b/test_calc.py
new file mode 100644
--- /dev/null
+++ b/test_calc.py
@@ -0,0 +1,5 @@
+from calc import add
+
+
+def test_add():
+    assert add(2, 3) == 5
"""
CLINE_BINARY_NAME = "cline"


def make_repo(root: Path, name: str = "calc") -> tuple[Path, str]:
    repo = root / name
    repo.mkdir(parents=True)
    (repo / "calc.py").write_text(BUGGY)
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "calc", cwd=repo)
    return repo, git("rev-parse", "HEAD", cwd=repo).stdout.strip()


def make_task(repo: Path, base: str, number: int = 1) -> dict:
    return {"instance_id": f"calc__calc-{number}", "repo": "me/calc", "base_commit": base, "repo_path": str(repo),
            "problem_statement": f"Issue {number}: add() subtracts instead of adding.", "patch": "",
            "test_patch": TEST_PATCH, "FAIL_TO_PASS": ["test_calc.py::test_add"], "PASS_TO_PASS": [],
            "suite": "local", "created_at": "2026-01-01"}


@pytest.fixture
def calc(tmp_path):
    """(source repo, base commit, a task on it, a fresh workspace clone)."""
    repo, base = make_repo(tmp_path / "source")
    workspace = tmp_path / "workspace"
    git("clone", "-q", str(repo), str(workspace), cwd=tmp_path)
    return repo, base, make_task(repo, base), workspace


def cline_processes() -> list[int]:
    """Pids of running Cline CLI processes this test worker started from this checkout."""
    return [pid for pid, cmd in command_lines() if cmd and cmd[0].endswith(b"/bin/cline") and b"node_modules" in cmd[0]]


def all_command_lines() -> str:
    lines = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                lines.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass
    return "\n".join(lines)
