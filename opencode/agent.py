"""One opencode run on one task: the pinned CLI, isolated, headless, offline, with a timeout we enforce.

    agent = OpencodeAgent()           # on config.AGENT_MODEL; the Agent protocol (helpers.core.protocols)
    result = agent.run(task, workspace, ruleset)             # -> AgentResult; the engine takes the patch

What a run does (measured on opencode 1.18.33; see opencode/README.md):
- `opencode run --format json --auto --pure <prompt>` in the workspace, the prompt being the task text
  (opencode takes its message from argv only): JSON events on stdout, every permission granted;
- its own HOME and XDG folders in the per-run state folder, and its configuration in a file there
  (OPENCODE_CONFIG), never in the workspace (it would land in the patch): one OpenAI-compatible provider
  (`@ai-sdk/openai-compatible`, built into the binary) at the agent's base URL (the gateway), no
  autoupdate, no sharing, no models.dev fetch, no LSP downloads, no plugins, no Claude Code files;
- the key on a pipe that opencode reads once at start-up (`"apiKey": "{file:/dev/fd/N}"`), so it is in no
  file, no argument and no environment: the commands opencode runs cannot print it;
- the ruleset in the workspace's AGENTS.md (written by the engine), which opencode puts in its system
  message;
- its own process group, killed with the parent and on timeout (helpers.isolation.processes.run_cli).
At start-up opencode installs `@opencode-ai/plugin` into its config folder with its built-in npm (a package
local plugins import), in the background: npm_config_offline keeps it from the network (in the sandbox there is
none), and the run, with no plugins, goes on without it.
opencode has a plan agent but no headless plan mode we rely on: mode="plan" is refused. A task-level
failure (provider error, crash, timeout) is a result with status "error" or "timeout"; only setup
problems raise.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from helpers.agents.base import CLIAgent, Claim, Invocation, key_pipe, task_text
from helpers.agents.init_route import OWN_INIT, InitRoute
from helpers.agents.trajectories import cut_trajectory
from helpers.core import config
from helpers.isolation.processes import json_lines, last_lines, safe_environment
from helpers.core.protocols import Task
from helpers.stand_ins.file_edit_tools import PatchTool, ShellTool

PACKAGE_DIR = Path(__file__).resolve().parent
RULES_FILE = "AGENTS.md"
PROVIDER = "prompt-learning"  # the provider's id in opencode's config: models are "<PROVIDER>/<model>"
BASE_PROMPT = (
    "You are opencode, an interactive CLI coding agent, running headless in a git repository. You work "
    "through its tools (bash, read, edit, write, glob, grep) to read, search and edit files and to run tests. "
    "You are given an issue (a bug report or a feature request) and must change the repository so that the "
    "issue is resolved; the repository's hidden tests decide whether your change is correct. The rules below "
    "come from the repository's AGENTS.md, which opencode adds to its system prompt."
)
# Settings that keep a run from calling home or loading anything but the binary (names from its binary).
# Not OPENCODE_DISABLE_PROJECT_CONFIG: it also drops AGENTS.md (measured), so a repository's own opencode.json is
# read, as for any opencode user; in the sandbox it can reach nothing but the gateway.
QUIET = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",  # else it fetches models.opencode.ai/api.json
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",  # the rules come from AGENTS.md only, not CLAUDE.md or ~/.claude
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    # Each start installs `@opencode-ai/plugin` into its config folder in the background with its built-in npm,
    # which honours npm's settings: offline, it fetches nothing (nothing in the run needs it: no plugins).
    "npm_config_offline": "true",
}


def _binary_path() -> str:
    """Where the platform package puts opencode's native binary, under opencode/."""
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine()
    )
    system = {"linux": "linux", "darwin": "darwin"}.get(sys.platform, sys.platform)
    return f"node_modules/opencode-{system}-{arch}/bin/opencode"


def opencode_config(model: str, base_url: str, key_fd: int) -> dict[str, Any]:
    """opencode's configuration: one OpenAI-compatible provider, its key read from the pipe `key_fd`, the output cap."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": PROVIDER,
                "options": {"baseURL": base_url, "apiKey": f"{{file:/dev/fd/{key_fd}}}"},
                # limit.output: its output cap (config.agent_max_output_tokens; opencode's own
                # is 32,000); context 0, as when no limit is given: no compaction of its own
                "models": {model: {"limit": {"context": 0, "output": config.agent_max_output_tokens()}}},
            }
        },
        "model": f"{PROVIDER}/{model}",
        "small_model": f"{PROVIDER}/{model}",  # its title request goes to the same model, not a default one
        "autoupdate": False,
        "share": "disabled",
    }


def state_environment(state: Path, model: str, base_url: str, key_fd: int) -> dict[str, str]:
    """The child's whole environment: the allow-list, its own HOME, XDG folders and config, no key."""
    folders = {name: state / name for name in ("home", "config", "data", "cache", "state", "tmp")}
    for folder in folders.values():
        folder.mkdir()
    settings = state / "opencode.json"
    settings.write_text(json.dumps(opencode_config(model, base_url, key_fd), indent=1))
    return safe_environment(
        {
            "HOME": str(folders["home"]),
            "XDG_CONFIG_HOME": str(folders["config"]),
            "XDG_DATA_HOME": str(folders["data"]),
            "XDG_CACHE_HOME": str(folders["cache"]),
            "XDG_STATE_HOME": str(folders["state"]),
            "TMPDIR": str(folders["tmp"]),
            "OPENCODE_CONFIG": str(settings),
            **QUIET,
        }
    )


