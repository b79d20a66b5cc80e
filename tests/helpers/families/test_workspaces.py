"""The learned section of a rules file: the team's text comes back byte for byte, whatever it holds."""

import pytest

from helpers.rules.ruleset import SECTION_END, SECTION_START, insert_section, remove_section

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


# --- the host never runs what an agent planted in a workspace's git ------------------------------------------
import subprocess  # noqa: E402

from sandbox_probes import GIT_VECTORS, markers_found, plant_script  # noqa: E402

from helpers.families.coding.git import git  # noqa: E402
from helpers.families.coding.git import WorkspaceError  # noqa: E402
from helpers.families.coding.workspaces import adopt_workspace, host_git_dir, workspace_patch  # noqa: E402


def plant(workspace, markers):
    markers.mkdir(exist_ok=True)
    planted = subprocess.run(["bash", "-c", plant_script(markers)], cwd=workspace, capture_output=True, text=True)
    assert "planted" in planted.stdout, planted.stderr


def test_what_an_agent_plants_in_git_would_run_for_whoever_runs_git_in_its_workspace(house_task, tmp_path):
    """The control: these vectors are real. Plain git in the workspace runs them (as the host once did)."""
    workspace, markers = prepare_workspace(house_task, tmp_path / "root"), tmp_path / "markers"
    plant(workspace, markers)
    git("add", "-A", "-N", cwd=workspace, check=False)
    git("diff", house_task["base_commit"], cwd=workspace, check=False)
    assert {"fsmonitor", "clean", "hook"} <= set(markers_found(markers))


def test_taking_the_patch_runs_nothing_the_agent_planted_and_keeps_its_work(house_task, tmp_path):
    workspace, markers = prepare_workspace(house_task, tmp_path / "root"), tmp_path / "markers"
    plant(workspace, markers)
    patch = workspace_patch(workspace, house_task["base_commit"])
    assert markers_found(markers) == [], f"the host ran what the agent planted: {markers_found(markers)}"
    assert "+changed by the agent" in patch and "+++ b/new.txt" in patch and "+++ b/.gitattributes" in patch
    assert "core.fsmonitor" not in patch and ".git/" not in patch.replace(".gitattributes", "")
    assert set(GIT_VECTORS) >= {"fsmonitor", "clean", "extdiff", "textconv", "hook"}


def test_the_hosts_git_directory_lies_outside_the_workspace_and_is_the_hosts_own(house_task, tmp_path):
    workspace = prepare_workspace(house_task, tmp_path / "root")
    host = host_git_dir(workspace)
    assert host.is_dir() and workspace.resolve() not in host.resolve().parents
    (workspace / ".git" / "config").write_text("[core]\n\tfsmonitor = touch /nonexistent\n")
    assert "fsmonitor" not in (host / "config").read_text()
    remove_workspace(workspace)
    assert not host.exists() and not workspace.exists()


def test_commits_and_refs_the_agent_makes_do_not_change_the_patch(house_task, tmp_path):
    workspace = prepare_workspace(house_task, tmp_path / "root")
    (workspace / "new.txt").write_text("new\n")
    git("add", "-A", cwd=workspace)
    git("commit", "-qm", "the agent's own commit", cwd=workspace)
    git("update-ref", "refs/cline/checkpoints/1", "HEAD", cwd=workspace)
    patch = workspace_patch(workspace, house_task["base_commit"])
    assert "+++ b/new.txt" in patch and patch.count("diff --git") == 1


@pytest.mark.parametrize("path_entry", ["", ".", "bin"])
def test_a_git_the_agent_left_in_its_workspace_never_runs_when_the_host_takes_the_patch(house_task, tmp_path,
                                                                                          monkeypatch, path_entry):
    """Whatever the driver's PATH holds (an empty entry, ".", a relative folder), the host's git is found in PATH's
    absolute folders only: every git the host runs in a workspace (the new files listed, the diff taken), and the
    continual mode's git in a team's repository, never the one the agent wrote there."""
    from helpers.continual.repository import _git_bytes

    workspace, marker = prepare_workspace(house_task, tmp_path / "root"), tmp_path / "ran"
    for folder in (workspace, workspace / "bin"):
        folder.mkdir(exist_ok=True)
        (folder / "git").write_text(f"#!/bin/sh\necho ran >> {marker}\n")
        (folder / "git").chmod(0o755)
    (workspace / "new.txt").write_text("the agent's new file\n")
    monkeypatch.setenv("PATH", os.pathsep.join([path_entry, os.environ["PATH"]]))
    patch = workspace_patch(workspace, house_task["base_commit"])
    _git_bytes(["status", "--short"], workspace)
    assert not marker.exists()
    assert "+++ b/new.txt" in patch


