"""The real mini-swe-agent (its own environment, mini_swe_agent/.venv) against the scripted model server (OpenAI
chat completions), on house tasks, through the run engine, the gateway and the sandbox: rules in its system
message, the edit in the patch, usage metered, the key kept out, timeouts, errors."""

import json
import subprocess
import threading
import time

import pytest

from worker_processes import command_lines

from helpers.core.config import MissingCredentials
from helpers.core.processes import scratch_dir
from helpers.core.registry import make_agent
from helpers.engine.runs import run_tasks
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.families.coding.tasks import load_house_suite
from helpers.families.coding.workspaces import prepare_workspace, remove_workspace, write_rules
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text, tool_call, tool_names
from helpers.testing.dry_run import DryRunScript
from mini_swe_agent import MiniSweAgent
from mini_swe_agent.agent import PACKAGE_DIR, SUBMIT, SYSTEM_TEMPLATE, system_template

INSTALLED = (PACKAGE_DIR / MiniSweAgent.binary_path).exists()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not INSTALLED, reason="mini-swe-agent is not installed in mini_swe_agent/.venv: run `make mini-swe-agent` "
                          "(`make setup` and `make test` do)")]
KEY = "test-openai-KEY-3c9e1d"  # only ever sent to the scripted server
MARKER = "987.654"  # the argument of a `sleep` an agent leaves running: find it in /proc afterwards


@pytest.fixture(scope="module")
def house():
    return load_house_suite()


def agent_for(server, **settings):
    return MiniSweAgent("gpt-5", base_url=server.base_url, api_key=settings.pop("api_key", KEY), **settings)


def dry_run(tasks) -> Script:
    return DryRunScript(tasks, edit_tools=MiniSweAgent.dry_run_tools).script()


def run(tasks, agent, tmp_path, **kw):
    return run_tasks(tasks, agent, run_id=kw.pop("run_id", "train_0"), experiment="mini", progress=False,
                     results_root=tmp_path / "results", workers=kw.pop("workers", 2), **kw)


def shell(command: str) -> dict:
    return tool_call("bash", command=command)


def steps_script(*steps: Reply) -> Script:
    return Script([Rule(match=lambda r: bool(r.get("tools")), reply=list(steps))])


def processes_with(text: str) -> list[str]:
    """Command lines holding `text` of the processes this test worker started."""
    lines = [b" ".join(cmd).decode(errors="replace") for _, cmd in command_lines()]
    return [line for line in lines if text in line]


def test_the_rules_reach_the_system_message_and_the_fix_is_the_tested_patch(house, tmp_path):
    tasks = house.head(2)
    braces = "- Write `{{ HOME }}` and `{% endraw %}` in docs as they are."  # Jinja in a rule stays text
    rules = "\n".join(f"- {CONVENTIONS[c]['rule']}" for c in CONVENTIONS) + "\n" + braces
    with ScriptedModelServer(dry_run(tasks)) as server:
        df = run(tasks, agent_for(server), tmp_path, ruleset=rules)  # run_tasks puts a gateway of its own in front
        requests = server.model_requests("chat")
    assert df["status"].tolist() == ["completed", "completed"], df["error"].tolist()
    assert df["pass_or_fail"].tolist() == ["pass", "pass"], df["test_log"].tolist()  # the gold fix: rules were read
    assert df["agent"].tolist() == ["mini-swe-agent"] * 2
    for row, task in zip(df.itertuples(), tasks.itertuples()):
        assert "AGENTS.md" not in row.output
        assert row.output.count("diff --git") == task.patch.count("diff --git")  # its own task's files only
        assert row.input_tokens > 0 and row.output_tokens > 0 and row.iterations == 1  # edit and submit: one call
    assert len(requests) == 2 and all(tool_names(r) == ["bash"] for r in requests)
    assert not any(r.get("stream") for r in requests)  # litellm's plain chat completions
    for request in requests:
        system = message_text(request, "system")
        assert system.startswith(SYSTEM_TEMPLATE.strip()) and CONVENTIONS["errors"]["rule"] in system
        assert braces in system  # not rendered: no HOME, no template error
        assert CONVENTIONS["errors"]["rule"] not in message_text(request, "user")


