"""The real runs the agent contract (tests/helpers/agents/test_agent_contract.py) asks its questions of, each made
once per test worker and shared with the agent's own tests (a pytest plugin: tests/conftest.py loads it).

Every registered agent (helpers.core.registry) runs them against the scripted model server, through a gateway and
in the sandbox:
- the fix run: four house tasks, rules for the first two's conventions: those two get the tested fix, the third
  the quick fix (its conventions are not in the rules) which its hidden tests fail, the fourth a provider 4xx; one
  server error on the way is retried away by the gateway; the key is watched for on every command line;
- the probe run: the model asks once, through the agent's own shell tool, for the sandbox probes
  (tests/sandbox_probes.py), a fetch of another loopback service, `printenv` and what the agent's Spec adds;
- the plan run (agents with a headless plan mode): one task in plan mode;
- the init run: the agent's own init (its class's init_route) on the first house library, once, through a gateway
  (helpers.engine.baselines.init_rules): the scripted model reads README.md and CONTRIBUTING.md and writes the file.
What each agent must say beyond its class's declarations (`rules_file`, `dry_run_tools`, `plan_mode`) is its Spec.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import pytest

from helpers.core import config
from helpers.core.registry import agent_class, make_agent, registered_agents
from helpers.isolation.sandbox import unavailable_reason
from helpers.engine.runs import run_tasks
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.families.coding.tasks import load_house_suite
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text, normalize_request
from helpers.stand_ins.dry_run import DryRunScript
from helpers.stand_ins.file_edit_tools import ShellTool
from sandbox_probes import PROBE_SCRIPT, SECRET, fetch_script, loopback_service
from worker_processes import command_lines

REFUSAL = "scripted refusal: this model is not enabled for the key"
BRACES = "- Write `{{ HOME }}` and `{% endraw %}` in docs as they are."  # template syntax in a rule stays text
MODEL_APIS = ("chat", "anthropic", "responses", "gemini")  # the scripted server's names of the model APIs
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")  # a notebook kernel may hold any of them


@dataclass(frozen=True)
class Spec:
    """What the contract needs to know of an agent that its class does not declare."""

    model: str  # a model it runs on (priced in our table)
    rules_in: str | None = None  # the role of the message its rules file reaches the model in (None: either)
    at_origin: bool = False  # its base URL is the server's origin, not .../v1 (Gemini's API)
    turns: int = 2  # model turns of a run that edits once: the edit, then the answer
    streams: bool = True  # its model calls stream
    timeout_s: float = 6.0  # a time limit well past its start-up (the timeout run's model hangs after one step)
    inspect: str = ""  # shell commands the probe run adds, for what the agent's own tests read of its setup
    foreign_model: str = "gemini-2.5-pro"  # a model of a provider it cannot call


SPECS = {
    "cline": Spec("gpt-4.1", "system"),
    "claude-code": Spec("claude-sonnet-4-5", "user", foreign_model="gpt-4.1"),
    "codex": Spec("gpt-5", "user", foreign_model="claude-sonnet-4-5"),
    # opencode and the Gemini CLI take seconds to start (Bun, Node): their limit leaves room for that
    "opencode": Spec("gpt-5", "system", timeout_s=12.0, foreign_model="claude-sonnet-4-5",
                     inspect="cat $OPENCODE_CONFIG > config.txt; ls -a $HOME $XDG_CONFIG_HOME/opencode > home.txt"),
    "gemini-cli": Spec("gemini-2.5-pro", at_origin=True, timeout_s=10.0, foreign_model="gpt-5",
                       inspect="cat $HOME/.gemini/settings.json > settings.txt"),
    "mini-swe-agent": Spec("gpt-5", "system", turns=1, streams=False, foreign_model="claude-sonnet-4-5",
                           inspect="cat $HOME/../run.yaml > config.txt; ls -a $HOME/.. > state.txt"),
}


def spec_of(name: str) -> Spec:
    """An agent's Spec; a newly registered agent without one runs the contract on its default model."""
    return SPECS.get(name) or Spec(agent_class(name).default_model)


def not_runnable(name: str) -> str | None:
    """Why agent `name` cannot run here (its CLI not installed, no sandbox), or None."""
    cls = agent_class(name)
    if not (cls.package_dir / cls.binary_path).exists() and not (cls.package_dir / "package.json").exists():
        return f"{name} is not installed ({cls.package_dir.name}/{cls.binary_path}): run `make setup`"
    reason = unavailable_reason()
    return f"no sandbox here: {reason}" if reason else None


