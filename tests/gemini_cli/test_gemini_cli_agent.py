"""The real Gemini CLI against the scripted model server (Gemini's API), on house tasks, through the gateway,
the sandbox and the run engine: rules via GEMINI.md, the edit in the patch, usage metered, the key out of
every command line and every command's environment, timeouts, errors."""

import os
import time

import pytest

from gemini_cli import GeminiCliAgent
from gemini_cli.agent import gemini_cli_binary
from helpers.core.config import MissingCredentials
from helpers.core.registry import make_agent
from helpers.engine.runs import run_tasks
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.families.coding.tasks import load_house_suite
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call, tool_names
from helpers.testing.dry_run import DryRunScript

# one xdist worker runs every Gemini CLI test (make test: --dist loadgroup): the timeout test looks for any Gemini
# CLI process left on the machine, which another worker's run would be
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gemini-cli")]
SECRET = "test-gemini-KEY-" + "5" * 20  # the provider key: in this process's environment, only ever sent upstream
MODEL = "gemini-2.5-pro"
MARKER = "765.432"  # the argument of a `sleep` an agent leaves running: find it in /proc afterwards


@pytest.fixture(scope="module")
def house():
    return load_house_suite()


def run(tasks, script, tmp_path, agent=None, **kw):
    """(rows, the scripted server's requests, the gateway's call records) of `tasks` run by the Gemini CLI (or
    `agent(base_url)`) through a gateway holding SECRET, in the sandbox."""
    with ScriptedModelServer(script) as server, \
            Gateway({"agent": Upstream(server.origin, SECRET, "gemini")}) as gateway:
        made = (agent or (lambda url: GeminiCliAgent(MODEL, base_url=url, api_key=SECRET, timeout_s=120)))(server.origin)
        rows = run_tasks(tasks, made, run_id="train_0", experiment="gemini-cli", progress=False, gateway=gateway,
                         results_root=tmp_path / "results", workers=kw.pop("workers", 1), **kw)
        return rows, list(server.requests), gateway.calls()


def shell_steps(command: str, *after: Reply) -> Script:
    """The model asks once for `command` through the CLI's run_shell_command tool, then answers."""
    steps = [Reply("Working.", tool_calls=[tool_call("run_shell_command", command=command)]),
             *(after or [Reply("Done.")])]
    return Script([Rule(match=lambda r: bool(r.get("tools")), reply=steps)], default=Reply("Done."))


def test_the_rules_reach_the_model_through_gemini_md_and_the_fix_is_the_tested_patch(house, tmp_path):
    tasks = house.head(2)
    rules = "\n".join(f"- {CONVENTIONS[c]['rule']}" for c in CONVENTIONS)
    script = DryRunScript(tasks, edit_tools=GeminiCliAgent.dry_run_tools).script()
    rows, requests, calls = run(tasks, script, tmp_path, ruleset=rules, workers=2)
    assert rows["status"].tolist() == ["completed", "completed"], rows["error"].tolist()
    assert rows["pass_or_fail"].tolist() == ["pass", "pass"], rows["test_log"].tolist()  # the gold fix: rules read
    assert rows["agent"].tolist() == ["gemini-cli"] * 2
    for row, task in zip(rows.itertuples(), tasks.itertuples()):
        assert "GEMINI.md" not in row.output and "settings.json" not in row.output
        assert row.output.count("diff --git") == task.patch.count("diff --git")  # its own task's files only
        assert row.input_tokens > 0 and row.iterations == 2  # one command, then the answer
    model_calls = [r for r in requests if r.get("api") == "gemini"]
    first = [r["body"] for r in model_calls if not any(c.get("role") == "model" for c in r["body"]["contents"])]
    assert len(first) == 2 and {"run_shell_command", "write_file", "replace"} <= set(tool_names(first[0]))
    assert all(r["path"].startswith(f"/v1beta/models/{MODEL}:") for r in model_calls)
    for request in first:  # the CLI sends GEMINI.md as context in the first user turn
        assert CONVENTIONS["errors"]["rule"] in str(request["contents"]) + str(request.get("systemInstruction"))
    assert rows["trajectory_summary"].str.contains("write_file").all(), rows["trajectory_summary"].tolist()
    # every model call went through the gateway, which metered it
    assert calls and all(c["status"] == 200 for c in calls)
    assert sum(c["input_tokens"] or 0 for c in calls) >= rows["input_tokens"].sum() > 0