def test_without_rules_the_quick_fix_fails_and_the_trajectory_shows_the_commands(house, tmp_path):
    task = house.iloc[0].to_dict()
    workspace = prepare_workspace(task, scratch_dir("test-ws"))
    try:
        with ScriptedModelServer(dry_run(house.head(1))) as server:
            write_rules(workspace, "AGENTS.md", "")
            result = agent_for(server).run(task, workspace, "")
            system = message_text(server.model_requests("chat")[0], "system")
    finally:
        remove_workspace(workspace)
    assert result.status == "completed", result.error
    assert system == SYSTEM_TEMPLATE.strip()  # no rules, no rules heading
    # the edit and the submit in one turn, then each command's result (the submit's: "not executed", it ended the run)
    assert [s["type"] for s in result.trajectory] == ["message", "tool_call", "tool_call", "tool_result", "tool_result"]
    assert "git apply" in result.trajectory[1]["text"] and result.trajectory[2]["text"] == SUBMIT
    assert result.usage["input_tokens"] > 0 and result.cost_usd > 0  # priced from our table


def test_the_key_is_not_in_the_commands_environment_config_or_command_lines(house, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # as a notebook kernel started with the key holds it
    seen_lines: list[str] = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            seen_lines.extend(processes_with(KEY))
            time.sleep(0.05)

    task = house.iloc[0].to_dict()
    steps = [Reply("Looking.", tool_calls=[shell("printenv > env.txt; cat $HOME/../run.yaml > config.txt; ls -a $HOME/.. "
                                                 "> state.txt")]),
             Reply("Done.", tool_calls=[shell(SUBMIT)], delay_s=1.0)]
    workspace = prepare_workspace(task, scratch_dir("test-ws"))
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ScriptedModelServer(steps_script(*steps)) as server:  # no gateway: the agent holds the key itself
            result = agent_for(server).run(task, workspace, "")
            sent = [r["authorization"] for r in server.requests]
        written = {name: (workspace / name).read_text() for name in ("env.txt", "config.txt", "state.txt")}
    finally:
        done.set()
        watcher.join()
        remove_workspace(workspace)
    assert result.status == "completed", result.error
    assert "MSWEA_GLOBAL_CONFIG_DIR=" in written["env.txt"] and "OPENAI_API_KEY=\n" in written["env.txt"]
    assert '"api_base"' in written["config.txt"] and "run.yaml" in written["state.txt"]
    assert not any(KEY in text for text in written.values())
    assert KEY not in json.dumps(result.to_dict())
    assert seen_lines == []
    assert sent and all(KEY in s for s in sent)  # yet every request carried it


def test_a_timeout_stops_the_run_and_everything_it_started(house, tmp_path):
    steps = [Reply("Starting.", tool_calls=[shell(f"(sleep {MARKER} > /dev/null 2>&1 &) ; echo started")]),
             Reply("Thinking...", delay_s=60)]
    with ScriptedModelServer(steps_script(*steps)) as server:
        df = run(house.head(1), agent_for(server, timeout_s=8), tmp_path, evaluate=False)
    assert df["status"].tolist() == ["timeout"] and "8 s" in df["error"][0]  # not the 60 s the model would take
    assert processes_with(f"sleep {MARKER}") == []
    assert processes_with(str(MiniSweAgent.binary())) == []


def test_a_provider_4xx_ends_in_an_error_with_its_message_at_once(house, tmp_path):
    refusal = Reply(status=400, error_message="scripted refusal: this model is not enabled for the key")
    with ScriptedModelServer(Script([Rule(reply=refusal)])) as server:
        df = run(house.head(1), agent_for(server), tmp_path)
        asked = len(server.model_requests("chat"))
    assert df["status"].tolist() == ["error"]
    assert "scripted refusal: this model is not enabled" in df["error"][0] and "\n" not in df["error"][0]
    assert df["pass_or_fail"].tolist() == ["fail"]
    assert asked == 1  # neither mini nor litellm retries a refusal (the gateway owns retries)


def test_a_run_by_name_through_make_agent(house, tmp_path):
    with ScriptedModelServer(dry_run(house.head(1))) as server:
        agent = make_agent("mini-swe-agent", model="gpt-5", base_url=server.base_url, api_key=KEY)
        df = run(house.head(1), agent, tmp_path, evaluate=False)
    assert isinstance(agent, MiniSweAgent) and df["agent"].tolist() == ["mini-swe-agent"]
    assert df["status"].tolist() == ["completed"], df["error"].tolist()
    assert "diff --git" in df["output"][0]


def test_setup_problems_raise_before_any_task(monkeypatch):
    monkeypatch.setattr("helpers.core.config.read_env", lambda name: None)  # no key or base URL anywhere
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingCredentials, match="OPENAI_API_KEY"):
        MiniSweAgent("gpt-5").check()
    with pytest.raises(ValueError, match="chat completions"):
        MiniSweAgent("claude-sonnet-4-5", api_key="k").check()
    with pytest.raises(ValueError, match="no headless plan mode"):
        MiniSweAgent(mode="plan")
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