def trajectory_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages, tool calls and their output from opencode's JSON events, in order."""
    steps = []
    for event in events:
        part = event.get("part") or {}
        if event.get("type") == "text" and part.get("text"):
            steps.append({"type": "message", "name": "assistant", "text": part["text"]})
        elif event.get("type") == "tool_use":
            state = part.get("state") or {}
            name = str(part.get("tool") or "tool")
            arguments = state.get("input") or {}
            text = arguments.get("command") if name == "bash" else json.dumps(arguments)
            steps.append({"type": "tool_call", "name": name, "text": str(text or "")})
            steps.append(
                {
                    "type": "tool_result",
                    "name": name,
                    "text": str(state.get("output") or state.get("error") or ""),
                    "exit_code": (state.get("metadata") or {}).get("exit"),
                }
            )
    return cut_trajectory(steps)


def _error_text(event: dict[str, Any]) -> str:
    """The message of an `error` event (opencode nests it as error.data.message)."""
    error = event.get("error") or {}
    if isinstance(error, dict):
        data = error.get("data") or {}
        return str(data.get("message") or error.get("message") or error.get("name") or event)
    return str(error)


def claim_of(events: list[dict[str, Any]], stderr: str) -> Claim:
    """opencode's claim about its run: completed when its last step finished without asking for tools and no error
    came. Agent data: the run's end is the host's (helpers.agents.base.ended_as_seen), usage and cost the gateway's
    meter (step_finish tokens are not read)."""
    finished, errors, text, calls, steps = False, [], "", 0, 0
    for event in events:
        kind, part = event.get("type"), event.get("part") or {}
        if kind == "step_finish":
            steps += 1
            finished = part.get("reason") not in ("tool-calls", "error")
        elif kind == "error":
            errors.append(_error_text(event))
        elif kind == "text":
            text = str(part.get("text") or "")
        elif kind == "tool_use":
            calls += 1
    return Claim(
        finished and not errors,
        lambda: "; ".join(dict.fromkeys(errors)) or last_lines(stderr) or "opencode ended without finishing its turn",
        final_text=text,
        iterations=steps,
        trajectory=trajectory_of(events),
    )


class OpencodeAgent(CLIAgent):
    """opencode as an Agent (helpers.agents.base.CLIAgent): rules in AGENTS.md, headless act mode only.
    Through the gateway (the base's copy) it calls the chat-completions API under the gateway's .../v1."""

    name = "opencode"
    rules_file = RULES_FILE
    # its built-in init command, run headless as `opencode run --command init` (opencode.ai/docs/rules: /init)
    init_route = InitRoute(
        OWN_INIT,
        "/init",
        "opencode run --command init",
        "AGENTS.md",
        "opencode's built-in init command (opencode.ai/docs/rules, opencode.ai/docs/cli)",
    )
    rules_limit = None  # opencode's rules docs (opencode.ai/docs/rules) state no size limit for AGENTS.md that we found
    base_prompt = BASE_PROMPT
    default_model = config.AGENT_MODEL  # an OpenAI model, which opencode reaches as an OpenAI-compatible provider
    package_dir, binary_path, plan_mode = PACKAGE_DIR, _binary_path(), False
    title, version_env = "opencode", {"HOME": "/nonexistent", **QUIET}  # what installed() says, how it asks
    # the OpenAI API it speaks: its provider and gateway upstream follow (CLIAgent.openai_settings)
    speaks_openai = ("This opencode set-up speaks the OpenAI chat-completions API", "/chat/completions")
    # on GPT models it offers apply_patch (Codex's grammar) instead of edit/write; its edit tool takes (filePath,
    # oldString, newString), unlike WholeFileEditor: elsewhere the dry run edits through bash
    dry_run_tools = (PatchTool("apply_patch", "patchText"), ShellTool("bash", "command"))

    def invoke(self, task: Task, workspace: Path, state: Path) -> Invocation:
        url, key = self.openai_settings()
        key_fd = key_pipe(key)
        text = task_text(task)
        # an init run's "/init" is opencode's own command, run as `--command init`
        message = ["--command", text[1:]] if task.get("exact_prompt") and text.startswith("/") else [text]
        args = [str(self.binary()), "run", "--format", "json", "--auto", "--pure", *message]
        return Invocation(
            args,
            state_environment(state, self.model, url, key_fd),
            pass_fds=(key_fd,),
            close=[lambda: os.close(key_fd)],
        )

    def claim(self, out: str, err: str) -> Claim:
        return claim_of(json_lines(out), err)


def opencode_binary() -> Path:
    """The pinned opencode executable (the platform package's native binary) installed by `make setup`."""
    return OpencodeAgent.binary()


__all__ = ["OpencodeAgent", "opencode_binary"]  # the public API, documented in CODE_APPENDIX.md
