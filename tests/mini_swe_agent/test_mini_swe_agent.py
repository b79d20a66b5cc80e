"""What only mini-swe-agent does (its own environment, mini_swe_agent/.venv), read from the agent contract's shared runs
(tests/agent_runs.py; the contract itself: tests/helpers/agents/test_agent_contract.py) or run here: the rules in
its Jinja system template as text, plain chat completions with bash alone, its submit command, no retry of a
refusal, the key blanked for its commands when it holds the key itself, its trajectory file read as hostile data."""

import json
import subprocess
import threading
import time

import pytest
from agent_runs import BRACES, FIX_RUN_OUTPUT_CAP, first_requests, watching_command_lines
from sandbox_probes import added

from helpers.isolation.processes import scratch_dir
from helpers.engine.runs import run_tasks
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.families.coding.tasks import load_house_suite
from helpers.families.coding.workspaces import prepare_workspace, remove_workspace
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text, tool_call, tool_names
from mini_swe_agent import MiniSweAgent
from mini_swe_agent.agent import PACKAGE_DIR, SUBMIT, SYSTEM_TEMPLATE, system_template

INSTALLED = (PACKAGE_DIR / MiniSweAgent.binary_path).exists()
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("mini-swe-agent"), pytest.mark.skipif(  # beside its contract runs
    not INSTALLED, reason="mini-swe-agent is not installed in mini_swe_agent/.venv: run `make mini-swe-agent` "
                          "(`make setup` and `make test` do)")]
KEY = "test-openai-KEY-3c9e1d"  # only ever sent to the scripted server


@pytest.fixture(scope="module")
def house():
    return load_house_suite()


def agent_for(server, **settings):
    return MiniSweAgent("gpt-5", base_url=server.base_url, api_key=settings.pop("api_key", KEY), **settings)


def run(tasks, agent, tmp_path, **kw):
    return run_tasks(tasks, agent, run_id=kw.pop("run_id", "train_0"), experiment="mini", progress=False,
                     results_root=tmp_path / "results", workers=kw.pop("workers", 2), **kw)


def shell(command: str) -> dict:
    return tool_call("bash", command=command)


def steps_script(*steps: Reply) -> Script:
    return Script([Rule(match=lambda r: bool(r.get("tools")), reply=list(steps))])


def test_the_rules_follow_its_system_template_as_text_in_plain_chat_completions_with_bash_alone(agent_runs):
    run = agent_runs.fix("mini-swe-agent")
    requests = [r for r in first_requests(run.requests) if run.tasks.instance_id[3] not in message_text(r, "user")]
    assert requests and all(tool_names(r) == ["bash"] for r in requests)
    # PL_MAX_OUTPUT_TOKENS governs its output cap (litellm sends it as max_completion_tokens for an OpenAI model id)
    assert {r.get("max_completion_tokens") or r.get("max_tokens") for r in requests} == {FIX_RUN_OUTPUT_CAP}
    assert not any(r["body"].get("stream") for r in run.requests if r.get("api") == "chat")  # litellm's plain calls
    taught = [r for r in requests if CONVENTIONS["errors"]["rule"] in message_text(r, "system")]
    for request in taught:
        system = message_text(request, "system")
        assert system.startswith(SYSTEM_TEMPLATE.strip()) and BRACES in system  # not rendered: no HOME, no error
        assert CONVENTIONS["errors"]["rule"] not in message_text(request, "user")
    assert taught


def test_without_rules_its_system_message_is_its_template_and_a_step_ends_on_its_submit(agent_runs):
    run = agent_runs.probe("mini-swe-agent")
    system = message_text(first_requests(run.requests)[0], "system")
    assert system == SYSTEM_TEMPLATE.strip()  # no rules, no rules heading
    records = "".join(p.read_text(errors="replace") for p in run.results.rglob("*.json"))
    assert SUBMIT in records  # the probes, then the submit, in one turn: the run ended on it
    config = added(run.rows["output"][0], "config.txt")
    assert '"api_base"' in config and "run.yaml" in added(run.rows["output"][0], "state.txt")
    assert "MSWEA_GLOBAL_CONFIG_DIR=" in added(run.rows["output"][0], "env.txt")


def test_a_provider_4xx_is_asked_once(agent_runs):
    run = agent_runs.fix("mini-swe-agent")
    refused = run.tasks.instance_id[3]
    asked = [r for r in run.requests if r.get("api") == "chat" and refused in json.dumps(r["body"])]
    assert len(asked) == 1  # neither mini nor litellm retries a refusal (the gateway owns retries)


