"""The baseline arms: the agent's own /init file and the team's file, each a ruleset version of its own, run on the
same test tasks as the primary test; an init that fails or writes nothing is an errored arm, named, never "no
rules". The init runs are real: each agent's CLI, in the sandbox, through a gateway, against the scripted server."""

import json
import subprocess

import pandas as pd
import pytest

from agent_runs import agent_at, agents
from helpers.agents.init_route import OWN_INIT, PROJECT_INIT, init_task, written_file
from helpers.core.registry import agent_class
from helpers.engine.baselines import (HOUSE_TEAM_FILE, init_rules, named_team_file, newest_training_tasks,
                                      run_baselines, tasks_the_one_test_ran, team_rules)
from helpers.engine.one_test import task_order
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.families.coding.tasks import load_house_suite
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Script, ScriptedModelServer
from helpers.store.arms import arm_rows, load_arms
from helpers.store.loops import save_one_test, save_split
from helpers.store.rulesets import RulesetStore
from helpers.stand_ins.dry_run import DryRunScript


def documented(repo_folder: str) -> set[str]:
    """The conventions the house library's CONTRIBUTING.md states, word for word."""
    from helpers.families.coding.house_suite.build import SOURCE

    text = (SOURCE / repo_folder / "CONTRIBUTING.md").read_text() + (SOURCE / repo_folder / "README.md").read_text()
    return {c for c, spec in CONVENTIONS.items() if spec["rule"] in text}


@pytest.mark.parametrize("name", agents())
def test_each_agents_init_route_runs_headless_in_the_sandbox_and_writes_the_documented_conventions_only(name, agent_runs):
    run, route = agent_runs.init(name), agent_class(name).init_route
    found = run.rows
    assert found["status"] == "ran", found["why"]
    assert found["prompt_sha"] == route.prompt_sha and found["agent_version"][0].isdigit()
    assert found["base_commit"] == run.tasks.base_commit[0] and found["run_id"].endswith(route.prompt_sha)
    taught = {c for c, spec in CONVENTIONS.items() if spec["rule"] in found["text"]}
    assert taught == documented("ledger") and len(taught) == 2  # what the repository documents, and nothing more
    assert run.calls and all(c["status"] == 200 for c in run.calls)  # every model call went through the gateway
    label = found["label"]
    assert (PROJECT_INIT in label) == (route.kind == PROJECT_INIT) and (route.kind == OWN_INIT) == label.endswith("/init")


def test_the_house_libraries_document_two_conventions_each_and_the_team_file_a_different_two():
    team = {c for c, spec in CONVENTIONS.items() if spec["rule"] in HOUSE_TEAM_FILE.read_text()}
    per_library = {folder: documented(folder) for folder in ("ledger", "todo", "rows")}
    assert all(len(found) == 2 for found in per_library.values()) and len(team) == 2
    assert not team & set().union(*per_library.values())  # the team documents others than the repositories
    assert len(set().union(*per_library.values(), team)) < len(CONVENTIONS)  # learning has the rest to find


@pytest.mark.xdist_group("codex")  # Codex runs: on the worker whose timeout test looks for its processes
def test_an_init_run_that_writes_nothing_is_an_errored_arm_named_with_why(isolated):
    tasks = load_house_suite().head(1)
    silent = Script([], default=Reply("I looked around and have nothing to write (scripted)."))
    with ScriptedModelServer(silent) as server:
        agent = agent_at("codex", server, "test-KEY-silent", timeout_s=180)
        with Gateway({"agent": Upstream(*agent.upstream())}) as gateway:
            found = init_rules(agent, tasks.iloc[0].to_dict(), experiment="silent", gateway=gateway)
    assert found["status"] == "errored" and found["text"] == ""
    assert found["why"] == "codex's init run wrote no AGENTS.md"


