"""The run engine with an agent written here (not Cline): rules in its file, its edit in the patch,
failures kept to their task, resume, a team's own rules file, batched evaluators, locks and leftovers."""

import json
import os
import re
import signal
import subprocess
import threading
from pathlib import Path

import pandas as pd
import pytest

from helpers.agents.base import AgentBase

from helpers.isolation.processes import owner_tag, processes_in, scratch_root, sweep_stale
from helpers.core.protocols import AgentResult, EvalResult
from helpers.engine.runs import RunInProgress, _run_lock, run_tasks
from helpers.store.records import run_records_path
from helpers.rules.ruleset import SECTION_END, SECTION_START
from helpers.families.coding.git import git

RULES = "- [R1] Every error is the package's own exception.\n"


class PatchingAgent(AgentBase):
    """Applies the task's gold (or naive) patch with git; remembers what its rules file said."""

    name = "test-agent"
    mode = "act"
    model = "test-model"
    base_prompt = "You are a test agent."

    def __init__(self, rules_file="AGENTS.md", variant="patch", fail_on=(), also=None):
        self.rules_file, self.variant, self.fail_on, self.also = rules_file, variant, set(fail_on), also
        self.calls, self.rules_seen = [], {}
        self.lock = threading.Lock()

    def check(self):
        pass

    def run(self, task, workspace, ruleset):
        with self.lock:
            self.calls.append(task["instance_id"])
        rules = Path(workspace, self.rules_file)
        self.rules_seen[task["instance_id"]] = rules.read_bytes().decode() if rules.is_file() else None
        if task["instance_id"] in self.fail_on:
            raise RuntimeError(f"the agent crashed on {task['instance_id']}")
        git("apply", "-", cwd=workspace, input=task[self.variant])
        if self.also:
            self.also(task, Path(workspace))
        return AgentResult(task["instance_id"], "completed", model=self.model, cost_usd=0.01)


def run(tasks, agent, results, **kw):
    return run_tasks(tasks, agent, run_id=kw.pop("run_id", "train_0"), experiment="engine", results_root=results,
                     workers=kw.pop("workers", 2), progress=False, **kw)


def test_the_agents_rules_file_holds_the_ruleset_and_its_edit_is_the_tested_patch(house, results):
    tasks = house.head(2)
    agent = PatchingAgent()
    df = run(tasks, agent, results, ruleset=RULES)
    assert list(df.instance_id) == list(tasks.instance_id)
    assert set(df.pass_or_fail) == {"pass"} and set(df.status) == {"completed"}
    for iid in tasks.instance_id:
        assert RULES in agent.rules_seen[iid]
    for row, task in zip(df.itertuples(), tasks.itertuples()):
        assert "AGENTS.md" not in row.output  # the learned rules are not part of the agent's work
        changed = {line.split(" b/")[-1] for line in row.output.splitlines() if line.startswith("diff --git")}
        gold = {line.split(" b/")[-1] for line in task.patch.splitlines() if line.startswith("diff --git")}
        assert changed == gold
    assert set(df.agent) == {"test-agent"} and set(df.model) == {"test-model"}


def test_a_naive_patch_fails_its_tests_and_the_row_says_which(house, results):
    df = run(house.head(1), PatchingAgent(variant="naive_patch"), results)
    assert df.pass_or_fail.tolist() == ["fail"] and df.failed_tests[0]


def test_an_agent_that_raises_fails_its_task_only(house, results):
    tasks = house.head(3)
    broken = tasks.instance_id[1]
    df = run(tasks, PatchingAgent(fail_on={broken}), results)
    row = df.set_index("instance_id").loc[broken]
    assert row.status == "error" and row.pass_or_fail == "fail" and f"the agent crashed on {broken}" in row.error
    assert (df.set_index("instance_id").drop(broken).pass_or_fail == "pass").all()


def test_a_rerun_runs_nothing_that_finished(house, results):
    tasks = house.head(2)  # two: a run of several tasks, each graded for real
    run(tasks, PatchingAgent(), results, ruleset=RULES)
    again = PatchingAgent()
    df = run(tasks, again, results, ruleset=RULES)
    assert again.calls == [] and (df.pass_or_fail == "pass").all()
    other = PatchingAgent()
    run(tasks, other, results, ruleset=RULES + "- [R2] More.\n")  # another ruleset is another run
    assert sorted(other.calls) == sorted(tasks.instance_id)


