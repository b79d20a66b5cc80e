"""One Gemini CLI run on one task: the pinned CLI, isolated, headless, offline, with a timeout we enforce.

    agent = GeminiCliAgent()          # on DEFAULT_MODEL; the Agent protocol (helpers.core.protocols)
    result = agent.run(task, workspace, ruleset)             # -> AgentResult; the engine takes the patch

What a run does (measured on Gemini CLI 0.61.0; see gemini_cli/README.md):
- `node gemini.js -p <task> --output-format stream-json --approval-mode yolo --skip-trust -m M` in the
  workspace: JSON events on stdout (init, message, tool_use, tool_result, error, result), every tool call
  approved, the workspace trusted without asking;
- its own HOME (its ~/.gemini with settings.json: API-key auth, no telemetry, no usage statistics, no
  update checks, environment redaction on) and TMPDIR in the per-run state folder, never in the workspace;
- the Gemini API at GOOGLE_GEMINI_BASE_URL (the gateway), the key in GEMINI_API_KEY: the CLI's own
  environment redaction keeps every variable named like a key out of the commands it runs;
- the ruleset in the workspace's GEMINI.md (written by the engine), which the CLI sends as context in the
  first user turn;
- its own process group, killed with the parent and on timeout (helpers.isolation.processes.run_cli).
The CLI has a plan mode, but no headless one this cookbook wires: mode="plan" is refused. A task-level
failure (provider error, crash, timeout) is a result with status "error" or "timeout"; only setup
problems raise.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Unpack

from helpers.agents.base import CLIAgent, Claim, CLISettings, Invocation, task_text
from helpers.agents.init_route import OWN_INIT, InitRoute
from helpers.agents.trajectories import cut_trajectory
from helpers.core import config
from helpers.isolation.processes import json_lines, last_lines, safe_environment
from helpers.core.protocols import Task
from helpers.llm.gateway.upstreams import GEMINI_TO_OPENAI
from helpers.llm.scripted_server import tool_call
from helpers.stand_ins.file_edit_tools import ShellTool, changed_files

PACKAGE_DIR = Path(__file__).resolve().parent
RULES_FILE = "GEMINI.md"
# The Gemini CLI speaks only Gemini's API, so AGENT_MODEL cannot be its default: gemini-3.1-pro-preview is Google's
# current Pro model for it, priced in genai-prices ($2 / $12 per 1M tokens up to 200k).
DEFAULT_MODEL = "gemini-3.1-pro-preview"
BASE_URL_VARIABLE = config.GEMINI_BASE_URL_VARIABLE
BASE_PROMPT = (
    "You are Gemini CLI, Google's command-line coding agent, running headless in a git repository. You work "
    "through its tools (run_shell_command, read_file, write_file, replace, glob, grep_search) to read, search "
    "and edit files and to run tests. You are given an issue (a bug report or a feature request) and must change "
    "the repository so that the issue is resolved; the repository's hidden tests decide whether your change is "
    "correct. The rules below come from the repository's GEMINI.md, which Gemini CLI gives you as context."
)
# settings.json in the run's ~/.gemini (names from the CLI's settings schema)
SETTINGS = {
    "security": {
        "auth": {"selectedType": "gemini-api-key"},
        # every variable named like a key, token or secret is kept out of the commands it runs
        "environmentVariableRedaction": {"enabled": True},
    },
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}
QUIET = {
    "GEMINI_CLI_NO_RELAUNCH": "true",  # one node process, not a relaunched child with more heap
    "GEMINI_CLI_TRUST_WORKSPACE": "true",
    "NO_BROWSER": "true",
}


@dataclass(frozen=True)
class WriteFileTool:
    """A dry-run adapter (helpers.stand_ins.file_edit_tools) for the CLI's `write_file(file_path, content)`: each changed
    file written whole; a deleted one removed through `run_shell_command` (its shell tool refuses a heredoc,
    "command substitution detected", so the edit cannot go through `git apply <<EOF`)."""

    tool: str = "write_file"
    shell_tool: str = "run_shell_command"

    @property
    def arguments(self) -> frozenset[str]:
        return frozenset({"file_path", "content"})

    def calls(self, task: dict, patch: str) -> list[dict]:
        return [
            tool_call(self.shell_tool, command=f"rm -f -- '{path}'")
            if new_text is None
            else tool_call(self.tool, file_path=path, content=new_text)
            for path, _, new_text in changed_files(task, patch)
        ]


def provider_settings(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    """(the Gemini API's base URL, the key): the ones given, else GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY
    (or GOOGLE_API_KEY) from the environment or .env."""
    url = base_url or config.gemini_base_url() or config.GEMINI_URL
    key = api_key or config.gemini_key()
    if not key:
        raise config.MissingCredentials(
            "The Gemini CLI agent needs a Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY) in the environment "
            f"or .env (and {BASE_URL_VARIABLE} for a server other than Google's), or OPENAI_BASE_URL for an "
            "OpenAI-compatible server (the gateway carries its calls there as chat completions), or choose another AGENT."
        )
    return url, key


def chat_server(base_url: str | None, api_key: str | None) -> tuple[str, str | None] | None:
    """(OPENAI_BASE_URL, OPENAI_API_KEY) when the CLI's calls go to an OpenAI-compatible server, carried there as
    chat completions by the gateway (upstream kind "gemini-to-openai"): no Gemini setting of its own is given or
    configured (base_url, api_key, GEMINI_API_KEY or GOOGLE_API_KEY, GOOGLE_GEMINI_BASE_URL) and OPENAI_BASE_URL
    is set; else None (Gemini's API)."""
    server = config.read_env("OPENAI_BASE_URL")
    if base_url or api_key or config.gemini_key() or config.gemini_base_url() or not server:
        return None
    return server.rstrip("/"), config.read_env("OPENAI_API_KEY")


def state_environment(state: Path, base_url: str, key: str) -> dict[str, str]:
    """The child's whole environment: the allow-list, its own HOME with settings.json, the URL and the key."""
    home, tmp = state / "home", state / "tmp"
    for folder in (home / ".gemini", tmp):
        folder.mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS, indent=1))
    return safe_environment(
        {"HOME": str(home), "TMPDIR": str(tmp), BASE_URL_VARIABLE: base_url, "GEMINI_API_KEY": key, **QUIET}
    )


