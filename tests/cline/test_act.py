"""run_act over many tasks: parallel, evaluated, written as it goes, resumable after a kill, transient errors run again."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pandas as pd
import pytest

from cline import run_act, run_plan
from helpers.core.config import REPO_ROOT
from helpers.stats.outcomes import INFRA, RULES, run_outcome
from helpers.isolation.processes import scratch_root
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text, tool_call
from tests.cline.conftest import BUGGY, FIXED, cline_processes, make_repo, make_task

pytestmark = pytest.mark.slow
KEY = "test-KEY-not-in-results-987654321"


def fixing_script(delay_s=0.0):
    return Script([Rule(reply=[
        Reply("Fixing.", delay_s=delay_s, tool_calls=[tool_call("editor", path="calc.py", old_text=BUGGY, new_text=FIXED)]),
        Reply("Done."),
    ])])


@pytest.fixture
def tasks(tmp_path):
    repo, base = make_repo(tmp_path / "source")
    return pd.DataFrame([make_task(repo, base, n) for n in range(1, 5)])


def requests_per_task(server):
    counts = Counter()
    for body in server.chat_requests():
        text = message_text(body, "user")
        counts.update(t for t in (f"calc__calc-{n}" for n in range(1, 5)) if t in text)
    return counts


def test_every_task_is_run_tested_and_recorded_and_a_second_call_runs_only_what_did_not_finish_or_a_new_ruleset(
        tasks, tmp_path):
    """One broken task (its base commit is missing) fails alone; a call the provider refused with a 400 in a rate
    limit's words is the agent's failed attempt, final (only the gateway's record of a 429 or 5xx is transient:
    tests/helpers/engine/test_runs_outcomes.py); a finished task is not run again, unless the ruleset changed (a
    different ruleset is a different run)."""
    tasks.loc[1, "base_commit"] = "0" * 40
    limited = {"on": True}  # the first call only: the fourth task's provider says it is rate limited
    script = Script([Rule(user_contains="calc__calc-4", match=lambda r: limited["on"],
                          reply=Reply(status=400, error_message="rate limit reached (429)")), *fixing_script().rules])
    kw = dict(tasks=tasks, run_id="train_0", workers=2, experiment="demo", model="scripted-dry-run", api_key=KEY,
              results_root=tmp_path / "results", progress=False)
    with ScriptedModelServer(script) as server:
        first = run_act(base_url=server.base_url, ruleset="", **kw)
        limited["on"] = False
        server.clear()
        second = run_act(base_url=server.base_url, ruleset="", **kw)
        again = requests_per_task(server)
        server.clear()
        run_act(base_url=server.base_url, ruleset="- [R1] New rule.", **kw)
        other = requests_per_task(server)
    assert list(first.instance_id) == list(tasks.instance_id)
    for column in ("instance_id", "problem_statement", "ground_truth_patch", "test_patch", "cline_patch", "pass_or_fail",
                   "status", "input_tokens", "cost_usd", "duration_s", "error"):
        assert column in first.columns
    assert list(first.pass_or_fail) == ["pass", "fail", "pass", "fail"]
    assert first.status[1] == "error" and "base commit" in first.error[1]
    assert first.status[3] == "error" and "rate limit" in first.error[3]
    records = (tmp_path / "results/demo/runs/train_0.jsonl").read_text()
    assert KEY not in records
    assert list(second.pass_or_fail) == ["pass", "fail", "pass", "fail"]  # the refused run is final: counted
    assert run_outcome(second.iloc[3]) == RULES and run_outcome(second.iloc[1]) == INFRA  # the host's workspace
    assert again == Counter(), again  # nothing ran again
    assert other == Counter({f"calc__calc-{n}": 2 for n in (1, 3, 4)}), other  # every task again, for the new rules


def test_a_killed_run_resumes_without_redoing_finished_tasks(tasks, tmp_path):
    tasks = tasks.head(3)  # killed once two are recorded: the third is then under way
    results = tmp_path / "results"
    tasks_file = tmp_path / "tasks.json"
    tasks.to_json(tasks_file, orient="records")
    with ScriptedModelServer(fixing_script(delay_s=1.0)) as server:
        child = subprocess.Popen([sys.executable, "-c", f"""
import pandas as pd
from cline import run_act, run_plan
run_act(tasks=pd.read_json({str(tasks_file)!r}), run_id="train_0", workers=1, model="scripted-dry-run",
        base_url={server.base_url!r}, api_key="k", results_root={str(results)!r}, progress=False)
