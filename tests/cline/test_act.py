"""run_act over many tasks: parallel, evaluated, written as it goes, resumable after a kill."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pandas as pd
import pytest

from cline import run_act
from helpers.core.config import REPO_ROOT
from helpers.core.processes import scratch_root
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text, tool_call
from tests.cline.conftest import BUGGY, FIXED, all_command_lines, cline_processes, make_repo, make_task

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


def test_every_task_is_run_tested_and_returned_with_the_cookbooks_columns(tasks, tmp_path):
    with ScriptedModelServer(fixing_script()) as server:
        df = run_act(tasks=tasks, run_id="train_0", ruleset="", workers=2, experiment="demo", model="scripted-dry-run",
                     base_url=server.base_url, api_key=KEY, results_root=tmp_path / "results", progress=False)
    assert list(df.instance_id) == list(tasks.instance_id)
    for column in ("instance_id", "problem_statement", "ground_truth_patch", "test_patch", "cline_patch", "pass_or_fail",
                   "status", "input_tokens", "cost_usd", "duration_s", "error"):
        assert column in df.columns
    assert set(df.pass_or_fail) == {"pass"} and set(df.status) == {"completed"}
    records = (tmp_path / "results/demo/runs/train_0.jsonl").read_text()
    assert len(records.splitlines()) == 4 and KEY not in records


def test_one_broken_task_fails_alone(tasks, tmp_path):
    broken = tasks.copy()
    broken.loc[1, "base_commit"] = "0" * 40
    with ScriptedModelServer(fixing_script()) as server:
        df = run_act(tasks=broken, run_id="t", workers=2, model="scripted-dry-run", base_url=server.base_url,
                     api_key=KEY, results_root=tmp_path, progress=False)
    assert list(df.pass_or_fail) == ["pass", "fail", "pass", "pass"]
    assert df.status[1] == "error" and "base commit" in df.error[1]


def test_a_transient_provider_error_is_run_again_on_the_next_call(tasks, tmp_path):
    kw = dict(tasks=tasks.head(1), run_id="t", workers=1, model="scripted-dry-run", api_key=KEY,
              results_root=tmp_path, progress=False)
    with ScriptedModelServer(Script(default=Reply(status=400, error_message="rate limit reached (429)"))) as server:
        first = run_act(base_url=server.base_url, **kw)
    with ScriptedModelServer(fixing_script()) as server:
        second = run_act(base_url=server.base_url, **kw)
    assert first.status[0] == "error" and second.pass_or_fail[0] == "pass"


def test_a_killed_run_resumes_without_redoing_finished_tasks(tasks, tmp_path):
    results = tmp_path / "results"
    tasks_file = tmp_path / "tasks.json"
    tasks.to_json(tasks_file, orient="records")
    with ScriptedModelServer(fixing_script(delay_s=1.0)) as server:
        child = subprocess.Popen([sys.executable, "-c", f"""
import pandas as pd
from cline import run_act
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
        assert 2 <= len(finished) < 4
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


def test_a_different_ruleset_is_a_different_run(tasks, tmp_path):
    kw = dict(tasks=tasks.head(2), run_id="t", workers=2, model="scripted-dry-run", api_key=KEY,
              results_root=tmp_path, progress=False)
    with ScriptedModelServer(fixing_script()) as server:
        run_act(base_url=server.base_url, ruleset="", **kw)
        first = len(server.chat_requests())
        run_act(base_url=server.base_url, ruleset="", **kw)
        same = len(server.chat_requests())
        run_act(base_url=server.base_url, ruleset="- [R1] New rule.", **kw)
        other = len(server.chat_requests())
    assert first == 4 and same == first and other == first + 4


def test_a_missing_key_fails_before_any_task_starts(tasks, monkeypatch, tmp_path):
    from helpers.core.config import MissingCredentials

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("helpers.core.config.REPO_ROOT", tmp_path)
    with pytest.raises(MissingCredentials, match="OPENAI_API_KEY"):
        run_act(tasks=tasks, run_id="t", model="gpt-4.1", results_root=tmp_path, progress=False)