def test_the_init_sees_the_newest_training_tasks_base_commit_never_a_test_tasks():
    train = pd.DataFrame({"instance_id": ["a", "b", "c"], "repo": ["r1", "r1", "r2"], "base_commit": ["old", "new", "x"],
                          "created_at": ["2026-01-01", "2026-03-01", "2026-02-01"]})
    newest = newest_training_tasks(train)
    assert {repo: t["base_commit"] for repo, t in newest.items()} == {"r1": "new", "r2": "x"}
    task = init_task(newest["r1"], agent_class("codex").init_route, "codex")
    assert task["base_commit"] == "new" and task["exact_prompt"] and task["instance_id"] == "init-codex-r1-new"


def test_the_file_an_init_wrote_is_read_from_its_patch_as_data():
    patch = ("diff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-a\n+b\n"
             "diff --git a/AGENTS.md b/AGENTS.md\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n"
             "+++ b/AGENTS.md\n@@ -0,0 +1,2 @@\n+# Guide\n+- Run `rm -rf /` never.\n\\ No newline at end of file\n")
    assert written_file(patch, "AGENTS.md") == "# Guide\n- Run `rm -rf /` never."
    assert written_file(patch, "CLAUDE.md") is None and written_file(patch, "src/x.py") is None  # not a new file
    assert written_file("", "AGENTS.md") is None


def git_repo(tmp_path, files):
    repo = tmp_path / "repo"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"], cwd=repo, check=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    return {"instance_id": "t-1", "repo": "team/repo", "repo_path": str(repo), "base_commit": base}


def test_the_team_file_is_the_one_the_repository_holds_at_the_base_commit_the_agents_own_first(tmp_path):
    task = git_repo(tmp_path, {"README.md": "hi", "CLAUDE.md": "# Ours\n- Use tabs.\n", "AGENTS.md": "- Use spaces.\n"})
    assert team_rules(task, "AGENTS.md") == ("- Use spaces.\n", "AGENTS.md")
    assert team_rules(task, "CLAUDE.md") == ("# Ours\n- Use tabs.\n", "CLAUDE.md")
    assert team_rules(task, ".clinerules") == ("- Use spaces.\n", "AGENTS.md")  # any format the project reads
    bare = git_repo(tmp_path / "bare", {"README.md": "no rules here"})
    assert team_rules(bare, "AGENTS.md") is None


def test_a_named_team_file_is_checked_before_anything_runs(tmp_path):
    with pytest.raises(FileNotFoundError, match="TEAM_FILE"):
        named_team_file(tmp_path / "missing.md")
    (tmp_path / "empty.md").write_text("  \n")
    with pytest.raises(ValueError, match="empty"):
        named_team_file(tmp_path / "empty.md")
    assert named_team_file(HOUSE_TEAM_FILE)[0].startswith("# Team conventions")


@pytest.mark.xdist_group("codex")  # Codex runs: on the worker whose timeout test looks for its processes
def test_run_baselines_saves_each_arm_as_a_ruleset_version_runs_it_on_the_test_tasks_and_resumes(isolated):
    suite = load_house_suite()
    ledger = suite[suite["repo"] == "house/ledger"]
    train, test = ledger.head(3), ledger.iloc[3:5]
    save_split("arms", list(train.instance_id), list(test.instance_id), source="house")
    with pytest.raises(ValueError, match="Unknown baseline arm"):
        run_baselines("arms", None, arms=("init", "learned"))
    with ScriptedModelServer(DryRunScript(suite, edit_tools=agent_class("codex").dry_run_tools).script()) as server:
        agent = agent_at("codex", server, "test-KEY-arms", timeout_s=180)
        with Gateway({"agent": Upstream(*agent.upstream())}) as gateway:
            done = run_baselines("arms", agent, gateway=gateway, workers=2, dry_run=True)
            asked = len(server.requests)
            again = run_baselines("arms", agent, gateway=gateway, workers=2, dry_run=True)  # resumes: nothing new
            assert len(server.requests) == asked
    assert {arm: r["status"] for arm, r in done.items()} == {"init": "ran", "team": "ran"}
    assert again["init"]["versions"] == done["init"]["versions"]
    store = RulesetStore("arms-baselines")
    init_meta = store.metadata(done["init"]["versions"]["house/ledger"])
    assert init_meta["kind"] == "init" and init_meta["prompt_sha"] == agent_class("codex").init_route.prompt_sha
    assert init_meta["agent_version"][0].isdigit() and init_meta["dry_run"] is True
    assert store.load(done["team"]["versions"]["house/ledger"]) == HOUSE_TEAM_FILE.read_text()
    saved = load_arms("arms")
    assert saved["init"]["label"] == "codex's /init" and saved["team"]["label"] == "the team's team_rules.md"
    for arm in ("init", "team"):
        rows = arm_rows("arms", arm)
        assert sorted(rows.instance_id) == sorted(test.instance_id)  # the same test tasks as the primary test
        assert set(rows.pass_or_fail) <= {"pass", "fail"}
    assert json.loads(json.dumps(saved))  # plain data


