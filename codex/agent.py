"""One Codex CLI run on one task: the pinned CLI, isolated, headless, with a timeout we enforce.

    agent = CodexAgent()              # on config.AGENT_MODEL; the Agent protocol (helpers.core.protocols)
    result = agent.run(task, workspace, ruleset)             # -> AgentResult; the engine takes the patch

What a run does (measured on Codex CLI 0.169.0; see codex/README.md):
- `codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -m M <prompt>` in the
  workspace, the task text on stdin (Codex appends it to the prompt in a <stdin> block: no argv limit);
- its own HOME and CODEX_HOME in a scratch folder; CODEX_HOME/config.toml names the provider
  (`wire_api = "responses"`: Codex speaks only the OpenAI Responses API), turns off update checks,
  analytics, feedback and plugins (whose start-up sync otherwise calls GitHub and chatgpt.com);
- the key in OPENAI_API_KEY, the one variable the provider entry names, and kept out of the commands
  Codex runs (`shell_environment_policy.exclude`); the child environment is the allow-list of
  helpers.isolation.processes.safe_environment plus these settings;
- the ruleset in the workspace's AGENTS.md (written by the engine), which Codex puts in a user message
  ("# AGENTS.md instructions for <cwd>"), not in its instructions;
- its own process group, killed with the parent (PR_SET_PDEATHSIG) and on timeout (SIGINT, then SIGKILL).
Codex has no headless plan mode: mode="plan" is refused. A task-level failure (provider error, crash,
timeout) is a result with status "error" or "timeout"; only setup problems raise.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path
from typing import Any

from helpers.agents.init_route import OWN_INIT, InitRoute
from helpers.rules.limits import RulesLimit
from helpers.agents.base import CLIAgent, Claim, Invocation, task_text
from helpers.agents.trajectories import cut_trajectory
from helpers.isolation.processes import json_lines, last_lines, safe_environment
from helpers.core.protocols import Task
from helpers.stand_ins.file_edit_tools import PatchTool, ShellTool

PACKAGE_DIR = Path(__file__).resolve().parent
RULES_FILE = "AGENTS.md"
KEY_VARIABLE = "OPENAI_API_KEY"
BASE_PROMPT = (
    "You are Codex, OpenAI's coding agent, running in the Codex CLI in a git repository. You work through "
    "shell commands (exec_command) to read, search and edit files and to run tests. You are given an issue "
    "(a bug report or a feature request) and must change the repository so that the issue is resolved; "
    "the repository's hidden tests decide whether your change is correct. The rules below come from the "
    "repository's AGENTS.md, which Codex shows you with the task as project instructions."
)
PROMPT = "Resolve the task given below."
# Codex's /init sends a fixed prompt (openai/codex codex-rs/tui/prompt_for_init_command.md, read at commit
# 71163530a46dc568775f9ee95a9b57de3385cd9a); `codex exec` runs no slash commands, so the route sends the prompt's
# text. This is our own pinned copy of what it asks, in our words (not the upstream text verbatim): same file,
# title, length and sections. Its hash is recorded with every init file (InitRoute.prompt_sha).
INIT_PROMPT = (
    "Generate a file named AGENTS.md that serves as a contributor guide for this repository: clear, concise and "
    "well structured, with descriptive headings and actionable explanations.\n\n"
    'Requirements: title it "Repository Guidelines"; use Markdown headings; keep it concise (200-400 words '
    "is best); keep explanations short, direct and specific to this repository; give examples where they help "
    "(commands, paths, naming patterns); keep an instructional tone.\n\n"
    "Sections (adapt: add what is relevant, leave out what does not apply): Project Structure & Module "
    "Organization; Build, Test, and Development Commands; Coding Style & Naming Conventions; Testing Guidelines; "
    "Commit & Pull Request Guidelines; optionally Security & Configuration Tips, Architecture Overview or "
    "Agent-Specific Instructions."
)


def _binary_path() -> str:
    """Where the platform package puts Codex's native binary, under codex/."""
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(
        platform.machine().lower(), platform.machine()
    )
    triple = {"linux": f"{arch}-unknown-linux-musl", "darwin": f"{arch}-apple-darwin"}.get(sys.platform, sys.platform)
    package = {"x86_64": "x64", "aarch64": "arm64"}.get(arch, arch)
    system = {"linux": "linux", "darwin": "darwin"}.get(sys.platform, sys.platform)
    return f"node_modules/@openai/codex-{system}-{package}/vendor/{triple}/bin/codex"


def config_toml(model: str, base_url: str) -> str:
    """CODEX_HOME/config.toml: the provider (its key read from KEY_VARIABLE, kept from commands), no calls home."""
    return "\n".join(
        [
            f"model = {json.dumps(model)}",
            'model_provider = "prompt-learning"',
            "check_for_update_on_startup = false",
            # Hosted tools only OpenAI serves (a `web_search` tool, a `namespace` of sub-agent tools): other
            # Responses servers skip them with a warning per call, and a task needs neither.
            'web_search = "disabled"',
            "[features]",
            "plugins = false",  # its start-up sync otherwise calls api.github.com and chatgpt.com
            "multi_agent = false",
            "[analytics]",
            "enabled = false",
            "[feedback]",
            "enabled = false",
            "[model_providers.prompt-learning]",
            'name = "prompt-learning"',
            f"base_url = {json.dumps(base_url)}",
            f'env_key = "{KEY_VARIABLE}"',
            'wire_api = "responses"',
            "[shell_environment_policy]",
            f'exclude = ["{KEY_VARIABLE}"]',
            "",
        ]
    )


