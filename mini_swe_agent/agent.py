"""One mini-swe-agent run on one task: the pinned agent in an environment of its own, isolated, headless.

    agent = MiniSweAgent()            # on config.AGENT_MODEL; the Agent protocol (helpers.core.protocols)
    result = agent.run(task, workspace, ruleset)             # -> AgentResult; the engine takes the patch

What a run does (measured on mini-swe-agent 2.4.6; see mini_swe_agent/README.md):
- `mini -y -m openai/<model> -c mini.yaml -c <state>/run.yaml -l 0 --exit-immediately -o <state>/traj.json` in the
  workspace, from mini_swe_agent/.venv (its ~750 MB of dependencies, litellm included, stay out of the notebooks'
  environment). It calls OpenAI's chat completions (through litellm, not streaming) with one `bash` tool and
  ends when a command prints COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT;
- the per-run config run.yaml (JSON, which YAML reads) holds the task (no argv limit, not on a command line),
  the provider's base URL, and the system template with the rules appended: mini-swe-agent has no rules file
  of its own, its users add instructions to its templates. The rules are the workspace's AGENTS.md as the
  engine left it (the team's file with the learned section, or the ruleset alone), the same text an
  AGENTS.md-reading agent (Codex, opencode) sees; read before the run starts, never through a link;
- its own HOME and config folder in a scratch folder, set-up questions, the price-map download and the start-up
  banner off: a run needs no network but the model's server;
- the key in OPENAI_API_KEY, the one variable litellm reads, blanked in the commands the agent runs;
- its trajectory file read into the AgentResult as the agent's claim: the commands and their output, the exit
  status ("Submitted" claims a completed run; the end is the host's wait, the usage the gateway's meter). The file
  lies where the agent's commands can write, so it is read as hostile data (helpers.isolation.untrusted): a link, a FIFO or a file over its cap ends the run as an
  error naming it.
mini-swe-agent has no plan mode: mode="plan" is refused. A task-level failure (provider error, crash, timeout)
is a result with status "error" or "timeout"; only setup problems raise.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from helpers.agents.base import CLIAgent, Claim, Invocation, task_text
from helpers.agents.init_route import PROJECT_INIT, PROJECT_INIT_PROMPT, InitRoute
from helpers.agents.trajectories import cut_trajectory
from helpers.core import config
from helpers.isolation.processes import last_lines, safe_environment
from helpers.core.protocols import AgentResult, Task
from helpers.isolation.untrusted import RefusedOutput, read_untrusted
from helpers.llm.scripted_server import tool_call
from helpers.stand_ins.file_edit_tools import ShellTool

PACKAGE_DIR = Path(__file__).resolve().parent
RULES_FILE = "AGENTS.md"
KEY_VARIABLE = "OPENAI_API_KEY"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # the command that ends a run (its mini.yaml says so)
# mini.yaml's own system template (tests/mini_swe_agent checks it against the installed one); the rules follow it.
SYSTEM_TEMPLATE = "You are a helpful assistant that can interact with a computer.\n"
RULES_HEADING = "\n# Rules of this repository (AGENTS.md)\n\n"
MAX_RULES_BYTES = 256_000
# Retries are the gateway's (run_tasks always puts one in front): mini would retry every error but an
# authentication or not-found one up to 10 times, 4 to 60 s apart, and litellm's OpenAI client twice more for
# each, so a refused request would take minutes and reach the server dozens of times.
MODEL_ATTEMPTS = "1"
BASE_PROMPT = (
    "You are mini-swe-agent, a minimal coding agent whose only tool is `bash` (each command runs in a new "
    "subshell in the repository). You are given an issue (a bug report or a feature request) and must change the "
    "repository so that the issue is resolved; the repository's hidden tests decide whether your change is "
    "correct. You read and edit files with shell commands (cat, sed, heredocs) and finish by running `echo "
    "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` on its own. The rules below are appended to your system message."
)


def workspace_rules(workspace: Path) -> str:
    """The workspace's AGENTS.md ("" when there is none, or a link: the repository's link is not followed), read
    as hostile data (helpers.isolation.untrusted): a FIFO or a file over MAX_RULES_BYTES is a RefusedOutput naming it."""
    if (workspace / RULES_FILE).is_symlink():  # read before the run: the task's repository's link, left alone
        return ""
    try:
        return read_untrusted(workspace / RULES_FILE, workspace, MAX_RULES_BYTES).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def read_trajectory(trajectory: Path, state: Path) -> dict[str, Any] | None:
    """mini's trajectory file in the run's state folder (which the agent's commands can write), read as hostile
    data: None when there is none or it is not JSON; a link, a FIFO, a device or a file over
    config.MAX_READBACK_BYTES is a RefusedOutput naming it (never a read without end)."""
    try:
        data = read_untrusted(trajectory, state, config.MAX_READBACK_BYTES)
    except FileNotFoundError:
        return None
    try:
        found = json.loads(data)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def system_template(rules: str) -> str:
    """mini.yaml's system template with `rules` appended as a Jinja string literal: the template is Jinja, and
    the rules' own braces must stay text (a `{{ ... }}` in them would otherwise render mini's variables,
    the process environment among them)."""
    if not rules.strip():
        return SYSTEM_TEMPLATE
    return SYSTEM_TEMPLATE + RULES_HEADING + "{{ " + json.dumps(rules.strip() + "\n", ensure_ascii=False) + " }}"


def run_config(task: Task, rules: str, base_url: str) -> dict[str, Any]:
    """The per-run config merged over mini.yaml: the task, the rules, the provider's URL, the output cap, the key kept
    from commands."""
    return {
        "run": {"task": task_text(task)},
        "agent": {"system_template": system_template(rules)},
        # max_tokens: the project's one output cap for agents (config.agent_max_output_tokens), as litellm sends it
        "model": {
            "model_kwargs": {"api_base": base_url, "max_retries": 0, "max_tokens": config.agent_max_output_tokens()},
            "cost_tracking": "ignore_errors",
        },
        # the commands inherit mini's environment with these on top: the key's variable blanked
        "environment": {"env": {KEY_VARIABLE: ""}},
    }


def state_environment(state: Path, key: str) -> dict[str, str]:
    """The child's whole environment: the allow-list, its own HOME and config folder, the key's variable."""
    home, settings, tmp = state / "home", state / "config", state / "tmp"
    for folder in (home, settings, tmp):
        folder.mkdir()
    return safe_environment(
        {
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "MSWEA_GLOBAL_CONFIG_DIR": str(settings),
            "MSWEA_CONFIGURED": "true",  # else it asks set-up questions and aborts without a terminal
            "MSWEA_COST_TRACKING": "ignore_errors",  # a model litellm cannot price is not an error
            "MSWEA_SILENT_STARTUP": "1",
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": MODEL_ATTEMPTS,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm fetches its price map from GitHub at import otherwise
            "HF_HUB_OFFLINE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "NO_COLOR": "1",
            KEY_VARIABLE: key,
        }
    )


def trajectory_of(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages, commands and their output from mini's trajectory, in order (the system and task messages left out)."""
    steps = []
    for message in messages[2:]:
        role, text = message.get("role"), message.get("content")
        text = text if isinstance(text, str) else json.dumps(text)
        if role == "assistant":
            if text:
                steps.append({"type": "message", "name": "assistant", "text": text})
            for action in (message.get("extra") or {}).get("actions") or []:
                steps.append({"type": "tool_call", "name": "bash", "text": str(action.get("command", ""))})
        elif role == "tool":
            steps.append({"type": "tool_result", "name": "bash", "text": text})
        elif role == "user":  # mini's notes to the model: a format error, an interruption
            steps.append({"type": "message", "name": "user", "text": text})
    return cut_trajectory(steps)


