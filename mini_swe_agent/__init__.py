"""Everything mini-swe-agent-specific: the pinned agent (in an environment of its own) and the Agent that runs it.

`from mini_swe_agent import MiniSweAgent` loads lazily; importing this package starts nothing.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "MiniSweAgent": "mini_swe_agent.agent",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "AGENT":  # helpers.core.registry finds an agent package's Agent class by this name
        return import_module("mini_swe_agent.agent").MiniSweAgent
    if name not in _EXPORTS:
        raise AttributeError(f"module 'mini_swe_agent' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
