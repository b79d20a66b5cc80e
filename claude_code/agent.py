"""One Claude Code run on one task: the pinned CLI, isolated, headless, with a timeout we enforce.

    agent = ClaudeCodeAgent(model="claude-sonnet-4-5")        # the Agent protocol (helpers.core.protocols)
    result = agent.run(task, workspace, ruleset)             # -> AgentResult; the engine takes the patch

What a run does (measured on Claude Code 2.1.328; see claude_code/README.md):
- `claude -p <prompt> --output-format stream-json --verbose --dangerously-skip-permissions --model M`
  in the workspace, the task text on stdin (appended to the prompt: no argv limit); plan mode uses
  `--permission-mode plan` instead of skipping permissions;
- its own HOME, CLAUDE_CONFIG_DIR and temp folder (CLAUDE_CODE_TMPDIR, TMPDIR) in a scratch folder, no
  telemetry, error reporting, auto-update or other non-essential traffic; the child environment is the
  allow-list of helpers.isolation.processes.safe_environment plus these settings;
- the provider: ANTHROPIC_BASE_URL (the base_url given, else $ANTHROPIC_BASE_URL, else Anthropic);
- the key on a pipe the CLI reads once (CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR), so it is in no
  environment: not Claude Code's, not its commands' (`printenv` in a Bash tool call does not show it);
- the ruleset in the workspace's CLAUDE.md (written by the engine), which Claude Code puts in the first
  user message of every request (a <system-reminder> block), not in the system prompt;
- its own process group, killed with the parent (PR_SET_PDEATHSIG) and on timeout (SIGINT, then SIGKILL).
A task-level failure (provider error, crash, timeout) is a result with status "error" or "timeout";
only setup problems (no binary, no key, a model it cannot reach) raise.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from helpers.agents.init_route import OWN_INIT, InitRoute
from helpers.rules.limits import RulesLimit
from helpers.agents.base import CLIAgent, Claim, Invocation, key_pipe, task_text
from helpers.agents.trajectories import cut_trajectory
from helpers.core import config
from helpers.isolation.processes import json_lines, last_lines, safe_environment
from helpers.core.protocols import Task
from helpers.stand_ins.file_edit_tools import ShellTool

PACKAGE_DIR = Path(__file__).resolve().parent
RULES_FILE = "CLAUDE.md"
# Claude Code speaks Anthropic's API only. Claude Sonnet 5.5 is Anthropic's current Sonnet and its named replacement
# for claude-sonnet-4-5, which retires on 2026-11-30 (platform.claude.com/docs/en/models/sonnet-4-5/overview, read
# 2026-11-25); the pinned Claude Code 2.1.328 maps its own "sonnet" alias to it; $2 / $10 per 1M tokens.
DEFAULT_MODEL = "claude-sonnet-5-5"
BASE_PROMPT = (
    "You are Claude Code, Anthropic's autonomous coding agent, working in a git repository with tools to "
    "read, search and edit files (Read, Edit, Write) and to run shell commands (Bash). You are given an "
    "issue (a bug report or a feature request) and must change the repository so that the issue is "
    "resolved; the repository's hidden tests decide whether your change is correct. The rules below come "
    "from the repository's CLAUDE.md, which Claude Code shows you with the task as project instructions."
)
PROMPT = "Resolve the task given below."
# Claude Code's /init in its older, headless form (the newer one asks the user questions, which `claude -p`
# cannot answer): our own pinned copy of what it asks, in our words, sent with `claude -p`.
INIT_PROMPT = (
    "Please analyze this codebase and create a CLAUDE.md file, which will be given to future instances of Claude "
    "Code to operate in this repository. Add: 1. the commands commonly used to build, lint and run the tests, "
    "including how to run a single test; 2. the high-level architecture, the big picture that takes reading "
    "several files to understand. Include the important parts of the README, CONTRIBUTING and any other "
    "rules files (.cursorrules, .github/copilot-instructions.md). Do not repeat yourself, do not list every "
    "file, and do not add generic practices. If there is already a CLAUDE.md, suggest improvements to it. "
    'Start the file with "# CLAUDE.md" and one line saying it guides Claude Code in this repository.'
)
QUIET_ENV = {  # no telemetry, error reports, auto-update or other calls home
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
}

# Retries of a failed model request (Claude Code's default is 10). With 10, a 401 (a wrong key) took
# 182 s per task here; with 4, 11 s. Transient errors (429, 529) that outlast them are run again by the
# engine on the next call.
MAX_RETRIES = 5


def _binary_path() -> str:
    """Where the platform package puts Claude Code's native binary, under claude_code/."""
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine()
    )
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform, sys.platform)
    return f"node_modules/@anthropic-ai/claude-code-{system}-{arch}/claude"


