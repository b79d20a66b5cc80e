"""Everything Gemini CLI-specific: the pinned CLI and the Agent that runs it on one task.

`from gemini_cli import GeminiCliAgent` loads lazily; importing this package starts nothing.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "GeminiCliAgent": "gemini_cli.agent",
    "WriteFileTool": "gemini_cli.agent",
    "gemini_cli_binary": "gemini_cli.agent",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "AGENT":  # helpers.core.registry finds an agent package's Agent class by this name
        return import_module("gemini_cli.agent").GeminiCliAgent
    if name not in _EXPORTS:
        raise AttributeError(f"module 'gemini_cli' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
