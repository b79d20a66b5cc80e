"""Loop 0 called step by step (as the quickstart shows it) writes exactly what run_loop writes, and run_loop
resumes after it: there is one loop."""

import json
import re
from pathlib import Path

import pytest

from helpers.agents.base import AgentBase
from helpers.core.protocols import AgentResult
from helpers.engine.loop import LoopSettings, run_loop
from helpers.engine.loop_steps import loop_in_steps
from helpers.families.coding.git import git
from helpers.families.coding.tasks import load_house_suite
from helpers.llm.scripted_server import ScriptedModelServer
from helpers.app.session import Session
from helpers.store.records import experiment_dir, loops_path, ruleset_sha
from helpers.store.rulesets import RulesetStore
from helpers.stand_ins.dry_run import DryRunScript

# Names and times differ; so may what the judge cost: a loop-1 row whose request equals a loop-0 row's (the naive
# agent writes the same patch) is answered from the cache for free, unless pytest's timing in its test log differs;
# and the judge's tokens by one or two: its request's fence token is a hash of what it fences, the test log among it.
TIMES = ("started_at", "finished_at", "experiment", "judge_cost_usd", "cost_usd", "judge_tokens")


class NaiveAgent(AgentBase):
    """Writes each task's naive fix (fixes the bug, breaks its conventions), whatever the rules."""

    name, rules_file, mode, model, base_prompt = "naive-agent", "AGENTS.md", "act", "gpt-4.1", "A test agent."

    def check(self):
        pass

    def run(self, task, workspace, ruleset):
        rules_file = Path(workspace) / self.rules_file
        SEEN.append({"task": task["instance_id"], "ruleset": ruleset,
                     "rules_file": rules_file.read_text() if rules_file.exists() else None})
        git("apply", "-", cwd=workspace, input=task["naive_patch"])
        return AgentResult(task["instance_id"], "completed", model=self.model)


SEEN: list[dict] = []  # what NaiveAgent was given and found in its workspace, run by run

# A team's rules file with a learned section, as the start rules: the optimizer edits the section in place.
TEAM_FILE = ("# Team rules\n\nKeep functions short.\n\n<!-- prompt-learning:rules:start -->\n"
             "- Say what changed in CHANGELOG.md.\n<!-- prompt-learning:rules:end -->\n\nAsk before adding packages.\n")
# The rules files this run wrote before the ruleset travelled typed (main at 6a1b08b): byte for byte the same now.
WRITTEN = Path(__file__).parent / "data" / "loop_steps_rules_files.json"


def seen():
    return sorted((json.dumps(row, sort_keys=True) for row in SEEN))


@pytest.fixture(scope="module")
def split():
    tasks = load_house_suite()
    return tasks.iloc[[0, 16]].reset_index(drop=True), tasks.iloc[[17]].reset_index(drop=True)  # ledger, todo; todo


def records(experiment):
    return [{k: v for k, v in json.loads(line).items() if k not in TIMES}
            for line in loops_path(experiment).read_text().splitlines()]