def claim_of(trajectory: dict[str, Any] | None, out: str, err: str) -> Claim:
    """mini-swe-agent's claim about its run, from its trajectory file (which its commands can write): completed when
    mini's exit status is "Submitted". Agent data: the run's end is the host's (helpers.agents.base.ended_as_seen),
    usage and cost the gateway's meter (the file's usage is not read)."""
    info = (trajectory or {}).get("info") or {}
    messages = (trajectory or {}).get("messages") or []
    exit_status = str(info.get("exit_status") or "")
    last = messages[-1] if messages else {}

    def failure() -> str:
        said = (
            str((last.get("extra") or {}).get("exception_str") or last.get("content") or "")
            if last.get("role") == "exit"
            else ""
        )
        said = " ".join(said.split())  # one line: litellm's messages span several
        return (
            f"mini-swe-agent ended with {exit_status}" + (f": {said}" if said and said != exit_status else "")
            if exit_status
            else last_lines(err) or last_lines(out) or "mini-swe-agent ended without a trajectory"
        )

    answers = [m for m in messages if m.get("role") == "assistant"]
    final = info.get("submission") or (answers[-1].get("content") if answers else "") or ""
    calls = (info.get("model_stats") or {}).get("api_calls") if isinstance(info.get("model_stats"), dict) else None
    return Claim(
        exit_status == "Submitted",
        failure,
        final_text=str(final),
        iterations=calls if isinstance(calls, int) else len(answers),
        trajectory=trajectory_of(messages),
    )