def agents(*, needs_plan_mode: bool = False) -> list[Any]:
    """pytest params of every registered agent: one xdist group per agent (its runs are made once per worker,
    and its timeout run looks for its processes left anywhere), skipped, saying why, where it cannot run."""
    params = []
    for name in registered_agents():
        marks = [pytest.mark.xdist_group(name)]
        reason = not_runnable(name)
        if reason:
            marks.append(pytest.mark.skip(reason=reason))
        elif needs_plan_mode and not agent_class(name).plan_mode:
            marks.append(pytest.mark.skip(reason=f"{name} has no headless plan mode (its class's plan_mode)"))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def shell_step(name: str, command: str) -> list[dict]:
    """The tool calls of one model turn running `command` through agent `name`'s own shell tool (the ShellTool
    among its dry_run_tools)."""
    shell = next((tool for tool in agent_class(name).dry_run_tools if isinstance(tool, ShellTool)), None)
    assert shell is not None, f"{name} declares no ShellTool in its dry_run_tools: the contract cannot script its shell"
    return shell.step(command)


def agent_at(name: str, server: ScriptedModelServer, key: str, **settings: Any):
    """Agent `name` by its registered name, calling `server` with `key`."""
    spec = spec_of(name)
    url = server.origin if spec.at_origin else server.base_url
    return make_agent(name, model=spec.model, base_url=url, api_key=key, **settings)


def first_requests(requests: list[dict]) -> list[dict]:
    """The agent's opening model calls (with tools, no assistant turn yet), normalised (helpers.llm.scripts)."""
    model = [normalize_request(r["api"], r["body"], r["path"]) for r in requests if r.get("api") in MODEL_APIS]
    return [r for r in model if r.get("tools") and not any(m["role"] == "assistant" for m in r["messages"])]


def processes_with(text: str) -> list[str]:
    """Command lines holding `text` of the processes this test worker started."""
    lines = [b" ".join(cmd).decode(errors="replace") for _, cmd in command_lines()]
    return [line for line in lines if text in line]


