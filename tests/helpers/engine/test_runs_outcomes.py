"""What takes a task out of the count: only a failure the host saw outside the sandbox (the gateway's record of its
upstream, the machine). A run the agent failed itself, whatever it said, is a failed attempt, counted; a task the
host saw fail transiently runs again at most 1 + config.AGENT_TRANSIENT_RETRIES times in all, across calls and
resumes. (Agents written here; the real CLIs' own stream: tests/cline/test_cline_stream_integrity.py.)"""

import httpx
import pandas as pd
import pytest

from helpers.core import config
from helpers.stats.outcomes import INFRA, RESOLVED, RULES, outcome_counts, run_outcome
from helpers.core.protocols import AgentResult
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text
from helpers.store.records import run_records_path
from tests.helpers.engine.test_runs import GatewayAgent, PatchingAgent, run

PROVIDER_WORDS = "503 Service Unavailable: the server is overloaded, rate limit reached (429), ECONNRESET, timed out"


class FailsOn(PatchingAgent):
    """Applies the gold patch, except on `fail_on`: there it ends its run itself, in the words a provider would use."""

    def run(self, task, workspace, ruleset):
        if task["instance_id"] in self.fail_on:
            with self.lock:
                self.calls.append(task["instance_id"])
            return AgentResult(task["instance_id"], "error", error=PROVIDER_WORDS, model=self.model)
        return super().run(task, workspace, ruleset)


class CallingAgent(GatewayAgent):
    """Calls the model through the gateway for the task (its text names the task), then applies the gold patch."""

    def __init__(self, base_url=None, api_key=None, calls_model="gpt-4.1", token=None):
        super().__init__(base_url, api_key, calls_model)
        self.token = token  # a token of its own making: the gateway refuses it

    def through_gateway(self, base_url, api_key, kind):
        return CallingAgent(base_url, api_key, self.calls_model, self.token)

    def run(self, task, workspace, ruleset):
        answer = httpx.post(f"{self.base_url}/chat/completions",
                            headers={"Authorization": f"Bearer {self.token or self.api_key}"},
                            json={"model": self.calls_model, "messages": [{"role": "user", "content": task["instance_id"]}]},
                            timeout=30)
        if answer.status_code != 200:  # what it says of it is its own words
            return AgentResult(task["instance_id"], "error", error=f"{answer.status_code} {answer.text[:200]}",
                               model=self.model)
        return PatchingAgent.run(self, task, workspace, ruleset)


def calls_for(server, instance_id):
    return sum(instance_id in message_text(body, "user") for body in server.chat_requests())


def test_a_run_the_agent_failed_itself_in_a_providers_words_is_counted_and_not_run_again(house, results):
    tasks = house.head(2)
    failing = tasks.instance_id[1]
    agent = FailsOn(fail_on={failing})
    first = run(tasks, agent, results, workers=1).set_index("instance_id")
    assert run_outcome(first.loc[failing]) == RULES and not first.host_error[failing] and not first.transient[failing]
    counts = outcome_counts(first.reset_index())
    assert (counts["passed"], counts["scored"], counts["accuracy"]) == (1, 2, 0.5)  # 1 solved of 2, not 1.0
    ran = sorted(agent.calls)
    again = run(tasks, agent, results, workers=1)
    assert sorted(agent.calls) == ran == sorted(tasks.instance_id)  # final: nothing run again
    assert again.error.tolist() == first.error.tolist()


def test_a_503_on_the_runs_own_last_call_is_run_at_most_the_cap_in_all_across_calls_and_resumes(house, results,
                                                                                             monkeypatch):
    task = house.head(1)
    iid = task.instance_id[0]
    with ScriptedModelServer(Script(default=Reply(status=503, error_message="overloaded"))) as server, \
            Gateway({"agent": Upstream(server.base_url, "real-key", "openai-compatible")}, max_retries=0) as gateway:
        monkeypatch.setattr(config, "AGENT_TRANSIENT_RETRIES", 0)  # a call killed after its first run, in effect
        first = run(task, CallingAgent(), results, gateway=gateway)
        assert calls_for(server, iid) == 1 and first.tries[0] == 1
        monkeypatch.setattr(config, "AGENT_TRANSIENT_RETRIES", 2)
        second = run(task, CallingAgent(), results, gateway=gateway)  # resumed: two runs left of three
        third = run(task, CallingAgent(), results, gateway=gateway)  # none left
        calls = calls_for(server, iid)
    assert calls == 3, calls  # not three in the call and six after a resume: three in all
    row = third.iloc[0]
    assert row.tries == 3 and bool(row.transient) and row.status == "error"
    assert run_outcome(row) == INFRA and "status 503" in row.host_error  # the gateway's record, named
    assert "run 3 of at most 3: not run again" in row.error and row.equals(second.iloc[0])
    saved = pd.read_json(run_records_path("engine", "train_0", results), lines=True)
    assert saved.tries.tolist() == [1, 2, 3]  # every run kept and counted


def test_a_provider_that_recovers_within_the_cap_runs_the_task_to_its_grade(house, results):
    task = house.head(1)
    busy = Rule(reply=Reply(status=503, error_message="overloaded"), times=1)
    with ScriptedModelServer(Script([busy], default=Reply("ok"))) as server, \
            Gateway({"agent": Upstream(server.base_url, "real-key", "openai-compatible")}, max_retries=0) as gateway:
        df = run(task, CallingAgent(), results, gateway=gateway)
    assert busy.fired == 1 and df.tries[0] == 2 and run_outcome(df.iloc[0]) == RESOLVED


@pytest.mark.parametrize("refused", ["provider-4xx", "bad-token"])
def test_the_agents_own_calls_refused_with_a_4xx_are_a_failed_attempt_whatever_their_words(house, results, refused):
    task = house.head(1)
    script = Script([Rule(reply=Reply(status=400, error_message=PROVIDER_WORDS))]) if refused == "provider-4xx" \
        else Script(default=Reply("ok"))
    with ScriptedModelServer(script) as server, \
            Gateway({"agent": Upstream(server.base_url, "real-key", "openai-compatible")}, max_retries=0) as gateway:
        agent = CallingAgent(token="gw-made-up" if refused == "bad-token" else None)
        first = run(task, agent, results, gateway=gateway)
        second = run(task, agent, results, gateway=gateway)
        calls = len(server.chat_requests())
    row = second.iloc[0]
    assert row.status == "error" and run_outcome(row) == RULES and not row.transient and row.host_error == ""
    assert calls == (1 if refused == "provider-4xx" else 0) and row.tries == 1 and first.equals(second)


def test_a_workspace_the_host_could_not_prepare_is_an_infrastructure_error_naming_it(house, results):
    task = house.head(1).assign(base_commit="0" * 40)
    agent = PatchingAgent()
    row = run(task, agent, results).iloc[0]
    assert agent.calls == [] and run_outcome(row) == INFRA
    assert row.host_error.startswith("the host could not prepare the workspace")


def test_a_provider_that_refuses_the_hosts_key_is_an_infrastructure_error_not_the_agents(house, results):
    task = house.head(1)
    with ScriptedModelServer(Script([Rule(reply=Reply(status=401, error_message="invalid api key"))])) as server, \
            Gateway({"agent": Upstream(server.base_url, "wrong-key", "openai-compatible")}, max_retries=0) as gateway:
        row = run(task, CallingAgent(), results, gateway=gateway).iloc[0]
    assert run_outcome(row) == INFRA and "refused the host's key: status 401" in row.host_error
    assert not row.transient and row.tries == 1  # not run again: the key must change first