def test_new_files_git_cannot_list_are_an_error_never_a_patch_without_them(house_task, tmp_path):
    workspace = prepare_workspace(house_task, tmp_path / "root")
    (workspace / "new.txt").write_text("the agent's new file\n")
    (host_git_dir(workspace) / "index.lock").write_text("")  # the host's index is busy: git add refuses
    with pytest.raises(WorkspaceError, match="could not list the new files"):
        workspace_patch(workspace, house_task["base_commit"])


def test_a_workspace_the_caller_made_is_adopted_before_the_agent_runs(house_task, tmp_path):
    own = tmp_path / "own"
    git("clone", "-q", house_task["repo_path"], str(own), cwd=tmp_path)
    adopt_workspace(own, house_task["base_commit"])
    plant(own, tmp_path / "markers")
    assert "+++ b/new.txt" in workspace_patch(own, house_task["base_commit"])
    assert markers_found(tmp_path / "markers") == []


def test_a_workspace_the_host_has_no_git_directory_for_gives_no_patch_but_an_error(house_task, tmp_path):
    own = tmp_path / "own"
    git("clone", "-q", house_task["repo_path"], str(own), cwd=tmp_path)
    with pytest.raises(WorkspaceError, match="no git directory"):
        workspace_patch(own, house_task["base_commit"])


# --- a workspace holds the base commit and its ancestors, nothing later ----------------------------------------
from helpers.families.coding.mirrors import ensure_mirror  # noqa: E402
from helpers.families.coding.workspaces import check_no_future  # noqa: E402


@pytest.fixture
def repository_with_a_future(tmp_path):
    """(a team's repository whose later commits hold the fix, on a branch, a tag and a stash too; its base
    commit; the commits after it)."""
    repo = tmp_path / "remote" / "octo" / "widget.git"
    repo.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=repo)

    def commit(text):
        (repo / "widget.py").write_text(text)
        git("add", "-A", cwd=repo)
        git("commit", "-qm", text, cwd=repo)
        return git("rev-parse", "HEAD", cwd=repo).stdout.strip()

    commit("version = 1\n")
    base = commit("version = 2  # the bug\n")
    fix = commit("version = 2  # THE GOLD FIX\n")
    git("tag", "v3", cwd=repo)
    git("checkout", "-q", "-b", "feature", cwd=repo)
    later = commit("version = 4\n")
    (repo / "widget.py").write_text("stashed work\n")
    git("stash", "-q", cwd=repo)
    return repo, base, {fix, later}


def assert_base_and_ancestors_only(workspace, base, future):
    everything = git("rev-list", "--all", "--reflog", cwd=workspace).stdout.split()
    assert set(everything) == set(git("rev-list", base, cwd=workspace).stdout.split()) and base in everything
    for sha in future:
        assert git("cat-file", "-e", sha, cwd=workspace, check=False).returncode != 0  # not even unreachable
    assert git("for-each-ref", cwd=workspace).stdout == "" and git("remote", cwd=workspace).stdout == ""
    assert "GOLD FIX" not in git("log", "--all", "-p", cwd=workspace).stdout
    assert git("rev-parse", "HEAD", cwd=workspace).stdout.strip() == base
    check_no_future(workspace, base)


def test_a_mined_tasks_workspace_holds_no_commit_after_its_base(repository_with_a_future, tmp_path):
    repo, base, future = repository_with_a_future
    task = {"instance_id": "widget__1", "repo": "octo/widget", "repo_path": str(repo), "base_commit": base}
    assert_base_and_ancestors_only(prepare_workspace(task, tmp_path / "root"), base, future)


def test_a_swebench_mirror_tasks_workspace_holds_no_commit_after_its_base(repository_with_a_future, tmp_path):
    repo, base, future = repository_with_a_future
    mirror = ensure_mirror("octo/widget", base, cache_dir=tmp_path / "cache", remote_base=f"file://{tmp_path / 'remote'}",
                           progress=lambda line: None)
    assert all(git("cat-file", "-e", sha, cwd=mirror, check=False).returncode == 0 for sha in future)  # the leak
    task = {"instance_id": "octo__widget-1", "repo": "octo/widget", "suite": "swebench", "repo_path": str(mirror),
            "base_commit": base}
    assert_base_and_ancestors_only(prepare_workspace(task, tmp_path / "root"), base, future)


