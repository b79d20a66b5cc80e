"""What an agent did between the task and the patch: its turns, saved per task, and a summary for the judge.

    path = save_trajectory(experiment, run_id, instance_id, turns)   # act_results/<exp>/trajectories/<run>/<id>.json
    summarize(turns)    # "6 turns; tools: editor x2, run_commands x1; ran: pytest -q; wrote: calc.py; ended: Done."

A turn is a plain dict {"role", "content", "tool_calls": [{"name", "arguments"}]}, as the model gateway
reads it from the agent's last request (helpers.llm.gateway.Gateway.conversation), whatever the agent. An
agent's own event stream gives steps {"type": "message" | "tool_call" | "tool_result", "name", "text"}
(AgentResult.trajectory); as_turns() reads those as turns.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Sequence

from helpers.core import config
from helpers.store.records import experiment_dir, write_json

COMMAND_KEYS = ("command", "commands", "cmd")  # run_commands, Bash, exec_command
PATH_KEYS = ("path", "file_path", "filename")  # editor, Write/Edit, ...
TEST_WORDS = ("pytest", "unittest", "npm test", "go test", "tox", "make test")
SUMMARY_ITEMS = 8  # commands and files named in a summary


def save_trajectory(
    experiment: str,
    run_id: str,
    instance_id: str,
    turns: Sequence[dict[str, Any]],
    results_root: Path | str | None = None,
) -> Path:
    """The turns as JSON under act_results/<experiment>/trajectories/<run_id>/<instance_id>.json."""
    path = experiment_dir(experiment, results_root) / "trajectories" / run_id / f"{instance_id}.json"
    return write_json(path, list(turns))


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    arguments = call.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return {}
    return arguments if isinstance(arguments, dict) else {}


def as_turns(steps: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turns from either shape: gateway turns as they are, an agent's own steps converted."""
    turns = []
    for step in steps:
        if "role" in step:
            turns.append(step)
        elif step.get("type") == "tool_call":
            turns.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"name": step.get("name"), "arguments": step.get("text")}],
                }
            )
        elif step.get("type") == "tool_result":
            turns.append({"role": "tool", "content": step.get("text", ""), "tool_calls": []})
        else:
            role = step.get("name") if step.get("name") in ("user", "system") else "assistant"
            turns.append({"role": role, "content": step.get("text", ""), "tool_calls": []})
    return turns


def summarize(turns: Sequence[dict[str, Any]]) -> str:
    """One line: how many turns, which tools, the commands it ran, the files it wrote, whether it ran
    tests, and how it ended ("" for no turns). Takes either shape (as_turns)."""
    turns = as_turns(turns)
    calls = [call for turn in turns for call in turn.get("tool_calls") or [] if isinstance(call, dict)]
    if not turns:
        return ""
    commands, files = [], []
    for call in calls:
        arguments = _arguments(call)
        for key in COMMAND_KEYS:
            value = arguments.get(key)
            commands += [str(v) for v in value] if isinstance(value, list) else [str(value)] if value else []
        files += [str(arguments[key]) for key in PATH_KEYS if arguments.get(key)]
    tools = Counter(str(call.get("name")) for call in calls)
    last = next((str(t.get("content") or "").strip() for t in reversed(turns) if t.get("role") == "assistant"), "")
    parts = [
        f"{sum(1 for t in turns if t.get('role') == 'assistant')} model turns",
        "tools: " + (", ".join(f"{name} x{n}" for name, n in tools.most_common()) or "none"),
    ]
    if commands:
        parts.append("ran: " + "; ".join(c[:80] for c in commands[:SUMMARY_ITEMS]))
    if files:
        parts.append("wrote: " + ", ".join(dict.fromkeys(files[:SUMMARY_ITEMS])))
    parts.append("ran tests" if any(word in c for c in commands for word in TEST_WORDS) else "ran no tests")
    parts.append("ended: " + (last.splitlines()[0][:160] if last else "(no final message)"))
    return "; ".join(parts)


def cut_trajectory(
    steps: Iterable[dict[str, Any]],
    budget: int = config.AGENT_TRAJECTORY_CHARS,
    step_chars: int = config.AGENT_TRAJECTORY_STEP_CHARS,
) -> list[dict[str, Any]]:
    """Steps in order, each text cut to step_chars, until `budget` characters; then one note of what was left."""
    kept, used, left = [], 0, 0
    for step in steps:
        text = str(step.get("text") or "")
        if len(text) > step_chars:
            text = text[:step_chars] + f" [... {len(text) - step_chars} characters cut]"
        if left or used + len(text) > budget:
            left += 1
            continue
        kept.append({**step, "text": text})
        used += len(text)
    if left:
        kept.append(
            {"type": "message", "name": "note", "text": f"[{left} more steps cut to keep the trajectory short]"}
        )
    return kept


__all__ = [
    "save_trajectory",
    "summarize",
    "as_turns",
    "cut_trajectory",
]  # the public API, documented in CODE_APPENDIX.md
