"""The coding family as the engine, the loop and the judge see it: one WorkspaceFamily (helpers.core.protocols).

    run_tasks(tasks, agent, run_id="train_0", family=CODING)     # the default (helpers.families.registry)

Everything that knows a task is a repository at a base commit and an answer is a patch lives in this folder;
this module is its one face to the layers above. The patch is read here, once, where the host takes it from the
workspace (take_patch: the diff and its suspect lines, as a Patch), and travels on as that value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from helpers.core.protocols import Evaluator, GradedLines, Patch, RulesText, SandboxPolicy, Task
from helpers.families.coding import patches, tasks, workspace_rules, workspaces


class CodingFamily:
    """Tasks are SWE-bench-shaped rows (the house suite, SWE-bench, mined repositories); a workspace is the task's
    repository at its base commit; the answer is the patch the host takes from it, graded by the task's tests."""

    name = "coding"

    def load_tasks(self, source: str, **options: Any) -> pd.DataFrame:
        return tasks.load_tasks(source, **options)

    def select_tasks(self, frame: pd.DataFrame, ids: Sequence[str]) -> pd.DataFrame:
        return tasks.select_tasks(frame, ids)

    def split_tasks(
        self, frame: pd.DataFrame, train_size: int, test_size: int, strategy: str, seed: int
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        return tasks.split_dataset(frame, train_size, test_size, strategy=strategy, seed=seed)

    def evaluator_for(self, frame: pd.DataFrame, *, model_name: str, sandbox: SandboxPolicy) -> Evaluator:
        from helpers.families.coding.evaluation import evaluator_for
        from helpers.isolation.sandbox import sandbox_policy

        # checked here, where it comes in from a caller that may not be typed (ValueError naming the choices)
        return evaluator_for(frame, model_name=model_name, sandbox=sandbox_policy(sandbox))

    def prepare_workspace(self, task: Task, root: Path) -> Path:
        return workspaces.prepare_workspace(task, root)

    def write_rules(self, workspace: Path, rules_file: str, ruleset: RulesText) -> Callable[[], None]:
        return workspace_rules.write_rules(workspace, rules_file, ruleset)

    def take_patch(self, workspace: Path, task: Task) -> Patch:
        """The agent's change against the base commit (workspaces.workspace_patch: refused output raises), with
        the lines of it that reach into the test machinery (patches.suspect_lines), read once."""
        text = workspaces.workspace_patch(workspace, str(task["base_commit"]))
        return Patch(text, tuple(patches.suspect_lines(text, str(task.get("test_patch") or ""))))

    def remove_workspace(self, workspace: Path) -> None:
        workspaces.remove_workspace(workspace)

    def suspect_lines(self, patch: str, test_patch: str) -> list[str]:
        return patches.suspect_lines(patch, test_patch)

    def graded_lines(self, patch: str, test_patch: str) -> GradedLines:
        return patches.graded_lines(patch, test_patch)

    def set_aside_note(self, paths: Sequence[str]) -> str:
        return patches.set_aside_note(paths)


CODING = CodingFamily()

__all__ = ["CodingFamily", "CODING"]  # documented in CODE_APPENDIX.md