def test_the_check_names_what_a_repository_holds_beyond_its_base(repository_with_a_future, tmp_path):
    repo, base, _ = repository_with_a_future
    with pytest.raises(WorkspaceError, match="commit.*not in the base's history.*refs"):
        check_no_future(repo, base)


# --- nothing the agent leaves is read as a repository, followed as a link or kept without a cap ------------------
import re  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402

from sandbox_probes import NESTED_REPOSITORIES, plant_nested_script  # noqa: E402

from helpers.core import config  # noqa: E402
from helpers.stats.outcomes import RULES, run_outcome  # noqa: E402
from helpers.rules.file_formats import FORMATS  # noqa: E402
from helpers.isolation.untrusted import RefusedOutput  # noqa: E402
from helpers.families.coding.workspace_rules import write_rules  # noqa: E402


def test_a_repository_inside_the_work_tree_is_refused_by_name_and_none_of_its_git_config_runs(house_task, tmp_path):
    """A nested repository, a .git file pointing elsewhere and a submodule (a gitlink), each with a filter,
    fsmonitor, diff and textconv drivers and a hook in its own config: today's git ran their clean filters."""
    workspace, markers = prepare_workspace(house_task, tmp_path / "root"), tmp_path / "markers"
    markers.mkdir()
    planted = subprocess.run(["bash", "-c", plant_nested_script(markers)], cwd=workspace, capture_output=True, text=True)
    assert "planted" in planted.stdout, planted.stderr
    assert (workspace / "linked/.git").is_file() and (workspace / "mod/.git").is_file() and (workspace / ".gitmodules").exists()
    shutil.rmtree(markers)  # planting ran some of them here: only what the host runs next counts
    markers.mkdir()
    with pytest.raises(RefusedOutput, match=r"linked/\.git, mod/\.git, sub/\.git - a git repository inside") as refusal:
        workspace_patch(workspace, house_task["base_commit"])
    assert markers_found(markers) == [], f"the host ran what the agent planted: {markers_found(markers)}"
    assert run_outcome({"status": "error", "error": f"RefusedOutput: {refusal.value}"}) == RULES  # the agent's doing
    assert set(NESTED_REPOSITORIES) == {"nested", "gitfile", "gitlink"}


def test_a_patch_over_its_cap_is_refused_naming_its_size_and_one_under_it_is_taken(house_task, tmp_path, monkeypatch):
    workspace = prepare_workspace(house_task, tmp_path / "root")
    (workspace / "big.txt").write_text("y\n" * 2_000_000)  # a 6 MB patch
    with pytest.raises(RefusedOutput, match=r"the patch is \d{7} bytes, over the 5242880 bytes .*MAX_PATCH_BYTES"):
        workspace_patch(workspace, house_task["base_commit"])
    monkeypatch.setattr(config, "MAX_PATCH_BYTES", 8 * 2**20)
    assert "+++ b/big.txt" in workspace_patch(workspace, house_task["base_commit"])
    (workspace / "latin1.txt").write_bytes("café\n".encode("latin-1"))  # other bytes: binary form, still capped
    monkeypatch.setattr(config, "MAX_PATCH_BYTES", 5 * 2**20)
    with pytest.raises(RefusedOutput, match=r"the patch is \d{7} bytes, over the 5242880 bytes"):
        workspace_patch(workspace, house_task["base_commit"])


# Every folder of rules: each named format's folder, .clinerules as a folder, and any other folder.
RULES_FOLDERS = sorted({fmt.folder for fmt in FORMATS if fmt.folder} | {".clinerules", "docs/rules"})


def host_folder(tmp_path, under=""):
    """A folder on the host holding, `under` it, what our own file in a rules folder would be called in every
    format, and a team file."""
    host = tmp_path / "host"
    for name in ("learned-rules.md", "learned-rules.mdc", "learned-rules/SKILL.md", "team.md"):
        (host / under / name).parent.mkdir(parents=True, exist_ok=True)
        (host / under / name).write_text(f"host file {name}\n")
    return host


def host_state(host):
    return sorted((p.relative_to(host).as_posix(), p.read_text() if p.is_file() else "") for p in host.rglob("*"))


