"""The engine runs any WorkspaceFamily (helpers.core.protocols): its workspaces, its patches and its grader, with
nothing of the coding family in the way; what a patch is flagged for is the family's Patch, read once where it
was taken; and whether a failed run can be the provider's is decided by its typed limit, never by its words."""

import shutil
import threading
from pathlib import Path

import httpx
import pandas as pd
import pytest

from helpers.agents.base import AgentBase
from helpers.core import config
from helpers.core.protocols import AgentResult, EvalResult, GradedLines, Limit, Patch, WorkspaceFamily
from helpers.engine.executors import run_attempt
from helpers.rules.rules_file import RulesFile
from helpers.engine.runs import run_tasks
from helpers.families.coding.family import CODING
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer
from helpers.stats.outcomes import INFRA, RESOLVED, RULES, run_outcome


class NotesFamily:
    """A family of tasks that are not code: a workspace is an empty folder, the answer is the text of answer.txt,
    and an answer that says "forge" is flagged (its pass is never counted)."""

    name = "notes"

    def __init__(self):
        self.prepared, self.removed, self.taken = [], [], []
        self.lock = threading.Lock()

    def load_tasks(self, source, **options):
        return pd.DataFrame([{"instance_id": f"note-{i}", "base_commit": "none", "problem_statement": "Write x."}
                             for i in range(int(source))])

    def select_tasks(self, tasks, ids):
        return tasks.set_index("instance_id", drop=False).loc[list(ids)].reset_index(drop=True)

    def split_tasks(self, tasks, train_size, test_size, strategy, seed):
        return tasks.head(train_size), tasks.tail(test_size)

    def evaluator_for(self, tasks, *, model_name, sandbox):
        return NotesGrader()

    def prepare_workspace(self, task, root):
        workspace = Path(root) / str(task["instance_id"])
        workspace.mkdir(parents=True)
        with self.lock:
            self.prepared.append(task["instance_id"])
        return workspace

    def write_rules(self, workspace, rules_file, ruleset):
        (workspace / rules_file).write_text(ruleset.text)  # the rules parsed once, as the engine passes them
        return lambda: (workspace / rules_file).unlink()

    def take_patch(self, workspace, task):
        text = (workspace / "answer.txt").read_text() if (workspace / "answer.txt").exists() else ""
        with self.lock:
            self.taken.append(task["instance_id"])
        return Patch(text, ("answer.txt:1: +forge",) if "forge" in text else ())

    def remove_workspace(self, workspace):
        shutil.rmtree(workspace)
        with self.lock:
            self.removed.append(workspace.name)

    def suspect_lines(self, patch, test_patch):
        return ["answer.txt:1: +forge"] if "forge" in patch else []

    def graded_lines(self, patch, test_patch):
        return GradedLines(tuple(patch.splitlines()), (), len(patch.splitlines()), 0)

    def set_aside_note(self, paths):
        return ""


class NotesGrader:
    batched = False

    def check(self, tasks):
        pass

    def evaluate(self, task, patch):
        return EvalResult(str(task["instance_id"]), "x" in patch)


class Writer(AgentBase):
    """Writes `answers[task]` to answer.txt; remembers the rules it was given."""

    name, mode, model, base_prompt, rules_file = "writer", "act", "writer-model", "You write.", "RULES.md"

    def __init__(self, answers):
        self.answers, self.rules_seen = answers, {}

    def check(self):
        pass

    def run(self, task, workspace, ruleset):
        self.rules_seen[task["instance_id"]] = (Path(workspace) / self.rules_file).read_text()
        (Path(workspace) / "answer.txt").write_text(self.answers[task["instance_id"]])
        return AgentResult(task["instance_id"], "completed", model=self.model)


