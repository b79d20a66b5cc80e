"""One Cline run on one task: the pinned CLI, isolated, headless, with a timeout we enforce.

    agent = ClineAgent()                                     # the Agent protocol (helpers.core.protocols)
    result = agent.run(task, workspace, ruleset)             # -> AgentResult; the engine takes the patch
    result = run_task(task, ruleset, model=DEFAULT_MODEL)   # one task alone, patch included

What a run does (facts measured on Cline CLI 3.0.65; see cline/README.md):
- its own HOME and CLINE_DIR in a temporary state folder, the local session backend (no hub daemon on
  port 25463), no telemetry, no auto-update, inherited CLINE_* variables dropped;
- the provider written to $CLINE_DIR/data/settings/providers.json (no key in it): `openai-compatible`
  for a base URL (OpenAI-compatible servers, the scripted model server), `openai-native` for OpenAI,
  `anthropic` for Claude; the key reaches Cline only through its environment;
- the ruleset in the workspace's `.clinerules` (written by the engine), which Cline appends to its
  system prompt under "# Rules";
- `cline --json [-p] <prompt>` in the workspace, the task text on stdin (no argv limit), its own process
  group, killed with the parent (PR_SET_PDEATHSIG) and on timeout (SIGINT, then SIGKILL);
- the workspace's repository left as Cline left it (its checkpoint refs included): the host takes the
  patch with a git directory of its own (helpers.families.coding.workspaces), never with the workspace's;
- at most STARTUP_SLOTS runs starting up at once (start-up is the CPU-heavy part of a run), and
  RUNTIME_ENV for its embedded JavaScriptCore.
A task-level failure (provider error, crash, timeout) is a result with status "error" or "timeout";
only setup problems (no binary, no key) raise.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from helpers.agents.base import CLIAgent, capped, ended_as_seen, task_text, unreadable
from helpers.agents.init_route import PROJECT_INIT, PROJECT_INIT_PROMPT, InitRoute
from helpers.core import config
from helpers.isolation.processes import (
    Started,
    remove_scratch,
    run_cli,
    safe_environment,
    scratch_dir,
    stop_processes,
)
from helpers.isolation.sandboxed_command import reached_at
from helpers.stand_ins.file_edit_tools import ShellTool, WholeFileEditor
from helpers.core.protocols import AgentResult, Patch, Task
from helpers.engine.executors import run_attempt
from helpers.families.registry import default_family
from helpers.rules.rules_file import RulesFile

PACKAGE_DIR = Path(__file__).resolve().parent
RULES_FILE = ".clinerules"
# Cline's own default, not config.AGENT_MODEL: through the gateway Cline speaks OpenAI's Chat Completions, where
# OpenAI's current reasoning models (gpt-6*, gpt-5.6*) refuse function tools unless reasoning_effort is "none"
# (developers.openai.com/api/docs/models/gpt-6-sol, read 2026-11-25), and Cline 3.0.65 sends no reasoning_effort
# (measured here). gpt-4.1 calls tools there and is served until 2027-01-14 (config.ANNOUNCED_SHUTDOWNS), when
# this must move: to a Claude id (Anthropic's Messages API), or to Cline on the Responses API through the gateway.
DEFAULT_MODEL = "gpt-4.1"

# Cline's own fixed instructions as the optimizer should see them (read-only context): the rules it
# writes are appended to Cline's system prompt under "# Rules".
BASE_PROMPT = (
    "You are Cline, an autonomous coding agent working in a git repository. You are given an issue "
    "(a bug report or a feature request) and must change the repository so that the issue is "
    "resolved. You can read files, search the codebase, run shell commands and edit files. The "
    "repository's hidden tests decide whether your change is correct. The rules below are appended "
    "to your system prompt under '# Rules'."
)
STARTUP_MAX_S = 20.0  # a run still starting after this gives up its start-up slot (one takes ~2.5 s)
STARTUP_POLL_S = 0.2
STARTUP_BUSY = 0.5  # cores a run uses while starting up; below this it is waiting on the model
# Cline runs that may be starting at once. A start-up (its main thread, then a file-index worker) burns
# ~2.5 CPU-seconds; letting more start than there are cores makes them all wait on each other.
# None: the core count.
STARTUP_SLOTS: int | None = None
# Runtime settings for Cline's embedded Bun/JavaScriptCore, unless the environment sets them. A run is
# short and mostly waits on the model, so JSC's optimising DFG tier compiles more than it saves: it cut
# a run's CPU from 3.6 to 2.9 seconds here (benchmarks/bench_run_act.py prints CPU per run).
RUNTIME_ENV = {"BUN_JSC_useDFGJIT": "0"}
PROVIDER_IDS = {"openai-compatible": "openai-compatible", "openai": "openai-native", "anthropic": "anthropic"}

_live: set[subprocess.Popen[str]] = set()  # running Cline processes, so an interrupt can stop them all
_live_lock = threading.Lock()


def _binary_path() -> str:
    """Where the platform package puts Cline's executable, under cline/."""
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine()
    )
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform, sys.platform)
    return f"node_modules/@cline/cli-{system}-{arch}/bin/cline"