class SubmittingShellTool(ShellTool):
    """A step through `bash` (the dry run's edit, a test's command), then the submit command in the same turn:
    mini-swe-agent ends a run only on that command (a reply without a tool call is a format error to it, not the end)."""

    def step(self, command: str) -> list[dict]:
        return [*super().step(command), tool_call(self.tool, **{self.argument: SUBMIT})]


class MiniSweAgent(CLIAgent):
    """mini-swe-agent as an Agent (helpers.agents.base.CLIAgent): rules appended to its system template, from
    AGENTS.md; headless act mode only. Through the gateway (the base's copy) it calls chat completions under .../v1."""

    name = "mini-swe-agent"
    rules_file = RULES_FILE
    # mini-swe-agent has no init of its own: the project's own prompt, labeled so
    init_route = InitRoute(
        PROJECT_INIT,
        PROJECT_INIT_PROMPT.format(file="AGENTS.md"),
        "mini <the project's init prompt>",
        "AGENTS.md",
        "helpers.agents.init_route.PROJECT_INIT_PROMPT (mini-swe-agent has none)",
    )
    rules_limit = None  # mini-swe-agent reads no rules file of its own: the project puts AGENTS.md in its instance template, whole
    base_prompt = BASE_PROMPT
    package_dir, binary_path, plan_mode = PACKAGE_DIR, ".venv/bin/mini", False
    title, python_package = "mini-swe-agent", "mini-swe-agent"  # what installed() says, where its version is
    # the OpenAI API it speaks: its provider and gateway upstream follow (CLIAgent.openai_settings)
    speaks_openai = ("mini-swe-agent runs here on OpenAI's chat completions", "/chat/completions")
    dry_run_tools = (SubmittingShellTool("bash", "command"),)
    # The trajectory file lies in the run's state folder, which the base removes before result() is called:
    # the Invocation's close (called before that, in the same thread) keeps it here for result().
    _kept = threading.local()

    @classmethod
    def binary(cls) -> Path:
        """The pinned `mini` in mini_swe_agent/.venv (raises saying how to install it when it is missing)."""
        binary = cls.package_dir / cls.binary_path
        if not binary.exists():
            raise FileNotFoundError(
                f"mini-swe-agent is not installed at {binary}. Run `make setup` (or `make mini-swe-agent`): it installs "
                "the version pinned in mini_swe_agent/requirements.txt into mini_swe_agent/.venv, an environment of its own."
            )
        return binary

    def invoke(self, task: Task, workspace: Path, state: Path) -> Invocation:
        url, key = self.openai_settings()
        run_yaml, trajectory = state / "run.yaml", state / "traj.json"
        run_yaml.write_text(json.dumps(run_config(task, workspace_rules(workspace), url), indent=1))
        env = state_environment(state, key)
        args = [
            str(self.binary()),
            "-y",
            "-m",
            f"openai/{self.model}",
            "-c",
            "mini.yaml",
            "-c",
            str(run_yaml),
            "-l",
            "0",
            "--exit-immediately",
            "-o",
            str(trajectory),
        ]
        self._kept.trajectory, self._kept.refused = None, ""

        def keep() -> None:
            try:
                self._kept.trajectory = read_trajectory(trajectory, state)
            except RefusedOutput as error:  # said in the result: a raise here would skip the state's removal
                self._kept.refused = str(error)
            except OSError:
                self._kept.trajectory = None

        return Invocation(args, env, close=[keep])

    def claim(self, out: str, err: str) -> Claim:
        trajectory, self._kept.trajectory = getattr(self._kept, "trajectory", None), None
        return claim_of(trajectory, out, err)

    def result(self, task: Task, out: str, err: str, timed_out: bool, duration: float) -> AgentResult:
        refused, self._kept.refused = getattr(self._kept, "refused", ""), ""
        result = super().result(task, out, err, timed_out, duration)
        if refused:  # the agent's doing, whatever else happened: a rule-induced error naming the file
            result.status, result.error = "error", (refused + (f"; {result.error}" if result.error else ""))[:4000]
        return result


__all__ = ["MiniSweAgent"]  # the public API, documented in CODE_APPENDIX.md