# A transient failure is the host's observation, never the agent's words: tests/helpers/engine/test_runs_outcomes.py


def small_repo(root, files):
    repo = root / "team"
    repo.mkdir(parents=True)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(text.encode())
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "team", cwd=repo)
    base = git("rev-parse", "HEAD", cwd=repo).stdout.strip()
    patch = "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    return pd.DataFrame([{"instance_id": "team-1", "repo": "me/team", "base_commit": base, "repo_path": str(repo),
                          "problem_statement": "Make x two.", "patch": patch, "test_patch": "",
                          "FAIL_TO_PASS": [], "PASS_TO_PASS": [], "suite": "local"}])


def test_a_teams_own_rules_file_is_kept_byte_for_byte_and_only_the_learned_section_leaves_the_patch(tmp_path, results):
    team_text = "# Team rules\r\nUse tabs.\n\n\nNo trailing newline here"
    tasks = small_repo(tmp_path, {"AGENTS.md": team_text, "app.py": "x = 1\n"})
    agent = PatchingAgent()
    df = run(tasks, agent, results, ruleset=RULES, evaluate=False)
    seen = agent.rules_seen["team-1"]
    assert seen.startswith(team_text) and SECTION_START in seen and RULES in seen and SECTION_END in seen
    assert df.output[0].startswith("diff --git a/app.py b/app.py") and "AGENTS.md" not in df.output[0]

    def edit_team_text(task, workspace):  # the agent's own change to the team's text is its work: kept
        path = workspace / "AGENTS.md"
        path.write_text(path.read_text().replace("Use tabs.", "Use spaces."))

    df = run(tasks, PatchingAgent(also=edit_team_text), results, ruleset=RULES, evaluate=False, run_id="edit")
    assert "-Use tabs." in df.output[0] and "+Use spaces." in df.output[0]
    assert SECTION_START not in df.output[0] and RULES not in df.output[0]


def test_a_rules_folder_gets_a_file_of_its_own(tmp_path, results):
    tasks = small_repo(tmp_path, {".clinerules/team.md": "Team rule.\n", "app.py": "x = 1\n"})
    agent = PatchingAgent(rules_file=".clinerules")
    df = run(tasks, agent, results, ruleset=RULES, evaluate=False)
    assert df.output[0].count("diff --git") == 1 and ".clinerules" not in df.output[0]


class CountingBatchEvaluator:
    """Grades every patch that changes a file as resolved, in batches; counts its calls."""

    batched = True

    def __init__(self):
        self.calls = []

    def check(self, tasks):
        pass

    def evaluate(self, task, patch):
        raise AssertionError("a batched evaluator is called in batches")

    def evaluate_batch(self, tasks, patches, *, run_key):
        self.calls.append((run_key, [t["instance_id"] for t in tasks]))
        return [EvalResult(t["instance_id"], bool(p.strip())) for t, p in zip(tasks, patches)]


def test_a_batched_evaluator_grades_a_whole_run_in_one_call_with_a_key_of_its_own(house, results):
    evaluator = CountingBatchEvaluator()
    df = run(house.head(3), PatchingAgent(), results, evaluator=evaluator)
    assert (df.pass_or_fail == "pass").all() and len(evaluator.calls) == 1 and len(evaluator.calls[0][1]) == 3
    run(house.head(3), PatchingAgent(), results, evaluator=evaluator, run_id="train_1")
    assert len({key for key, _ in evaluator.calls}) == 2  # two loops never share a verdict


def test_patches_waiting_for_a_batch_are_graded_on_resume_without_running_the_agent_again(house, results):
    class Broken(CountingBatchEvaluator):
        def evaluate_batch(self, tasks, patches, *, run_key):
            raise OSError("harness crashed")

    with pytest.raises(RuntimeError, match="harness crashed"):
        run(house.head(2), PatchingAgent(), results, evaluator=Broken())
    agent, evaluator = PatchingAgent(), CountingBatchEvaluator()
    df = run(house.head(2), agent, results, evaluator=evaluator)
    assert agent.calls == [] and (df.pass_or_fail == "pass").all() and len(evaluator.calls) == 1