def state_environment(state: Path, model: str, base_url: str, key: str) -> dict[str, str]:
    """The child's whole environment: the allow-list, its own HOME and CODEX_HOME, the key's variable."""
    home, codex_home, tmp = state / "home", state / "codex", state / "tmp"
    for folder in (home, codex_home, tmp):
        folder.mkdir()
    (codex_home / "config.toml").write_text(config_toml(model, base_url))
    return safe_environment({"HOME": str(home), "CODEX_HOME": str(codex_home), "TMPDIR": str(tmp), KEY_VARIABLE: key})


def trajectory_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages, commands and their output from Codex's --json items, in order."""
    steps = []
    for event in events:
        item = event.get("item") or {}
        if event.get("type") != "item.completed":
            continue
        kind = item.get("type")
        if kind == "agent_message":
            steps.append({"type": "message", "name": "assistant", "text": item.get("text", "")})
        elif kind == "command_execution":
            steps.append({"type": "tool_call", "name": "exec_command", "text": item.get("command", "")})
            steps.append(
                {
                    "type": "tool_result",
                    "name": "exec_command",
                    "text": item.get("aggregated_output", ""),
                    "exit_code": item.get("exit_code"),
                }
            )
        elif kind == "file_change":
            steps.append({"type": "tool_call", "name": "apply_patch", "text": json.dumps(item.get("changes") or [])})
        elif kind in ("mcp_tool_call", "web_search"):
            steps.append({"type": "tool_call", "name": kind, "text": json.dumps(item)})
    return cut_trajectory(steps)


def claim_of(events: list[dict[str, Any]], stderr: str) -> Claim:
    """Codex's claim about its run: completed when its turn completed and none failed. Agent data: the run's end is
    the host's (helpers.agents.base.ended_as_seen), usage and cost the gateway's meter (turn.completed's not read)."""
    completed, failures, notices, text, calls = False, [], [], "", 0
    for event in events:
        kind, item = event.get("type"), event.get("item") or {}
        if kind == "turn.completed":
            completed = True
        elif kind == "turn.failed":
            failures.append(str((event.get("error") or {}).get("message") or event))
        elif kind == "error":  # also "Reconnecting... 1/5" notices of a retry that may still succeed
            notices.append(str(event.get("message") or event))
        elif kind == "item.completed" and item.get("type") == "agent_message":
            text = str(item.get("text") or "")
        elif kind == "item.completed" and item.get("type") in ("command_execution", "file_change", "mcp_tool_call"):
            calls += 1
    return Claim(
        completed and not failures,
        lambda: (
            "; ".join(dict.fromkeys(failures or notices[-1:]))
            or last_lines(stderr)
            or "Codex ended without completing its turn"
        ),
        final_text=text,
        iterations=calls + 1 if events else 0,
        trajectory=trajectory_of(events),
    )


class CodexAgent(CLIAgent):
    """The Codex CLI as an Agent (helpers.agents.base.CLIAgent): rules in AGENTS.md, headless act mode only.
    Through the gateway (the base's copy) it calls the Responses API under the gateway's .../v1."""

    name = "codex"
    rules_file = RULES_FILE
    # Codex stops reading AGENTS.md at project_doc_max_bytes, 32 KiB by default, and drops the rest silently
    init_route = InitRoute(
        OWN_INIT,
        INIT_PROMPT,
        "codex exec <the /init prompt's text>",
        "AGENTS.md",
        "openai/codex codex-rs/tui/prompt_for_init_command.md (the TUI's /init), our pinned copy",
    )
    rules_limit = RulesLimit(
        bytes=32 * 1024,
        beyond="Codex reads no further, silently (project_doc_max_bytes)",
        source="developers.openai.com/codex/guides/agents-md: project_doc_max_bytes, 32 KiB by default",
    )
    base_prompt = BASE_PROMPT
    package_dir, binary_path, plan_mode = PACKAGE_DIR, _binary_path(), False  # `codex exec` always acts
    title, version_prefix = "Codex CLI", "codex-cli "  # what installed() says, how it reads the version
    # the OpenAI API it speaks: its provider and gateway upstream follow (CLIAgent.openai_settings)
    speaks_openai = ("Codex speaks only the OpenAI Responses API", "/responses")
    # it edits with apply_patch, else through its shell, in the scripted dry run
    dry_run_tools = (PatchTool("apply_patch", "input"), ShellTool("exec_command", "cmd"))

    def invoke(self, task: Task, workspace: Path, state: Path) -> Invocation:
        url, key = self.openai_settings()
        # an init run's prompt is the argument itself, as /init sends it; a task's text comes on stdin
        prompt, stdin = (task_text(task), "") if task.get("exact_prompt") else (PROMPT, task_text(task))
        args = [
            str(self.binary()),
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "-m",
            self.model,
            prompt,
        ]
        return Invocation(args, state_environment(state, self.model, url, key), stdin)

    def claim(self, out: str, err: str) -> Claim:
        return claim_of(json_lines(out), err)


def codex_binary() -> Path:
    """The pinned Codex executable (the platform package's native binary) installed by `make setup`."""
    return CodexAgent.binary()


__all__ = ["CodexAgent", "codex_binary"]  # the public API, documented in CODE_APPENDIX.md
