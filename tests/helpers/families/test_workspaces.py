"""The learned section of a rules file: the team's text comes back byte for byte, whatever it holds."""

import pytest

from helpers.core.rules import SECTION_END, SECTION_START, insert_section, remove_section

TEAM_TEXTS = ["", "\n", "one line", "one line\n", "a\r\nb\r\n", "ends with blank lines\n\n\n", "ünïcödé\n",
              f"quotes our markers: {SECTION_START} and {SECTION_END} inline\n"]


@pytest.mark.parametrize("team", TEAM_TEXTS)
@pytest.mark.parametrize("rules", ["- [R1] One rule.", "- [R1] One.\n- [R2] Two.\n\n"])
def test_removing_the_learned_section_gives_the_teams_text_back_exactly(team, rules):
    combined = insert_section(team, rules)
    assert combined.startswith(team) and rules.rstrip("\n") in combined
    assert remove_section(combined) == team


def test_an_edit_after_the_section_is_kept():
    combined = insert_section("Team.\n", "- [R1] Rule.") + "Added by the agent.\n"
    assert remove_section(combined) == "Team.\nAdded by the agent.\n"


# --- a workspace is self-contained, and names that would escape its folder are refused -----------------
import os  # noqa: E402
from pathlib import Path  # noqa: E402

from helpers.families.coding.house_suite import load_house_suite  # noqa: E402
from helpers.families.coding.workspaces import prepare_workspace, remove_workspace  # noqa: E402

TRAVERSALS = ["../x", "/", "a/b", "", "x" * 300, "..", ".hidden", "a b", None]


@pytest.fixture(scope="module")
def house_task():
    return load_house_suite().iloc[0].to_dict()


def test_a_workspace_does_not_point_back_into_the_cache_that_holds_hidden_tests(house_task, tmp_path):
    workspace = prepare_workspace(house_task, tmp_path)
    assert not (workspace / ".git/objects/info/alternates").exists()
    source_objects = {os.stat(p).st_ino for p in Path(house_task["repo_path"]).rglob("objects/??/*")}
    clone_objects = {os.stat(p).st_ino for p in (workspace / ".git/objects").rglob("??/*")}
    assert not source_objects & clone_objects, "objects hardlinked: an agent could rewrite the cached repository"
    assert "tasks.json" not in {p.name for p in workspace.rglob("*")}


@pytest.mark.parametrize("instance_id", TRAVERSALS)
def test_an_unsafe_instance_id_is_refused_before_anything_is_touched(house_task, instance_id, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "x"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="Invalid instance_id"):
        prepare_workspace({**house_task, "instance_id": instance_id}, root)
    assert (outside / "keep.txt").read_text() == "mine" and list(root.iterdir()) == []


@pytest.mark.parametrize("target", ["/", "..", "."])
def test_remove_workspace_refuses_anything_but_a_folder_inside_its_root(tmp_path, target, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="Refusing to touch"):
        remove_workspace(target, root=tmp_path)
    assert (tmp_path / "keep.txt").exists()


def test_remove_workspace_deletes_its_workspace(house_task, tmp_path):
    workspace = prepare_workspace(house_task, tmp_path)
    remove_workspace(workspace)
    assert not workspace.exists() and tmp_path.exists()