def test_an_evaluator_that_cannot_run_here_stops_before_any_agent_starts(house, results):
    class NoDocker(CountingBatchEvaluator):
        def check(self, tasks):
            raise RuntimeError("no Docker engine: start one")

    agent = PatchingAgent()
    with pytest.raises(RuntimeError, match="no Docker"):
        run(house.head(2), agent, results, evaluator=NoDocker())
    assert agent.calls == []


@pytest.mark.parametrize("workers", [0, -1, 2.5, "4", True])
def test_bad_worker_counts_are_refused_before_anything_runs(house, results, workers):
    agent = PatchingAgent()
    with pytest.raises(ValueError, match="workers"):
        run(house.head(1), agent, results, workers=workers)
    assert agent.calls == []


def test_two_runs_of_one_experiment_and_run_id_at_once_are_refused_naming_the_holder(house, results):
    path = run_records_path("engine", "train_0", results)
    with _run_lock(path, "engine", "train_0"):
        with pytest.raises(RunInProgress, match=f"pid {os.getpid()}"):
            run(house.head(1), PatchingAgent(), results)
    assert run(house.head(1), PatchingAgent(), results).pass_or_fail.tolist() == ["pass"]


def test_commands_the_agent_left_running_in_their_own_session_are_ended(tmp_path, results):
    started = []

    def leave_a_daemon(task, workspace):
        process = subprocess.Popen(["sleep", "300"], cwd=workspace, start_new_session=True)
        started.append(process)

    tasks = small_repo(tmp_path, {"app.py": "x = 1\n"})
    run(tasks, PatchingAgent(also=leave_a_daemon), results, evaluate=False)
    assert started[0].wait(timeout=5) == -signal.SIGKILL


def test_scratch_folders_of_a_killed_run_are_swept_with_what_still_runs_in_them(tmp_path):
    stale = scratch_root() / "1-0"  # pid 1 never has start time 0: its owner is gone
    workspace = stale / "run-x" / "task"
    workspace.mkdir(parents=True)
    orphan = subprocess.Popen(["sleep", "300"], cwd=workspace, start_new_session=True)
    mine = scratch_root() / owner_tag()
    mine.mkdir(parents=True, exist_ok=True)
    swept = sweep_stale()
    assert stale in swept and not stale.exists() and mine.exists()
    assert orphan.wait(timeout=5) == -signal.SIGKILL
    assert processes_in(stale) == []


class WritingAgent(PatchingAgent):
    """Writes `text` into app.py: what the stand-in harness grades."""

    def __init__(self, text):
        super().__init__()
        self.text = text

    def run(self, task, workspace, ruleset):
        self.calls.append(task["instance_id"])
        Path(workspace, "app.py").write_text(self.text + "\n")
        return AgentResult(task["instance_id"], "completed", model=self.model)


@pytest.fixture
def swebench_tasks(tmp_path, monkeypatch):
    """Two SWE-bench rows of a local "psf/requests" (mirrored from a file:// remote), and the data set file."""
    import json

    from helpers.families.coding.tasks import load_tasks

    upstream = tmp_path / "remote" / "psf" / "requests.git"
    upstream.mkdir(parents=True)
    (upstream / "app.py").write_text("BROKEN\n")
    git("init", "-q", "-b", "main", cwd=upstream)
    git("add", "-A", cwd=upstream)
    git("commit", "-q", "-m", "upstream", cwd=upstream)
    base = git("rev-parse", "HEAD", cwd=upstream).stdout.strip()
    monkeypatch.setattr("helpers.families.coding.mirrors.REMOTE_BASE", f"file://{tmp_path / 'remote'}")
    monkeypatch.setenv("PL_CACHE_DIR", str(tmp_path / "cache"))
    dataset = tmp_path / "lite.jsonl"
    dataset.write_text("".join(json.dumps({
        "instance_id": f"psf__requests-{n}", "repo": "psf/requests", "base_commit": base, "patch": "",
        "problem_statement": f"Issue {n}.", "test_patch": "", "FAIL_TO_PASS": json.dumps(["test_app"]),
        "PASS_TO_PASS": "[]", "created_at": "2024-01-01", "version": "1.0"}) + "\n" for n in (1, 2)))
    return load_tasks(str(dataset)), dataset


