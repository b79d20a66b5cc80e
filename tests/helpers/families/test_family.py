"""The coding family's one face to the layers above (helpers.families.coding.family): the patch read once, where
the host takes it, into a Patch that carries its suspect lines; a long patch's graded lines for the judge."""

import pandas as pd
import pytest

from helpers.core.protocols import Patch, WorkspaceFamily
from helpers.families.coding.family import CODING
from helpers.families.coding.patches import suspect_lines
from helpers.families.coding.tasks import load_house_suite
from helpers.families.registry import default_family


@pytest.fixture(scope="module")
def house_task():
    return load_house_suite().iloc[0].to_dict()


def test_the_default_family_is_the_coding_family_and_keeps_the_contract():
    assert default_family() is CODING and isinstance(CODING, WorkspaceFamily)


def test_the_patch_is_taken_with_its_suspect_lines_read_once_from_graded_code_only(house_task, tmp_path):
    workspace = CODING.prepare_workspace(house_task, tmp_path)
    take_rules_out = CODING.write_rules(workspace, "AGENTS.md", "- [R1] A rule.\n")
    (workspace / "forger.py").write_text("import sys\nsys.modules['x'] = None\n")
    (workspace / "tests").mkdir(exist_ok=True)
    (workspace / "tests" / "test_own.py").write_text("import pytest\n")  # a test file: set aside, never suspect
    take_rules_out()
    patch = CODING.take_patch(workspace, house_task)
    CODING.remove_workspace(workspace)
    assert isinstance(patch, Patch) and "+++ b/forger.py" in patch.text and "AGENTS.md" not in patch.text
    assert patch.suspect == ("forger.py:2: +sys.modules['x'] = None",)
    assert list(patch.suspect) == suspect_lines(patch.text, house_task["test_patch"]) and not workspace.exists()


def test_a_long_patchs_graded_lines_leave_out_set_aside_files_and_count_what_is_dropped():
    patch = ("diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n"
             "diff --git a/conftest.py b/conftest.py\n--- a/conftest.py\n+++ b/conftest.py\n@@ -0,0 +1 @@\n+hook\n")
    graded = CODING.graded_lines(patch, "")
    assert graded.lines == ("diff --git a/pkg/m.py b/pkg/m.py", "--- a/pkg/m.py", "+++ b/pkg/m.py", "@@ -1,2 +1,2 @@",
                            "+new")
    assert (graded.set_aside, graded.added, graded.dropped) == (("conftest.py",), 1, 2)


@pytest.mark.parametrize("suite", ["house", "swebench"])
def test_grading_refuses_a_sandbox_policy_it_does_not_know_before_making_an_evaluator(house_task, suite):
    frame = pd.DataFrame([{**house_task, "suite": suite}])
    with pytest.raises(ValueError, match="sandbox must be 'required', 'if-available' or None"):
        CODING.evaluator_for(frame, model_name="m", sandbox="sometimes")


@pytest.mark.parametrize("policy", ["required", "if-available", None])
def test_local_grading_follows_the_sandbox_policy_it_is_given(house_task, policy):
    evaluator = CODING.evaluator_for(pd.DataFrame([house_task]), model_name="m", sandbox=policy)
    assert evaluator.sandbox == policy