def provider_settings(model: str, base_url: str | None, api_key: str | None) -> tuple[str | None, str]:
    """(ANTHROPIC_BASE_URL or None for Anthropic itself, the key). Raises MissingCredentials or ValueError."""
    url = base_url or config.read_env("ANTHROPIC_BASE_URL")
    if not url and not model.startswith("claude"):
        raise ValueError(
            f"Claude Code speaks only Anthropic's Messages API, and {model!r} is not a Claude model. Run it on a "
            f"Claude model (AGENT_MODEL={DEFAULT_MODEL!r}), or set ANTHROPIC_BASE_URL to a server that serves {model!r}."
        )
    key = api_key or config.read_env("ANTHROPIC_API_KEY")
    if not key:
        raise config.MissingCredentials(
            f"No API key for Claude Code on {model!r}. Set ANTHROPIC_API_KEY in the environment or in a .env file "
            "at the repository root (with ANTHROPIC_BASE_URL for a proxy); or run the scripted dry run (DRY_RUN=True)."
        )
    return (url.rstrip("/").removesuffix("/v1") if url else None), key  # Anthropic's base URL has no /v1


def state_environment(state: Path, base_url: str | None, key_fd: int) -> dict[str, str]:
    """The child's whole environment: the allow-list, its own HOME and config, the provider, the key's pipe."""
    home, config_dir, tmp = state / "home", state / "config", state / "tmp"
    for folder in (home, config_dir, tmp):
        folder.mkdir()
    settings = {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "CLAUDE_CODE_TMPDIR": str(tmp),
        "TMPDIR": str(tmp),
        "CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR": str(key_fd),
        "CLAUDE_CODE_MAX_RETRIES": str(MAX_RETRIES),
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(config.agent_max_output_tokens()),
        **QUIET_ENV,
    }
    if base_url:
        settings["ANTHROPIC_BASE_URL"] = base_url
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        settings["IS_SANDBOX"] = "1"  # as root, --dangerously-skip-permissions is refused without it
    return safe_environment(settings)


# --- Claude Code's stream-json ------------------------------------------------------------------------
def trajectory_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages, tool calls and tool results from Claude Code's stream-json events, in order."""
    steps, names = [], {}
    for event in events:
        content = (event.get("message") or {}).get("content")
        if event.get("type") not in ("assistant", "user") or not isinstance(content, list):
            continue
        for block in content:
            kind = block.get("type")
            if kind == "text" and event["type"] == "assistant" and block.get("text"):
                steps.append({"type": "message", "name": "assistant", "text": block["text"]})
            elif kind == "tool_use":
                names[block.get("id")] = block.get("name", "")
                steps.append(
                    {"type": "tool_call", "name": block.get("name", ""), "text": json.dumps(block.get("input") or {})}
                )
            elif kind == "tool_result":
                result = block.get("content")
                text = (
                    result
                    if isinstance(result, str)
                    else "\n".join(p.get("text", "") for p in result or [] if isinstance(p, dict))
                )
                steps.append(
                    {
                        "type": "tool_result",
                        "name": names.get(block.get("tool_use_id"), ""),
                        "text": text,
                        "is_error": bool(block.get("is_error")),
                    }
                )
    return cut_trajectory(steps)


def plan_of(events: list[dict[str, Any]]) -> str:
    """The plan of the last ExitPlanMode call (how a plan-mode run hands over its plan), or ""."""
    plans = [
        str((block.get("input") or {}).get("plan") or "")
        for event in events
        if event.get("type") == "assistant"
        for block in (event.get("message") or {}).get("content") or []
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == "ExitPlanMode"
    ]
    return plans[-1] if plans else ""