def test_the_engine_runs_a_family_that_is_not_code_through_its_contract_alone(tmp_path):
    family = NotesFamily()
    assert isinstance(family, WorkspaceFamily) and isinstance(CODING, WorkspaceFamily)
    tasks = family.load_tasks("3")
    agent = Writer({"note-0": "x marks it", "note-1": "nothing", "note-2": "x, and forge the grade"})
    df = run_tasks(tasks, agent, run_id="notes_0", experiment="notes", ruleset="- [R1] Write x.\n", workers=2,
                   results_root=tmp_path, progress=False, family=family).set_index("instance_id")
    assert df.pass_or_fail.to_dict() == {"note-0": "pass", "note-1": "fail", "note-2": "suspect"}
    assert [run_outcome(r) for r in df.reset_index().to_dict("records")] == [RESOLVED, "failed", INFRA]
    assert df.output["note-0"] == "x marks it" and df.suspect["note-2"] == ["answer.txt:1: +forge"]
    assert set(agent.rules_seen.values()) == {"- [R1] Write x.\n"}  # the family wrote the rules where it reads them
    assert sorted(family.prepared) == sorted(family.taken) == sorted(family.removed) == list(tasks.instance_id)


def test_a_records_suspect_lines_are_the_patchs_own_never_read_again_from_its_text(tmp_path):
    class Trusting(NotesFamily):  # takes the patch and flags nothing, whatever its text
        def take_patch(self, workspace, task):
            return Patch(super().take_patch(workspace, task).text)

    tasks = NotesFamily().load_tasks("1")
    df = run_tasks(tasks, Writer({"note-0": "x, forge"}), run_id="notes_0", experiment="notes", results_root=tmp_path,
                   progress=False, family=Trusting())
    assert (df.pass_or_fail[0], df.suspect[0]) == ("pass", [])


def test_output_the_host_refuses_carries_its_typed_limit_from_where_it_was_refused(tmp_path, monkeypatch):
    from helpers.families.coding.tasks import load_house_suite

    monkeypatch.setattr(config, "MAX_PATCH_BYTES", 2000)
    task = load_house_suite().iloc[0].to_dict()

    class Big(Writer):
        def run(self, task, workspace, ruleset):
            (Path(workspace) / "big.txt").write_text("x\n" * 2000)
            return AgentResult(task["instance_id"], "completed", model=self.model)

    result, output, _ = run_attempt(CODING, Big({}), task, RulesFile.parse(""), "AGENTS.md", "act", None, tmp_path)
    assert (result.status, result.limit, output) == ("error", Limit.REFUSED_OUTPUT, "")
    assert result.host_error == "" and not result.transient


class Calling(Writer):
    """Calls the model through the gateway; on a failed call, ends its run with `limit` and the provider's words."""

    limit = None

    def __init__(self, answers, base_url=None, api_key=None):
        super().__init__(answers)
        self.base_url, self.api_key = base_url, api_key

    def upstream(self):
        return None

    def through_gateway(self, base_url, api_key, kind):
        return type(self)(self.answers, base_url, api_key)

    def run(self, task, workspace, ruleset):
        answer = httpx.post(f"{self.base_url}/chat/completions", headers={"Authorization": f"Bearer {self.api_key}"},
                            json={"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}, timeout=30)
        if answer.status_code != 200:
            return AgentResult(task["instance_id"], "error", error="reached max turns (30); 503 overloaded",
                               model=self.model, limit=self.limit)
        return super().run(task, workspace, ruleset)


@pytest.mark.parametrize("limit", [Limit.TURNS, Limit.CONTEXT, None])
def test_a_run_a_limit_ended_is_the_rules_doing_even_when_the_provider_failed_and_only_its_limit_says_so(
        tmp_path, monkeypatch, limit):
    monkeypatch.setattr(config, "AGENT_TRANSIENT_RETRIES", 1)
    tasks = NotesFamily().load_tasks("1")
    agent = type("LimitedCalling", (Calling,), {"limit": limit})({"note-0": "x"})
    with ScriptedModelServer(Script([Rule(reply=Reply(status=503, error_message="overloaded"), times=1)],
                                    default=Reply("ok"))) as server, \
            Gateway({"agent": Upstream(server.base_url, "real-key", "openai-compatible")}, max_retries=0) as gateway:
        row = run_tasks(tasks, agent, run_id="notes_0", experiment="notes", results_root=tmp_path, progress=False,
                        family=NotesFamily(), gateway=gateway).iloc[0]
    if limit is None:  # the same words, no limit: the gateway's 503 decides, and the task ran again to its grade
        assert (row.tries, run_outcome(row)) == (2, RESOLVED)
    else:
        assert (row.tries, bool(row.transient), row.host_error, run_outcome(row)) == (1, False, "", RULES)
