"""Everything Claude Code-specific: the pinned CLI and the Agent that runs it on one task.

`from claude_code import ClaudeCodeAgent` loads lazily; importing this package starts nothing.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ClaudeCodeAgent": "claude_code.agent",
    "claude_binary": "claude_code.agent",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "AGENT":  # helpers.core.registry finds an agent package's Agent class by this name
        return import_module("claude_code.agent").ClaudeCodeAgent
    if name not in _EXPORTS:
        raise AttributeError(f"module 'claude_code' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