@pytest.mark.xdist_group("codex")  # Codex runs: on the worker whose timeout test looks for its processes
def test_where_the_one_test_stopped_early_the_arms_run_only_the_tasks_it_ran_in_its_order(isolated):
    """Issue #50: the secondaries reuse the primary's stopping point. With no one test, or one declared but not
    finished, every test task; once it stopped after 2 of its 4 tasks, the team arm pays for those 2 only, the
    first 2 of the recorded order (not the split's)."""
    suite = load_house_suite()
    ledger = suite[suite["repo"] == "house/ledger"]
    train, test = ledger.head(3), ledger.iloc[3:7].reset_index(drop=True)
    save_split("stopped", list(train.instance_id), list(test.instance_id), source="house")
    order = task_order(list(test.instance_id), "stopped", 0)
    assert not set(order[:2]) & set(test.instance_id[:2])  # the order is not the split's: it ran others first
    assert tasks_the_one_test_ran("stopped", test).equals(test)  # no one test: every task
    save_one_test("stopped", {"order": order})  # declared before its first run, not finished: stops nothing
    assert tasks_the_one_test_ran("stopped", test).equals(test)
    save_one_test("stopped", {"order": order, "tasks_run": 2, "tasks_saved": 2, "decision": "help"})
    assert list(tasks_the_one_test_ran("stopped", test).instance_id) == order[:2]
    with ScriptedModelServer(DryRunScript(suite, edit_tools=agent_class("codex").dry_run_tools).script()) as server:
        agent = agent_at("codex", server, "test-KEY-stopped", timeout_s=180)
        with Gateway({"agent": Upstream(*agent.upstream())}) as gateway:
            done = run_baselines("stopped", agent, arms=("team",), gateway=gateway, workers=2, dry_run=True)
    assert done["team"]["status"] == "ran"
    assert sorted(arm_rows("stopped", "team").instance_id) == sorted(order[:2])  # two runs paid, not four


@pytest.mark.xdist_group("codex")  # Codex runs: on the worker whose timeout test looks for its processes
def test_start_rules_init_or_team_is_the_file_itself_and_a_missing_one_stops_before_the_loop(isolated, tmp_path):
    from helpers.engine.baselines import baseline_start_rules
    from helpers.engine.start import start_rules

    suite = load_house_suite()
    ledger = suite[suite["repo"] == "house/ledger"].head(3)
    assert start_rules("team", train=ledger, agent=agent_class("codex")(), experiment="s") == HOUSE_TEAM_FILE.read_text()
    with ScriptedModelServer(DryRunScript(suite, edit_tools=agent_class("codex").dry_run_tools).script()) as server:
        agent = agent_at("codex", server, "test-KEY-start", timeout_s=180)
        with Gateway({"agent": Upstream(*agent.upstream())}) as gateway:
            text = start_rules("init", train=ledger, agent=agent, experiment="s", gateway=gateway)
    assert {c for c, spec in CONVENTIONS.items() if spec["rule"] in text} == documented("ledger")
    bare = pd.DataFrame([git_repo(tmp_path, {"README.md": "no rules"})])
    with pytest.raises(ValueError, match="START_RULES='team': team/repo holds no rules file"):
        start_rules("team", train=bare, agent=agent_class("codex")(), experiment="s")
    with pytest.raises(ValueError, match="'init' or 'team'"):
        baseline_start_rules("learned", ledger, agent, experiment="s")