def stand_in_harness(work_dir, **settings):
    import sys

    from helpers.core.config import REPO_ROOT
    from helpers.families.coding.swebench_harness import SWEbenchEvaluator

    return SWEbenchEvaluator(command=[sys.executable, str(REPO_ROOT / "tests/fixtures/swebench/stand_in_run_evaluation.py")],
                             work_dir=work_dir, **settings)


def test_swebench_rows_get_a_mirror_and_each_loop_its_own_verdicts_from_one_harness_call(tmp_path, results,
                                                                                        swebench_tasks):
    tasks, dataset = swebench_tasks
    evaluator = stand_in_harness(tmp_path / "harness", dataset=str(dataset))
    fixed = run(tasks, WritingAgent("FIXED"), results, evaluator=evaluator, run_id="train_0")
    broken = run(tasks, WritingAgent("STILL BROKEN"), results, evaluator=evaluator, run_id="train_1")
    assert (fixed.pass_or_fail == "pass").all() and (broken.pass_or_fail == "fail").all()
    assert (tmp_path / "cache" / "mirrors" / "psf__requests.git").is_dir()  # cloned once, for both tasks
    calls = (tmp_path / "harness" / "stand-in-calls.jsonl").read_text().splitlines()
    assert len(calls) == 2  # one harness call per run, each with its own run id


def test_a_harness_failure_is_an_error_never_a_fail_and_only_the_evaluation_is_redone(tmp_path, results,
                                                                                     swebench_tasks):
    """A Docker error or a crashed harness says nothing about the patch: the row is an infrastructure error
    with the harness's message, the loop cannot count it, and the next call evaluates it again without
    running the agent again."""
    from helpers.stats.outcomes import INFRA, run_outcome
    from helpers.engine.loop_end import LoopUnfinished, check_runs

    import sys

    from helpers.families.coding.swebench_harness import SWEbenchEvaluator

    tasks, _ = swebench_tasks
    agent = WritingAgent("FIXED")
    broken_harness = SWEbenchEvaluator(work_dir=tmp_path / "harness", command=[
        sys.executable, "-c", "import sys; print('docker.errors.DockerException: Error while fetching server API version'); sys.exit(1)"])
    crashed = run(tasks, agent, results, evaluator=broken_harness, run_id="train_0")
    assert (crashed.pass_or_fail == "error").all() and (crashed.status == "completed").all()
    assert crashed.eval_error.str.contains("the harness failed, not the patch").all()
    assert crashed.eval_error.str.contains("harness exit code 1").all()
    assert crashed.eval_error.str.contains("DockerException").all()  # the harness's own words
    assert all(run_outcome(row) == INFRA for row in crashed.to_dict("records"))
    with pytest.raises(LoopUnfinished, match="test harness failed on 2 patches"):
        check_runs(0, {"train": crashed})

    retried = run(tasks, agent, results, evaluator=stand_in_harness(tmp_path / "harness"), run_id="train_0")
    assert (retried.pass_or_fail == "pass").all() and len(agent.calls) == 2  # graded now; the agent not rerun


class GatewayAgent(PatchingAgent):
    """Calls the model once through whatever endpoint it is given, then applies the gold patch."""

    def __init__(self, base_url=None, api_key=None, calls_model="gpt-4.1"):
        super().__init__()
        self.base_url, self.api_key, self.calls_model = base_url, api_key, calls_model

    def through_gateway(self, base_url, api_key, kind):
        return GatewayAgent(base_url, api_key, self.calls_model)

    def run(self, task, workspace, ruleset):
        import httpx

        answer = httpx.post(f"{self.base_url}/chat/completions", headers={"Authorization": f"Bearer {self.api_key}"},
                            json={"model": self.calls_model, "messages": [{"role": "user", "content": "fix it"}]},
                            timeout=30)
        if answer.status_code != 200:
            return AgentResult(task["instance_id"], "error", error=answer.text[:200], model=self.model)
        return super().run(task, workspace, ruleset)


