"""Every agent and every role against a real model server (llama.cpp's llama-server, SmolLM2-135M).

What is asserted is the handling of a real server, not a tiny model's skill: every agent's calls went
through the gateway and were metered, each run completed or ended in an error with a one-line reason,
the judge's and optimizer's failures are counted instead of crashing, and an executed notebook shows no
traceback and no machine path. Run with `make test-real` (kept out of `make test` and CI: it builds a
server and runs for about 20 minutes on 2 cores).
"""

import json
import re

import nbformat
import pytest

from helpers.app.notebook_runner import main as run_headless
from helpers.app.session import open_session
from helpers.core.registry import make_agent
from helpers.engine.runs import run_tasks
from helpers.families.coding.tasks import load_house_suite
from helpers.store.records import read_jsonl
from helpers.stand_ins import local_model as recipe

pytestmark = pytest.mark.real
NOTEBOOK_TIMEOUT_S = 1_500
AGENT_TIMEOUT_S = 300.0  # per run: a 135M model rarely finishes a task, and the tier is about handling
MACHINE_PATH = re.compile(r"(?<![\w<.])/(?:tmp|root|home|work|usr|opt|var)/")


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Results, rulesets and model caches in a temporary folder; no provider variable but the test's own."""
    for name, sub in (("PL_RESULTS_DIR", "results"), ("PL_RULESETS_DIR", "rulesets")):
        monkeypatch.setenv(name, str(tmp_path / sub))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                 "PHOENIX_COLLECTOR_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"):  # else the Gemini CLI goes to Google
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture(autouse=True)
def held_to_the_servers_cap(local_model, monkeypatch):
    """What a session pointed at the server sets (LocalModelServer.environment): every answer, of every role, held
    to the server's cap by the gateway; a request's max_tokens would override the server's own -n."""
    for name, value in local_model.environment.items():
        monkeypatch.setenv(name, value)


def shown_text(path) -> str:
    """Everything an executed notebook shows: streams, results and errors (tracebacks included)."""
    parts = []
    for cell in nbformat.read(path, as_version=4).cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.extend(str(v) for k, v in out.get("data", {}).items() if k.startswith("text/"))
            parts.extend(out.get("traceback", []))
    return "\n".join(parts)


def assert_each_run_completed_or_named_its_error(rows):
    for row in rows:
        assert row["status"] in ("completed", "error", "timeout"), row
        if row["status"] != "completed":
            assert row["error"].strip() and "\n" not in row["error"].strip() and "Traceback" not in row["error"], row


@pytest.mark.timeout(NOTEBOOK_TIMEOUT_S + 120)  # the notebook's own limit, not pytest's 10-minute default, ends it
def test_the_cline_quickstart_runs_end_to_end_on_a_real_server(local_model, isolated, monkeypatch, capfd, phoenix_url):
    monkeypatch.setenv("OPENAI_BASE_URL", local_model.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "local-server-needs-no-key")
    model = repr(local_model.model)
    output = isolated / "quickstart.ipynb"
    code = run_headless(["notebooks/quickstart.ipynb", "LOOPS=1", "TRAIN_SIZE=2", "TEST_SIZE=2", "EXPERIMENT=real-cline",
                         f"AGENT_TIMEOUT_S={AGENT_TIMEOUT_S}", f"AGENT_MODEL={model}", f"JUDGE_MODEL={model}",
                         f"OPTIMIZER_MODEL={model}",
                         # the suite's Phoenix (started with a loaded machine's patience), not one of the notebook's own
                         f"PHOENIX_URL={phoenix_url!r}",
                         "-o", str(output), "--timeout", str(NOTEBOOK_TIMEOUT_S)])
    console = capfd.readouterr()
    assert code == 0, console.err
    assert re.search(r"^-- \d+\. The loop", console.out, re.M) and "Loop 0" in console.out  # it talked as it went
    assert f"at most {recipe.MAX_OUTPUT_TOKENS} tokens each" in console.out  # every answer held to the server's cap
    shown = shown_text(output)
    assert "Traceback" not in shown and not MACHINE_PATH.search(shown), MACHINE_PATH.findall(shown)[:5]
    loop = read_jsonl(isolated / "results" / "real-cline" / "loops.jsonl")[-1]
    assert loop["dry_run"] is False
    runs = [r for path in (isolated / "results" / "real-cline" / "runs").glob("*.jsonl") for r in read_jsonl(path)]
    assert runs and sum(r["input_tokens"] for r in runs) > 0  # metered by the gateway
    assert_each_run_completed_or_named_its_error(runs)


