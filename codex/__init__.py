"""Everything Codex-specific: the pinned CLI and the Agent that runs it on one task.

`from codex import CodexAgent` loads lazily; importing this package starts nothing.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "CodexAgent": "codex.agent",
    "codex_binary": "codex.agent",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "AGENT":  # helpers.core.registry finds an agent package's Agent class by this name
        return import_module("codex.agent").CodexAgent
    if name not in _EXPORTS:
        raise AttributeError(f"module 'codex' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