def test_a_runs_tokens_and_cost_come_from_the_gateway_and_an_unpriced_scripted_run_costs_none_not_zero(house, results):
    from helpers.core import config
    from helpers.llm.gateway import Gateway, Upstream
    from helpers.llm.scripted_server import Reply, Script, ScriptedModelServer

    usage = {"prompt_tokens": 1200, "completion_tokens": 80, "prompt_tokens_details": {"cached_tokens": 1000}}
    tasks = house.head(2)
    with ScriptedModelServer(Script(default=Reply("ok", usage=usage))) as server, \
            Gateway({"agent": Upstream(server.base_url, "real-key", "openai-compatible")}) as gateway:
        scripted = run(tasks, GatewayAgent(calls_model=config.SCRIPTED_MODEL), results, run_id="scripted", gateway=gateway)
        priced = run(tasks, GatewayAgent(calls_model="gpt-4.1"), results, run_id="priced", gateway=gateway)

    for frame in (scripted, priced):  # tokens are always counted, the prompt cache's share among them
        assert frame.input_tokens.tolist() == [1200, 1200] and frame.output_tokens.tolist() == [80, 80]
        assert frame.cached_tokens.tolist() == [1000, 1000]
    assert scripted.cost_usd.isna().all() and all(cost is None for cost in scripted.cost_usd)  # never 0.0
    # gpt-4.1 reads its prompt cache at a quarter of its input price
    assert priced.cost_usd.tolist() == pytest.approx([(200 * 2.0 + 1000 * 0.5 + 80 * 8.0) / 1e6] * 2)
    saved = pd.read_json(run_records_path("engine", "scripted", results), lines=True)
    assert saved.cost_usd.isna().all() and (saved.cached_tokens == 1000).all()


def test_runs_the_budget_stopped_are_marked_so_and_run_again_with_budget_left(house, results):
    from helpers.llm.gateway import Gateway, Upstream
    from helpers.llm.scripted_server import Reply, Script, ScriptedModelServer

    tasks = house.head(3)
    # the first call's worst case (16,384 output tokens of gpt-4.1, $0.13) fits the budget; the 100,000 input tokens
    # its answer reports ($0.20) spend it, so the gateway refuses every later call
    spends_it = Reply("ok", usage={"prompt_tokens": 100_000, "completion_tokens": 0})
    with ScriptedModelServer(Script(default=spends_it)) as server:
        with Gateway({"agent": Upstream(server.base_url, "real-key", "openai-compatible")}, budget_usd=0.2) as gateway:
            first = run(tasks, GatewayAgent(), results, workers=1, gateway=gateway)
        assert first.status.tolist()[0] == "completed" and set(first.status.tolist()[1:]) == {"budget"}
        assert first.cost_usd[0] > 0  # metered by the gateway
        with Gateway({"agent": Upstream(server.base_url, "real-key", "openai-compatible")}) as gateway:
            again = run(tasks, GatewayAgent(), results, workers=1, gateway=gateway)
    assert (again.pass_or_fail == "pass").all()  # the stopped runs were not final


@pytest.mark.parametrize("bad", ["../escape", "a/b", ".hidden", ""])
def test_an_unsafe_instance_id_is_one_error_naming_it_before_any_agent_or_workspace(house, results, bad):
    tasks = house.head(3).copy()
    tasks.loc[1, "instance_id"] = bad
    agent = PatchingAgent()
    with pytest.raises(ValueError, match=r"Invalid instance_id .*1 of 1 unsafe.*" + re.escape(repr(bad))):
        run(tasks, agent, results)
    assert agent.calls == [] and not results.exists()  # no record, no lock file: nothing started