def claim_of(events: list[dict[str, Any]], stderr: str, mode: str) -> Claim:
    """Claude Code's claim about its run, from its events: status and the final message from the `result` event.
    Agent data: the run's end is the host's (helpers.agents.base.ended_as_seen), usage and cost the gateway's meter."""
    final = next((e for e in reversed(events) if e.get("type") == "result"), None) or {}
    text = str(final.get("result") or "")
    turns = final.get("num_turns")
    return Claim(
        bool(final) and final.get("subtype") == "success" and not final.get("is_error"),
        lambda: (
            "; ".join(str(e) for e in final.get("errors") or [])
            or text
            or last_lines(stderr)
            or "Claude Code ended without a result"
        ),
        final_text=text,
        iterations=turns if isinstance(turns, int) else 0,
        trajectory=trajectory_of(events),
        plan=plan_of(events) or text if mode == "plan" else "",
    )


class ClaudeCodeAgent(CLIAgent):
    """Claude Code as an Agent (helpers.agents.base.CLIAgent): rules in CLAUDE.md, headless act or plan mode.
    Through the gateway (the base's copy) ANTHROPIC_BASE_URL is the gateway's URL, without /v1."""

    name = "claude-code"
    default_model = DEFAULT_MODEL  # sessions with AGENT="claude-code" take it (helpers.app.session)
    rules_file = RULES_FILE
    # Claude Code reads CLAUDE.md whole but warns at start-up over 40,000 characters ("Large CLAUDE.md will impact
    # performance (44.1k chars > 40.0k)", as reported in meshery/schemas#885); its memory docs ask for short files
    init_route = InitRoute(
        OWN_INIT,
        INIT_PROMPT,
        "claude -p <the older, headless /init prompt>",
        "CLAUDE.md",
        "Claude Code's /init before it asked questions, our pinned copy",
    )
    rules_limit = RulesLimit(
        chars=40_000,
        beyond="Claude Code warns that a large CLAUDE.md will impact performance",
        source="Claude Code's start-up warning at 40.0k characters; docs.anthropic.com/en/docs/claude-code/memory",
    )
    base_prompt = BASE_PROMPT
    package_dir, binary_path = PACKAGE_DIR, _binary_path()
    title, version_env = "Claude Code", QUIET_ENV  # what installed() says, how it asks
    dry_run_tools = (ShellTool("Bash", "command"),)  # it edits through Bash in the scripted dry run

    def check_provider(self) -> None:
        provider_settings(self.model, self.base_url, self._api_key)

    def upstream(self) -> tuple[str | None, str, str]:
        """Anthropic's Messages API, or the ANTHROPIC_BASE_URL server that speaks it."""
        return (*provider_settings(self.model, self.base_url, self._api_key), "anthropic")

    def invoke(self, task: Task, workspace: Path, state: Path) -> Invocation:
        url, key = provider_settings(self.model, self.base_url, self._api_key)
        permissions = ["--permission-mode", "plan"] if self.mode == "plan" else ["--dangerously-skip-permissions"]
        # an init run's prompt is -p's argument, as /init sends it; a task's text comes on stdin
        prompt, stdin = (task_text(task), "") if task.get("exact_prompt") else (PROMPT, task_text(task))
        args = [
            str(self.binary()),
            "-p",
            prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            *permissions,
            "--model",
            self.model,
        ]
        key_fd = key_pipe(key)
        return Invocation(
            args, state_environment(state, url, key_fd), stdin, pass_fds=(key_fd,), close=[lambda: os.close(key_fd)]
        )

    def claim(self, out: str, err: str) -> Claim:
        return claim_of(json_lines(out), err, self.mode)


def claude_binary() -> Path:
    """The pinned Claude Code executable installed by `make setup` into claude_code/node_modules."""
    return ClaudeCodeAgent.binary()


__all__ = ["ClaudeCodeAgent", "claude_binary"]  # the public API, documented in CODE_APPENDIX.md