def test_holding_the_key_itself_it_keeps_it_from_its_commands_environment_config_and_command_lines(house, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # as a notebook kernel started with the key holds it
    task = house.iloc[0].to_dict()
    steps = [Reply("Looking.", tool_calls=[shell("printenv > env.txt; cat $HOME/../run.yaml > config.txt; ls -a $HOME/.. "
                                                 "> state.txt")]),
             Reply("Done.", tool_calls=[shell(SUBMIT)], delay_s=1.0)]
    workspace = prepare_workspace(task, scratch_dir("test-ws"))
    try:
        with watching_command_lines(KEY) as seen_lines, ScriptedModelServer(steps_script(*steps)) as server:
            result = agent_for(server).run(task, workspace, "")  # no gateway: the agent holds the key itself
            sent = [r["authorization"] for r in server.requests]
        written = {name: (workspace / name).read_text() for name in ("env.txt", "config.txt", "state.txt")}
    finally:
        remove_workspace(workspace)
    assert result.status == "completed", result.error
    assert "MSWEA_GLOBAL_CONFIG_DIR=" in written["env.txt"] and "OPENAI_API_KEY=\n" in written["env.txt"]
    assert '"api_base"' in written["config.txt"] and "run.yaml" in written["state.txt"]
    assert not any(KEY in text for text in written.values())
    assert KEY not in json.dumps(result.to_dict())
    assert seen_lines == []
    assert sent and all(KEY in s for s in sent)  # yet every request carried it


def test_the_pinned_agent_is_installed():
    assert MiniSweAgent.installed().startswith("mini-swe-agent 2.4.6")


def test_the_rules_follow_the_installed_mini_yaml_system_template():
    python = PACKAGE_DIR / ".venv/bin/python"
    read = ("import yaml, minisweagent.config as c; "
            "print(yaml.safe_load((c.builtin_config_dir / 'mini.yaml').read_text())['agent']['system_template'], end='')")
    installed = subprocess.run([str(python), "-c", read], capture_output=True, text=True, timeout=120,
                               env={"MSWEA_SILENT_STARTUP": "1", "MSWEA_GLOBAL_CONFIG_DIR": str(scratch_dir("mini-cfg"))})
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout == SYSTEM_TEMPLATE
    assert system_template("") == SYSTEM_TEMPLATE and system_template("- a rule").startswith(SYSTEM_TEMPLATE)


def test_a_trajectory_file_made_a_fifo_or_a_link_to_dev_zero_ends_as_an_error_naming_it_within_seconds(house, tmp_path):
    """The trajectory lies in the run's home, where the agent's commands write: a FIFO there (kept fed while mini
    saves, so mini itself finishes) once blocked the driver for ever, a link to /dev/zero read until memory ran out."""
    tasks = house.head(2)
    fifo, zero = tasks.instance_id
    traj = "$HOME/../traj.json"
    make = {fifo: f"rm -f {traj} && mkfifo {traj} && (while true; do cat {traj} > /dev/null; done) > /dev/null 2>&1 &",
            zero: f"rm -f {traj} && ln -s /dev/zero {traj}"}
    script = Script([Rule(user_contains=iid, match=lambda r: bool(r.get("tools")),
                          reply=[Reply("Swapping.", tool_calls=[shell(command)]), Reply("Done.", tool_calls=[shell(SUBMIT)])])
                     for iid, command in make.items()])
    done: dict = {}
    with ScriptedModelServer(script) as server:
        worker = threading.Thread(target=lambda: done.update(df=run(tasks, agent_for(server), tmp_path, evaluate=False)),
                                  daemon=True)
        started = time.monotonic()
        worker.start()
        worker.join(timeout=120)
    assert "df" in done, "the driver is still reading the trajectory"
    rows = done["df"].set_index("instance_id")
    assert time.monotonic() - started < 120
    assert rows.loc[fifo, "status"] == "error" and "traj.json is a FIFO" in rows.loc[fifo, "error"], rows.loc[fifo, "error"]
    assert rows.loc[zero, "status"] == "error" and "traj.json is a symbolic link" in rows.loc[zero, "error"]
    assert all("refused the agent's output" in error for error in rows["error"])  # rule-induced, by name