def test_a_rules_file_the_agent_turned_into_a_link_is_never_written_through(house, results, tmp_path):
    outside = tmp_path / "outside.md"
    team = f"Team text.\n{SECTION_START}\n- [R9] old\n{SECTION_END}\n"
    outside.write_text(team)

    def swap_for_a_link(task, workspace):  # the team's own rules file (README.md here) becomes a link
        (workspace / "README.md").unlink()
        (workspace / "README.md").symlink_to(outside)

    tasks = house.head(1).copy()
    agent = PatchingAgent(rules_file="README.md", also=swap_for_a_link)
    run(tasks, agent, results, ruleset=RULES, evaluate=False)
    assert outside.read_text() == team
def test_the_row_records_what_grading_set_aside_from_the_patch(house, results):
    agent = PatchingAgent(also=lambda task, workspace: (workspace / "conftest.py").write_text("x = 1\n"))
    row = run(house.head(1), agent, results).iloc[0]
    assert row.pass_or_fail == "pass" and "+++ b/conftest.py" in row.output
    assert row.set_aside == ["conftest.py"]


def test_grading_follows_the_agents_sandbox_policy(house, results, monkeypatch):
    from helpers.isolation import sandbox

    for probe in ("_reason", "unavailable_reason"):  # no sandbox can start here
        monkeypatch.setattr(sandbox, probe, lambda: "bwrap was not found: install bubblewrap")
    monkeypatch.delenv(sandbox.UNSAFE_OPT_OUT, raising=False)
    dry_run = PatchingAgent()
    dry_run.sandbox = "if-available"  # our own script chose every command: graded on the host, saying so
    assert list(run(house.head(1), dry_run, results).pass_or_fail) == ["pass"]
    real = PatchingAgent()
    real.sandbox = "required"
    with pytest.raises(sandbox.SandboxUnavailable, match="bubblewrap"):
        run(house.head(1), real, results, run_id="real_0")
    assert real.calls == []  # refused before any agent ran


# An in-package forgery of the report (docs/security.md): code the tests import rewrites pytest's verdict
# on every test, so that the report and the exit status agree on "all passed". No grading path keeps code under
# test out of the process that runs the tests, but the grading's tripwires (tests made to fail) pass too: the row
# is "forged" (a fail of its ruleset, counted apart), the loop line names it, the judge reads it, and the suspect
# check, the second signal, still names the lines, even hidden between 70 KB of padding before and after.
FORGERY = '''import _pytest.reports

_made = _pytest.reports.TestReport.from_item_and_call.__func__


def _passed(cls, item, call):
    report = _made(cls, item, call)
    report.outcome, report.longrepr = "passed", None
    return report


_pytest.reports.TestReport.from_item_and_call = classmethod(_passed)
'''
PADDING = "".join(f'_TABLE_{i:05d} = "{"x" * 60}"\n' for i in range(1_000))  # about 70 KB of harmless lines


def test_an_in_package_forgery_is_forged_not_resolved_and_the_judge_sees_it_in_a_padded_patch(house, results):
    from helpers.stats.outcomes import FORGED, outcome_counts, run_outcome
    from helpers.engine.loop_lines import describe_loop
    from helpers.learn.judge import judge_messages

    def forge(task, workspace):
        (workspace / "ledger" / "_tables.py").write_text(PADDING + FORGERY + PADDING)
        init = workspace / "ledger" / "__init__.py"
        init.write_text("from ledger import _tables  # noqa: F401\n" + init.read_text())

    assert len(PADDING) > 70_000
    df = run(house.head(1), PatchingAgent(variant="naive_patch", also=forge), results)  # a fix the tests fail
    row = df.iloc[0]
    assert row.pass_or_fail == "forged" and row.forged and run_outcome(row.to_dict()) == FORGED, row.test_log
    assert row.eval_error.startswith("forged: a test made to fail in this grading passed (")
    assert row.failed_tests == []  # the forgery did pass the task's tests
    assert "ledger/_tables.py:1001: +import _pytest.reports" in row.suspect
    assert any("from_item_and_call = classmethod(_passed)" in line for line in row.suspect)
    counts = outcome_counts(df)
    assert (counts["passed"], counts["forged"], counts["failed"], counts["scored"], counts["accuracy"]) == (0, 1, 1, 1, 0.0)
    line = describe_loop({"loop": 1, **{f"train_{k}": v for k, v in counts.items()}, "ruleset_rules": 0,
                          "ruleset_version": 0, "next_ruleset_version": 0, "dry_run": True})
    assert "train 0.00 (0/1), 1 forged grade counted as fails (a test made to fail passed)" in line
    assert "errored run" not in line and "most common error" not in line
    prompt = judge_messages(row.to_dict())[1]["content"]
    grade = prompt.split("## Hidden tests (the host's grade)")[1]  # the host's own section, outside every fence
    assert "over the judge's budget" in prompt and grade.startswith("\noutcome: FORGED")
    assert json.dumps(row.eval_error) in grade  # the grading's reason, inline as data
    suspect_section = prompt.split("## Suspect lines")[1].split("\n## ")[0]
    for forging_line in [line for line in FORGERY.splitlines() if "_pytest" in line or ".outcome" in line]:
        assert forging_line in suspect_section  # in full, whatever the budget cut from the patch itself


