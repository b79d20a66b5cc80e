"""The benchmarks' toy tasks: n issues on one tiny repository whose add() subtracts (bench_agents, bench_run_act)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from helpers.families.coding.git import git

BUGGY, FIXED = "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n"


def tasks(root: Path, n: int) -> pd.DataFrame:
    """`n` tasks on a new repository `root`/calc holding the bug, at its one commit."""
    repo = root / "calc"
    repo.mkdir()
    (repo / "calc.py").write_text(BUGGY)
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "calc", cwd=repo)
    base = git("rev-parse", "HEAD", cwd=repo).stdout.strip()
    return pd.DataFrame([{"instance_id": f"bench-{i}", "repo": "bench/calc", "base_commit": base, "repo_path": str(repo),
                          "problem_statement": f"Task {i}: add() subtracts.", "patch": "", "test_patch": "",
                          "FAIL_TO_PASS": [], "PASS_TO_PASS": []} for i in range(n)])
