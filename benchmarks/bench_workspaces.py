"""Benchmark: a workspace holding only its base commit's history, and a patch taken with the host's own git
directory, cost at most 2 s and 0.5 s for a repository of 5,000 commits (the house suite's take milliseconds).

    .venv/bin/python benchmarks/bench_workspaces.py

prepare_workspace fetches the base commit alone (its ancestors come with it, nothing later), so git packs the
base's history once per workspace: the price of a workspace with no future (SWE-bench issue #465), paid in
pack-objects time that grows with the history. A plain `git clone --no-hardlinks` (which copied every later
commit, the fix included) is timed beside it for comparison.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from helpers.families.coding.git import git
from helpers.families.coding.house_suite import load_house_suite
from helpers.families.coding.workspaces import prepare_workspace, remove_workspace, workspace_patch

COMMITS = 5_000
RUNS = 5
TARGET_PREPARE_S, TARGET_PATCH_S = 2.0, 0.5


def synthetic_repository(root: Path, commits: int) -> tuple[Path, str]:
    """A repository of `commits` commits, each changing one of 200 files (git fast-import: seconds); its
    middle commit is the base, so half the history lies in its future."""
    repo = root / "synthetic"
    git("init", "-q", str(repo), cwd=root)
    lines = []
    for n in range(commits):
        body = f"value = {n}\n" * 20
        lines += [f"commit refs/heads/main", f"committer b <b@x> {1_700_000_000 + n} +0000", "data 2", "c",
                  f"M 644 inline pkg/module_{n % 200}.py", f"data {len(body)}", body.rstrip("\n"), ""]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input="\n".join(lines) + "\n", text=True, check=True)
    base = git("rev-parse", f"main~{commits // 2}", cwd=repo).stdout.strip()
    return repo, base


def timed(task: dict, root: Path) -> tuple[float, float]:
    started = time.perf_counter()
    workspace = prepare_workspace(task, root)
    prepared = time.perf_counter() - started
    (workspace / "new_module.py").write_text("added = True\n")
    started = time.perf_counter()
    assert "+++ b/new_module.py" in workspace_patch(workspace, task["base_commit"])
    patched = time.perf_counter() - started
    remove_workspace(workspace, root)
    return prepared, patched


def plain_clone(task: dict, root: Path) -> float:
    started = time.perf_counter()
    git("clone", "-q", "--no-hardlinks", "--no-checkout", task["repo_path"], str(root / "clone"), cwd=root)
    git("checkout", "-q", "--detach", task["base_commit"], cwd=root / "clone")
    elapsed = time.perf_counter() - started
    subprocess.run(["rm", "-rf", str(root / "clone")], check=True)
    return elapsed


def main() -> int:
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-ws-") as scratch:
        root = Path(scratch)
        repo, base = synthetic_repository(root, COMMITS)
        tasks = {"house task": load_house_suite().iloc[0].to_dict(),
                 f"{COMMITS:,}-commit repository": {"instance_id": "synthetic-1", "repo_path": str(repo),
                                                     "base_commit": base}}
        for name, task in tasks.items():
            runs = [timed(task, root / "ws") for _ in range(RUNS)]
            prepare = statistics.median(r[0] for r in runs)
            patch = statistics.median(r[1] for r in runs)
            clone = statistics.median(plain_clone(task, root) for _ in range(RUNS))
            met = prepare <= TARGET_PREPARE_S and patch <= TARGET_PATCH_S
            ok &= met
            print(f"{name}: prepare_workspace median {prepare * 1000:.0f} ms (a plain clone with the future: "
                  f"{clone * 1000:.0f} ms), workspace_patch median {patch * 1000:.0f} ms; targets <= "
                  f"{TARGET_PREPARE_S:.1f} s / {TARGET_PATCH_S:.1f} s: {'OK' if met else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