@pytest.mark.parametrize("folder, swapped", [(f, "the folder") for f in RULES_FOLDERS]
                         + [(f, "its top folder") for f in RULES_FOLDERS if "/" in f])
def test_a_rules_folder_the_agent_swaps_for_a_link_touches_nothing_outside_the_workspace(tmp_path, folder, swapped):
    top, _, rest = folder.partition("/")
    workspace = tmp_path / "ws"
    host = host_folder(tmp_path, under=rest if swapped == "its top folder" else "")
    (workspace / folder).mkdir(parents=True)
    (workspace / folder / "team.md").write_text("team rule\n")
    before = host_state(host)
    undo = write_rules(workspace, folder + "/", "- [R1] Learned.\n")
    ours = [p for p in (workspace / folder).rglob("*") if p.is_file() and p.name != "team.md"]
    assert len(ours) == 1 and "[R1]" in ours[0].read_text()
    link = workspace / (folder if swapped == "the folder" else top)
    shutil.rmtree(link)  # what the agent's commands can do: the folder becomes a link to a host folder
    link.symlink_to(host)  # which holds a file at the path of ours: today's undo deleted it
    with pytest.raises(RefusedOutput, match=f"{re.escape(link.relative_to(workspace).as_posix())} is a symbolic link"):
        undo()
    assert host_state(host) == before


@pytest.mark.parametrize("folder", RULES_FOLDERS)
def test_a_rules_folder_that_is_a_link_before_the_run_is_refused_and_nothing_is_written(tmp_path, folder):
    """The task's repository holds the link (no agent ran yet): a workspace error, left out of accuracy."""
    workspace, host = tmp_path / "ws", host_folder(tmp_path)
    (workspace / folder).parent.mkdir(parents=True, exist_ok=True)
    (workspace / folder).symlink_to(host)
    before = host_state(host)
    with pytest.raises(WorkspaceError, match=f"cannot be written to {folder}/: {folder} is a symbolic link"):
        write_rules(workspace, folder + "/", "- [R1] Learned.\n")
    assert host_state(host) == before


@pytest.mark.parametrize("make", ["fifo", "link to /dev/zero", "folder"])
def test_a_rules_file_the_agent_made_special_is_refused_by_the_undo_at_once(tmp_path, make):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("Team text.\n")
    undo = write_rules(workspace, "AGENTS.md", "- [R1] Learned.\n")
    (workspace / "AGENTS.md").unlink()
    {"fifo": lambda p: os.mkfifo(p), "link to /dev/zero": lambda p: p.symlink_to("/dev/zero"),
     "folder": lambda p: p.mkdir()}[make](workspace / "AGENTS.md")
    with pytest.raises(RefusedOutput, match="AGENTS.md is a"):
        undo()


def test_links_and_special_files_in_the_work_tree_are_data_to_the_patch_and_never_opened(house_task, tmp_path):
    workspace = prepare_workspace(house_task, tmp_path / "root")
    os.mkfifo(workspace / "pipe")  # no writer: opening it would block
    (workspace / "zero").symlink_to("/dev/zero")  # following it would read without end
    (workspace / "loop").symlink_to("loop")
    started = time.monotonic()
    patch = workspace_patch(workspace, house_task["base_commit"])
    assert time.monotonic() - started < 10
    assert "+/dev/zero" in patch and "new file mode 120000" in patch and "pipe" not in patch


def test_removing_workspaces_while_others_are_made_in_the_same_root_never_pulls_their_host_side_away(tmp_path):
    """The workspaces of one root share its `.host` folder: removing one (even the last) leaves the folder, so a
    run preparing its workspace beside it at that moment never finds it gone (a FileNotFoundError, seen at load)."""
    from concurrent.futures import ThreadPoolExecutor

    tasks = [row._asdict() for row in load_house_suite().head(12).itertuples(index=False)]

    def one_round(task: dict) -> None:
        workspace = prepare_workspace(task, tmp_path)
        assert host_git_dir(workspace).is_dir()
        remove_workspace(workspace, tmp_path)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one_round, tasks))  # each round's removal races the others' preparation
    assert (tmp_path / ".host").is_dir() and not any((tmp_path / ".host").iterdir())  # kept, and empty
    assert [p.name for p in tmp_path.iterdir()] == [".host"]  # no workspace left behind