def machine_processes_with(text: str) -> list[str]:
    """Command lines holding `text` of any process on the machine."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            line = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in line and pid != str(os.getpid()):
            found.append(line)
    return found


def all_gone(text: str, anywhere: bool = True, patience_s: float = 30.0) -> bool:
    """No process (anywhere, or of this worker's) holds `text` in its command line, once a killed sandbox's PID
    namespace is torn down: the kernel kills what ran inside when bwrap dies, and reaps it a moment later (seconds
    on a loaded machine)."""
    deadline = time.monotonic() + patience_s
    while (machine_processes_with if anywhere else processes_with)(text):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@contextmanager
def watching_command_lines(text: str) -> Iterator[list[str]]:
    """Collects, while the block runs, every command line of this worker's processes holding `text`."""
    seen: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.extend(processes_with(text))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        done.set()
        watcher.join()


@contextmanager
def key_in_environment(key: str) -> Iterator[None]:
    """This process's environment holding `key` under every provider's name, as a notebook kernel started with it."""
    with pytest.MonkeyPatch.context() as patch:
        for name in KEY_VARIABLES:
            patch.setenv(name, key)
        yield


@dataclass
class Run:
    """One shared real run: its rows, every request the scripted server received, what the gateway recorded."""

    rows: Any
    requests: list[dict]
    key: str = ""  # the provider key the gateway held
    calls: list[dict] = field(default_factory=list)
    seen_key: list[str] = field(default_factory=list)  # command lines that held the key while it ran
    tasks: Any = None
    results: Any = None  # its results folder
    outage: Any = None  # the rule that answered one request with a server error
    service: Any = None  # the loopback service the probe run tried to fetch


FIX_RUN_OUTPUT_CAP = 2_048  # PL_MAX_OUTPUT_TOKENS while the fix run's agents run: below AGENT_MAX_OUTPUT_TOKENS


def fix_run(name: str, results) -> Run:
    """The fix run (see the module's docstring)."""
    tasks = load_house_suite().head(4)
    taught = sorted(set(tasks.conventions[0]) | set(tasks.conventions[1]))
    assert not set(tasks.conventions[2]) <= set(taught), "the third task must need a rule it is not given"
    rules = "\n".join(f"- {CONVENTIONS[c]['rule']}" for c in taught) + "\n" + BRACES
    refused = tasks.instance_id[3]
    dry = DryRunScript(tasks.head(3), edit_tools=agent_class(name).dry_run_tools).script()
    outage = Rule(reply=Reply(status=500, error_message="scripted outage"), times=1,
                  match=lambda r: bool(r.get("tools")) and refused not in message_text(r, "user"))
    script = Script([Rule(user_contains=refused, reply=Reply(status=400, error_message=REFUSAL)), outage, *dry.rules],
                    default=dry.default)
    key = f"test-KEY-of-{name}-" + "7" * 16
    with ScriptedModelServer(script) as server, watching_command_lines(key) as seen:
        agent = agent_at(name, server, key, timeout_s=180)
        # as a session's gateway holds it: the agent's model only, every call reserved from a budget
        with Gateway({"agent": Upstream(*agent.upstream())}, models={"agent": [agent.model]}, budget_usd=100) as gateway, \
                pytest.MonkeyPatch.context() as patch:
            # set once the gateway holds its own caps (PL_MAX_OUTPUT_TOKENS unset: it passes 2,048 as asked), so the
            # cap the server sees is the one the agent asks for itself
            patch.setenv(config.MAX_OUTPUT_TOKENS_VARIABLE, str(FIX_RUN_OUTPUT_CAP))
            rows = run_tasks(tasks, agent, run_id="train_0", experiment="contract", ruleset=rules, workers=4,
                             progress=False, results_root=results, gateway=gateway)
            calls = gateway.calls()
        requests = list(server.requests)
    return Run(rows, requests, key, calls, seen, tasks=tasks, results=results, outage=outage)


def probe_run(name: str, results) -> Run:
    """The probe run (see the module's docstring): the gateway run_tasks puts in front holds the key, SECRET, which
    this process's environment holds too; no rules."""
    with loopback_service() as service, key_in_environment(SECRET), watching_command_lines(SECRET) as seen:
        command = " ; ".join(filter(None, [PROBE_SCRIPT, fetch_script(service.server_port), "printenv > env.txt",
                                           spec_of(name).inspect, "echo all probed"]))
        steps = [Reply("Probing.", tool_calls=shell_step(name, command)), Reply("Done.")]
        script = Script([Rule(match=lambda request: bool(request.get("tools")), reply=steps)], default=Reply("Done."))
        with ScriptedModelServer(script) as server:
            rows = run_tasks(load_house_suite().head(1), agent_at(name, server, SECRET, timeout_s=180), run_id="probes",
                             experiment="probes", progress=False, results_root=results, evaluate=False)
            requests = list(server.requests)
    return Run(rows, requests, SECRET, seen_key=seen, results=results, service=service)


def plan_run(name: str, results) -> Run:
    """One task in plan mode, with every convention's rule."""
    tasks = load_house_suite().head(1)
    rules = "\n".join(f"- {CONVENTIONS[c]['rule']}" for c in CONVENTIONS)
    with ScriptedModelServer(DryRunScript(tasks, edit_tools=agent_class(name).dry_run_tools).script()) as server:
        rows = run_tasks(tasks, agent_at(name, server, "test-KEY-plan", mode="plan", timeout_s=180), run_id="plan",
                         experiment="plan", ruleset=rules, progress=False, results_root=results)
        requests = list(server.requests)
    return Run(rows, requests, tasks=tasks, results=results)


def init_run(name: str, results) -> Run:
    """The agent's init route on the first house task's repository, as the init arm runs it."""
    from helpers.engine.baselines import init_rules

    tasks = load_house_suite().head(1)
    with ScriptedModelServer(DryRunScript(tasks, edit_tools=agent_class(name).dry_run_tools).script()) as server:
        agent = agent_at(name, server, "test-KEY-init", timeout_s=180)
        with Gateway({"agent": Upstream(*agent.upstream())}) as gateway:
            found = init_rules(agent, tasks.iloc[0].to_dict(), experiment="init", gateway=gateway, results_root=results)
            calls = gateway.calls()
        requests = list(server.requests)
    return Run(found, requests, calls=calls, tasks=tasks, results=results)


class AgentRuns:
    """The shared runs, each made on first use and kept for the test session (of this worker)."""

    def __init__(self, root) -> None:
        self.root, self._runs, self._lock = root, {}, threading.Lock()

    def _once(self, kind: str, name: str, make) -> Run:
        with self._lock:
            if (kind, name) not in self._runs:
                reason = not_runnable(name)
                if reason:
                    pytest.skip(reason)
                self._runs[kind, name] = make(name, self.root / f"{kind}-{name}")
            return self._runs[kind, name]

    def fix(self, name: str) -> Run:
        return self._once("fix", name, fix_run)

    def probe(self, name: str) -> Run:
        return self._once("probe", name, probe_run)

    def plan(self, name: str) -> Run:
        return self._once("plan", name, plan_run)

    def init(self, name: str) -> Run:
        return self._once("init", name, init_run)


@pytest.fixture(scope="session")
def agent_runs(tmp_path_factory) -> AgentRuns:
    return AgentRuns(tmp_path_factory.mktemp("agent-runs"))