def test_a_gemini_model_on_googles_api_is_one_error_before_any_task_starts(monkeypatch, tmp_path):
    from cline.runner import ClineAgent

    for name in ("OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "google-key")
    with pytest.raises(ValueError, match="OpenAI's or Anthropic's API.*'gemini-3-flash-preview' is a gemini model"):
        ClineAgent("gemini-3-flash-preview").check()


def test_through_the_gateway_the_key_stays_upstream_and_the_agents_commands_never_see_it(tasks, tmp_path):
    """Cline runs `printenv` into a file of the patch: the upstream gets the real key, nothing below the
    gateway does (the patch, the records, any command line); the row's cost comes from the gateway's meter."""
    from helpers.llm.gateway import Gateway, Upstream

    secret = "upstream-secret-KEY-5551234"
    script = Script([Rule(reply=[
        Reply("Looking at the environment.", tool_calls=[tool_call("run_commands", commands=["printenv > env.txt"])]),
        Reply("Fixing.", tool_calls=[tool_call("editor", path="calc.py", old_text=BUGGY, new_text=FIXED)]),
        Reply("Done."),
    ])])
    with ScriptedModelServer(script) as server, Gateway({"agent": Upstream(server.base_url, secret, "openai-compatible")}) as gateway:
        df = run_act(tasks=tasks.head(2), run_id="gw", workers=2, model="claude-sonnet-4-5", base_url=server.base_url,
                     api_key=secret, results_root=tmp_path, progress=False, gateway=gateway)
        seen = {r["authorization"] for r in server.requests}
        command_lines = all_command_lines()
    assert seen == {f"Bearer {secret}"}  # the upstream got the real key, and only it
    assert set(df.pass_or_fail) == {"pass"}
    for patch in df.cline_patch:
        assert "env.txt" in patch and "PATH=" in patch and secret not in patch and "gw-" in patch
    assert secret not in (tmp_path / "default/runs/gw.jsonl").read_text() and secret not in command_lines
    assert (df.input_tokens > 0).all() and (df.cost_usd > 0).all()  # metered by the gateway: a priced model
    # what the agent did, from its conversation at the gateway: saved per task, summarized for the judge
    turns = json.loads((tmp_path / "default/trajectories/gw" / f"{df.instance_id[0]}.json").read_text())
    assert any(call["name"] == "run_commands" for turn in turns for call in turn["tool_calls"])
    assert "ran: printenv > env.txt" in df.trajectory_summary[0] and "wrote: calc.py" in df.trajectory_summary[0]


def test_without_a_session_run_act_puts_a_gateway_of_its_own_in_front_so_the_agent_never_holds_the_key(tasks, tmp_path):
    """run_act called by hand, no session, no gateway given: the agent still gets only a run token."""
    secret = "own-gateway-secret-KEY-7771234"
    script = Script([Rule(reply=[
        Reply("Looking at the environment.", tool_calls=[tool_call("run_commands", commands=["printenv > env.txt"])]),
        Reply("Fixing.", tool_calls=[tool_call("editor", path="calc.py", old_text=BUGGY, new_text=FIXED)]),
        Reply("Done."),
    ])])
    with ScriptedModelServer(script) as server:
        df = run_act(tasks=tasks.head(1), run_id="own", model="claude-sonnet-4-5", base_url=server.base_url, api_key=secret,
                     results_root=tmp_path, progress=False)
        seen = {r["authorization"] for r in server.requests}
    assert seen == {f"Bearer {secret}"} and set(df.pass_or_fail) == {"pass"}
    patch = df.cline_patch[0]
    assert "env.txt" in patch and "OPENAI_API_KEY=gw-" in patch and secret not in patch
    assert secret not in (tmp_path / "default/runs/own.jsonl").read_text()
    assert df.input_tokens[0] > 0  # metered by that gateway


@pytest.mark.parametrize("call, match", [
    (lambda t: run_act(t, run_id="x"), "dataset_name is a DataFrame"),
    (lambda t: run_act(tasks=t, run_id="x", mode="plans", api_key=KEY), "mode must be 'act'"),
    (lambda t: run_act(tasks=t, run_id="x", workers=0, api_key=KEY, base_url="http://127.0.0.1:9"), "workers"),
    (lambda t: run_act(tasks=t, instance_ids="no-such-task", run_id="x", api_key=KEY), "no-such-task"),
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


def test_a_run_whose_model_stream_broke_is_run_again_within_the_same_call(tasks, tmp_path):
    from helpers.core import config
    from helpers.llm.gateway import Gateway, Upstream

    # the first two answers break after one event: too late for the gateway to retry (Cline has seen a byte)
    broken = Rule(reply=Reply("Fixing calc.py now.", fault="end_early", fault_after=1), times=config.AGENT_TRANSIENT_RETRIES)
    with ScriptedModelServer(Script([broken, *fixing_script().rules])) as server, \
            Gateway({"agent": Upstream(server.base_url, KEY, "openai-compatible")}) as gateway:
        df = run_act(tasks=tasks.head(1), run_id="broken", workers=1, model="scripted-dry-run", base_url=server.base_url,
                     api_key=KEY, results_root=tmp_path, progress=False, gateway=gateway)
        statuses = [call["status"] for call in gateway.calls()]
    assert broken.fired == config.AGENT_TRANSIENT_RETRIES and statuses.count(502) >= 1
    assert df.status[0] == "completed" and df.pass_or_fail[0] == "pass"  # the third run went through


def test_a_run_whose_stream_keeps_breaking_ends_as_a_transient_error_after_the_retries(tasks, tmp_path):
    from helpers.core import config
    from helpers.llm.gateway import Gateway, Upstream

    broken = Rule(reply=Reply("Fixing calc.py now.", fault="end_early", fault_after=1))
    with ScriptedModelServer(Script([broken])) as server, \
            Gateway({"agent": Upstream(server.base_url, KEY, "openai-compatible")}) as gateway:
        df = run_act(tasks=tasks.head(1), run_id="broken", workers=1, model="scripted-dry-run", base_url=server.base_url,
                     api_key=KEY, results_root=tmp_path, progress=False, gateway=gateway)
    assert df.status[0] == "error" and bool(df.transient[0])  # run again on the next call, never final
    assert "the model server ended the stream early after 1 chunk: the connection closed" in df.error[0]
    assert broken.fired == 1 + config.AGENT_TRANSIENT_RETRIES  # bounded: the run and its retries, no more
