"""The real opencode CLI against the scripted model server (chat completions), on house tasks, through the
gateway, the sandbox and the run engine: rules via AGENTS.md, the edit in the patch, usage metered, the key
out of everything its commands can read, timeouts, errors."""

import os
import time

import pytest
from sandbox_probes import added

from opencode import OpencodeAgent
from opencode.agent import opencode_binary
from helpers.core.config import MissingCredentials
from helpers.core.registry import make_agent
from helpers.engine.runs import run_tasks
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.families.coding.tasks import load_house_suite
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text, tool_call, tool_names
from helpers.testing.dry_run import DryRunScript

# one xdist worker runs every opencode test (make test: --dist loadgroup): the timeout test looks for any opencode
# process left on the machine, which another worker's opencode run would be
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("opencode-cli")]
SECRET = "test-openai-KEY-" + "3" * 20  # the provider key: in this process's environment, only ever sent upstream
MARKER = "876.543"  # the argument of a `sleep` an agent leaves running: find it in /proc afterwards


@pytest.fixture(scope="module")
def house():
    return load_house_suite()


def run(tasks, script, tmp_path, agent=None, **kw):
    """(rows, the scripted server's requests, the gateway's call records) of `tasks` run by opencode (or
    `agent(base_url)`) through a gateway holding SECRET, in the sandbox."""
    with ScriptedModelServer(script) as server, \
            Gateway({"agent": Upstream(server.base_url, SECRET, "openai-compatible")}) as gateway:
        made = (agent or (lambda url: OpencodeAgent("gpt-5", base_url=url, api_key=SECRET, timeout_s=120)))(server.base_url)
        rows = run_tasks(tasks, made, run_id="train_0", experiment="opencode", progress=False, gateway=gateway,
                         results_root=tmp_path / "results", workers=kw.pop("workers", 1), **kw)
        return rows, list(server.requests), gateway.calls()


def shell_steps(command: str, *after: Reply) -> Script:
    """The model asks once for `command` through opencode's bash tool, then answers; side calls get "Done."."""
    steps = [Reply("Working.", tool_calls=[tool_call("bash", command=command, description="run it")]),
             *(after or [Reply("Done.")])]
    return Script([Rule(match=lambda r: bool(r.get("tools")), reply=steps)], default=Reply("Done."))


def test_the_rules_reach_the_system_message_through_agents_md_and_the_fix_is_the_tested_patch(house, tmp_path):
    tasks = house.head(2)
    rules = "\n".join(f"- {CONVENTIONS[c]['rule']}" for c in CONVENTIONS)
    script = DryRunScript(tasks, edit_tools=OpencodeAgent.dry_run_tools).script()
    rows, requests, calls = run(tasks, script, tmp_path, ruleset=rules, workers=2)
    assert rows["status"].tolist() == ["completed", "completed"], rows["error"].tolist()
    assert rows["pass_or_fail"].tolist() == ["pass", "pass"], rows["test_log"].tolist()  # the gold fix: rules read
    assert rows["agent"].tolist() == ["opencode"] * 2
    for row, task in zip(rows.itertuples(), tasks.itertuples()):
        assert "AGENTS.md" not in row.output and "opencode.json" not in row.output
        assert row.output.count("diff --git") == task.patch.count("diff --git")  # its own task's files only
        assert row.input_tokens > 0 and row.iterations == 2  # one command, then the answer
    first = [r["body"] for r in requests if r["body"].get("tools") and
             not any(m["role"] == "assistant" for m in r["body"]["messages"])]
    assert len(first) == 2 and {"bash", "apply_patch", "read"} <= set(tool_names(first[0]))  # on a GPT model
    assert rows["trajectory_summary"].str.contains("apply_patch").all(), rows["trajectory_summary"].tolist()
    for request in first:  # opencode puts AGENTS.md in its system message
        assert CONVENTIONS["errors"]["rule"] in message_text(request, "system")
    # every model call went through the gateway, which metered it
    assert calls and all(c["status"] == 200 for c in calls)
    assert sum(c["input_tokens"] or 0 for c in calls) >= rows["input_tokens"].sum() > 0