# Every character that splits a line for str.splitlines, NUL-free (a NUL makes git call the file binary)
LINE_BREAKERS = "a\u2028b\u2029c\x85d\x1ce\x1df\x1eg\x0bh\x0ci"


def test_an_output_with_unicode_line_separators_keeps_its_record_and_a_rerun_runs_nothing(house, results):
    tasks = house.head(2)
    broken = tasks.instance_id[1]

    class Hostile(PatchingAgent):
        def run(self, task, workspace, ruleset):
            result = super().run(task, workspace, ruleset)
            (Path(workspace) / "notes.txt").write_text(LINE_BREAKERS + "\n")
            if task["instance_id"] == broken:  # an error that is the run's own, with a lone surrogate in it
                return AgentResult(task["instance_id"], "error", error=f"bad \ud800 {LINE_BREAKERS}", model=self.model)
            return result

    first = run(tasks, Hostile(), results, evaluate=False)
    assert LINE_BREAKERS in first.output[0] and first.error[1] == f"bad \\ud800 {LINE_BREAKERS}"
    again = Hostile()
    second = run(tasks, again, results, evaluate=False)
    assert again.calls == [] and second.output.tolist() == first.output.tolist()


def test_a_patch_over_its_cap_is_a_rule_induced_error_naming_its_size_and_is_not_recorded(house, results, monkeypatch):
    from helpers.core import config
    from helpers.stats.outcomes import RULES, run_outcome

    monkeypatch.setattr(config, "MAX_PATCH_BYTES", 2000)
    agent = PatchingAgent(also=lambda task, workspace: (workspace / "big.txt").write_text("x\n" * 2000))
    row = run(house.head(1), agent, results).iloc[0]
    assert row.status == "error" and re.search(r"the patch is \d+ bytes, over the 2000 bytes", row.error), row.error
    assert row.output == "" and run_outcome(row.to_dict()) == RULES


def test_a_plan_over_the_cap_is_a_rule_induced_error_and_is_not_recorded(house, results, monkeypatch):
    from helpers.core import config
    from helpers.stats.outcomes import RULES, run_outcome

    class Planner(PatchingAgent):
        mode = "plan"

        def run(self, task, workspace, ruleset):
            return AgentResult(task["instance_id"], "completed", plan="step\n" * 1000, model=self.model)

    monkeypatch.setattr(config, "MAX_PATCH_BYTES", 2000)
    row = run(house.head(1), Planner(), results).iloc[0]
    assert row.status == "error" and "the plan is 5000 bytes, over the 2000 bytes" in row.error
    assert row.output == "" and run_outcome(row.to_dict()) == RULES


def test_a_record_that_cannot_be_read_stops_the_call_naming_it_and_runs_nothing(house, results):
    from helpers.store.records import RecordError

    tasks = house.head(2)
    run(tasks, PatchingAgent(), results, evaluate=False)
    path = run_records_path("engine", "train_0", results)
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([lines[0][:40], *lines[1:]]))  # the first record cut short, the rest intact
    again = PatchingAgent()
    with pytest.raises(RecordError, match=r"Line 1 of .*train_0.jsonl is not a readable record"):
        run(tasks, again, results, evaluate=False)
    assert again.calls == []
