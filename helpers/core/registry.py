"""Agents by name, for notebooks that take AGENT: `make_agent(name, model=..., mode="plan")`.

An agent is a package of its own whose Agent class is registered as an entry point in
the group `prompt_learning.agents` (pyproject.toml), one line per agent. A package not installed as a
distribution is still found by its import name: "some-agent" -> `some_agent.AGENT`.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from helpers.core import config
from helpers.core.protocols import Agent

ENTRY_POINT_GROUP = "prompt_learning.agents"


def registered_agents() -> dict[str, str]:
    """name -> "module:Class" of every agent registered in this environment."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def agent_class(name: str) -> type:
    """The Agent class registered as `name`; raises ValueError listing the known names."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"AGENT must be an agent's name such as {config.AGENT!r}, not {name!r}.")
    registered = registered_agents()
    if name in registered:
        module, _, attribute = registered[name].partition(":")
        return _a_class(name, getattr(import_module(module), attribute))
    try:
        found = import_module(name.replace("-", "_")).AGENT
    except (ImportError, AttributeError):
        known = sorted(set(registered) | {config.AGENT})
        raise ValueError(f"Unknown agent {name!r}: known agents are {', '.join(known)}.") from None
    return _a_class(name, found)


def _a_class(name: str, found: object) -> type:
    if not isinstance(found, type):
        raise TypeError(f"Agent {name!r} is registered as {found!r}, which is not a class.")
    return found


def make_agent(name: str, **settings: Any) -> Agent:
    """An agent by name with its settings (model, base_url, api_key, timeout_s, mode, ...)."""
    agent: Agent = agent_class(name)(**settings)
    members = (
        "name",
        "rules_file",
        "mode",
        "model",
        "base_prompt",
        "dry_run_tools",
        "check",
        "run",
        "through_gateway",
        "stop_all",
    )
    missing = [a for a in members if not hasattr(agent, a)]
    if missing:
        raise TypeError(
            f"Agent {name!r} lacks {missing} of the Agent protocol (helpers.core.protocols.Agent): "
            "subclass helpers.agents.base.AgentBase (or CLIAgent), which gives the defaults."
        )
    return agent


__all__ = ["make_agent", "agent_class", "registered_agents"]  # the public API, documented in CODE_APPENDIX.md