def test_the_trajectory_shows_the_shell_call_and_its_output(house, tmp_path):
    rows, _, _ = run(house.head(1), shell_steps("echo fixed > fixed.txt && echo wrote it", Reply("Done: fixed.")),
                     tmp_path, evaluate=False)
    assert rows["status"].tolist() == ["completed"], rows["error"].tolist()
    assert "+++ b/fixed.txt" in rows["output"][0]
    record = next((tmp_path / "results").rglob("*.json")).read_text()
    assert "wrote it" in record and "echo fixed > fixed.txt" in record  # the tool call and its output, recorded


def test_the_key_is_in_no_environment_file_or_output_of_a_run(house, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # as a notebook kernel started with the key holds it
    command = "printenv > env.txt; cat $OPENCODE_CONFIG > config.txt; ls -a $HOME $XDG_CONFIG_HOME/opencode > home.txt"
    rows, requests, _ = run(house.head(1), shell_steps(command, Reply("Done.")), tmp_path, evaluate=False)
    patch = rows["output"][0]
    assert rows["status"].tolist() == ["completed"], rows["error"].tolist()
    assert "OPENCODE_CONFIG=" in patch and "XDG_CONFIG_HOME=" in patch  # the command ran, its output landed
    assert '"apiKey": "{file:/dev/fd/' in patch  # the config names a pipe, not the key
    assert "OPENCODE_DISABLE_AUTOUPDATE=1" in patch and '"autoupdate": false' in patch and '"share": "disabled"' in patch
    assert "npm_config_offline=true" in patch and ".npm" not in added(patch, "home.txt")  # its npm fetched nothing
    everything = patch + rows.to_json() + "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    assert SECRET not in everything
    sent = [r["authorization"] for r in requests]
    assert sent and all(SECRET in s for s in sent)  # yet the gateway sent it upstream with every call


def test_run_tasks_takes_it_by_name_through_the_registry(house, tmp_path):
    rows, _, calls = run(house.head(1), shell_steps("echo hi > hi.txt"), tmp_path, evaluate=False,
                         agent=lambda url: make_agent("opencode", model="gpt-5", base_url=url, api_key=SECRET,
                                                                timeout_s=120))
    assert rows["agent"].tolist() == ["opencode"] and rows["status"].tolist() == ["completed"], rows["error"].tolist()
    assert "+++ b/hi.txt" in rows["output"][0] and calls


def test_a_timeout_stops_the_run_and_everything_it_started(house, tmp_path):
    script = shell_steps(f"(sleep {MARKER} &) ; echo started", Reply("Thinking...", delay_s=60))
    rows, _, _ = run(house.head(1), script, tmp_path, evaluate=False,
                     agent=lambda url: OpencodeAgent("gpt-5", base_url=url, api_key=SECRET, timeout_s=20))
    assert rows["status"].tolist() == ["timeout"] and "20 s" in rows["error"][0]  # not the 60 s the model would take
    survivors = [pid for pid in os.listdir("/proc") if pid.isdigit() and _holds(pid, f"sleep {MARKER}")]
    assert survivors == [] and _all_gone(str(opencode_binary()))


def _all_gone(text: str, patience_s: float = 30.0) -> bool:
    """No process holds `text` in its command line, once the killed sandbox's PID namespace is torn down: the
    kernel kills what ran inside when bwrap dies, and reaps it a moment later (seconds on a loaded machine)."""
    deadline = time.monotonic() + patience_s
    while [pid for pid in os.listdir("/proc") if pid.isdigit() and _holds(pid, text)]:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _holds(pid: str, text: str) -> bool:
    try:
        return text in open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False


def test_a_provider_4xx_ends_in_an_error_with_its_message(house, tmp_path):
    refusal = Reply(status=400, error_message="scripted refusal: this model is not enabled for the key")
    rows, _, _ = run(house.head(1), Script([Rule(reply=refusal)]), tmp_path)
    assert rows["status"].tolist() == ["error"]
    assert "scripted refusal: this model is not enabled" in rows["error"][0]
    assert rows["pass_or_fail"].tolist() == ["fail"]


def test_setup_problems_raise_before_any_task(monkeypatch):
    monkeypatch.setattr("helpers.core.config.read_env", lambda name: None)  # no key or base URL anywhere
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingCredentials, match="OPENAI_API_KEY"):
        OpencodeAgent("gpt-5").check()
    with pytest.raises(ValueError, match="chat-completions"):
        OpencodeAgent("claude-sonnet-4-5", api_key="k").check()
    with pytest.raises(ValueError, match="no headless plan mode"):
        OpencodeAgent(mode="plan")
    assert OpencodeAgent.installed().startswith("opencode 1.18.33")
