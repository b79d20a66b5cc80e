"""Everything opencode-specific: the pinned CLI and the Agent that runs it on one task.

`from opencode import OpencodeAgent` loads lazily; importing this package starts nothing.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "OpencodeAgent": "opencode.agent",
    "opencode_binary": "opencode.agent",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "AGENT":  # helpers.core.registry finds an agent package's Agent class by this name
        return import_module("opencode.agent").OpencodeAgent
    if name not in _EXPORTS:
        raise AttributeError(f"module 'opencode' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