def trajectory_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages, tool calls and their output from the CLI's stream-json events, in order."""
    steps: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            if steps and steps[-1]["type"] == "message" and event.get("delta"):
                steps[-1]["text"] += str(event.get("content") or "")
            else:
                steps.append({"type": "message", "name": "assistant", "text": str(event.get("content") or "")})
        elif kind == "tool_use":
            name = names[str(event.get("tool_id"))] = str(event.get("tool_name") or "tool")
            arguments = event.get("parameters") or {}
            text = arguments.get("command") if name == "run_shell_command" else json.dumps(arguments)
            steps.append({"type": "tool_call", "name": name, "text": str(text or "")})
        elif kind == "tool_result":
            error = event.get("error") or {}
            output = event.get("output") or (error.get("message") if isinstance(error, dict) else error) or ""
            steps.append(
                {
                    "type": "tool_result",
                    "name": names.get(str(event.get("tool_id")), "tool"),
                    "text": str(output),
                    "exit_code": None if event.get("status") == "success" else 1,
                }
            )
    return cut_trajectory(steps)


def claim_of(events: list[dict[str, Any]], stderr: str) -> Claim:
    """The Gemini CLI's claim about its run: completed when its `result` event says success; iterations are the
    model turns (each batch of tool calls, and the last answer); every failure as one line. Agent data: the run's
    end is the host's (helpers.agents.base.ended_as_seen), usage and cost the gateway's meter (the result's stats
    are not read)."""
    status_seen, errors, text, batches, previous = None, [], "", 0, None
    for event in events:
        kind = event.get("type")
        batches += kind == "tool_use" and previous not in ("tool_use", "tool_result")  # one model turn's calls
        previous = kind
        if kind == "result":
            status_seen = event.get("status")
            error = event.get("error") or {}
            if error:
                errors.append(str(error.get("message") or error) if isinstance(error, dict) else str(error))
        elif kind == "error" and event.get("severity") == "error":
            errors.append(str(event.get("message") or event))
        elif kind == "message" and event.get("role") == "assistant":
            text = text + str(event.get("content") or "") if event.get("delta") else str(event.get("content") or "")
        elif kind == "tool_use":
            text = ""  # the final text is what it wrote after its last tool call
    return Claim(
        status_seen == "success" and not errors,
        lambda: " ".join(
            ("; ".join(dict.fromkeys(errors)) or last_lines(stderr) or "Gemini CLI ended without a result").split()
        ),
        final_text=text,
        iterations=batches + 1 if events else 0,
        trajectory=trajectory_of(events),
    )