"""], cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        records = results / "default/runs/train_0.jsonl"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and (not records.exists() or len(records.read_text().splitlines()) < 2):
            time.sleep(0.1)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        finished = [json.loads(line)["instance_id"] for line in records.read_text().splitlines()]
        deadline = time.monotonic() + 5  # the kernel's SIGKILL to the orphans, on a loaded machine
        while cline_processes() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cline_processes() == [], "a Cline run outlived the killed run_act"
        assert 2 <= len(set(finished)) < len(tasks)
        before = requests_per_task(server)
        server.clear()
        df = run_act(tasks=tasks, run_id="train_0", workers=2, model="scripted-dry-run", base_url=server.base_url,
                     api_key="k", results_root=results, progress=False)
        again = requests_per_task(server)
    assert all(before[t] >= 2 for t in finished)
    assert not any(again[t] for t in finished), "finished tasks were run again"
    leftovers = [d for d in scratch_root().iterdir() if d.name.startswith(f"{child.pid}-")]
    assert leftovers == [], "the killed run's scratch folder was not swept by the next run"
    assert list(df.instance_id) == list(tasks.instance_id) and set(df.pass_or_fail) == {"pass"}


@pytest.mark.parametrize("call, match", [
    (lambda t: run_act(t, run_id="x"), "dataset_name is a DataFrame"),
    (lambda t: run_act(tasks=t, run_id="x", mode="plans", api_key=KEY), "mode must be 'act'"),
    (lambda t: run_act(tasks=t, run_id="x", workers=0, api_key=KEY, base_url="http://127.0.0.1:9"), "workers"),
    (lambda t: run_act(tasks=t, instance_ids="no-such-task", run_id="x", api_key=KEY), "no-such-task"),
    (lambda t: run_act(tasks=t, run_id="x", api_key=KEY, modle="gpt-4.1"), "modle"),  # neither the agent's nor the engine's
    (lambda t: run_plan(t, None, "x", "", 2, api_key=KEY, result_root="r"), "result_root"),  # run_act's, in plan mode
    (lambda t: run_plan(t), "dataset_name is a DataFrame"),
])
def test_bad_arguments_are_one_clear_error_before_any_task_starts(tasks, tmp_path, call, match):
    with pytest.raises((TypeError, ValueError, KeyError), match=match):
        call(tasks)
    assert cline_processes() == []


def test_a_storm_of_429s_is_absorbed_by_the_gateway_and_every_run_completes(tasks, tmp_path):
    from helpers.llm.gateway import Gateway, Upstream

    from helpers.core import config

    # as many 429s as one call may be retried: however they fall on the runs' calls, every call ends in a 200
    storm = Rule(reply=Reply(status=429, error_message="rate limit", retry_after=0.3), times=config.LLM_MAX_RETRIES)
    script = Script([storm, *fixing_script().rules])
    with ScriptedModelServer(script) as server, \
            Gateway({"agent": Upstream(server.base_url, KEY, "openai-compatible")}, concurrency=2) as gateway:
        df = run_act(tasks=tasks, run_id="storm", workers=4, model="scripted-dry-run", base_url=server.base_url,
                     api_key=KEY, results_root=tmp_path, progress=False, gateway=gateway)
        answered = {call["status"] for call in gateway.calls()}
    assert storm.fired == config.LLM_MAX_RETRIES and answered == {200}  # the upstream said 429; Cline only ever got 200
    assert set(df.status) == {"completed"} and set(df.pass_or_fail) == {"pass"}


def test_a_run_whose_model_stream_broke_is_run_again_within_the_same_call_and_one_that_keeps_breaking_ends_transient(
        tasks, tmp_path):
    from helpers.core import config
    from helpers.llm.gateway import Gateway, Upstream

    # the first answers break after one event: too late for the gateway to retry (Cline has seen a byte)
    healed, broken = tasks.instance_id[:2]
    breaks = Rule(user_contains=healed, reply=Reply("Fixing calc.py now.", fault="end_early", fault_after=1),
                  times=config.AGENT_TRANSIENT_RETRIES)
    keeps_breaking = Rule(user_contains=broken, reply=Reply("Fixing calc.py now.", fault="end_early", fault_after=1))
    with ScriptedModelServer(Script([breaks, keeps_breaking, *fixing_script().rules])) as server, \
            Gateway({"agent": Upstream(server.base_url, KEY, "openai-compatible")}) as gateway:
        df = run_act(tasks=tasks.head(2), run_id="broken", workers=2, model="scripted-dry-run", base_url=server.base_url,
                     api_key=KEY, results_root=tmp_path, progress=False, gateway=gateway).set_index("instance_id")
        statuses = [call["status"] for call in gateway.calls()]
    assert breaks.fired == config.AGENT_TRANSIENT_RETRIES and statuses.count(502) >= 1
    assert df.status[healed] == "completed" and df.pass_or_fail[healed] == "pass"  # its third run went through
    assert df.status[broken] == "error" and bool(df.transient[broken])  # the gateway saw it: left out, named
    assert df.tries[broken] == 1 + config.AGENT_TRANSIENT_RETRIES and "not run again" in df.error[broken]
    assert "the model server ended the stream early after 1 chunk: the connection closed" in df.error[broken]
    assert keeps_breaking.fired == 1 + config.AGENT_TRANSIENT_RETRIES  # bounded: the run and its retries, no more
