"""What every coding agent shares, once: the Agent protocol's defaults, and a base for agents that are a CLI.

    class MyAgent(CLIAgent):                      # one package per agent; see tests/helpers/agents for a toy one
        name, rules_file, base_prompt = "my-agent", "AGENTS.md", "You are My Agent..."
        default_model, package_dir, binary_path = "gpt-4.1", Path(__file__).parent, "node_modules/.bin/my-agent"
        def invoke(self, task, workspace, state): ...   # -> Invocation: its arguments, environment, stdin
        def claim(self, out, err): ...   # -> Claim: what its output says (or result(...) -> AgentResult, whole)

CLIAgent gives each agent: settings checked once (model, base_url, api_key, timeout_s, mode), the task
text, the binary lookup with the fix when it is missing, a per-run state folder (its HOME) removed
afterwards, the run as one process group in the sandbox (helpers.isolation.sandbox: its base_url, the gateway,
the one address in reach) with a timeout we enforce, `through_gateway` (a copy calling the model gateway
with a run token), and `stop_all`.
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence, TypedDict

from helpers.core import config
from helpers.agents.install import install_on_first_use
from helpers.isolation.processes import remove_scratch, run_cli, safe_environment, scratch_dir, stop_processes
from helpers.isolation.sandboxed_command import reached_at
from helpers.core.protocols import AgentResult, Limit, Task
from helpers.stats.outcomes import HOST_LIMITS, limit_named
from helpers.isolation.sandbox import SandboxPolicy, sandbox_policy

MODES = ("act", "plan")


def task_text(task: Task) -> str:
    """What an agent is asked: the issue, named by its instance id; an init run's prompt (`exact_prompt`, see
    helpers.agents.init_route) exactly as it is."""
    if task.get("exact_prompt"):
        return str(task["problem_statement"])
    return (
        f"Task {task['instance_id']} in the repository {task.get('repo', '')} (the current directory):\n\n"
        f"{task['problem_statement'].strip()}\n\nChange the repository's files to resolve this issue."
    )


def capped(result: AgentResult, cap: str) -> AgentResult:
    """`result` as an error naming the sandbox cap that ended its run (`cap`: the host's watcher's sentence,
    CLIRun.cap, never a line of the run's stderr, which the agent writes), whatever the agent's own output said; a
    rule-induced error (helpers.stats.outcomes), its `limit` Limit.SANDBOX_CAP; `result` itself when no cap
    ended it."""
    if cap:
        result.status, result.error = "error", f"{cap} {result.error}".strip()[:4000]
        result.limit = Limit.SANDBOX_CAP
    return result


def ended_as_seen(claim: AgentResult, exit_status: int | None, timed_out: bool, timeout_s: float) -> AgentResult:
    """`claim` (what a CLI's own stream said: its status, final text and error, all agent data: the agent's
    commands can write that stream) with the run's end as the host saw the process: "timeout" when the host's
    timeout stopped it; "error" when it exited non-zero or died of a signal the host did not send (the agent can
    end its own CLI), whatever its stream claimed; else the claim ("completed" only after the final event the
    stream must end with). A failed run is the agent's own, counted as a failure: only the engine marks a run
    the host saw fail outside the sandbox (AgentResult.host_error). Usage and cost are never the stream's: the
    engine meters them at the gateway. A run the host's timeout stopped, or whose CLI reports a limit the rules
    can cause (its turns, its mistakes, a context window the rules filled: helpers.stats.outcomes.limit_named,
    read here, once), says so in its `limit` (helpers.core.protocols.Limit)."""
    claim.usage, claim.cost_usd = {}, None
    if timed_out:
        claim.status, claim.error = "timeout", f"stopped after {timeout_s:.0f} s (the agent's time limit)"
    elif exit_status != 0:
        how = (
            f"died of signal {-exit_status}"
            if exit_status is not None and exit_status < 0
            else f"exited with status {exit_status}"
        )
        said = f": {claim.error}" if claim.error else ""
        claim.status, claim.error = (
            "error",
            f"the agent's CLI {how} (the host's wait); its stream claimed {claim.status}{said}"[:4000],
        )
    if claim.status == "timeout":
        claim.limit = Limit.TIME
    elif claim.status == "error" and claim.limit is None:
        named = limit_named(claim.error)  # the CLI's words: never a limit only the host can observe
        claim.limit = None if named in HOST_LIMITS else named
    return claim


def unreadable(instance_id: str, model: str, error: Exception) -> AgentResult:
    """The result of a run whose output could not be read: the output is the agent's, so is the failure."""
    return AgentResult(
        instance_id,
        "error",
        model=model,
        error=f"the agent's output could not be read ({type(error).__name__}: {error})"[:4000],
    )


PROVIDER_OWNERS = {"anthropic": "a Claude model served by Anthropic", "gemini": "a Gemini model served by Google"}


def openai_provider(
    model: str, base_url: str | None, api_key: str | None, speaks: str, endpoint: str
) -> tuple[str, str]:
    """(base URL, key) for a CLI that speaks only an OpenAI API: the OPENAI_BASE_URL server, else OpenAI's,
    resolved like every role (helpers.core.config.llm_settings). A Claude or Gemini id that resolves to its own
    provider is a ValueError saying what to set, so another provider's key never goes to OpenAI.
    `speaks`: what the CLI speaks, as the message says it ("Codex speaks only the OpenAI Responses API");
    `endpoint`: the path a server must serve for it ("/responses")."""
    settings = config.llm_settings(model, api_key, base_url)
    if settings.provider in PROVIDER_OWNERS:
        raise ValueError(
            f"{speaks}, and {model!r} is {PROVIDER_OWNERS[settings.provider]}. Run it on an OpenAI model "
            f"(AGENT_MODEL={config.AGENT_MODEL!r}), or set OPENAI_BASE_URL to a server with {endpoint} for it."
        )
    return settings.base_url or config.OPENAI_URL, settings.require_key()


def openai_upstream(url: str, key: str) -> tuple[str | None, str, str]:
    """The gateway upstream (base_url, key, kind) of an `openai_provider` answer."""
    return (None, key, "openai") if url == config.OPENAI_URL else (url, key, "openai-compatible")


@dataclass
class Claim:
    """What a CLI's own output says about one run (agent data: the agent's commands can write that output): whether
    it finished cleanly, else what went wrong (`error()`, worked out only then), its final text, its model turns,
    its trajectory and, in plan mode, its plan. CLIAgent.result makes it the run's AgentResult."""

    completed: bool
    error: Callable[[], str]
    final_text: str = ""
    iterations: int = 0
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    plan: str = ""


def claimed_status(timed_out: bool, timeout_s: float, completed: bool, error: Callable[[], str]) -> tuple[str, str]:
    """(status, error) of an agent's claim about its run: "timeout" when the host stopped it, "completed" when its
    output says it finished cleanly, else "error" with `error()`, what its output says went wrong."""
    if timed_out:
        return "timeout", f"stopped after {timeout_s:.0f} s (the agent's time limit)"
    if completed:
        return "completed", ""
    return "error", error()


def key_pipe(key: str) -> int:
    """A pipe's read end holding `key` (the CLI reads it once, so the key is in no file, argument or environment
    variable); the caller closes it after the start."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, key.encode())
    finally:
        os.close(write_end)
    return read_end


class AgentBase:
    """The Agent protocol's optional members, with their defaults (helpers.core.protocols.Agent)."""

    name: ClassVar[str] = "agent"
    rules_file: ClassVar[str] = "AGENTS.md"
    base_prompt: ClassVar[str] = ""
    mode: str = "act"
    model: str = ""
    # The tools the scripted dry run may edit files with when this agent asks the model for an edit
    # (helpers.stand_ins.dry_run: WholeFileEditor, PatchTool, ShellTool): the agent's own tool names.
    dry_run_tools: ClassVar[Sequence[Any]] = ()

    def check(self) -> None:
        """Setup problems that would fail every task (none by default)."""

    def through_gateway(self, base_url: str, api_key: str, kind: str) -> "AgentBase | None":
        """A copy calling the model gateway at `base_url` with the run token `api_key`; None: this agent makes
        no model calls the gateway could carry (it runs as it is)."""
        return None

    def upstream(self) -> tuple[str | None, str | None, str] | None:
        """(base_url, key, kind) of the provider this agent would call itself; None: it makes no model calls."""
        return None

    def stop_all(self) -> None:
        """Stop every run of this agent still going (an interrupted run_tasks calls it)."""


@dataclass
class Invocation:
    """One CLI run: its arguments, its whole environment, its stdin, and file descriptors it inherits."""

    args: list[str]
    env: dict[str, str]
    stdin: str = ""
    pass_fds: tuple[int, ...] = ()
    close: list[Any] = field(default_factory=list)  # called after the run (e.g. closing a key's pipe)


class CLISettings(TypedDict, total=False):
    """CLIAgent's keyword settings, as a subclass that adds its own passes them on (`**settings: Unpack[...]`)."""

    base_url: str | None
    api_key: str | None
    timeout_s: float
    mode: str
    sandbox: SandboxPolicy


class CLIAgent(AgentBase):
    """An agent that is a command-line program (Cline, Claude Code, Codex): the shared parts of running one."""

    default_model: ClassVar[str] = config.AGENT_MODEL
    package_dir: ClassVar[Path] = Path(".")
    binary_path: ClassVar[str] = ""  # relative to package_dir
    plan_mode: ClassVar[bool] = True  # False: the CLI has no headless plan mode
    # What installed() says: "<title> <version> at <binary>". The version is the `npm_package`'s package.json
    # version, else the `python_package`'s in the agent's own environment (the binary's), else the last line the
    # binary prints for `version_args` (less `version_prefix`), run in the allow-listed environment plus `version_env`.
    title: ClassVar[str] = ""
    npm_package: ClassVar[str | None] = None
    python_package: ClassVar[str | None] = None
    version_args: ClassVar[tuple[str, ...]] = ("--version",)
    version_env: ClassVar[dict[str, str]] = {}
    version_prefix: ClassVar[str] = ""
    # A CLI that speaks only an OpenAI API: (what it speaks, as its error says it; the path a server must serve),
    # openai_provider's `speaks` and `endpoint`. Its provider and gateway upstream then follow from them.
    speaks_openai: ClassVar[tuple[str, str] | None] = None

    _live: ClassVar[set[subprocess.Popen]]
    _live_lock: ClassVar[threading.Lock]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._live, cls._live_lock = set(), threading.Lock()  # each agent's running processes, for stop_all

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = config.AGENT_TIMEOUT_S,
        mode: str = "act",
        sandbox: SandboxPolicy = "required",
    ):
        if mode not in MODES or (mode == "plan" and not self.plan_mode):
            allowed = (
                "'act' (patches) or 'plan' (plans)"
                if self.plan_mode
                else f"'act' ({self.name} has no headless plan mode)"
            )
            raise ValueError(f"mode must be {allowed}, not {mode!r}.")
        if not isinstance(timeout_s, (int, float)) or isinstance(timeout_s, bool) or timeout_s <= 0:
            raise ValueError(f"timeout_s must be a positive number of seconds, not {timeout_s!r}.")
        self.model, self.base_url, self._api_key = model or self.default_model, base_url, api_key
        self.timeout_s, self.mode, self.sandbox = float(timeout_s), mode, sandbox_policy(sandbox)

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(model={self.model!r}, mode={self.mode!r})"

    # --- what a subclass gives -------------------------------------------------------------------
    def invoke(self, task: Task, workspace: Path, state: Path) -> Invocation:
        """The run's arguments, environment (helpers.isolation.processes.safe_environment plus its own) and stdin;
        `state` is a fresh folder for its HOME and configuration, removed after the run."""
        raise NotImplementedError

    def claim(self, out: str, err: str) -> Claim:
        """What the CLI's output (`out`, `err`) says about its run: `completed` only after its stream's final event."""
        raise NotImplementedError

    def result(self, task: Task, out: str, err: str, timed_out: bool, duration: float) -> AgentResult:
        """The agent's claim about one run (`claim`, or this whole for an agent that reads its output otherwise).
        `run` then sets the end the host saw (ended_as_seen); usage and cost come from the gateway's meter, never
        from this output."""
        claim = self.claim(out, err)
        status, error = claimed_status(timed_out, self.timeout_s, claim.completed, claim.error)
        return AgentResult(
            str(task["instance_id"]),
            status,
            plan=claim.plan,
            error=error[:4000],
            iterations=claim.iterations,
            duration_s=round(duration, 3),
            final_text=claim.final_text,
            model=self.model,
            trajectory=claim.trajectory,
        )

    def check_provider(self) -> None:
        """Raise, saying what to set, when the model has no key or server (none by default)."""
        if self.speaks_openai:
            self.openai_settings()

    def openai_settings(self) -> tuple[str, str]:
        """(base URL, key) of the OpenAI API a `speaks_openai` CLI calls (openai_provider)."""
        if not self.speaks_openai:
            raise TypeError(f"{type(self).__name__} does not speak an OpenAI API (speaks_openai is not set)")
        return openai_provider(self.model, self.base_url, self._api_key, *self.speaks_openai)

    def upstream(self) -> tuple[str | None, str | None, str] | None:
        """A `speaks_openai` CLI's OpenAI API, or the OPENAI_BASE_URL server that serves it (none by default)."""
        return openai_upstream(*self.openai_settings()) if self.speaks_openai else None

    # --- the shared parts ------------------------------------------------------------------------
    @classmethod
    def binary(cls) -> Path:
        """The pinned executable in the package's node_modules (`make setup` installs every agent's, `make
        quickstart` the chosen one's; any other is installed here on first use: install_on_first_use)."""
        binary = cls.package_dir / cls.binary_path
        if not binary.exists():
            install_on_first_use(cls.package_dir, cls.name)
        if not binary.exists():
            raise FileNotFoundError(
                f"The {cls.name} CLI is not installed at {binary}. Run `make setup` (it installs the version pinned "
                f"in {cls.package_dir.name}/package.json into {cls.package_dir.name}/node_modules; needs Node.js 20+)."
            )
        return binary

    @classmethod
    def installed(cls) -> str:
        """The pinned CLI's version and place (raises saying how to install it when it is missing)."""
        binary = cls.binary()
        return f"{cls.title or cls.name} {cls._version(binary)} at {binary.relative_to(cls.package_dir.parent)}"

    @classmethod
    def _version(cls, binary: Path) -> str:
        if cls.npm_package:
            manifest = cls.package_dir / "node_modules" / cls.npm_package / "package.json"
            return json.loads(manifest.read_text())["version"]
        if cls.python_package:
            places = [str(p) for p in (binary.parent.parent / "lib").glob("python*/site-packages")]
            found = importlib.metadata.distributions(name=cls.python_package, path=places)
            return next((distribution.version for distribution in found), "?")
        printed = subprocess.run(
            [str(binary), *cls.version_args],
            capture_output=True,
            text=True,
            timeout=60,
            env=safe_environment(cls.version_env),
            stdin=subprocess.DEVNULL,
        )
        lines = (printed.stdout or printed.stderr).strip().splitlines()
        return lines[-1].removeprefix(cls.version_prefix) if lines else "?"

    def check(self) -> None:
        """The pinned binary is installed and the model has a key and a server (raises saying what to do)."""
        self.binary()
        self.check_provider()

    def run(self, task: Task, workspace: Path, ruleset: str) -> AgentResult:
        """One run on `task` in `workspace` (its rules already in rules_file); the engine takes the patch."""
        state = scratch_dir(f"{self.name}-state")
        invocation = None
        try:
            invocation = self._as_seen_inside().invoke(task, Path(workspace), state)
            run = run_cli(
                invocation.args,
                Path(workspace),
                invocation.env,
                invocation.stdin,
                self.timeout_s,
                self._live,
                self._live_lock,
                pass_fds=invocation.pass_fds,
                home=state,
                read_only=[self.package_dir],
                sandbox=self.sandbox,
                reach=self.base_url,
            )
        finally:
            for close in invocation.close if invocation else []:
                close()
            remove_scratch(state)
        try:
            claim = self.result(task, run.out, run.err, run.timed_out, run.seconds)
        except Exception as error:  # its output is agent data, and so is a failure to read it
            claim = unreadable(str(task["instance_id"]), self.model, error)
        return capped(ended_as_seen(claim, run.exit_status, run.timed_out, self.timeout_s), run.cap)

    def _as_seen_inside(self) -> "CLIAgent":
        """This agent with the base URL its run uses: in the sandbox, only `base_url` (the gateway) is in reach,
        at the same URL when it is on loopback, else (a remote gateway) at 127.0.0.1 on the same port."""
        inside = reached_at(self.base_url, self.sandbox)
        if inside == self.base_url:
            return self
        moved = copy.copy(self)
        moved.base_url = inside
        return moved

    def through_gateway(self, base_url: str, api_key: str, kind: str) -> "CLIAgent":
        """This agent, calling the model gateway with a run token instead of the provider and its key."""
        return type(self)(
            self.model,
            base_url=base_url,
            api_key=api_key,
            timeout_s=self.timeout_s,
            mode=self.mode,
            sandbox=self.sandbox,
        )

    def stop_all(self) -> None:
        stop_processes(self._live, self._live_lock)


__all__ = [
    "AgentBase",
    "CLIAgent",
    "CLISettings",
    "Invocation",
    "Claim",
    "task_text",
    "key_pipe",
    "claimed_status",
    "capped",
    "ended_as_seen",
    "unreadable",
    "openai_provider",
    "openai_upstream",
]  # documented in CODE_APPENDIX.md