def test_the_key_is_in_no_command_line_no_command_environment_and_no_output(house, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)  # as a notebook kernel started with the key holds it
    command = ("printenv > env.txt; cat $HOME/.gemini/settings.json > settings.txt; "
               "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' > cmdlines.txt")
    rows, requests, _ = run(house.head(1), shell_steps(command, Reply("Done.")), tmp_path, evaluate=False)
    patch = rows["output"][0]
    assert rows["status"].tolist() == ["completed"], rows["error"].tolist()
    assert "GOOGLE_GEMINI_BASE_URL=" in patch and "gemini.js" in patch  # the commands ran, their output landed
    assert "GEMINI_API_KEY" not in patch  # redacted from the commands' environment (the gateway token too)
    assert '"usageStatisticsEnabled": false' in patch and '"enableAutoUpdate": false' in patch
    everything = patch + rows.to_json() + "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    assert SECRET not in everything
    sent = [r["authorization"] for r in requests if r.get("api") == "gemini"]
    assert sent and all(SECRET in s for s in sent)  # yet the gateway sent it upstream with every call


def test_run_tasks_takes_it_by_name_through_the_registry(house, tmp_path):
    rows, _, calls = run(house.head(1), shell_steps("echo hi > hi.txt"), tmp_path, evaluate=False,
                         agent=lambda url: make_agent("gemini-cli", model=MODEL, base_url=url, api_key=SECRET,
                                                      timeout_s=120))
    assert rows["agent"].tolist() == ["gemini-cli"] and rows["status"].tolist() == ["completed"], rows["error"].tolist()
    assert "+++ b/hi.txt" in rows["output"][0] and calls
    record = next((tmp_path / "results").rglob("*.json")).read_text()
    assert "echo hi > hi.txt" in record  # the tool call, recorded in the trajectory


def test_a_timeout_stops_the_run_and_everything_it_started(house, tmp_path):
    script = shell_steps(f"(sleep {MARKER} &) ; echo started", Reply("Thinking...", delay_s=60))
    rows, _, _ = run(house.head(1), script, tmp_path, evaluate=False,
                     agent=lambda url: GeminiCliAgent(MODEL, base_url=url, api_key=SECRET, timeout_s=20))
    assert rows["status"].tolist() == ["timeout"] and "20 s" in rows["error"][0]  # not the 60 s the model would take
    assert "\n" not in rows["error"][0]
    assert _all_gone(f"sleep {MARKER}") and _all_gone(str(gemini_cli_binary()))


def _all_gone(text: str, patience_s: float = 30.0) -> bool:
    """No process holds `text` in its command line, once the killed sandbox's PID namespace is torn down."""
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
    assert "scripted refusal: this model is not enabled" in rows["error"][0] and "\n" not in rows["error"][0]
    assert rows["pass_or_fail"].tolist() == ["fail"]


def test_setup_problems_raise_before_any_task(monkeypatch):
    monkeypatch.setattr("helpers.core.config.read_env", lambda name: None)  # no key or base URL anywhere
    with pytest.raises(MissingCredentials, match="GEMINI_API_KEY"):
        GeminiCliAgent(MODEL).check()
    with pytest.raises(ValueError, match="only Gemini's API"):
        GeminiCliAgent("gpt-5", api_key="k").check()
    with pytest.raises(ValueError, match="no headless plan mode"):
        GeminiCliAgent(mode="plan")
    assert GeminiCliAgent.installed().startswith("Gemini CLI 0.61.0")
    assert GeminiCliAgent("x", api_key="k").upstream() == ("https://generativelanguage.googleapis.com", "k", "gemini")


def test_with_only_a_local_openai_server_it_says_in_one_line_that_it_cannot_run_there(monkeypatch):
    local = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "OPENAI_API_KEY": "local"}
    monkeypatch.setattr("helpers.core.config.read_env", local.get)
    with pytest.raises(MissingCredentials) as error:
        GeminiCliAgent(MODEL).check()
    assert str(error.value).startswith("The Gemini CLI speaks only Gemini's API, which OPENAI_BASE_URL's server "
                                       "(http://127.0.0.1:8080/v1) does not")
    assert "\n" not in str(error.value) and "another AGENT" in str(error.value)