def test_a_1100_deep_tree_travels_in_the_patch_a_repository_at_its_bottom_is_refused_and_the_workspace_goes(
        house_task, tmp_path):
    import tempfile

    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # 1,100 folders cost a disk write each here
    root = Path(tempfile.mkdtemp(prefix="ws-", dir=shm or tmp_path))
    workspace = prepare_workspace(house_task, root)
    fd = os.open(workspace, os.O_RDONLY)
    for _ in range(1100):  # made relative to each other, as an agent's program would
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    os.write(file := os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), b"at the bottom\n")
    os.close(file)
    patch = workspace_patch(workspace, house_task["base_commit"])
    assert f"+++ b/{'d/' * 1100}f.txt" in patch
    os.mkdir(".git", dir_fd=fd)
    os.close(fd)
    with pytest.raises(RefusedOutput, match=r"d/d/.*d/\.git - a git repository inside the work tree"):
        workspace_patch(workspace, house_task["base_commit"])
    remove_workspace(workspace)
    assert not workspace.exists() and not host_git_dir(workspace).exists()
    subprocess.run(["rm", "-rf", str(root)], check=False)


# --- any byte survives: in the patch, the record and the grading --------------------------------------------
LEFT = {  # what an agent leaves, as bytes (path -> content)
    b"surrogate.txt": b"ok \xed\xa0\x80 end\n",  # the example: the encoding of a lone surrogate
    b"latin1.txt": "caf\u00e9, na\u00efve, fa\u00e7ade\n".encode("latin-1"),  # a Latin-1 fixture
    b"zeros.bin": bytes(range(256)) * 8,  # binary: once "Binary files differ", which no git apply takes back
    b"caf\xe9-named.txt": b"a name that is not UTF-8\n",
    b"utf8.txt": "\u00fcn\u00efc\u00f6d\u00e9 stays text\n".encode(),
    b".gitattributes": b"* diff\n*.txt text\n",  # the work tree's attributes cannot make the bytes text again
}


def leave_new_bytes(workspace: Path) -> None:
    for name, data in LEFT.items():
        with open(os.path.join(os.fsencode(workspace), name), "wb") as file:
            file.write(data)


def leave_bytes(workspace: Path) -> dict[bytes, bytes]:
    """Write LEFT, rewrite a tracked file in Latin-1 and rename another with Latin-1 added; returns every file's
    expected bytes afterwards (None: gone)."""
    expected = dict(LEFT)
    leave_new_bytes(workspace)
    tracked = sorted(p for p in git("ls-files", cwd=workspace).stdout.split() if p.endswith(".md"))
    changed = (workspace / tracked[0]).read_bytes() + "\u00a7 r\u00e9vis\u00e9\n".encode("latin-1")
    (workspace / tracked[0]).write_bytes(changed)
    expected[tracked[0].encode()] = changed
    moved = [p for p in git("ls-files", cwd=workspace).stdout.split() if p.endswith(".py")][0]
    renamed = (workspace / moved).read_bytes() + "# \u00e9t\u00e9\n".encode("latin-1")
    (workspace / moved).unlink()
    (workspace / "moved.py").write_bytes(renamed)
    expected[moved.encode()], expected[b"moved.py"] = None, renamed
    return expected


def test_files_of_any_bytes_travel_in_the_patch_and_apply_back_byte_for_byte(house_task, tmp_path):
    workspace = prepare_workspace(house_task, tmp_path / "runs")
    expected = leave_bytes(workspace)
    patch = workspace_patch(workspace, house_task["base_commit"])
    assert isinstance(patch, str) and patch.count("GIT binary patch") >= 5, patch[:2000]
    assert "+\u00fcn\u00efc\u00f6d\u00e9 stays text" in patch  # UTF-8 text stays text, for the judge to read
    assert '"b/caf\\351-named.txt"' in patch  # a name of other bytes, quoted
    clone = tmp_path / "clone"
    git("clone", "--quiet", str(house_task["repo_path"]), str(clone), cwd=tmp_path)
    git("checkout", "--quiet", "--detach", house_task["base_commit"], cwd=clone)
    git("apply", "-", cwd=clone, input=patch)
    for name, data in expected.items():
        path = os.path.join(os.fsencode(clone), name)
        assert (open(path, "rb").read() if data is not None else None) == (data if os.path.exists(path) or data else None)