class GeminiCliAgent(CLIAgent):
    """The Gemini CLI as an Agent (helpers.agents.base.CLIAgent): rules in GEMINI.md, headless act mode only.
    Through the gateway (the base's copy) it calls the Gemini API at the gateway's URL for its token."""

    name = "gemini-cli"
    rules_file = RULES_FILE
    # its /init runs non-interactively as `gemini -p "/init"` (the prompt is the slash command itself)
    init_route = InitRoute(
        OWN_INIT,
        "/init",
        'gemini -p "/init"',
        "GEMINI.md",
        "the Gemini CLI's built-in /init command (geminicli.com/docs/cli/commands)",
    )
    rules_limit = (
        None  # the Gemini CLI's GEMINI.md docs (geminicli.com/docs/cli/gemini-md) state no size limit ("none stated")
    )
    base_prompt = BASE_PROMPT
    default_model = DEFAULT_MODEL  # a Gemini model: the CLI speaks only Gemini's API
    package_dir, binary_path, plan_mode = PACKAGE_DIR, "node_modules/@google/gemini-cli/bundle/gemini.js", False
    title, npm_package = "Gemini CLI", "@google/gemini-cli"  # what installed() says, where its version is
    # the scripted dry run writes files with write_file; `git apply` through its shell is refused (a heredoc)
    dry_run_tools = (WriteFileTool(), ShellTool("run_shell_command", "command"))

    # The session's base_url= is every role's OpenAI-compatible server: it hands it over as `openai_base_url`.
    speaks_gemini = True

    def __init__(
        self, model: str | None = None, *, openai_base_url: str | None = None, **settings: Unpack[CLISettings]
    ):
        """`openai_base_url`: an OpenAI-compatible server (llama.cpp, vLLM, ...) the gateway carries this CLI's
        Gemini calls to as chat completions (open_session(base_url=) gives it); its key is `api_key`, else
        OPENAI_API_KEY. Exclusive with `base_url` (a server speaking Gemini's API). `settings`: CLIAgent's."""
        super().__init__(model, **settings)
        if openai_base_url and self.base_url:
            raise ValueError(
                "Give the Gemini CLI base_url= (a server speaking Gemini's API) or openai_base_url= (an "
                "OpenAI-compatible server the gateway carries its calls to), not both."
            )
        self.openai_base_url = openai_base_url.rstrip("/") if openai_base_url else None

    def _chat_server(self) -> tuple[str, str | None] | None:
        if self.openai_base_url:
            return self.openai_base_url, self._api_key or config.read_env("OPENAI_API_KEY")
        return chat_server(self.base_url, self._api_key)

    def check_provider(self) -> None:
        if self._chat_server():  # any model that server serves (the session's check asks it)
            return
        provider_settings(self.base_url, self._api_key)
        if self.model.startswith(("gpt-", "claude-", "o1", "o3", "o4")):
            raise ValueError(
                f"The Gemini CLI speaks only Gemini's API, and {self.model!r} is not a Gemini model: run it "
                f"on one (its default: {DEFAULT_MODEL!r})."
            )

    def upstream(self) -> tuple[str | None, str | None, str]:
        """Google's Gemini API, or the GOOGLE_GEMINI_BASE_URL server that speaks it; with neither configured, the
        `openai_base_url` or OPENAI_BASE_URL server, its calls carried there as chat completions by the gateway."""
        chat = self._chat_server()
        if chat:
            return chat[0], chat[1], GEMINI_TO_OPENAI
        url, key = provider_settings(self.base_url, self._api_key)
        return url, key, "gemini"

    def invoke(self, task: Task, workspace: Path, state: Path) -> Invocation:
        if self.openai_base_url:  # never its key sent to Google's API: only the gateway speaks chat completions for it
            raise ValueError(
                f"The Gemini CLI reaches the OpenAI-compatible server {self.openai_base_url} only through "
                "the model gateway (run_tasks(gateway=), open_session(gateway=True))."
            )
        url, key = provider_settings(self.base_url, self._api_key)
        args = [
            shutil.which("node") or "node",
            str(self.binary()),
            "-p",
            task_text(task),
            "--output-format",
            "stream-json",
            "--approval-mode",
            "yolo",
            "--skip-trust",
            "-m",
            self.model,
        ]
        return Invocation(args, state_environment(state, url, key))

    def claim(self, out: str, err: str) -> Claim:
        return claim_of(json_lines(out), err)


def gemini_cli_binary() -> Path:
    """The pinned Gemini CLI's entry script (run with Node) installed by `make setup`."""
    return GeminiCliAgent.binary()


__all__ = ["GeminiCliAgent", "WriteFileTool", "gemini_cli_binary"]  # the public API, documented in CODE_APPENDIX.md