@pytest.mark.parametrize("agent, variables", [
    ("codex", {"OPENAI_BASE_URL": "base_url", "OPENAI_API_KEY": None}),
    ("mini-swe-agent", {"OPENAI_BASE_URL": "base_url", "OPENAI_API_KEY": None}),
    ("opencode", {"OPENAI_BASE_URL": "base_url", "OPENAI_API_KEY": None}),
    # the Gemini CLI speaks Gemini's API to the gateway, which carries it to this server's chat completions
    ("gemini-cli", {"OPENAI_BASE_URL": "base_url", "OPENAI_API_KEY": None}),
    # Claude Code's calls go to ANTHROPIC_BASE_URL, the judge's and optimizer's to OPENAI_BASE_URL: both this server
    ("claude-code", {"ANTHROPIC_BASE_URL": "origin", "ANTHROPIC_API_KEY": None,
                     "OPENAI_BASE_URL": "base_url", "OPENAI_API_KEY": None}),
])
def test_each_agent_reaches_the_real_server_through_the_gateway(local_model, isolated, monkeypatch, agent, variables):
    for name, attribute in variables.items():
        monkeypatch.setenv(name, getattr(local_model, attribute) if attribute else "local-server-needs-no-key")
    tasks = load_house_suite().head(1)
    # every role on the one id the server lists (it answers any id, but the session checks its model list)
    with open_session(agent=agent, agent_model=local_model.model, judge_model=local_model.model,
                      optimizer_model=local_model.model, phoenix=False) as session:
        assert session.model_check == []
        runner = make_agent(agent, **session.agent_kwargs(), timeout_s=AGENT_TIMEOUT_S)
        frame = run_tasks(tasks, runner, run_id="real", experiment=f"real-{agent}", gateway=session.gateway,
                          workers=1, progress=False)
        usage = session.usage(role="agent")
        upstream = session.gateway.upstreams["agent"]
    assert upstream.url.startswith("http://127.0.0.1:")  # nothing went to a public URL
    assert usage["calls"] > 0 and usage["input_tokens"] > 0, usage
    rows = frame.to_dict("records")
    assert len(rows) == 1 and sum(r["input_tokens"] for r in rows) > 0
    assert_each_run_completed_or_named_its_error(rows)
    print(json.dumps({"agent": agent, "usage": usage, "statuses": [r["status"] for r in rows],
                      "errors": [r["error"] for r in rows], "seconds": [r["duration_s"] for r in rows]}))


@pytest.mark.parametrize("agent", ["codex", "mini-swe-agent", "gemini-cli"])  # the Gemini CLI's through chat completions
def test_an_agents_init_route_runs_on_the_real_server_and_its_file_or_its_failure_is_named(local_model, isolated,
                                                                                          monkeypatch, agent):
    """The init arm's run (helpers.engine.baselines.init_rules) with a real model: a small model may write no file,
    which is then an errored arm naming why, never an empty ruleset."""
    from helpers.engine.baselines import init_rules

    monkeypatch.setenv("OPENAI_BASE_URL", local_model.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "local-server-needs-no-key")
    task = load_house_suite().iloc[0].to_dict()
    with open_session(agent=agent, agent_model=local_model.model, judge_model=local_model.model,
                      optimizer_model=local_model.model, phoenix=False) as session:
        runner = make_agent(agent, **session.agent_kwargs(), timeout_s=AGENT_TIMEOUT_S)
        found = init_rules(runner, task, experiment=f"real-init-{agent}", gateway=session.gateway)
        usage = session.usage(role="agent")
    assert usage["calls"] > 0, usage  # the init went to the model through the gateway
    assert found["prompt_sha"] and found["agent_version"] != "unknown"
    assert (found["status"] == "ran" and found["text"].strip()) or (found["status"] == "errored" and found["why"]), found
    print(json.dumps({k: v for k, v in found.items() if k != "text"} | {"bytes": len(found["text"])}))