def test_a_changed_file_git_would_send_as_a_binary_delta_is_taken_whole_so_its_code_is_read(house_task, tmp_path,
                                                                                            monkeypatch):
    from helpers.families.coding import workspaces
    from helpers.families.coding.binary_patches import UNREADABLE_DELTA, new_side
    from helpers.families.coding.patches import patch_files, suspect_lines

    workspace = prepare_workspace(house_task, tmp_path / "runs")
    module = sorted(p for p in git("ls-files", cwd=workspace).stdout.split() if p.endswith(".py")
                    and not p.startswith("tests/"))[0]
    changed = (workspace / module).read_bytes() + "# \u00e9t\u00e9\nimport _pytest.reports\n".encode("latin-1")
    (workspace / module).write_bytes(changed)
    with monkeypatch.context() as undone:  # as git alone writes it: a delta, which cannot be read without the base
        undone.setattr(workspaces, "_as_literal", lambda workspace, limit, section: section)
        as_git_writes = workspace_patch(workspace, house_task["base_commit"])
    assert suspect_lines(as_git_writes) == [f"{module}:1: {UNREADABLE_DELTA}"]
    patch = workspace_patch(workspace, house_task["base_commit"])
    section = next(text for paths, text in patch_files(patch) if paths == [module])
    assert "GIT binary patch" in section and new_side(section) == changed and new_side(section) != UNREADABLE_DELTA
    assert any(line.startswith(f"{module}:") and "_pytest" in line for line in suspect_lines(patch))
    clone = tmp_path / "clone"
    git("clone", "--quiet", str(house_task["repo_path"]), str(clone), cwd=tmp_path)
    git("checkout", "--quiet", "--detach", house_task["base_commit"], cwd=clone)
    git("apply", "-", cwd=clone, input=patch)
    assert (clone / module).read_bytes() == changed


def test_a_run_that_leaves_other_bytes_is_recorded_and_graded_never_refused(tmp_path):
    from helpers.agents.base import AgentBase
    from helpers.core.protocols import AgentResult
    from helpers.engine.runs import run_tasks
    from helpers.store.records import read_jsonl, run_records_path

    class BytesAgent(AgentBase):
        name, mode, model, base_prompt, rules_file = "bytes-agent", "act", "test-model", "A test agent.", "AGENTS.md"

        def check(self):
            pass

        def run(self, task, workspace, ruleset):
            git("apply", "-", cwd=workspace, input=task["patch"])  # the fix, and other bytes beside it
            leave_new_bytes(Path(workspace))
            return AgentResult(task["instance_id"], "completed", model=self.model)

    tasks = load_house_suite().head(1)
    df = run_tasks(tasks, BytesAgent(), run_id="train_0", experiment="bytes", results_root=tmp_path / "results",
                   workers=1, progress=False)
    row = df.iloc[0]
    assert row.status == "completed" and row.pass_or_fail == "pass", str({k: v for k, v in row.to_dict().items() if "error" in k or "log" in k or "test" in k})[:3000]
    assert "GIT binary patch" in row.output
    records = read_jsonl(run_records_path("bytes", "train_0", tmp_path / "results"))
    assert any(record.get("output") == row.output for record in records)


@pytest.mark.skipif(os.geteuid() != 0, reason="the kernel's disk cap needs root")
def test_rules_that_cannot_be_taken_out_of_a_full_capped_workspace_are_the_agents_doing(house_task):
    from helpers.isolation.confinement import Limits
    from helpers.isolation.disks import cap_disk
    from helpers.stats.outcomes import RULES, run_outcome
    from helpers.isolation.processes import remove_scratch, scratch_dir

    scratch = scratch_dir("run")
    try:
        workspace = prepare_workspace(house_task, scratch)
        (workspace / "AGENTS.md").write_text("# The team's own rules\n" + "- Keep it short.\n" * 500)
        undo = write_rules(workspace, "AGENTS.md", "- [R1] A rule.\n")  # the team's file gets a learned section
        capped = cap_disk([workspace], Limits(disk_bytes=2**20))
        filler = os.open(workspace / "filler", os.O_WRONLY | os.O_CREAT)  # the run filled its disk
        with pytest.raises(OSError):
            while True:
                os.write(filler, b"x" * 4096)
        os.close(filler)
        with pytest.raises(RefusedOutput, match=r"AGENTS.md .*(filled its disk|No space left)") as refusal:
            undo()
        assert run_outcome({"status": "error", "error": f"RefusedOutput: {refusal.value}"}) == RULES
        capped.close()
    finally:
        remove_scratch(scratch)