def test_loop_zero_in_steps_then_run_loop_writes_exactly_the_records_and_rulesets_run_loop_writes(
        isolated, split, monkeypatch):
    train, test = split
    with ScriptedModelServer(DryRunScript().script()) as server:
        session = Session(False, "gpt-4.1", "gpt-4.1", "gpt-4.1", base_url=server.base_url, api_key="test-key-0")
        monkeypatch.setenv("PL_CACHE_DIR", str(isolated / "cache-whole"))  # each route asks the model itself
        SEEN.clear()
        run_loop(train, test, LoopSettings("whole", loops=2, workers=2, agent=NaiveAgent()), session,
                 initial_ruleset=TEAM_FILE, verbose=False)
        whole_seen = seen()
        monkeypatch.setenv("PL_CACHE_DIR", str(isolated / "cache-steps"))
        settings = LoopSettings("in-steps", loops=2, workers=2, agent=NaiveAgent())
        SEEN.clear()
        steps = loop_in_steps(train, test, settings, session, initial_ruleset=TEAM_FILE)
        steps.run_agent()
        steps.judge()
        first = steps.optimize()
        assert len(records("in-steps")) == 1 and first["loop"] == 0
        run_loop(train, test, settings, session, initial_ruleset=TEAM_FILE, verbose=False)
    assert seen() == whole_seen
    if not WRITTEN.exists():  # written once, from main's code before the change; compared ever after
        WRITTEN.parent.mkdir(exist_ok=True)
        WRITTEN.write_text(json.dumps([json.loads(row) for row in whole_seen], indent=1) + "\n")
    assert [json.loads(row) for row in whole_seen] == json.loads(WRITTEN.read_text())
    for stepped_record, whole_record in zip(records("in-steps"), records("whole"), strict=True):
        differ = {k: (stepped_record.get(k), whole_record.get(k)) for k in set(stepped_record) | set(whole_record)
                  if stepped_record.get(k) != whole_record.get(k)}
        assert not differ, differ
    assert len(records("whole")) == 2
    whole, stepped = RulesetStore("whole"), RulesetStore("in-steps")
    assert stepped.versions() == whole.versions() == [0, 1]
    assert [stepped.load(v) for v in stepped.versions()] == [whole.load(v) for v in whole.versions()]
    assert whole.load(0) == TEAM_FILE and whole.load(1).startswith(TEAM_FILE.split("- Say")[0])
    hashes = {ruleset_sha(whole.load(v)) for v in whole.versions()}  # of the text as saved: a rerun resumes
    recorded = {json.loads(line)["ruleset_sha"] for path in (experiment_dir("whole") / "runs").glob("*.jsonl")
                for line in path.read_text().splitlines()}
    assert recorded == hashes and len(hashes) == 2
    assert whole.load(1).endswith("<!-- prompt-learning:rules:end -->\n\nAsk before adding packages.\n")


def test_each_step_shows_one_output_ending_in_what_to_see_from_the_data_and_a_finished_loop_is_never_saved_again(
        isolated, split):
    train, test = split
    with ScriptedModelServer(DryRunScript().script()) as server:
        session = Session(False, "gpt-4.1", "gpt-4.1", "gpt-4.1", base_url=server.base_url, api_key="test-key-0")
        settings = LoopSettings("shown", loops=1, workers=2, agent=NaiveAgent())
        steps = loop_in_steps(train, test, settings, session)
        steps.run_agent()
        runs = repr(steps.show_runs())
        assert re.search(r"house__ledger-0001 completed +fail +2\n +house__todo-0001 completed +fail +2", runs)
        assert "Passed: 0 of 2 training tasks; 0 of 1 test tasks." in runs and "diff --git" in runs
        assert runs.endswith("What to see: with rules version 0 (no rules), the agent passed 0 of 2 training tasks; "
                             "0 of 1 test tasks. The diff is house__ledger-0001's: 1 file changed, and it failed.")
        tests = repr(steps.show_tests())
        assert "failing tests: tests/test_overdraft.py::test_an_overdraft_raises_a_ledger_error" in tests
        assert "house convention broken: every change needs an entry under '## Unreleased'" in tests  # the message
        assert tests.endswith("What to see: 2 of 2 training patches failed, 4 hidden tests in all (4 different). The "
                              "tests' names say what each checks; the judge reads them, and their messages, next.")
        steps.judge()
        judged = repr(steps.show_judged())
        assert "house__ledger-0001: incorrect\nThe patch fixes the reported behaviour, but the hidden tests" in judged
        assert "the judge explained 2 of 2 training results (2 incorrect)" in judged
        block = repr(steps.show_meta_prompt())
        assert block.startswith("## Current rules\n(none yet") and "### Example house__ledger-0001" in block
        assert "more lines of the patch ...]" in block and "- explanation:" in block  # the patch cut, the feedback whole
        assert re.search(r"- explanation: \n<<<DATA-\w+ [^\n]*>>>\nThe patch fixes", block)  # fenced as data
        assert "[... 1 more example ...]" in block and "all 2 training examples like this one" in block
        record = steps.optimize()
        edits = repr(steps.show_edits())
        assert "add: Raise errors as the package's own exception types" in edits
        assert "from: house__ledger-0001, house__todo-0001" in edits  # the changelog rule, from both explanations
        assert edits.endswith("What to see: 3 edits applied, 0 refused; they make version 1 (3 rules), which the next "
                              "loop runs.") and record["next_ruleset_version"] == 1
        asked, saved = len(server.chat_requests()), loops_path("shown").read_text()
        again = loop_in_steps(train, test, settings, session)  # the finished loop, redone from records and caches
        again.run_agent()
        again.judge()
        assert again.optimize() == record and repr(again.show_edits()) == edits
        assert len(server.chat_requests()) == asked and loops_path("shown").read_text() == saved