def cline_binary() -> Path:
    """The pinned Cline executable installed by `make setup` into cline/node_modules."""
    return ClineAgent.binary()


def provider_settings(
    model: str, base_url: str | None, api_key: str | None, provider: str | None = None
) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(Cline provider id, its settings, the environment that carries the key). Raises MissingCredentials."""
    settings = config.llm_settings(model, api_key, base_url)
    if not provider and settings.provider not in PROVIDER_IDS:
        raise ValueError(
            f"Cline runs here on OpenAI's or Anthropic's API, and {model!r} is a {settings.provider} model. Run it on "
            f"an OpenAI or Claude model (AGENT_MODEL={config.AGENT_MODEL!r}), or set OPENAI_BASE_URL to a server "
            f"with /chat/completions for {model!r}."
        )
    key = settings.require_key()
    provider_id = provider or PROVIDER_IDS[settings.provider]
    entry: dict[str, Any] = {"provider": provider_id, "model": model}
    if settings.base_url:
        entry["baseUrl"] = settings.base_url
    key_variable = "ANTHROPIC_API_KEY" if provider_id == "anthropic" else "OPENAI_API_KEY"
    return provider_id, entry, {key_variable: key}


def write_cline_state(state: Path, provider_id: str, entry: dict[str, Any]) -> dict[str, str]:
    """HOME and CLINE_DIR for one run, with the provider and no telemetry; returns their variables."""
    home, cline_dir = state / "home", state / "cline"
    settings_dir = cline_dir / "data" / "settings"
    settings_dir.mkdir(parents=True)
    home.mkdir()
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    providers = {
        "version": 1,
        "lastUsedProvider": provider_id,
        "modes": {},
        "providers": {provider_id: {"settings": entry, "updatedAt": now, "tokenSource": "manual"}},
    }
    (settings_dir / "providers.json").write_text(json.dumps(providers, indent=1))
    (settings_dir / "global-settings.json").write_text(
        json.dumps({"telemetryOptOut": True, "autoUpdateEnabled": False})
    )
    return {
        "HOME": str(home),
        "CLINE_DIR": str(cline_dir),
        "CLINE_SESSION_BACKEND_MODE": "local",
        "CLINE_NO_AUTO_UPDATE": "1",
    }


def child_environment(state_env: dict[str, str], key_env: dict[str, str]) -> dict[str, str]:
    """Cline's environment: an allow-list of ours (helpers.isolation.processes.safe_environment: no other keys or
    secrets reach Cline or the commands it runs), its runtime settings (the user's own BUN_* win), its
    state folders and the one key variable it reads."""
    runtime = {**RUNTIME_ENV, **{k: v for k, v in os.environ.items() if k.startswith("BUN_")}}
    return safe_environment({**runtime, **state_env, **key_env})


def parse_events(stdout: str) -> tuple[dict[str, Any] | None, list[str]]:
    """(the final run_result event, error messages seen) from Cline's JSON lines."""
    result, errors = None, []
    for line in stdout.split("\n"):  # not splitlines: an event's text may hold U+2028 raw
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "run_result":
            result = event
        inner = found if isinstance(found := event.get("event"), dict) else {}
        for candidate in (event, inner):
            message = candidate.get("error") or (
                candidate.get("message") if "error" in str(candidate.get("type", "")) else None
            )
            if isinstance(message, dict):  # {"name": "Error", "message": ..., "stack": ...}
                message = message.get("message") or json.dumps(message)
            if message:
                errors.append(str(message))
    return result, errors


def stop_all() -> None:
    """Kill every Cline run still going (used when a run_act is interrupted)."""
    stop_processes(_live, _live_lock)


@functools.lru_cache(maxsize=None)
def _startup_slots(count: int) -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(count)


def _cpu_seconds(pid: int) -> float | None:
    """CPU time a process has used so far (all its threads), or None where /proc is not there."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    except (OSError, IndexError, ValueError):
        return None


def _wait_for_startup(process: subprocess.Popen, spoke: threading.Event, limit_s: float) -> None:
    """Return once Cline is past its start-up (~2.5 CPU-seconds: its main thread, then a file-index
    worker): it has printed its first event and its CPU use has dropped, or it exited, or limit_s passed."""
    deadline = time.monotonic() + limit_s
    used = _cpu_seconds(process.pid)
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(STARTUP_POLL_S)
        now = _cpu_seconds(process.pid)
        if spoke.is_set() and (now is None or used is None or now - used < STARTUP_BUSY * STARTUP_POLL_S):
            return
        used = now


@contextmanager
def _startup_slot(timeout_s: float) -> Iterator[Started]:
    """Runs in this process start up a few at a time (STARTUP_SLOTS): a pool of workers that all start together
    otherwise stays in lockstep, every run burning CPU at once, then every run idle on the model at once. Holds
    a slot until the run it gives to (as run_cli's `started`) is past its start-up, or the block ends."""
    slots = _startup_slots(max(1, STARTUP_SLOTS or os.cpu_count() or 1))
    slots.acquire()
    holding = True

    def started(process: subprocess.Popen[str], spoke: threading.Event) -> None:
        nonlocal holding
        _wait_for_startup(process, spoke, min(timeout_s, STARTUP_MAX_S))
        holding = False
        slots.release()

    try:
        yield started
    finally:
        if holding:
            slots.release()


def run_cline(task: Task, workspace: Path | str, **settings: Any) -> AgentResult:
    """Run Cline once on `task` in `workspace` (a clean git tree at the task's base commit, its rules
    already in .clinerules). The result carries no patch: the caller takes it from the workspace. `settings`
    are ClineAgent's."""
    return ClineAgent(**settings).run(task, Path(workspace), "")


def _claim_of(out: str, err: str, instance_id: str, mode: str, model: str, duration: float) -> AgentResult:
    """Cline's claim about its run, from its JSON lines: "completed" when its final run_result says so, its text
    and errors. Agent data: the run's end is the host's (ended_as_seen), usage and cost the gateway's meter."""
    final, errors = parse_events(out)
    text = str((final or {}).get("text") or "")
    if final and final.get("finishReason") == "completed":
        status, error = "completed", ""
    else:
        status = "error"
        error = "; ".join(dict.fromkeys(errors)) or text or _last_lines(err) or "Cline ended without a result"
    iterations = (final or {}).get("iterations")
    return AgentResult(
        instance_id,
        status,
        plan=text if mode == "plan" else "",
        error=error[:4000],
        iterations=iterations if isinstance(iterations, int) else 0,
        duration_s=round(duration, 3),
        final_text=text,
        model=model,
    )


def run_task(task: Task, ruleset: str = "", *, scratch: Path | str | None = None, **settings: Any) -> AgentResult:
    """One task alone, run as the engine runs it (helpers.engine.executors.run_attempt): a fresh workspace of the
    task's repository under `scratch` (this process's scratch folder when None), the rules in .clinerules, Cline,
    then, in act mode, the patch the host takes from the workspace; the workspace is removed after. `settings`
    are ClineAgent's."""
    agent = ClineAgent(**settings)
    result, output, _ = run_attempt(
        default_family(),
        agent,
        task,
        RulesFile.parse(ruleset or ""),
        RULES_FILE,
        agent.mode,
        None,
        Path(scratch) if scratch is not None else None,
    )
    if agent.mode == "act":
        result.patch = output.text if isinstance(output, Patch) else output
    return result


def _last_lines(text: str, lines: int = 5) -> str:
    kept = [
        line
        for line in text.strip().splitlines()
        if line.strip() and "DeprecationWarning" not in line and not line.lstrip().startswith("at ")
    ]
    return "\n".join(kept[-lines:])


class ClineAgent(CLIAgent):
    """Cline as an Agent (helpers.agents.base.CLIAgent): rules in .clinerules, headless act or plan mode. Its
    runs start up a few at a time (STARTUP_SLOTS), so it runs them itself rather than through the base's run."""

    name = "cline"
    default_model = DEFAULT_MODEL  # sessions with AGENT="cline" take it (helpers.app.session)
    rules_file = RULES_FILE
    # Cline has no init of its own: the project's own prompt, labeled so
    init_route = InitRoute(
        PROJECT_INIT,
        PROJECT_INIT_PROMPT.format(file=".clinerules"),
        "cline <the project's init prompt>",
        ".clinerules",
        "helpers.agents.init_route.PROJECT_INIT_PROMPT (Cline has none)",
    )
    rules_limit = None  # Cline's .clinerules docs (docs.cline.bot) state no size limit that we found
    base_prompt = BASE_PROMPT
    package_dir, binary_path = PACKAGE_DIR, _binary_path()
    title, version_env = "Cline CLI", {"CLINE_NO_AUTO_UPDATE": "1"}  # what installed() says, how it asks
    # its file editor, in the dry run; its shell (a list of commands), for scripted shell steps
    dry_run_tools = (
        WholeFileEditor("editor", delete_tool="run_commands"),
        ShellTool("run_commands", "commands", listed=True),
    )

    def __init__(self, model: str | None = None, *, provider: str | None = None, **settings: Any):
        """`provider`: Cline's provider id ("anthropic", "openai-compatible", ...; None: the model's own, see
        provider_settings); `settings`: CLIAgent's (base_url, api_key, timeout_s, mode, sandbox)."""
        super().__init__(model, **settings)
        self.provider = provider

    def check_provider(self) -> None:
        provider_settings(self.model, self.base_url, self._api_key, self.provider)

    def run(self, task: Task, workspace: Path, ruleset: str) -> AgentResult:
        """One run on `task` in `workspace` (its rules already in .clinerules), started once a start-up slot is
        free; the engine takes the patch."""
        workspace = Path(workspace)
        # In the sandbox only base_url (the gateway) is in reach: a remote one at 127.0.0.1 (reached_at)
        inside = reached_at(self.base_url, self.sandbox)
        provider_id, entry, key_env = provider_settings(self.model, inside, self._api_key, self.provider)
        args = [
            str(cline_binary()),
            "--json",
            "-c",
            str(workspace),
            *(["-p"] if self.mode == "plan" else []),
            "Resolve the task given below.",
        ]
        instance_id = str(task["instance_id"])
        state = scratch_dir("cline-state")
        try:
            env = child_environment(write_cline_state(state, provider_id, entry), key_env)
            with _startup_slot(self.timeout_s) as started:
                run = run_cli(
                    args,
                    workspace,
                    env,
                    task_text(task),
                    self.timeout_s,
                    _live,
                    _live_lock,
                    home=state,
                    read_only=[PACKAGE_DIR],
                    sandbox=self.sandbox,
                    reach=self.base_url,
                    started=started,
                )
        finally:
            remove_scratch(state)  # the run's home: its capped disk detached, any depth, never raising
        try:
            claim = _claim_of(run.out, run.err, instance_id, self.mode, self.model, run.seconds)
        except Exception as error:  # Cline's stdout is agent data (its commands can write it), and so is a bad one
            claim = unreadable(instance_id, self.model, error)
        return capped(ended_as_seen(claim, run.exit_status, run.timed_out, self.timeout_s), run.cap)

    def through_gateway(self, base_url: str, api_key: str, kind: str) -> "ClineAgent":
        """This agent, calling the model gateway with a token: Cline's anthropic provider for an Anthropic
        upstream (it posts {baseUrl}/messages, hence /v1), its openai-compatible provider otherwise."""
        anthropic = kind == "anthropic"
        return ClineAgent(
            self.model,
            base_url=base_url + "/v1" if anthropic else base_url,
            api_key=api_key,
            provider="anthropic" if anthropic else None,
            timeout_s=self.timeout_s,
            mode=self.mode,
            sandbox=self.sandbox,
        )

    def upstream(self) -> tuple[str | None, str, str]:
        """Its provider; an explicit anthropic provider posts {baseUrl}/messages, so its base URL ends in /v1."""
        settings = config.llm_settings(self.model, self._api_key, self.base_url)
        if self.provider == "anthropic":
            base_url = self.base_url.rstrip("/").removesuffix("/v1") if self.base_url else None
            return base_url, settings.require_key(), "anthropic"
        return settings.base_url, settings.require_key(), settings.provider

    def stop_all(self) -> None:
        stop_all()


__all__ = [
    "run_task",
    "run_cline",
    "ClineAgent",
    "cline_binary",
    "stop_all",
]  # the public API, documented in CODE_APPENDIX.md
